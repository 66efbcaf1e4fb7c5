"""Where a model trails the teacher on a pair corpus: P@1 (en<->X, both directions, the whole pool per language,
as `lwx-edge eval`) by the English text's length in words, and each length's share of the whole gap.

    python tools/gap_by_length.py [BUNDLE] [--split dev] [--corpus data/corpus/everyday] [-o FILE.json]

BUNDLE defaults to the shipped model. Prints a markdown table; ``-o`` also writes the numbers as JSON.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lwx_edge.atomic import write_json_atomic  # noqa: E402
from lwx_edge.evaluate import nearest, tsv_pairs  # noqa: E402

BINS = ((1, 2), (3, 5), (6, 10), (11, None))


def _label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else f"{lo}-{hi}"


def hits_by_length(embed: Callable[[Sequence[str]], np.ndarray], pairs: dict[str, tuple[list[str], list[str]]],
                   bins=BINS) -> dict[str, list[int]]:
    """{length bin: [hits, queries]} over both directions of every language's pairs, binned by the English
    side's word count (the same bin for the query and its gold item)."""
    out = {_label(*b): [0, 0] for b in bins}
    for en, xx in pairs.values():
        if not en:
            continue
        words = np.array([len(t.split()) for t in en])
        e, x = embed(en), embed(xx)
        for q, k in ((e, x), (x, e)):
            hit = nearest(q, k) == np.arange(len(q))
            for lo, hi in bins:
                m = (words >= lo) & (words <= (hi or np.inf))
                out[_label(lo, hi)][0] += int(hit[m].sum())
                out[_label(lo, hi)][1] += int(m.sum())
    return out


def gap_table(model: dict[str, list[int]], teacher: dict[str, list[int]]) -> dict:
    """P@1 per bin for both, and each bin's share of the whole gap in points of the overall P@1."""
    total = sum(n for _, n in model.values())
    rows = {b: {"queries": n, "model": h / n if n else None, "teacher": teacher[b][0] / n if n else None,
                "gap_points": 100 * (teacher[b][0] - h) / total}
            for b, (h, n) in model.items()}
    rows["all"] = {"queries": total, "model": sum(h for h, _ in model.values()) / total,
                   "teacher": sum(h for h, _ in teacher.values()) / total,
                   "gap_points": sum(r["gap_points"] for r in rows.values())}
    return rows


def markdown(rows: dict) -> str:
    lines = ["| English words | queries | model P@1 | teacher P@1 | gap (points of the whole) |", "|---|---|---|---|---|"]
    for b, r in rows.items():
        m, t = (f"{r[k]:.3f}" if r[k] is not None else "-" for k in ("model", "teacher"))
        lines.append(f"| {b} | {r['queries']:,} | {m} | {t} | {r['gap_points']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", nargs="?", default="default")
    p.add_argument("--split", default="dev", choices=["dev", "test"])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus/everyday"))
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("-o", "--out", type=Path)
    args = p.parse_args(argv)
    from lwx_edge import Encoder
    from lwx_edge.data.teacher import USETeacher

    files = sorted(args.corpus.glob(f"{args.split}.en-*.tsv"))
    if not files:
        raise SystemExit(f"{args.corpus}: no {args.split}.en-xx.tsv files (run: lwx-edge data everyday)")
    pairs = {f.name.split(".")[1][3:]: tsv_pairs(f) for f in files}
    model, teacher = Encoder.load(args.bundle), USETeacher(threads=args.threads)
    rows = gap_table(hits_by_length(model.embed, pairs), hits_by_length(lambda t: teacher.encode(list(t)), pairs))
    print(markdown(rows))
    if args.out:
        write_json_atomic(args.out, {"bundle": str(args.bundle), "corpus": str(args.corpus), "split": args.split,
                                     "rows": rows})


if __name__ == "__main__":
    main()
