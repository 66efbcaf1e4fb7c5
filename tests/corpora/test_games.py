"""Game text beyond /usr/share/locale catalogues (lwx_edge.data.games): the parsers of each format on small
real-looking snippets, and the builder on local .debs (no network: apt-get is stubbed)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from lwx_edge.data import everyday as ed
from lwx_edge.data import games as gm
from lwx_edge.data import gettext as gt
from lwx_edge.errors import CorpusError

PO = r'''# French translation of FLARE
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#: ../npcs/aldwulf.txt:12
msgid ""
"Greetings wanderer. I did not expect to meet anyone "
"in a place like this."
msgstr ""
"Salutations voyageur. Je ne m'attendais pas à rencontrer quelqu'un "
"dans un endroit pareil."

#: ../items/items.txt:63
msgid "Temple Guard's Outfit"
msgstr "Équipement de la garde du Temple"

#: ../quests/0000_empyrean.txt:4
#, fuzzy
msgid "Find the key to the gate."
msgstr "Trouvez la porte."

#: ../npcs/florin.txt:7
msgctxt "dialogue"
msgid "He said: \"Run!\"\tThen he left."
msgstr "Il a dit : « Cours ! »\tPuis il est parti."

#: ../powers/base.txt:9
msgid "%d arrow"
msgid_plural "%d arrows"
msgstr[0] "%d flèche"
msgstr[1] "%d flèches"

#: ../npcs/florin.txt:9
msgid "Not translated yet"
msgstr ""

#~ msgid "An obsolete line"
#~ msgstr "Une ligne obsolète"
'''


def test_parse_po_skips_header_fuzzy_obsolete_and_untranslated():
    assert list(gm.parse_po(PO)) == [
        ("Greetings wanderer. I did not expect to meet anyone in a place like this.",
         "Salutations voyageur. Je ne m'attendais pas à rencontrer quelqu'un dans un endroit pareil."),
        ("Temple Guard's Outfit", "Équipement de la garde du Temple"),
        ('He said: "Run!"\tThen he left.', "Il a dit : « Cours ! »\tPuis il est parti."),
        ("%d arrow", "%d flèche")]


def test_parse_po_reads_a_header_with_malformed_dates():
    po = ('msgid ""\nmsgstr ""\n"PO-Revision-Date: 2019-05-04 12:00+\\n"\n"POT-Creation-Date: yesterday\\n"\n\n'
          'msgid "Where is the key?"\nmsgstr "Où est la clé ?"\n')
    assert list(gm.parse_po(po)) == [("Where is the key?", "Où est la clé ?")]


def test_parse_po_keeps_entries_by_their_references():
    no_items = list(gm.parse_po(PO, keep=lambda refs: not any("/items/" in r for r in refs)))
    assert [e for e, _ in no_items] == ["Greetings wanderer. I did not expect to meet anyone in a place like this.",
                                        'He said: "Run!"\tThen he left.', "%d arrow"]
    assert [e for e, _ in gm.parse_po(PO, keep=lambda refs: refs == ["../powers/base.txt:9"])] == ["%d arrow"]


LUA = r'''locale = {
--      ["!!!"] = "",
--      ["Accuracy bonus: +%d points"] = "", -- Basic_Training_-_Sniper_Rifle
      ["30 minutes later..."] = "30 minutes plus tard...",
      ["A cy-what?"] = "Un cy-quoi ?",
      ["Actually, you aren't worthy of life! Take this..."] = "En fait, tu n'es pas digne de vivre ! Prends ça....", -- A_Classic_Fairytale:shadow
      ["Your beloved \"princess\" may go free."] = "Ta \"princesse\" chérie peut partir.",
      ["Congratulations! You've eliminated all targets|within the allowed time frame."]="Bravo ! Tu as éliminé toutes les cibles|dans le temps imparti.",
      ["Godai"] = "",
}
'''


def test_parse_lua_locale_reads_translated_entries_only():
    assert list(gm.parse_lua_locale(LUA)) == [
        ("30 minutes later...", "30 minutes plus tard..."),
        ("A cy-what?", "Un cy-quoi ?"),
        ("Actually, you aren't worthy of life! Take this...", "En fait, tu n'es pas digne de vivre ! Prends ça...."),
        ('Your beloved "princess" may go free.', 'Ta "princesse" chérie peut partir.'),
        ("Congratulations! You've eliminated all targets within the allowed time frame.",
         "Bravo ! Tu as éliminé toutes les cibles dans le temps imparti.")]


HW_EN = """\ufeff; English locale

00:00=Grenade
02:00=%1 has gone to see the angels
02:00=%1 has left the building
04:47=Double the fun with two spiky, sneaky, sticky mines.|Attack: Hold to shoot with more power (twice)
04:48=Why should the moles get all the abuse?|Attack: Activate
Basic_Training_-_Bazooka.desc="Using the wind to your advantage is a key!"
"""
HW_FR = """; French locale

00:00=Grenade
02:00=%1 est parti voir les anges
04:47=Double plaisir avec deux mines collantes et sournoises.|Attaque : tirez (deux fois)
04:48=Pourquoi les taupes devraient-elles prendre tous les coups ? Attaque : activez
Basic_Training_-_Bazooka.desc="Pour gagner, utilisez le vent à votre avantage !"
"""


def test_parse_keyed_drops_repeated_keys_and_quotes():
    en = gm.parse_keyed(HW_EN)
    assert "02:00" not in en and en["00:00"] == "Grenade"
    assert en["Basic_Training_-_Bazooka.desc"] == "Using the wind to your advantage is a key!"


def test_align_keyed_pairs_segments_only_when_they_match():
    assert list(gm.align_keyed(gm.parse_keyed(HW_EN), gm.parse_keyed(HW_FR), sep="|")) == [
        ("Grenade", "Grenade"),
        ("Double the fun with two spiky, sneaky, sticky mines.", "Double plaisir avec deux mines collantes et sournoises."),
        ("Attack: Hold to shoot with more power (twice)", "Attaque : tirez (deux fois)"),
        ("Why should the moles get all the abuse? Attack: Activate",      # 2 segments against 1: whole entry
         "Pourquoi les taupes devraient-elles prendre tous les coups ? Attaque : activez"),
        ("Using the wind to your advantage is a key!", "Pour gagner, utilisez le vent à votre avantage !")]


FO_EN = """\ufeffEnglish

# This is the English String Table file for FreeOrion
OK
OK

METER_DETECTION
Detection

PT_OCEAN
Ocean

FLEET_NAME
Fleet %1%

OPTIONS_DB_AUTOSAVE_GAME_CLOSE
Enable autosave when resigning or closing the game.

SP_SCYLIOR_GAMEPLAY_DESC
'''<img src="species/preview/scylior.png"></img>
Three-tentacled, aquatic nautiloids.
Prefer [[PT_OCEAN]] planets with good [[metertype METER_DETECTION]].
[[encyclopedia ORGANIC_SPECIES_TITLE]]
'''

SH_BASIC_DESC
Small and cheap <i>unarmed</i> vessel designed for recon and exploration.

#include "../content_specific_parameters.txt"
"""
FO_FR = """Français

OK  # translated
OK

METER_DETECTION
Détection

PT_OCEAN
Océan

FLEET_NAME
Flotte %1%

OPTIONS_DB_AUTOSAVE_GAME_CLOSE
Activer la sauvegarde automatique en quittant la partie.

SP_SCYLIOR_GAMEPLAY_DESC
'''<img src="species/preview/scylior.png"></img>
Nautiloïdes aquatiques à trois tentacules.
Préfèrent les planètes de type [[PT_OCEAN]] avec une bonne [[metertype METER_DETECTION]].
[[encyclopedia ORGANIC_SPECIES_TITLE]]
'''

SH_BASIC_DESC
Vaisseau <i>désarmé</i>, petit et bon marché, conçu pour la reconnaissance et l'exploration.
"""


def test_parse_stringtable_reads_single_and_multi_line_values():
    table = gm.parse_stringtable(FO_EN)
    assert table["OK"] == "OK" and table["FLEET_NAME"] == "Fleet %1%" and "English" not in table
    assert table["SP_SCYLIOR_GAMEPLAY_DESC"].splitlines()[1] == "Three-tentacled, aquatic nautiloids."
    assert gm.parse_stringtable(FO_FR)["OK"] == "OK"  # "# translated" after a key is a comment
    with pytest.raises(CorpusError, match="fr.txt: value of SP_X_DESC never closes its '''"):
        gm.parse_stringtable("Français\n\nSP_X_DESC\n'''Une description\nsans fin\n", "fr.txt")


def test_freeorion_pairs_resolve_references_and_drop_formats_ui_and_unresolved_lines():
    pairs = list(gm.freeorion_pairs(gm.parse_stringtable(FO_EN), gm.parse_stringtable(FO_FR)))
    assert pairs == [
        ("OK", "OK"), ("Detection", "Détection"), ("Ocean", "Océan"),
        ("Three-tentacled, aquatic nautiloids.", "Nautiloïdes aquatiques à trois tentacules."),
        ("Prefer Ocean planets with good Detection.", "Préfèrent les planètes de type Océan avec une bonne Détection."),
        ("Small and cheap unarmed vessel designed for recon and exploration.",
         "Vaisseau désarmé, petit et bon marché, conçu pour la reconnaissance et l'exploration.")]
    # FLEET_NAME (%1%), OPTIONS_* (interface) and the image and unresolved [[encyclopedia ...]] lines are gone
    assert gm.resolve_refs("See [[NOPE]] <b>now</b>", {}) == "See \x00 now"


@pytest.mark.parametrize("en, xx, want", [
    ("Call me Indiana!", "Appelez-moi Indiana !", ("Call me Indiana!", "Appelez-moi Indiana !")),
    ("Die, die, die!", "Meurs, meurs, meurs !", ("Die, die, die!", "Meurs, meurs, meurs !")),
    ("Krolan's Emerald", "Émeraude de Krolan", None),          # 2 English words: a name, not a sentence
    ("Here, let me help!", "Aidez !", None),                    # 1 translated word
    ("Hold the line, men!", "Hold the line, men!", None),       # untranslated copy
    ("%1, %2, %3 and %4 win!", "%1, %2, %3 et %4 gagnent !", None),  # placeholders outnumber words
])
def test_clean_pair(en, xx, want):
    assert gm.clean_pair(en, xx) == want


def test_clean_pair_takes_a_per_source_minimum():
    assert gm.clean_pair("Fuel Injection Engine Mk3", "Motoren mit Kraftstoffeinspritzung Mk3") is not None
    assert gm.clean_pair("Fuel Injection Engine Mk3", "Motoren mit Kraftstoffeinspritzung Mk3", 5) is None


def test_sources_never_include_eval_sources_or_manpages(tmp_path):
    names = [s.package for s in gm.SOURCES]
    assert not set(names) & set(ed.PARALLEL_PACKAGES) and not set(names) & set(ed.GAME_PACKAGES)
    assert not any("manpages" in n or "freedroid" in n for n in names)
    bad = gm.GameSource("freedroidrpg-data", lambda n: True, lambda f, lang: iter(()))
    with pytest.raises(CorpusError, match="freedroidrpg-data: man pages and the held-out test sources"):
        gm.build_games_extra(tmp_path / "out", tmp_path / "debs", sources=[bad], progress=False)
    assert not (tmp_path / "debs").exists()  # refused before downloading anything


# ------------------------------------------------------------------------------------------------ builder

needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")
HW = "usr/share/games/hedgewars/Data/Locale/"
FO = "usr/share/games/freeorion/default/stringtables/"


def _no_apt(monkeypatch):
    calls = []

    def fake_run(cmd, **kw):  # apt-get "fails" (no network in tests); dpkg-deb runs for real
        if cmd[0] == "apt-get":
            calls.append(cmd[2:])
            return subprocess.CompletedProcess(cmd, 100, b"", b"E: Unable to locate package")
        return subprocess.run(cmd, capture_output=True, **kw)

    monkeypatch.setattr(gt, "_run", fake_run)
    return calls


def _debs(work):
    from test_gettext import _make_deb

    work.mkdir(exist_ok=True)
    _make_deb(work, "hedgewars-data", "hedgewars", {}, {
        HW + "en.txt": HW_EN, HW + "fr.txt": HW_FR, HW + "fr.lua": LUA,
        HW + "de.lua": 'locale = {\n  ["A cy-what?"] = "Ein Cy-was?",\n  ["Call me Indiana!"] = "Nenn mich Indiana!",\n}\n',
        HW + "hedgewars_fr.qm": "not read"})
    _make_deb(work, "freeorion-data", "freeorion", {}, {FO + "en.txt": FO_EN, FO + "fr.txt": FO_FR})
    return [_source("hedgewars-data"), _source("freeorion-data")]


def _source(package):
    (src,) = [s for s in gm.SOURCES if s.package == package]
    return src


@needs_dpkg
def test_build_games_extra_writes_train_pairs_atomically(tmp_path, monkeypatch):
    sources = _debs(tmp_path / "debs")
    apt = _no_apt(monkeypatch)
    held = tmp_path / "everyday"
    held.mkdir()
    (held / "test.en-it.tsv").write_text("Using the wind to your advantage is a key!\tUsa il vento!\n")  # eval
    written = []
    real = gm.write_text_atomic
    monkeypatch.setattr(gm, "write_text_atomic", lambda p, t: written.append(p.name) or real(p, t))
    out = tmp_path / "out"
    summary = gm.build_games_extra(out, tmp_path / "debs", langs=("fr", "de"), sources=sources,
                                   exclude_dirs=[held, tmp_path / "missing"], progress=False)
    assert (out / "train.en-fr.tsv").read_text(encoding="utf-8").splitlines() == [
        "Actually, you aren't worthy of life! Take this...\tEn fait, tu n'es pas digne de vivre ! Prends ça....",
        'Your beloved "princess" may go free.\tTa "princesse" chérie peut partir.',
        "Congratulations! You've eliminated all targets within the allowed time frame.\t"
        "Bravo ! Tu as éliminé toutes les cibles dans le temps imparti.",
        "Double the fun with two spiky, sneaky, sticky mines.\tDouble plaisir avec deux mines collantes et sournoises.",
        "Attack: Hold to shoot with more power (twice)\tAttaque : tirez (deux fois)",
        "Why should the moles get all the abuse? Attack: Activate\t"
        "Pourquoi les taupes devraient-elles prendre tous les coups ? Attaque : activez",
        "Three-tentacled, aquatic nautiloids.\tNautiloïdes aquatiques à trois tentacules.",
        "Prefer Ocean planets with good Detection.\tPréfèrent les planètes de type Océan avec une bonne Détection.",
        "Small and cheap unarmed vessel designed for recon and exploration.\t"
        "Vaisseau désarmé, petit et bon marché, conçu pour la reconnaissance et l'exploration."]
    assert (out / "train.en-de.tsv").read_text(encoding="utf-8") == "Call me Indiana!\tNenn mich Indiana!\n"
    assert written == ["train.en-fr.tsv", "train.en-de.tsv"]
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "train.en-de.tsv", "train.en-fr.tsv"]
    assert apt == []  # both .debs were already there
    assert summary["train"] == {"en-fr": {"pairs": 9}, "en-de": {"pairs": 1}}
    assert summary["sources"]["hedgewars-data"]["pairs"] == {"fr": 6, "de": 1}
    assert summary["sources"]["freeorion-data"]["source"] == "freeorion"
    assert summary["dropped"]["in_eval_split"] == 1 and summary["excluded_eval_sentences"] == 1
    assert json.loads((out / "summary.json").read_text())["train"] == summary["train"]


@needs_dpkg
def test_build_games_extra_errors_name_the_package(tmp_path, monkeypatch):
    sources = _debs(tmp_path / "debs")
    apt = _no_apt(monkeypatch)
    with pytest.raises(CorpusError, match=r"apt-get download failed for pingus-data: is the apt cache up to date"):
        gm.build_games_extra(tmp_path / "out", tmp_path / "debs", sources=[*sources, _source("pingus-data")], progress=False)
    assert apt == [["pingus-data"], ["pingus-data"]]  # the batch, then one by one
    from test_gettext import _make_deb

    (tmp_path / "debs" / "hedgewars-data_1.0_all.deb").unlink()
    _make_deb(tmp_path / "debs", "hedgewars-data", "hedgewars", {}, {HW + "fr.lua": LUA})  # no en.txt
    with pytest.raises(CorpusError, match=r"hedgewars-data_1\.0_all\.deb: no Data/Locale/en\.txt in the package"):
        gm.build_games_extra(tmp_path / "out", tmp_path / "debs", sources=sources, progress=False)
    assert not (tmp_path / "out").exists()  # nothing half-written


@needs_dpkg
def test_mo_catalogue_source_prefers_the_bare_language(tmp_path, monkeypatch):
    from test_gettext import _make_deb

    work = tmp_path / "debs"
    work.mkdir()
    loc = "usr/share/locale/{}/LC_MESSAGES/warzone2100.mo"
    _make_deb(work, "warzone2100-data", "warzone2100", {
        loc.format("fr_FR"): [("Take a scout force to investigate these signals.",
                               "Envoyez des unités de reconnaissance repérer ces signaux."),
                              ("Fuel Injection Engine Mk3", "Moteur à injection Mk3")],   # under 5 words
        loc.format("fr_CA"): [("Take a scout force to investigate these signals.", "Version du Canada ici.")],
        loc.format("de"): [("We can confirm a missile is heading for Alpha Base.",
                            "Wir bestätigen, dass eine Rakete auf die Alphabasis zufliegt.")],
        loc.format("de_DE"): [("We can confirm a missile is heading for Alpha Base.", "Nicht diese Fassung.")]})
    _no_apt(monkeypatch)
    summary = gm.build_games_extra(tmp_path / "out", work, langs=("fr", "de", "es"), sources=[_source("warzone2100-data")],
                                   progress=False)
    assert (tmp_path / "out" / "train.en-fr.tsv").read_text() == (
        "Take a scout force to investigate these signals.\tEnvoyez des unités de reconnaissance repérer ces signaux.\n")
    assert (tmp_path / "out" / "train.en-de.tsv").read_text() == (
        "We can confirm a missile is heading for Alpha Base.\tWir bestätigen, dass eine Rakete auf die Alphabasis "
        "zufliegt.\n")
    assert (tmp_path / "out" / "train.en-es.tsv").read_text() == ""
    assert summary["sources"]["warzone2100-data"]["raw"] == {"fr": 2, "de": 1, "es": 0}


# ------------------------------------------------------------------------------------------------ more sources

def _qm(messages):
    """A minimal Qt .qm file: the magic and one messages block (source UTF-8, translation UTF-16BE)."""
    import struct

    body = b""
    for src, tr in messages:
        if tr is None:
            body += b"\x03" + struct.pack(">I", 0xFFFFFFFF)
        else:
            t = tr.encode("utf-16-be")
            body += b"\x03" + struct.pack(">I", len(t)) + t
        s = src.encode("utf-8")
        body += b"\x06" + struct.pack(">I", len(s)) + s + b"\x07" + struct.pack(">I", 3) + b"ctx" + b"\x01"
    return gm._QM_MAGIC + b"\x42" + struct.pack(">I", 4) + b"hash" + b"\x69" + struct.pack(">I", len(body)) + body


def test_parse_qm_reads_sources_and_translations_and_skips_untranslated():
    data = _qm([("Find the trombone", "Trouve le trombone"), ("A red apple.", None), ("Café?", "Un café ?")])
    assert list(gm.parse_qm(data)) == [("Find the trombone", "Trouve le trombone"), ("Café?", "Un café ?")]
    with pytest.raises(CorpusError, match="x.qm: not a Qt .qm file"):
        list(gm.parse_qm(b"not a qm file at all", "x.qm"))
    with pytest.raises(CorpusError, match="unknown .qm message item 0x42"):
        list(gm.parse_qm(gm._QM_MAGIC + b"\x69\x00\x00\x00\x01\x42"))


def test_more_sources_read_gcompris_tuxpaint_and_megaglest():
    (gc,) = [s for s in gm.MORE_SOURCES if s.package == "gcompris-qt-data"]
    files = {"./usr/share/gcompris-qt/translations/gcompris_fr.qm": _qm([("Count the apples.", "Compte les pommes.")]),
             "./usr/share/gcompris-qt/translations/gcompris_frp.qm": _qm([("x y z", "not French")])}
    assert list(gc.pairs(files, "fr")) == [("Count the apples.", "Compte les pommes.")]
    assert list(gc.pairs(files, "it")) == []
    (tp,) = [s for s in gm.MORE_SOURCES if s.package == "tuxpaint-stamps-default"]
    stamp = "A red apple.\nfr.utf8=Une pomme rouge.\nfr_CA.utf8=Une pomme.\nit.utf8=Una mela rossa.\n".encode()
    assert list(tp.pairs({"./usr/share/tuxpaint/stamps/food/apple.txt": stamp}, "fr")) == [
        ("A red apple.", "Une pomme rouge.")]
    assert tp.min_en_words == 2 and gm.clean_pair("A cow.", "Une vache.", tp.min_en_words) is not None
    (mg,) = [s for s in gm.MORE_SOURCES if s.package == "megaglest-data"]
    lng = "./usr/share/games/megaglest/data/lang/hint/hint_"
    files = {lng + "english.lng": b"; comment\nHint1=Build farms first.\\nThen houses.\nHint2=Attack!\n",
             lng + "french.lng": "Hint1=Construis d'abord des fermes.\\nPuis des maisons.\nHint3=x\n".encode()}
    assert list(mg.pairs(files, "fr")) == [("Build farms first.", "Construis d'abord des fermes."),
                                           ("Then houses.", "Puis des maisons.")]
    with pytest.raises(CorpusError, match="no \\*english.lng in the package"):
        list(mg.pairs({lng + "french.lng": b"a=b"}, "fr"))


def test_the_conversation_tests_games_are_never_trained_on(tmp_path):
    bad = gm.GameSource("fillets-ng-data", lambda n: True, lambda files, lang: iter(()))
    with pytest.raises(CorpusError, match="fillets-ng-data: man pages and the held-out"):
        gm.build_games_extra(tmp_path / "out", tmp_path / "debs", sources=[bad], progress=False)
