"""Machine-translate English sentences into French, Spanish and Italian with Debian's Apertium (issue 35).

Debian has no English-French or English-Italian Apertium pair, so French and Italian go through a pivot:
English -> Spanish (``eng-spa``) -> French (``es-fr``), English -> Catalan (``eng-cat``) -> Italian
(``cat-ita``); Spanish is direct. Needs ``apt-get install apertium apertium-eng-spa apertium-fr-es
apertium-eng-cat apertium-cat-ita``. Measured against the same sentences translated by hand in
docs/HISTORY.md ("Ding's sentences in French, Spanish and Italian").

    python tools/apertium_pairs.py rows.tsv out.tsv        # rows.tsv: en<TAB>de (header line en, de); out: en fr de es it
    python tools/apertium_pairs.py --probe phrases.tsv     # teacher cosine and P@1 of human vs Apertium rows
"""
from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys

ROUTES = {"fr": ("eng-spa", "es-fr"), "es": ("eng-spa",), "it": ("eng-cat", "cat-ita")}


def translate(texts: list[str], route: tuple[str, ...]) -> list[str]:
    """One line in, one line out, through each Apertium mode of ``route`` in turn (``-u``: no unknown-word marks)."""
    out = "".join(t.replace("\n", " ") + "\n" for t in texts)
    for mode in route:
        out = subprocess.run(["apertium", "-u", mode], input=out, capture_output=True, text=True, check=True).stdout
    lines = [line.strip() for line in out.rstrip("\n").split("\n")]
    if len(lines) != len(texts):
        sys.exit(f"apertium {' | '.join(route)}: {len(lines)} lines out for {len(texts)} in")
    return lines


def probe(phrases: str, n: int, seed: int) -> None:
    """The teacher's cosine and X->en P@1 of the phrasebook's translations and of Apertium's, on ``n`` rows."""
    import numpy as np

    from lwx_edge.data.teacher import USETeacher
    rows = [line.rstrip("\n").split("\t") for line in open(phrases, encoding="utf-8")
            if line.strip() and not line.startswith("#")]
    rows = random.Random(seed).sample(rows, n)
    en, human = [r[0] for r in rows], {"fr": [r[1] for r in rows], "es": [r[3] for r in rows], "it": [r[4] for r in rows]}
    teacher = USETeacher(threads=2)

    def unit(texts):
        v = np.asarray(teacher.encode(texts), dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    e = unit(en)
    print(f"{n} phrasebook rows, teacher cosine with the English / X->en P@1 among them")
    for lang, route in ROUTES.items():
        for name, texts in (("human", human[lang]), ("apertium " + ">".join(route), translate(en, route))):
            s = unit(texts) @ e.T
            print(f"{lang} {name:28s} {np.mean(np.diag(s)):.3f} / {np.mean(s.argmax(1) == np.arange(n)):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="en<TAB>de rows (first line a header), or the phrasebook with --probe")
    ap.add_argument("out", nargs="?", help="where to write en fr de es it rows")
    ap.add_argument("--probe", action="store_true", help="compare with the phrasebook's own translations")
    ap.add_argument("-n", type=int, default=600)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    if shutil.which("apertium") is None:
        sys.exit("apertium is not installed: apt-get install apertium apertium-eng-spa apertium-fr-es "
                 "apertium-eng-cat apertium-cat-ita")
    if args.probe:
        return probe(args.src, args.n, args.seed)
    if not args.out:
        sys.exit("give an output file (or --probe)")
    rows = [line.rstrip("\n").split("\t") for line in open(args.src, encoding="utf-8")][1:]
    en, de = [r[-2] for r in rows], [r[-1] for r in rows]
    mt = {lang: translate(en, route) for lang, route in ROUTES.items()}
    with open(args.out, "w", encoding="utf-8") as f:
        for row in zip(en, mt["fr"], de, mt["es"], mt["it"]):
            f.write("\t".join(row) + "\n")
    print(f"{len(en)} rows -> {args.out}")


if __name__ == "__main__":
    main()
