"""Translation ranking loss, Chidambaram et al. 2019 §2, Eqs. 1–2 ([C]; docs/METHOD.md §3.6)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...errors import InputError
from .checks import check_matrix, check_pair, fp32, shape


def ranking_loss(u: torch.Tensor, v: torch.Tensor, hard_negatives: torch.Tensor | None = None) -> torch.Tensor:
    """One-directional translation ranking, [C] §2 (Eqs. 1–2 with the denominator pairing the input
    with every candidate):

        P(v_i | u_i) = exp(u_i·v_i) / Σ_k exp(u_i·c_k),   c = [v ; hard_negatives]
        L = −(1/n) Σ_i log P(v_i | u_i)

    Dot-product scores, no temperature. Only the u → v direction is scored ([P]'s L_align is the
    bidirectional version), so in general ranking_loss(u, v) ≠ ranking_loss(v, u).

    Args:
        u: inputs [n, d]. v: their translations [n, d].
        hard_negatives: optional [m, d] extra candidates appended to the pool shared by the whole batch
            (with 5 per example, m = 5n and the score matrix has n(1+5) columns).

    Returns:
        scalar loss (fp32).
    """
    check_pair(u, v)
    if hard_negatives is not None:
        check_matrix("hard_negatives", hard_negatives)
        if hard_negatives.shape[1] != u.shape[1]:
            raise InputError(f"hard_negatives must be [m, d] with the d of u; got hard_negatives "
                             f"{shape(hard_negatives)} and u {shape(u)}")
    with fp32(u):
        u, v = u.float(), v.float()
        cand = v if hard_negatives is None else torch.cat([v, hard_negatives.float()])
        scores = u @ cand.t()                                                  # [n, n + m]
        return F.cross_entropy(scores, torch.arange(u.shape[0], device=u.device))
