"""Monolingual text per language, for distillation on single sentences (torch-free).

Built from the *train* split files only, so dev/test text never reaches training: each language side of
``train.en-xx.tsv`` (DDTP short descriptions and paragraphs, gettext strings, dialogue lines) and every text of
``train.docs.jsonl`` (DDTP descriptions, including the English ones no one translated).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError, open_input
from ..text import LANGUAGES, normalize
from .corpus import CorpusStats, PairFilter, _Checker, read_tsv


def _doc_texts(path: Path) -> Iterator[tuple[str, str]]:
    """(lang, text) of the short descriptions and long-description paragraphs of a docs.jsonl file."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise CorpusError(f"{path.name}:{i}: not valid JSON ({e.msg})") from None
            for lang, text in (rec.get("short") or {}).items():
                yield lang, text
            for lang, text in (rec.get("long") or {}).items():
                for para in text.split("\n"):
                    yield lang, para


def build_mono(out_dir: str | Path, corpus_dirs, langs=LANGUAGES, filt: PairFilter | None = None,
               extra: dict[str, list[str]] | None = None) -> dict:
    """Write ``out_dir/train.{lang}.txt``: every distinct sentence of ``lang`` (distinct once normalised;
    the first original casing kept), one per line, from the train split files of the ``corpus_dirs``
    (DDTP, gettext, dialogue; a missing one is skipped). Each text passes the per-side filters of ``filt``
    (length, letters, charset); ``extra`` ({lang: texts}) adds texts from other sources through the same
    filters. Also writes ``summary.json``; returns {lang: sentences, ...}."""
    checker = _Checker(filt or PairFilter())
    langs = tuple(langs)
    seen: dict[str, set[str]] = {lang: set() for lang in langs}
    lines: dict[str, list[str]] = {lang: [] for lang in langs}
    dropped: dict[str, int] = {}
    stats = CorpusStats()
    sources = []

    def add(lang: str, text: str) -> None:
        if lang not in seen:
            return
        text = " ".join(text.split())
        norm = normalize(text)
        reason = checker.text_reason(norm, lang)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
        elif norm not in seen[lang]:
            seen[lang].add(norm)
            lines[lang].append(text)

    dirs = [Path(d) for d in corpus_dirs]
    for d in dict.fromkeys(dirs):
        if not d.is_dir():
            continue
        for path in sorted(d.glob("train.*.tsv*")):
            sources.append(str(path))
            for p in read_tsv(path, stats=stats):
                add(p.src_lang, p.src)
                add(p.tgt_lang, p.tgt)
        docs = d / "train.docs.jsonl"
        if docs.is_file():
            sources.append(str(docs))
            for lang, text in _doc_texts(docs):
                add(lang, text)
    for lang, texts in (extra or {}).items():
        sources.append(f"{len(texts)} extra {lang} texts")
        for text in texts:
            add(lang, text)
    if not sources:
        raise CorpusError(f"no train.*.tsv or train.docs.jsonl files in {', '.join(map(str, dirs)) or '(none given)'}")
    out_dir = Path(out_dir)
    for lang in langs:
        write_text_atomic(out_dir / f"train.{lang}.txt", "".join(t + "\n" for t in lines[lang]))
    summary = {lang: len(lines[lang]) for lang in langs}
    write_json_atomic(out_dir / "summary.json", {"sentences": summary, "dropped": dropped,
                                                 "bad_lines": stats.report(), "sources": sources})
    return summary


def read_mono(path: str | Path) -> Iterator[str]:
    """The non-empty lines of a monolingual file, stripped; CorpusError when the file is missing or a line is
    not UTF-8 (a binary or Latin-1 file is refused, not read as replacement characters)."""
    with open_input(path, "monolingual file", CorpusError, mode="rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as e:
                raise CorpusError(f"{path} line {n}: not valid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as "
                                  "UTF-8") from None
            if line:
                yield line
