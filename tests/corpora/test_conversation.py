"""The out-of-domain conversation test: readers of each game's format, the conversational filter, the split
by source, and the check against training sentences."""
import json
import shutil

import pytest
from test_gettext import _make_deb

import lwx_edge.data.conversation as cv
import lwx_edge.data.gettext as gt
from lwx_edge.errors import CorpusError

FILLETS_FR = r'''
dialogId("pot-m-hey", "font_small", "Hey, is anybody down there?")
dialogStr("Hé, il y a quelqu'un là-dessous ?")
dialogId("pot-v-suit", "font_big", "It suits you.")
dialogStr("Ça te va bien.")
dialogId("pot-m-esc", "font_small", "He said \"no\".\nTwice.")
dialogStr("Il a dit \"non\".\nDeux fois.")
'''
RENPY_ES = '''translate spanish start_1:

    # s "Hi there! How was class?"
    s "¡Hola! ¿Qué tal la clase?"

translate spanish start_2:

    # "I'd love to!"
    "¡Me encantaría!"
'''
FREEDINK_DE = '''msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\\n"

msgid "Where did you learn to fight like that?"
msgstr "Wo hast du gelernt, so zu kämpfen?"

#, fuzzy
msgid "I am not sure about this."
msgstr "Da bin ich mir nicht sicher."

msgid "Megapotion! All stats raised by one."
msgstr "Megatrank! Alle Werte um eins erhöht."
'''


def test_fillets_lines_pairs_each_dialog_id_with_its_string_and_resolves_escapes():
    assert list(cv.fillets_lines(FILLETS_FR)) == [
        ("Hey, is anybody down there?", "Hé, il y a quelqu'un là-dessous ?"),
        ("It suits you.", "Ça te va bien."),
        ('He said "no".\nTwice.', 'Il a dit "non".\nDeux fois.')]


def test_renpy_lines_take_the_commented_english_and_the_line_after_it():
    assert list(cv.renpy_lines(RENPY_ES)) == [("Hi there! How was class?", "¡Hola! ¿Qué tal la clase?"),
                                              ("I'd love to!", "¡Me encantaría!")]


@pytest.mark.parametrize("en, xx, kept", [
    ("Are you waiting for someone?", "Attends-tu quelqu'un ?", True),
    ("Ti  sta bene.", "Ti sta bene.", False),                          # the same text on both sides
    ("It suits you.", "Ti  sta\tbene.", True),                         # spaces collapsed
    ("Thanks.", "Merci.", False),                                      # one word
    ("one two three four five six seven eight nine ten eleven twelve thirteen.", "Treize mots.", False),
    ("the rest of a sentence.", "la suite.", False),                   # a fragment
    ("WHAT TIME IS IT?", "QUELLE HEURE EST-IL ?", False),              # all capitals
    ("Open the door", "Ouvre la porte", False),                        # no end punctuation
    ("You have %d coins left.", "Il te reste %d pièces.", False),      # placeholder
    ("Press the button to continue.", "Appuie sur le bouton.", False),  # interface
    ("He said no.\nTwice.", "Il a dit non.\nDeux fois.", False),       # two lines
    ("Can you hear me now?", "Oui, évidemment que je t'entends parfaitement bien depuis ici, mon ami.", False),
])
def test_conversational_keeps_one_spoken_sentence(en, xx, kept):
    out = cv.conversational(en, xx)
    assert (out is not None) == kept
    if kept:
        assert out == (" ".join(en.split()), " ".join(xx.split()))


def test_source_pairs_keeps_one_translation_per_english_sentence():
    lua = FILLETS_FR + 'dialogId("x", "f", "It  suits you.")\ndialogStr("Ça te va.")\n'
    pairs = cv.source_pairs("fillets-ng-data", {"a/script/pot/dialogs_fr.lua": lua.encode(),
                                                "a/script/pot/dialogs_ru.lua": lua.encode()})
    assert pairs == {"fr": [("Hey, is anybody down there?", "Hé, il y a quelqu'un là-dessous ?"),
                            ("It suits you.", "Ça te va bien.")]}


def test_training_sentences_and_drop_seen_ignore_case_and_punctuation(tmp_path):
    (tmp_path / "c" / "mono").mkdir(parents=True)
    (tmp_path / "c" / "train.en-fr.tsv").write_text("Is it you?\tC'est toi ?\n")
    (tmp_path / "c" / "mono" / "train.it.txt").write_text("Ti sta bene!\n")
    (tmp_path / "c" / "dev.en-fr.tsv").write_text("It suits you.\tÇa te va bien.\n")  # not training
    seen = cv.training_sentences([tmp_path / "c"])
    assert seen == {"is it you", "c est toi", "ti sta bene"}
    pairs = [("IS IT YOU ?", "Toi ?"), ("It suits you.", "Ti sta bene."), ("It suits you.", "Ça te va bien.")]
    assert cv.drop_seen(pairs, seen) == ([("It suits you.", "Ça te va bien.")], 2)


needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (a Debian system) needed")


def _debs(work):
    work.mkdir(exist_ok=True)
    lua = FILLETS_FR + 'dialogId("w", "f", "Where did you learn to fight like that?")\ndialogStr("Où as-tu appris à te battre comme ça ?")\n'
    _make_deb(work, "fillets-ng-data", "fillets-ng-data", {},
              {"usr/share/games/fillets-ng/script/pot/dialogs_fr.lua": lua})
    _make_deb(work, "freedink-data", "freedink-data", {}, {
        "usr/share/games/dink/dink/l10n/de.po": FREEDINK_DE,
        "usr/share/games/dink/dink/l10n/fr.po": FREEDINK_DE.replace("Wo hast du gelernt, so zu kämpfen?",
                                                                    "Où as-tu appris à te battre ainsi ?")})
    _make_deb(work, "adonthell-data", "adonthell", {
        "usr/share/games/adonthell/games/wastesedge/locale/it/LC_MESSAGES/wastesedge.mo": [
            ("And who would you be?", "E tu chi saresti?"), ("Is it you?", "Sei tu?")]})
    _make_deb(work, "renpy-thequestion", "renpy", {}, {
        "usr/share/games/renpy/the_question/game/tl/spanish/script.rpy": RENPY_ES})


def _no_apt(monkeypatch):
    def fake_run(cmd, **kw):
        assert cmd[0] != "apt-get", "every package is already in the work dir"
        return gt.subprocess.run(cmd, capture_output=True, **kw)

    monkeypatch.setattr(gt, "_run", fake_run)


@needs_dpkg
def test_build_conversation_splits_by_game_and_drops_training_and_test_sentences(tmp_path, monkeypatch):
    _debs(tmp_path / "debs")
    _no_apt(monkeypatch)
    train = tmp_path / "corpus"
    train.mkdir()
    (train / "train.en-it.tsv").write_text("Is it you?\tSei proprio tu?\n")
    out = tmp_path / "conversation"
    summary = cv.build_conversation(out, tmp_path / "debs", train_dirs=[train], progress=False)
    assert (out / "test.en-fr.tsv").read_text(encoding="utf-8").splitlines() == [
        "Hey, is anybody down there?\tHé, il y a quelqu'un là-dessous ?", "It suits you.\tÇa te va bien.",
        "Where did you learn to fight like that?\tOù as-tu appris à te battre comme ça ?"]
    # FreeDink's line is also a test line (dropped from dev), its fuzzy and interface lines are not read
    assert not (out / "dev.en-fr.tsv").exists() and not (out / "dev.en-de.tsv").exists()
    assert (out / "dev.en-it.tsv").read_text() == "And who would you be?\tE tu chi saresti?\n"  # "Is it you?" trained
    assert (out / "dev.en-es.tsv").read_text().splitlines() == ["Hi there! How was class?\t¡Hola! ¿Qué tal la clase?",
                                                                "I'd love to!\t¡Me encantaría!"]
    assert summary["dropped"] == {"in_training": 1, "in_test_source": 2}
    assert summary["pairs"]["test"] == {"fr": 3, "de": 0, "es": 0, "it": 0}
    assert json.loads((out / "summary.json").read_text())["sources"]["freedink-data"]["split"] == "dev"
    assert sorted(p.name for p in out.iterdir()) == ["dev.en-es.tsv", "dev.en-it.tsv", "summary.json",
                                                      "test.en-fr.tsv"]


@needs_dpkg
def test_build_conversation_names_a_package_with_an_unexpected_layout(tmp_path, monkeypatch):
    _debs(tmp_path / "debs")
    (next((tmp_path / "debs").glob("adonthell-data_*.deb"))).unlink()
    _make_deb(tmp_path / "debs", "adonthell-data", "adonthell", {}, {"usr/share/doc/adonthell-data/README": "x"})
    _no_apt(monkeypatch)
    with pytest.raises(CorpusError, match="no translation files found .*adonthell-data"):
        cv.build_conversation(tmp_path / "out", tmp_path / "debs", progress=False)
    assert not (tmp_path / "out").exists()
