"""Ding's sentences in French, Spanish and Italian: the shipped file's shape and punctuation, the builder's pairs,
its check against evaluation sentences, and one clear error for a malformed or missing source."""
import json
import re

import pytest
from typer.testing import CliRunner

import lwx_edge.data.ding_sentences as ding
from lwx_edge.cli import app
from lwx_edge.data.phrasebook import read_rows
from lwx_edge.errors import CorpusError

ROWS = ("# GPL-2+\n"
        "Never say die!\tNe baisse pas les bras !\tNur nicht verzweifeln!\t¡No te rindas!\tNon mollare!\n"
        "What a pity.\tQuel dommage.\tWie schade.\tQué pena.\tChe peccato.\n"
        "Does that name ring a bell?\tCe nom te dit quelque chose ?\tSagt dir der Name etwas?\t"
        "¿Te suena ese nombre?\tQuel nome ti dice qualcosa?\n")


def test_build_writes_french_spanish_italian_and_drops_evaluation_sentences(tmp_path):
    src = tmp_path / "sentences.tsv"
    src.write_text(ROWS, encoding="utf-8")
    held = tmp_path / "corpus" / "conversation"
    held.mkdir(parents=True)
    (held / "test.en-it.tsv").write_text("Oh well.\tChe peccato!\n", encoding="utf-8")   # held by its Italian only
    summary = ding.build_ding_sentences(tmp_path / "out", [tmp_path / "corpus"], src)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "summary.json", "train.en-es.tsv", "train.en-fr.tsv", "train.en-it.tsv"]          # German: the everyday corpus's
    assert summary["pairs"] == {"fr": 3, "es": 3, "it": 2} and summary["dropped"]["in_eval"] == 1
    it = (tmp_path / "out" / "train.en-it.tsv").read_text(encoding="utf-8").splitlines()
    assert it == ["Never say die!\tNon mollare!", "Does that name ring a bell?\tQuel nome ti dice qualcosa?"]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["sentences"] == 3


@pytest.mark.parametrize("text, message", [
    (ROWS.replace("\tNon mollare!", ""), r"sentences\.tsv:2: expected 5"),
    (ROWS.replace("¡No te rindas!", " "), r"sentences\.tsv:2: expected 5 non-empty"),
    (None, "no such file")])
def test_a_bad_source_is_one_clear_error_and_nothing_is_written(tmp_path, text, message):
    src = tmp_path / "sentences.tsv"
    if text is not None:
        src.write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        ding.build_ding_sentences(tmp_path / "out", [], src)
    assert not (tmp_path / "out").exists()


def test_the_shipped_sentences_keep_each_languages_punctuation_and_no_row_twice():
    rows = read_rows(ding.SOURCE)
    assert len(rows) >= 14000
    lines = ["\t".join(r) for r in rows]
    assert len(set(lines)) == len(lines) and len({r[0] for r in rows}) == len(rows)
    bad_fr = [r[1] for r in rows if re.search(r"[^\s?!][?!:;]", r[1])]     # French: a space before ? ! : ;
    bad_es = [r[3] for r in rows if ("?" in r[3]) != ("¿" in r[3]) or ("!" in r[3]) != ("¡" in r[3])]
    curly = [c for r in rows for c in r if "\u2019" in c]                  # straight apostrophes throughout
    assert not bad_fr and not bad_es and not curly, (bad_fr[:3], bad_es[:3], curly[:3])
    questions = [r for r in rows if r[0].endswith("?")]
    assert len(questions) > 0.05 * len(rows)                               # columns in order: a question stays one
    assert all(sum(r[k].endswith("?") for r in questions) >= 0.99 * len(questions) for k in (1, 3, 4))
    assert all(3 <= len(r[0].split()) <= 12 for r in rows)                 # whole everyday sentences, not headwords


def test_cli_builds_it(tmp_path):
    (tmp_path / "dev.en-fr.tsv").write_text("Never say die!\tJamais !\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["data", "ding-sentences", "-o", str(tmp_path / "ds"), "--held", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["eval_sentences_checked"] == 2 and min(summary["pairs"].values()) >= 14000
    assert "Never say die!\t" not in (tmp_path / "ds" / "train.en-fr.tsv").read_text(encoding="utf-8")
