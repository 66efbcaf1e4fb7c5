"""Which side of a pair corpus the student loses on: P@1 with the student's or the teacher's vectors on each side.

The student distils the teacher in its output space (``kd_space: output``), so both give 512-d vectors in one space
and a teacher query can search a student pool. Per language and direction it scores student/student,
teacher/teacher and the two mixes (e.g. the teacher's French queries against the student's English pool: if that
beats the student's own French queries, the student's French side is the weaker one), and the mean cosine between
the student's and the teacher's vector of the same text, per side.

    python tools/cross_space.py [BUNDLE] [--split dev] [--corpus data/corpus/conversation] [-o FILE.json]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lwx_edge.atomic import write_json_atomic  # noqa: E402
from lwx_edge.evaluate import nearest, tsv_pairs  # noqa: E402


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def p_at_1(queries: np.ndarray, pool: np.ndarray) -> float:
    return float((nearest(queries, pool) == np.arange(len(queries))).mean())


def cross_space(se: np.ndarray, sx: np.ndarray, te: np.ndarray, tx: np.ndarray) -> dict:
    """P@1 of every student (S) / teacher (T) mix for X->en and en->X, and cos(S, T) of the same text per side."""
    return {"x->en": {"S/S": p_at_1(sx, se), "T/T": p_at_1(tx, te), "T(x)->S(en)": p_at_1(tx, se),
                      "S(x)->T(en)": p_at_1(sx, te)},
            "en->x": {"S/S": p_at_1(se, sx), "T/T": p_at_1(te, tx), "S(en)->T(x)": p_at_1(se, tx),
                      "T(en)->S(x)": p_at_1(te, sx)},
            "cos(S,T)": {"en": float(np.mean(np.sum(se * te, 1))), "x": float(np.mean(np.sum(sx * tx, 1)))}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", nargs="?", default="default")
    p.add_argument("--split", default="dev", choices=["dev", "test"])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus/conversation"))
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("-o", "--out", type=Path)
    args = p.parse_args(argv)
    from lwx_edge import Encoder
    from lwx_edge.data.teacher import USETeacher

    files = sorted(args.corpus.glob(f"{args.split}.en-*.tsv"))
    if not files:
        raise SystemExit(f"{args.corpus}: no {args.split}.en-xx.tsv files (run: lwx-edge data conversation)")
    model, teacher = Encoder.load(args.bundle), USETeacher(threads=args.threads)
    if model.dim != teacher.dim:
        raise SystemExit(f"{args.bundle}: {model.dim}-d vectors, the teacher's are {teacher.dim}-d: no shared space")
    rows = {}
    print("| lang | X->en S/S | T/T | T(x)->S(en) | S(x)->T(en) | en->X S/S | T/T | S(en)->T(x) | T(en)->S(x) "
          "| cos(S,T) en | x |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for f in files:
        lang = f.name.split(".")[1][3:]
        en, xx = tsv_pairs(f)
        r = rows[lang] = cross_space(unit(model.embed(en)), unit(model.embed(xx)),
                                     unit(teacher.encode(list(en))), unit(teacher.encode(list(xx))))
        cells = [*r["x->en"].values(), *r["en->x"].values(), *r["cos(S,T)"].values()]
        print(f"| {lang} | " + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    if args.out:
        write_json_atomic(args.out, {"bundle": str(args.bundle), "corpus": str(args.corpus), "split": args.split,
                                     "rows": rows})


if __name__ == "__main__":
    main()
