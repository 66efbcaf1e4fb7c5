"""Is a model collapsed? Unrelated texts of the probe set should get different vectors (numpy only).

A training run can end with an encoder that maps every text to nearly the same vector (the alignment loss at
2·ln n, retrieval at chance) and still write a bundle that loads and exports. :func:`check` embeds the probe
set's sentences (:mod:`lwx_edge.probe`: ten groups, each one sentence in five languages) and measures the
mean cosine of texts from different groups: the shipped default scores 0.06, the teacher 0.06, a collapsed model
close to 1. ``lwx-edge export`` refuses such a model, ``lwx-edge eval`` warns.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .errors import LwxError

MAX_UNRELATED_COS = 0.9  # above this mean cosine between unrelated probe texts, the model is collapsed


class CollapsedModelError(LwxError):
    """The model gives unrelated texts nearly the same vector: a collapsed training run."""


def probe_texts() -> tuple[list[str], np.ndarray]:
    """The probe set's sentences and the group (meaning) of each."""
    from .probe import GROUPS

    texts, groups = [], []
    for g, (_, by_lang) in enumerate(GROUPS):
        for text in by_lang.values():
            texts.append(text)
            groups.append(g)
    return texts, np.asarray(groups)


def unrelated_cosine(vectors: np.ndarray, groups: np.ndarray) -> float:
    """Mean cosine over every pair of texts from different groups."""
    v = np.asarray(vectors, np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms > 0, norms, 1.0)
    cos = v @ v.T
    different = groups[:, None] != groups[None, :]
    return float(cos[different].mean())


def check(embed: Callable[[Sequence[str]], np.ndarray], what: str) -> float:
    """The mean unrelated-pair cosine of ``embed`` on the probe set; CollapsedModelError above
    :data:`MAX_UNRELATED_COS` (or for non-finite vectors), naming ``what`` and what it means."""
    texts, groups = probe_texts()
    vectors = np.asarray(embed(texts))
    if not np.isfinite(vectors).all():
        raise CollapsedModelError(f"{what}: the model gives non-finite vectors (NaN or inf) for the probe texts: "
                                  "its weights are broken (a diverged training run?)")
    cos = unrelated_cosine(vectors, groups)
    if cos > MAX_UNRELATED_COS:
        raise CollapsedModelError(
            f"{what}: the model is collapsed: unrelated probe texts get nearly the same vector (mean cosine "
            f"{cos:.3f}; the shipped default 0.06; limit {MAX_UNRELATED_COS}), so retrieval and classification "
            "would be at chance. The training run that made it diverged; look at its metrics.jsonl "
            "(dev P@1, the alignment loss near 2·ln(batch size)) and retrain from an earlier checkpoint or with "
            "a lower learning rate")
    return cos


__all__ = ["MAX_UNRELATED_COS", "CollapsedModelError", "check", "probe_texts", "unrelated_cosine"]
