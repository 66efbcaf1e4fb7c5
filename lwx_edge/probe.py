"""The fixed multilingual probe set used by the parity report (written for lwx-edge; no external source).

Ten groups of parallel sentences in English, French, German, Spanish and Italian: everyday and software
sentences, short (3-6 words), medium and long (30-50 words). The parity report also builds one text that is
longer than the exported maximum length (all long sentences of every language joined), so the encoder is
probed at exactly ``max_len`` tokens and the truncation path is exercised.
"""
from __future__ import annotations

LANGUAGES = ("en", "fr", "de", "es", "it")

# (kind, {lang: text}); every group says the same thing in the five languages.
GROUPS: list[tuple[str, dict[str, str]]] = [
    ("short", {
        "en": "Good morning!",
        "fr": "Bonjour !",
        "de": "Guten Morgen!",
        "es": "¡Buenos días!",
        "it": "Buongiorno!",
    }),
    ("short", {
        "en": "The file was saved.",
        "fr": "Le fichier a été enregistré.",
        "de": "Die Datei wurde gespeichert.",
        "es": "El archivo se ha guardado.",
        "it": "Il file è stato salvato.",
    }),
    ("short", {
        "en": "Where is the train station?",
        "fr": "Où est la gare ?",
        "de": "Wo ist der Bahnhof?",
        "es": "¿Dónde está la estación de tren?",
        "it": "Dov'è la stazione ferroviaria?",
    }),
    ("short", {
        "en": "Please restart your computer.",
        "fr": "Veuillez redémarrer votre ordinateur.",
        "de": "Bitte starten Sie Ihren Computer neu.",
        "es": "Por favor, reinicie su ordenador.",
        "it": "Riavvia il computer, per favore.",
    }),
    ("medium", {
        "en": "I would like a coffee with milk and a glass of water, please.",
        "fr": "Je voudrais un café au lait et un verre d'eau, s'il vous plaît.",
        "de": "Ich hätte gern einen Kaffee mit Milch und ein Glas Wasser, bitte.",
        "es": "Quisiera un café con leche y un vaso de agua, por favor.",
        "it": "Vorrei un caffè con latte e un bicchiere d'acqua, per favore.",
    }),
    ("medium", {
        "en": "The new version of the app uses less battery and starts twice as fast.",
        "fr": "La nouvelle version de l'application consomme moins de batterie et démarre deux fois plus vite.",
        "de": "Die neue Version der App verbraucht weniger Akku und startet doppelt so schnell.",
        "es": "La nueva versión de la aplicación gasta menos batería y arranca el doble de rápido.",
        "it": "La nuova versione dell'app consuma meno batteria e si avvia due volte più velocemente.",
    }),
    ("medium", {
        "en": "My sister lives in a small town near the sea and works at the library.",
        "fr": "Ma sœur habite dans une petite ville au bord de la mer et travaille à la bibliothèque.",
        "de": "Meine Schwester wohnt in einer kleinen Stadt am Meer und arbeitet in der Bibliothek.",
        "es": "Mi hermana vive en un pueblo pequeño cerca del mar y trabaja en la biblioteca.",
        "it": "Mia sorella vive in una piccola città vicino al mare e lavora in biblioteca.",
    }),
    ("medium", {
        "en": "If the download fails, check your network connection and try again later.",
        "fr": "Si le téléchargement échoue, vérifiez votre connexion réseau et réessayez plus tard.",
        "de": ("Wenn der Download fehlschlägt, prüfen Sie Ihre Netzwerkverbindung und versuchen Sie es "
               "später erneut."),
        "es": "Si la descarga falla, compruebe su conexión de red y vuelva a intentarlo más tarde.",
        "it": "Se il download non riesce, controlla la connessione di rete e riprova più tardi.",
    }),
    ("long", {
        "en": ("Last weekend we took the children to the mountains, where it rained all Saturday, so we played "
               "cards in the cabin, cooked a big pot of soup and, on Sunday morning, finally walked up to the "
               "lake under a clear blue sky."),
        "fr": ("Le week-end dernier, nous avons emmené les enfants à la montagne, où il a plu tout le samedi ; "
               "nous avons donc joué aux cartes dans le chalet, préparé une grande marmite de soupe et, le "
               "dimanche matin, nous sommes enfin montés jusqu'au lac sous un ciel bleu et dégagé."),
        "de": ("Letztes Wochenende sind wir mit den Kindern in die Berge gefahren, wo es den ganzen Samstag "
               "geregnet hat; also haben wir in der Hütte Karten gespielt, einen großen Topf Suppe gekocht und "
               "sind am Sonntagmorgen endlich unter einem klaren blauen Himmel zum See hinaufgewandert."),
        "es": ("El fin de semana pasado llevamos a los niños a la montaña, donde llovió todo el sábado, así que "
               "jugamos a las cartas en la cabaña, preparamos una olla grande de sopa y, el domingo por la "
               "mañana, por fin subimos al lago bajo un cielo azul y despejado."),
        "it": ("Lo scorso fine settimana abbiamo portato i bambini in montagna, dove ha piovuto per tutto il "
               "sabato, così abbiamo giocato a carte nella baita, cucinato una grande pentola di zuppa e, la "
               "domenica mattina, siamo finalmente saliti fino al lago sotto un cielo azzurro e limpido."),
    }),
    ("long", {
        "en": ("To keep your data safe, the program creates an encrypted backup every night, stores the last "
               "thirty copies on an external drive and sends you an email when a backup could not be completed, "
               "for example because the drive was full or disconnected."),
        "fr": ("Pour protéger vos données, le programme crée chaque nuit une sauvegarde chiffrée, conserve les "
               "trente dernières copies sur un disque externe et vous envoie un courriel lorsqu'une sauvegarde "
               "n'a pas pu être terminée, par exemple parce que le disque était plein ou déconnecté."),
        "de": ("Um Ihre Daten zu schützen, erstellt das Programm jede Nacht eine verschlüsselte Sicherung, "
               "bewahrt die letzten dreißig Kopien auf einer externen Festplatte auf und schickt Ihnen eine "
               "E-Mail, wenn eine Sicherung nicht abgeschlossen werden konnte, zum Beispiel weil die Festplatte "
               "voll oder nicht verbunden war."),
        "es": ("Para proteger sus datos, el programa crea cada noche una copia de seguridad cifrada, guarda las "
               "últimas treinta copias en un disco externo y le envía un correo electrónico cuando no se ha "
               "podido completar una copia, por ejemplo porque el disco estaba lleno o desconectado."),
        "it": ("Per proteggere i tuoi dati, il programma crea ogni notte un backup cifrato, conserva le ultime "
               "trenta copie su un disco esterno e ti invia un'email quando un backup non è stato completato, "
               "ad esempio perché il disco era pieno o scollegato."),
    }),
]


def probe_texts() -> list[dict]:
    """The probe sentences as records {"text", "lang", "group", "kind"} (group-major, language order)."""
    out = []
    for g, (kind, by_lang) in enumerate(GROUPS):
        for lang in LANGUAGES:
            out.append({"text": by_lang[lang], "lang": lang, "group": g, "kind": kind})
    return out


def over_length_text() -> str:
    """One text longer than any sensible max length: every long probe sentence, all languages, twice."""
    longs = [by_lang[lang] for kind, by_lang in GROUPS if kind == "long" for lang in LANGUAGES]
    return " ".join(longs + longs)


# Extra strings for the tokenizer parity check only (edge cases of normalisation and byte handling).
TOKENIZER_EDGE_CASES = [
    "Ça coûte 12,50 € – d’accord ?",
    "«Très bien», dit-elle… puis elle partit.",
    "Straße, Größe, Äpfel und Öl",
    "¿Qué tal?  Muy   bien,\tgracias.",
    "Perché no? È già tardi.",
    "ＦＵＬＬ－ＷＩＤＴＨ text and ｶﾀｶﾅ",
    "emoji 🙂 and math x² ≤ 10⁶",
    "C:\\Users\\anna\\Documents\\report_2024.pdf",
    "https://example.org/search?q=lwx&lang=de",
    "A",
]
