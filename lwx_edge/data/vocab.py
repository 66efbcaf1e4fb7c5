"""The tokenizer's training text: a mix where everyday text has real weight.

The trainer's own tokenizer is learned from its training pairs and monolingual sample, which are mostly
software prose (package descriptions, UI strings); everyday words then split into many pieces
("appointment" -> app·o·int·ment). This mix takes *every* everyday text of the train splits (everyday and
dialogue pairs, both sides, and the everyday monolingual file) and adds as much software text again: half
from the parallel train splits, half from the monolingual one, a seeded sample of each. Only train splits
are read, so no dev or test text shapes the vocabulary.
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

from ..errors import CorpusError
from .corpus import read_tsv
from .mono import read_mono

log = logging.getLogger(__name__)

EVERYDAY_PAIRS = ("everyday", "dialogue")
SOFTWARE_PAIRS = ("ddtp", "gettext")


def _pair_sides(path: Path) -> list[str]:
    return [t for pair in read_tsv(path) for t in (pair.src, pair.tgt)]


def tokenizer_texts(corpus_root: str | Path = "data/corpus", seed: int = 0) -> tuple[list[str], dict]:
    """(texts, summary): every everyday train text plus an equal amount of software text (half parallel,
    half monolingual), shuffled with ``seed``."""
    root = Path(corpus_root)
    everyday: list[str] = []
    for name in EVERYDAY_PAIRS:
        for p in sorted((root / name).glob("train*.en-*.tsv")):
            everyday += _pair_sides(p)
    for p in sorted((root / "everyday" / "mono").glob("train.*.txt")):
        everyday += read_mono(p)
    software = [t for name in SOFTWARE_PAIRS for p in sorted((root / name).glob("train.en-*.tsv"))
                for t in _pair_sides(p)]
    mono = [t for p in sorted((root / "mono").glob("train.*.txt")) for t in read_mono(p)]
    if not everyday:
        raise CorpusError(f"no everyday train text under {root} (run: lwx-edge data everyday, lwx-edge data "
                          "dialogue)")
    if not software and not mono:
        raise CorpusError(f"no software train text under {root} (run: lwx-edge data ddtp, lwx-edge data mono)")
    rng = random.Random(seed)
    rng.shuffle(software)
    rng.shuffle(mono)
    half = len(everyday) // 2
    texts = everyday + software[:half] + mono[:half]
    rng.shuffle(texts)
    summary = {"everyday": len(everyday), "software_pairs": min(half, len(software)),
               "software_mono": min(half, len(mono)), "total": len(texts)}
    log.info("tokenizer text: %s", summary)
    return texts, summary


def build_tokenizer(out_path: str | Path, vocab_size: int = 24000, corpus_root: str | Path = "data/corpus",
                    seed: int = 0) -> dict:
    """Train a SentencePiece BPE model on :func:`tokenizer_texts` and write it to ``out_path``."""
    from ..tokenizer import train_tokenizer

    texts, summary = tokenizer_texts(corpus_root, seed)
    train_tokenizer(texts, out_path, vocab_size=vocab_size, seed=seed, progress=False, strict_vocab=True)
    return {**summary, "vocab_size": vocab_size, "out": str(out_path)}


__all__ = ["build_tokenizer", "tokenizer_texts"]
