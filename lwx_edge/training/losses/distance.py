"""Distance-constraint loss of cT-LASER, [T] Eqs. 7–10 (docs/METHOD.md §3.6)."""
from __future__ import annotations

import torch

from ...errors import InputError
from .checks import check_pair, fp32

EPS = 1e-6


def distance_constraint_loss(u: torch.Tensor, v: torch.Tensor, alpha: float = 0.5, beta: float = 0.25,
                             lam: float | None = None, n_neg: int = 20) -> torch.Tensor:
    """cT-LASER distance constraint, [T] Eqs. 7–10 (without the translation term 0.5·l_mt).

    With v̄ = mean_z ‖P(z)‖₂ over the 2n vectors of the batch (both sides; **not** detached, so the loss
    is invariant to a common rescaling of u and v up to ε) and ε = 1e-6:

        d_p(i)       = ‖u_i − v_i‖ / (v̄ + ε)                                        (Eq. 7)
        d^{a→b}(i,j) = ‖u_i − v_j‖ / (v̄ + ε),   d^{b→a}(i,j) = ‖v_i − u_j‖ / (v̄ + ε)   (Eq. 8)
        δ(i,j)       = max(0, α − (d(i,j) − d_p(i)))                                (Eq. 9)
        l(i)         = β·d_p(i) + (λ/N_s) Σ_j (δ^{a→b}(i,j) + δ^{b→a}(i,j))         (Eq. 10)
        L            = (1/n) Σ_i l(i)

    Negatives come from the batch, deterministically: for row i the N_s = min(n_neg, n − 1) rows
    j = i+1, …, i+N_s (mod n). With n = 1 there are no negatives and L = β·d_p.

    Args:
        u, v: sentence vectors [n, d]; row i of u translates row i of v.
        alpha: margin α (0.5). beta: β (0.25). lam: λ, default β/2. n_neg: N_s (20).

    Returns:
        scalar loss (fp32).
    """
    check_pair(u, v)
    if n_neg < 0:
        raise InputError(f"n_neg must be ≥ 0; got {n_neg}")
    lam = beta / 2 if lam is None else lam
    with fp32(u):
        u, v = u.float(), v.float()
        n = u.shape[0]
        vbar = torch.linalg.vector_norm(torch.cat([u, v]), dim=1).mean()
        scale = 1.0 / (vbar + EPS)
        d_p = torch.linalg.vector_norm(u - v, dim=1) * scale                         # [n]
        loss = beta * d_p
        k = min(int(n_neg), n - 1)
        if k > 0:
            offsets = torch.arange(1, k + 1, device=u.device)
            idx = (torch.arange(n, device=u.device).unsqueeze(1) + offsets) % n      # [n, k]
            d_ab = torch.linalg.vector_norm(u.unsqueeze(1) - v[idx], dim=-1) * scale  # [n, k]
            d_ba = torch.linalg.vector_norm(v.unsqueeze(1) - u[idx], dim=-1) * scale
            margin = alpha + d_p.unsqueeze(1)
            hinge = torch.relu(margin - d_ab) + torch.relu(margin - d_ba)
            loss = loss + (lam / k) * hinge.sum(1)
        return loss.mean()
