"""Ding's everyday example sentences in French, Spanish and Italian, as parallel train pairs (torch-free).

German is the one language level with the teacher on everyday text, and the one with Ding's German-English
example sentences in training (issue 35). ``lwx_edge/data/ding/sentences.tsv`` holds 14.5k of them (whole
sentences of 3-12 English words: "None of your excuses!", "The game is not worth the candle.") with Ding's German
and translations into French, Spanish and Italian written for the project, idioms by idioms. English and German
are Ding's (Frank Richter, TU Chemnitz; Debian ``trans-de-en``), so the file is GPL-2+ like Ding; the weights
trained on it were already trained on Ding. Columns ``en fr de es it``, ``#`` comments.

:func:`build_ding_sentences` writes ``train.en-{fr,es,it}.tsv`` (German is in the everyday corpus already),
leaving out, like the phrasebook, every pair whose English or translation is a sentence of a ``dev*``/``test*``
pair file under ``eval_dirs``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..atomic import write_json_atomic
from ..errors import CorpusError
from .phrasebook import COLUMNS, eval_sentences, read_rows, write_pairs

SOURCE = Path(__file__).with_name("ding") / "sentences.tsv"
LANGS = ("fr", "es", "it")


def build_ding_sentences(out_dir: str | Path = "data/corpus/ding-sentences",
                         eval_dirs: Iterable[str | Path] = ("data/corpus",), source: str | Path = SOURCE) -> dict:
    """Write ``out_dir/train.en-{fr,es,it}.tsv`` and ``summary.json`` atomically; return the summary."""
    source = Path(source)
    if not source.is_file():
        raise CorpusError(f"{source}: no such file (Ding's translated sentences)")
    rows = read_rows(source)
    held = eval_sentences(list(eval_dirs))
    summary: dict = {"sentences": len(rows), "eval_sentences_checked": len(held), "pairs": {},
                     "dropped": {"in_eval": 0, "duplicate": 0}}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        i = COLUMNS.index(lang)
        summary["pairs"][lang] = write_pairs(out / f"train.en-{lang}.tsv", [(row[0], row[i]) for row in rows], held,
                                             summary["dropped"])
    write_json_atomic(out / "summary.json", summary)
    return summary


__all__ = ["LANGS", "SOURCE", "build_ding_sentences"]
