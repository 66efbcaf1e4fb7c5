"""Sentence similarity loss, [P] Eq. 6 (docs/METHOD.md §3.4)."""
from __future__ import annotations

import math

import torch

from ..errors import InputError
from .alignment import _check_pair, _fp32


def _delta(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    u, v = u.float(), v.float()
    a = torch.softmax(u @ u.t(), dim=1)
    b = torch.softmax(v @ v.t(), dim=1)
    return a - b


def similarity_loss(u: torch.Tensor, v: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """Intra-language similarity agreement, [P] Eq. 6.

        A = softmax_row(U Uᵀ),  B = softmax_row(V Vᵀ)        (n×n, raw inner products, fp32)
        L_sim = − Σ_{i,j} log cos(π/2 · (A_ij − B_ij))

    A **sum** over all n² entries, diagonal included ([R]). Since |A − B| < 1 the cosine lies in (0, 1];
    for small Δ each term is ≈ (π²/8) Δ², a squared error between the two similarity distributions.
    For stability Δ is clamped to |Δ| ≤ 1 − eps (a clamped entry gets no gradient).

    Args:
        u, v: sentence vectors [n, d] of the two sides.
        eps: clamp margin, 0 < eps < 1.

    Returns:
        scalar loss (fp32).
    """
    _check_pair(u, v)
    if not 0.0 < eps < 1.0:
        raise InputError(f"eps must lie in (0, 1); got {eps}")
    with _fp32(u):
        delta = _delta(u, v).clamp(-(1.0 - eps), 1.0 - eps)
        return -torch.log(torch.cos((math.pi / 2) * delta)).sum()


@torch.no_grad()
def similarity_max_delta(u: torch.Tensor, v: torch.Tensor) -> float:
    """max_{i,j} |A_ij − B_ij| of :func:`similarity_loss` (unclamped), for logging; no gradient."""
    _check_pair(u, v)
    with _fp32(u):
        return float(_delta(u, v).abs().max())
