"""Cosine similarity and exact nearest-neighbour search over embeddings (numpy only).

    from lwx_edge.search import similarity, search
    s = similarity(a, b)                          # vectors: [d]x[d] -> float, [n,d]x[m,d] -> [n, m]
    idx, scores = search(queries, corpus, 5)      # [nq, 5] each, best first

``Encoder.similarity`` / ``Encoder.search`` accept texts as well and call these.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import InputError

__all__ = ["similarity", "search", "SearchResult"]

_BLOCK_ELEMENTS = 1 << 22  # scores held at once: queries-per-block x corpus size (16 MB of float32)


class SearchResult(NamedTuple):
    """``indices`` (int64) and cosine ``scores`` (float32) of the nearest corpus entries, best first.
    Shape [n_queries, k], or [k] for a single query vector."""

    indices: np.ndarray
    scores: np.ndarray


def _matrix(x, what: str) -> tuple[np.ndarray, bool]:
    try:
        arr = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a vector or a 2-d array of vectors (numbers)") from None
    if arr.ndim == 1:
        arr, single = arr[None, :], True
    elif arr.ndim == 2:
        single = False
    else:
        raise InputError(f"{what} must be a vector or a 2-d array of vectors, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{what} is empty (shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise InputError(f"{what} contains NaN or infinite values")
    return arr, single


def _normalise(x: np.ndarray) -> np.ndarray:
    """Rows to unit length; scaled by their largest entry first, so huge values do not overflow."""
    x = x / np.maximum(np.abs(x).max(axis=1, keepdims=True), np.finfo(np.float32).tiny)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _pair(a, b, names: tuple[str, str], normalize: bool):
    """Both inputs as checked 2-d float32 matrices of one dimension (unit rows with ``normalize``), each
    with its was-a-single-vector flag."""
    (A, sa), (B, sb) = _matrix(a, names[0]), _matrix(b, names[1])
    if A.shape[1] != B.shape[1]:
        raise InputError(f"{names[0]} and {names[1]} have different dimensions ({A.shape[1]} vs {B.shape[1]})")
    if normalize:
        A, B = _normalise(A), _normalise(B)
    return (A, sa), (B, sb)


def similarity(a, b, normalize: bool = True):
    """Cosine similarity (dot product with ``normalize=False``). Vector x vector -> float; vector x matrix
    -> [m]; matrix x vector -> [n]; matrix x matrix -> [n, m] (float32)."""
    (A, sa), (B, sb) = _pair(a, b, ("a", "b"), normalize)
    S = A @ B.T
    if sa and sb:
        return float(S[0, 0])
    if sa:
        return S[0]
    if sb:
        return S[:, 0]
    return S


def search(queries, corpus, top_k: int = 10, normalize: bool = True,
           block_elements: int = _BLOCK_ELEMENTS) -> SearchResult:
    """Exact top-k search by cosine (dot product with ``normalize=False``) of every query against the
    whole corpus. Queries are processed in blocks so that at most ``block_elements`` scores exist at once.
    ``top_k`` is clipped to the corpus size. Ties are broken by the lower corpus index."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise InputError(f"top_k must be a positive integer, got {top_k!r}")
    (Q, single), (C, _) = _pair(queries, corpus, ("queries", "corpus"), normalize)
    n, k = C.shape[0], int(min(top_k, C.shape[0]))
    step = max(1, int(block_elements) // max(1, n))
    idx_out = np.empty((Q.shape[0], k), dtype=np.int64)
    sc_out = np.empty((Q.shape[0], k), dtype=np.float32)
    for s in range(0, Q.shape[0], step):
        S = Q[s:s + step] @ C.T
        if k < n:
            part = np.argpartition(-S, k - 1, axis=1)[:, :k]
            # include every entry tied with the k-th score so that ties resolve to the lower index
            kth = np.take_along_axis(S, part, axis=1).min(axis=1, keepdims=True)
            rows = []
            for r in range(S.shape[0]):
                cand = np.flatnonzero(S[r] >= kth[r])
                order = np.lexsort((cand, -S[r, cand]))[:k]
                rows.append(cand[order])
            top = np.stack(rows)
        else:
            top = np.lexsort((np.broadcast_to(np.arange(n), S.shape), -S), axis=1)
        idx_out[s:s + S.shape[0]] = top
        sc_out[s:s + S.shape[0]] = np.take_along_axis(S, top, axis=1)
    if single:
        return SearchResult(idx_out[0], sc_out[0])
    return SearchResult(idx_out, sc_out)
