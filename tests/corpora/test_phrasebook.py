"""The phrasebook: French elision, frame expansion, the shipped source files' grammar, the check against
evaluation sentences, and clear errors for malformed source rows."""
import json
import re

import pytest
from typer.testing import CliRunner

import lwx_edge.data.phrasebook as pb
from lwx_edge.cli import app
from lwx_edge.errors import CorpusError

FRAMES = ("frame\tvp\tDo you want to {}?\tTu veux {} ?\tWillst du {}?\t¿Quieres {}?\tVuoi {}?\n"
          "frame\tvp\tDon't forget to {}.\tN'oublie pas de {}.\t-\tNo olvides {}.\tNon dimenticare di {}.\n")
FILLERS = ("fill\tvp\tcall your mother\tappeler ta mère\tdeine Mutter anrufen\tllamar a tu madre\tchiamare tua madre\n"
           "fill\tvp\tcome with us\tvenir avec nous\tmit uns kommen\tvenir con nosotros\tvenire con noi\n")
PHRASES = "# greetings\nWhat a pity.\tQuel dommage.\tWie schade.\tQué pena.\tChe peccato.\nSee you!\tÀ plus !\tBis dann!\t¡Hasta luego!\tCiao!\n"


def _source(tmp_path, frames=FRAMES, fillers=FILLERS, phrases=PHRASES):
    src = tmp_path / "src"
    src.mkdir()
    (src / "frames.tsv").write_text(frames, encoding="utf-8")
    (src / "fillers.tsv").write_text(fillers, encoding="utf-8")
    (src / "phrases.tsv").write_text(phrases, encoding="utf-8")
    return src


@pytest.mark.parametrize("text, elided", [
    ("N'oublie pas de appeler.", "N'oublie pas d'appeler."),
    ("Je aime ça, je le ai vu.", "J'aime ça, je l'ai vu."),
    ("Tu veux que il vienne ?", "Tu veux qu'il vienne ?"),
    ("Je habite ici.", "J'habite ici."),
    ("Donne-le à Paul.", "Donne-le à Paul."),          # a pronoun after a hyphen keeps its vowel
    ("Il a peur de huit chiens.", "Il a peur de huit chiens."),  # h aspiré and consonants: unchanged
    ("Je te donne le livre.", "Je te donne le livre.")])
def test_french_elision(text, elided):
    assert pb.elide_french(text) == elided


def test_frames_expand_with_each_filler_per_language_and_skip_dashes(tmp_path):
    src = _source(tmp_path)
    frames, fillers = pb.read_rows(src / "frames.tsv", "frame"), pb.read_rows(src / "fillers.tsv", "fill")
    pairs = pb.expand(frames, fillers)
    assert ("Don't forget to call your mother.", "N'oublie pas d'appeler ta mère.") in pairs["fr"]
    assert ("Do you want to come with us?", "Willst du mit uns kommen?") in pairs["de"]
    assert len(pairs["fr"]) == len(pairs["es"]) == len(pairs["it"]) == 4 and len(pairs["de"]) == 2
    assert len(pb.expand(frames, fillers, fillers_per_frame=1)["fr"]) == 2


def test_build_writes_phrases_and_frames_and_drops_evaluation_sentences(tmp_path):
    src = _source(tmp_path)
    held = tmp_path / "corpus" / "conversation"
    held.mkdir(parents=True)
    (held / "test.en-fr.tsv").write_text("What a pity!\tQuel dommage !\n", encoding="utf-8")  # other punctuation
    (held / "train.en-fr.tsv").write_text("See you!\tÀ plus !\n", encoding="utf-8")          # train: not held
    summary = pb.build_phrasebook(tmp_path / "out", [tmp_path / "corpus"], None, src)
    fr = (tmp_path / "out" / "train.en-fr.tsv").read_text(encoding="utf-8").splitlines()
    assert "What a pity.\tQuel dommage." not in fr and "See you!\tÀ plus !" in fr
    assert "Do you want to come with us?\tTu veux venir avec nous ?" in fr
    # "What a pity." is held in every language: its English is a test sentence
    assert summary["pairs"] == {"fr": 5, "de": 3, "es": 5, "it": 5} and summary["dropped"]["in_eval"] == 4
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["pairs"] == summary["pairs"]


@pytest.mark.parametrize("frames, fillers, phrases, message", [
    (FRAMES, FILLERS, "What a pity.\tQuel dommage.\tWie schade.\tQué pena.\n", "phrases.tsv:1: expected 5"),
    (FRAMES.replace("Tu veux {} ?", "Tu veux ?"), FILLERS, PHRASES, "one {}"),
    (FRAMES, FILLERS.replace("venir avec nous", "-"), PHRASES, "must be filled in every language"),
    (FRAMES, FILLERS.replace("fill\tvp\tcome", "fill\tnp\tcome"), PHRASES, "fillers but no frames: np"),
    (FRAMES.replace("frame\tvp\tDo", "frme\tvp\tDo"), FILLERS, PHRASES, "must be 'frame'"),
])
def test_malformed_sources_are_one_clear_error_and_nothing_is_written(tmp_path, frames, fillers, phrases, message):
    src = _source(tmp_path, frames, fillers, phrases)
    with pytest.raises(CorpusError, match=message.replace("{", r"\{").replace("}", r"\}")):
        pb.build_phrasebook(tmp_path / "out", [], None, src)
    assert not (tmp_path / "out").exists()


def test_the_shipped_phrasebook_parses_and_holds_every_language(tmp_path):
    summary = pb.build_phrasebook(tmp_path / "out", [])
    assert summary["phrases"] >= 1500 and summary["frames"] >= 100
    assert min(summary["pairs"].values()) >= 3500 and summary["dropped"]["in_eval"] == 0
    fr = (tmp_path / "out" / "train.en-fr.tsv").read_text(encoding="utf-8")
    assert " de a" not in fr and " je a" not in fr.lower()          # elision applied to the frames


def test_the_shipped_phrases_keep_each_languages_punctuation_and_no_row_twice():
    rows = pb.read_rows(pb.SOURCE_DIR / "phrases.tsv")
    assert len(rows) >= 13000
    lines = ["\t".join(r) for r in rows]
    assert len(set(lines)) == len(lines)                                   # a row at most once
    bad_fr = [r[1] for r in rows if re.search(r"[^\s?!][?!:;]", r[1])]     # French: a space before ? ! : ;
    bad_es = [r[3] for r in rows if ("?" in r[3]) != ("¿" in r[3]) or ("!" in r[3]) != ("¡" in r[3])]
    curly = [c for r in rows for c in r if "\u2019" in c]                  # straight apostrophes throughout
    assert not bad_fr and not bad_es and not curly, (bad_fr[:3], bad_es[:3], curly[:3])
    questions = [r for r in rows if r[0].endswith("?")]
    assert len(questions) > len(rows) / 5                                  # columns in order: a question stays one
    assert all(sum(r[k].endswith("?") for r in questions) >= 0.99 * len(questions) for k in range(1, 5))


def test_building_with_nothing_to_hold_out_warns(tmp_path, caplog):
    pb.build_phrasebook(tmp_path / "out", [tmp_path / "no-corpora"], None, _source(tmp_path))
    assert "nothing is held out" in caplog.text and "no-corpora" in caplog.text


def test_cli_builds_it(tmp_path):
    (tmp_path / "dev.en-fr.tsv").write_text("Hello there.\tSalut.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["data", "phrasebook", "-o", str(tmp_path / "pb"), "--held", str(tmp_path),
                                 "--fillers-per-frame", "2"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["fillers_per_frame"] == 2 and json.loads(result.output)["eval_sentences_checked"] == 2  # both sides
