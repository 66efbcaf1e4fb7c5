"""Evaluation protocols (torch-free): cross-lingual sentence retrieval (cosine P@1) on DDTP."""
from __future__ import annotations

import json
import os
from typing import Callable, Sequence

import numpy as np

from .errors import CorpusError
from .text import normalize


def ddtp_pairs(docs_path: str | os.PathLike, lang: str, field: str = "short") -> tuple[list[str], list[str]]:
    """English/``lang`` text pairs of one DDTP split file (``{split}.docs.jsonl``), deduplicated on
    both sides (normalised) so that every query has exactly one gold target."""
    src, tgt, seen_s, seen_t = [], [], set(), set()
    try:
        with open(docs_path, encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                en, xx = doc.get(field, {}).get("en"), doc.get(field, {}).get(lang)
                if not en or not xx:
                    continue
                ks, kt = normalize(en), normalize(xx)
                if ks in seen_s or kt in seen_t:
                    continue
                seen_s.add(ks)
                seen_t.add(kt)
                src.append(en)
                tgt.append(xx)
    except OSError as e:
        raise CorpusError(f"{docs_path}: cannot read DDTP docs ({e.strerror})") from None
    return src, tgt


def p_at_1(queries: np.ndarray, keys: np.ndarray) -> float:
    """Share of queries whose cosine nearest key is the one with the same index."""
    q = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    k = keys / np.maximum(np.linalg.norm(keys, axis=1, keepdims=True), 1e-12)
    hits = 0
    for s in range(0, len(q), 1024):
        hits += int((np.argmax(q[s:s + 1024] @ k.T, axis=1) == np.arange(s, min(s + 1024, len(q)))).sum())
    return hits / len(q)


def retrieval(embed: Callable[[Sequence[str]], np.ndarray], docs_path: str | os.PathLike,
              langs: Sequence[str] = ("fr", "de", "es", "it"), field: str = "short",
              max_pairs: int | None = None) -> dict[str, float]:
    """P@1 both directions for en<->each language: {"en-fr": .., "fr-en": .., ..., "avg": ..}."""
    out = {}
    for lang in langs:
        src, tgt = ddtp_pairs(docs_path, lang, field)
        if max_pairs:
            src, tgt = src[:max_pairs], tgt[:max_pairs]
        if len(src) < 2:
            continue
        es, et = embed(src), embed(tgt)
        out[f"en-{lang}"] = p_at_1(es, et)
        out[f"{lang}-en"] = p_at_1(et, es)
    if out:
        out["avg"] = float(np.mean(list(out.values())))
    return out


def tfidf_embedder(fit_texts: Sequence[str]) -> Callable[[Sequence[str]], np.ndarray]:
    """Word-level TF-IDF vectors (scikit-learn) fitted on ``fit_texts``: the lexical baseline."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(preprocessor=normalize, sublinear_tf=True).fit(fit_texts)
    return lambda texts: vec.transform(texts).toarray().astype(np.float32)
