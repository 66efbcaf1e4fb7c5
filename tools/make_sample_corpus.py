"""Build the sample corpus shipped in ``examples/corpus`` (the smoke recipe's data, no data build needed).

    python tools/make_sample_corpus.py            # from data/corpus/dialogue (lwx-edge data dialogue)

A seeded sample of the Wesnoth dialogue corpus (GPL-2.0-or-later, like the game): ``--pairs`` train pairs per
language pair of at most ``--max-words`` English words (short lines keep the teacher's part of a smoke run short), the whole dev split (other campaigns than the train split: the corpus is split by campaign), and
``--mono`` monolingual lines per language taken from train pairs the sample does not use. No test-split line is
read. ``examples/corpus/README.md`` records the origin, the licence and the counts.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("fr", "de", "es", "it")


def read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        en, xx = line.split("\t")
        pairs.append((en, xx))
    return pairs


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=ROOT / "data" / "corpus" / "dialogue")
    ap.add_argument("--out", type=Path, default=ROOT / "examples" / "corpus")
    ap.add_argument("--pairs", type=int, default=2000, help="train pairs per language pair")
    ap.add_argument("--mono", type=int, default=500, help="monolingual lines per language")
    ap.add_argument("--max-words", type=int, default=16, help="longest English side (words) of a sampled line")
    a = ap.parse_args()
    (a.out / "mono").mkdir(parents=True, exist_ok=True)
    counts: dict = {"train": {}, "dev": {}, "mono": {}}
    english: list[str] = []
    for lang in LANGS:
        train = [p for p in read_pairs(a.source / f"train.en-{lang}.tsv") if len(p[0].split()) <= a.max_words]
        random.Random(f"sample-{lang}").shuffle(train)
        sample, rest = train[: a.pairs], train[a.pairs:]
        write_lines(a.out / f"train.en-{lang}.tsv", [f"{en}\t{xx}" for en, xx in sample])
        dev = read_pairs(a.source / f"dev.en-{lang}.tsv")
        write_lines(a.out / f"dev.en-{lang}.tsv", [f"{en}\t{xx}" for en, xx in dev])
        write_lines(a.out / "mono" / f"train.{lang}.txt", [xx for _, xx in rest[: a.mono]])
        english += [en for en, _ in rest[a.mono: a.mono + a.mono // len(LANGS)]]
        counts["train"][f"en-{lang}"], counts["dev"][f"en-{lang}"] = len(sample), len(dev)
        counts["mono"][lang] = min(a.mono, len(rest))
    write_lines(a.out / "mono" / "train.en.txt", english)
    counts["mono"]["en"] = len(english)
    (a.out / "summary.json").write_text(json.dumps({"source": "lwx-edge data dialogue (Wesnoth 1.16 campaigns)",
                                                    "licence": "GPL-2.0-or-later", **counts}, indent=2) + "\n")
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
