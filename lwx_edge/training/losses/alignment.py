"""Sentence alignment loss, [P] Eq. 5 (docs/METHOD.md §3.3)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .checks import check_pair, fp32


def alignment_loss(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Bidirectional in-batch sentence alignment, [P] Eq. 5.

        S = U Vᵀ ∈ R^{n×n}                     (raw inner product: no cosine, no temperature, no margin)
        L_align = CE(S, arange(n)) + CE(Sᵀ, arange(n))

    Each cross-entropy is the mean over its n rows, so the two terms cover the a→b and b→a directions
    with 2(n−1) in-batch negatives per pair. Computed in fp32.

    Args:
        u, v: sentence vectors of the two sides, [n, d], row i of u translates row i of v.

    Returns:
        scalar loss (fp32).
    """
    check_pair(u, v)
    with fp32(u):
        u, v = u.float(), v.float()
        s = u @ v.t()
        target = torch.arange(s.shape[0], device=s.device)
        return F.cross_entropy(s, target) + F.cross_entropy(s.t(), target)
