"""Classifier heads fitted on frozen sentence embeddings (scikit-learn API; numpy prediction; no pickle).

    from lwx_edge import Encoder
    from lwx_edge.heads import MLPHead, LogisticHead, load_head

    enc = Encoder.load("bundle")
    head = MLPHead(encoder=enc).fit(texts, labels)       # or .fit(enc.embed(texts), labels)
    head.predict(["Un jeu de stratégie"])                # any of the five languages
    head.save("bundle/heads/topic")                      # head.json + head.npz
    head = load_head("bundle/heads/topic", encoder=enc)  # refused for another encoder

``head.evaluate(texts, labels)`` gives accuracy, macro-F1 and the confusion matrix, e.g. on another
language's labelled data (the MLDoc zero-shot protocol); ``format_confusion(report)`` prints it. On embeddings
(no encoder) the heads are scikit-learn classifiers that pass ``check_estimator`` (but for the checks listed in
``EXPECTED_FAILED_CHECKS``) and work in ``cross_val_score``, pipelines and grid searches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import BaseHead, format_confusion
from .labelled import LabelledFile, read_labelled
from .logistic import LogisticHead
from .mlp import MLPHead
from .persistence import HeadError, NotFittedHeadError, load_head, read_head_meta, save_head

if TYPE_CHECKING:
    from ..encoder import Encoder

__all__ = ["BaseHead", "LogisticHead", "MLPHead", "HeadError", "NotFittedHeadError", "load_head", "save_head",
           "read_head_meta", "format_confusion", "make_head", "HEAD_KINDS", "DEFAULT_HEAD_KIND", "read_labelled",
           "LabelledFile"]

HEAD_KINDS = ("logistic", "mlp")
# The head that wins on small data (a few dozen examples per class), in-language and zero-shot cross-lingual:
# benchmarks/compare_heads.md (tools/compare_heads.py). ``lwx-edge fit --kind`` defaults to the same.
DEFAULT_HEAD_KIND = "logistic"


def make_head(kind: str = DEFAULT_HEAD_KIND, encoder: Encoder | None = None, **params: Any) -> BaseHead:
    """A new, unfitted head of ``kind`` ("logistic", the default, or "mlp"). On small data (4 to 32 examples
    per class) the logistic head scored higher than the MLP in English and zero-shot in other languages
    (``benchmarks/compare_heads.md``)."""
    from ..errors import InputError

    kinds = {"mlp": MLPHead, "logistic": LogisticHead}
    if kind not in kinds:
        raise InputError(f"unknown head kind {kind!r}; choose one of {', '.join(HEAD_KINDS)}")
    return kinds[kind](encoder=encoder, **params)
