"""What a run reads: the parallel and monolingual corpora (files, or directories of them) and the dev sets."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import LwxError


def expand(paths: list[str], pattern: str) -> list[str]:
    """Files as given; a directory stands for its files matching ``pattern`` (sorted)."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob(pattern))
            if not found:
                raise LwxError(f"{p}: no {pattern} files in this directory")
            out.extend(str(f) for f in found)
        else:
            out.append(str(p))
    return out


def dev_sets(entries: list[str]) -> list[tuple[str, dict[str, tuple[list[str], list[str]]]]]:
    """The retrieval sets of ``dev_xsr``: one per entry (a directory's ``dev.*.tsv*`` files, or one file), named
    after it, {lang: (English texts, translations)}. Scored apart, so a small set is not cut off by a large one's
    per-language cap."""
    from ..data.corpus import langs_from_name
    from ..evaluate import tsv_pairs

    sets = []
    for entry in entries:
        pairs: dict[str, tuple[list[str], list[str]]] = {}
        for path in expand([entry], "dev.*.tsv*"):
            src, tgt = tsv_pairs(path)
            lang = langs_from_name(path)[1]
            prev = pairs.get(lang, ([], []))
            pairs[lang] = (prev[0] + src, prev[1] + tgt)
        sets.append((Path(entry).name if Path(entry).is_dir() else Path(entry).stem, pairs))
    return sets


def read_pairs(paths: list[str], say, pattern: str = "train.*.tsv*") -> list:
    """The filtered sentence pairs of the parallel files (directories: their ``pattern`` files), each with its
    ``source``: the entry of ``paths`` it came from, as given (``data/corpus/ddtp``). The corpus statistics go
    to ``say``."""
    from ..data.corpus import CorpusStats, Pair, PairFilter, filter_pairs, read_parallel

    stats, pairs = CorpusStats(), []
    for entry in paths:
        for path in expand([entry], pattern):
            pairs.extend(Pair(p.src, p.tgt, p.src_lang, p.tgt_lang, str(entry))
                         for p in filter_pairs(read_parallel(path, stats=stats), PairFilter(), stats=stats))
    say(f"corpus: {stats.report()}")
    return pairs


def read_mono(paths: list[str], max_per_file: int | None = None, seed: int = 0) -> list[str]:
    """Lines of the monolingual files; with ``max_per_file``, a seeded sample of that many from each
    (in file order), which bounds the teacher-caching time."""
    from ..data.mono import read_mono

    out = []
    for p in expand(paths, "train.*.txt"):
        lines = list(read_mono(p))
        if max_per_file is not None and len(lines) > max_per_file:
            keep = np.random.default_rng(seed).choice(len(lines), max_per_file, replace=False)
            lines = [lines[i] for i in np.sort(keep)]
        out.extend(lines)
    return out
