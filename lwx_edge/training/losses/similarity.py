"""Sentence similarity loss, [P] Eq. 6, and the scale-free form the trainer uses by default (docs/METHOD.md §3.4)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...errors import InputError
from .checks import check_pair, fp32

FORMS = ("paper", "cosine")


def _delta(u: torch.Tensor, v: torch.Tensor, form: str = "paper", temperature: float = 0.05) -> torch.Tensor:
    u, v = u.float(), v.float()
    if form == "paper":
        return torch.softmax(u @ u.t(), dim=1) - torch.softmax(v @ v.t(), dim=1)
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    self_pair = torch.eye(len(u), dtype=torch.bool, device=u.device)  # 1/τ on the diagonal would take every row
    a = torch.softmax((u @ u.t() / temperature).masked_fill(self_pair, -math.inf), dim=1)
    b = torch.softmax((v @ v.t() / temperature).masked_fill(self_pair, -math.inf), dim=1)
    return a - b


def similarity_loss(u: torch.Tensor, v: torch.Tensor, eps: float = 1e-4, form: str = "paper",
                    temperature: float = 0.05) -> torch.Tensor:
    """Intra-language similarity agreement, [P] Eq. 6 (``form="paper"``) or its scale-free form (``"cosine"``).

        A = softmax_row(U Uᵀ),  B = softmax_row(V Vᵀ)        (n×n, raw inner products, fp32)
        L_sim = − Σ_{i,j} log cos(π/2 · (A_ij − B_ij))

    ``paper``: a **sum** over all n² entries, diagonal included ([R]). Since |A − B| < 1 the cosine lies in
    (0, 1]; for small Δ each term is ≈ (π²/8) Δ², a squared error between the two similarity distributions. Its
    size depends on n and on the vectors' norms (raw inner products sharpen the rows until they are one-hot on
    the diagonal as norms grow, and the term and its gradient vanish). ``cosine``: the rows are softmaxes of
    cosines over ``temperature`` among the *other* texts of the batch (the diagonal left out, as 1/τ would take
    every row), and the loss is the **mean over rows** of each row's sum: the same scale at any batch size and
    vector norm (docs/METHOD.md §3.4, "Deviation"). For stability Δ is clamped to |Δ| ≤ 1 − eps (a clamped entry gets no
    gradient).

    Args:
        u, v: sentence vectors [n, d] of the two sides.
        eps: clamp margin, 0 < eps < 1.
        form: "paper" or "cosine".
        temperature: the cosine form's softmax temperature, > 0.

    Returns:
        scalar loss (fp32).
    """
    check_pair(u, v)
    if not 0.0 < eps < 1.0:
        raise InputError(f"eps must lie in (0, 1); got {eps}")
    if form not in FORMS:
        raise InputError(f"form must be one of {FORMS}; got {form!r}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise InputError(f"temperature must be a positive number; got {temperature}")
    with fp32(u):
        delta = _delta(u, v, form, temperature).clamp(-(1.0 - eps), 1.0 - eps)
        total = -torch.log(torch.cos((math.pi / 2) * delta)).sum()
        return total / u.shape[0] if form == "cosine" else total


@torch.no_grad()
def similarity_max_delta(u: torch.Tensor, v: torch.Tensor, form: str = "paper", temperature: float = 0.05) -> float:
    """max_{i,j} |A_ij − B_ij| of :func:`similarity_loss` (unclamped), for logging; no gradient."""
    check_pair(u, v)
    with fp32(u):
        return float(_delta(u, v, form, temperature).abs().max())
