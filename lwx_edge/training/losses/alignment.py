"""Sentence alignment loss, [P] Eq. 5 (docs/METHOD.md §3.3).

Also holds the small shape checks shared by the other embedding losses of this package.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...errors import InputError


def _shape(t: torch.Tensor) -> list[int]:
    return list(t.shape)


def _check_matrix(name: str, t) -> None:
    """`t` must be a non-empty 2-D floating tensor [n, d]."""
    if not isinstance(t, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise InputError(f"{name} must be 2-D [n, d]; got shape {_shape(t)}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise InputError(f"{name} must be non-empty; got shape {_shape(t)}")
    if not t.is_floating_point():
        raise InputError(f"{name} must be a floating-point tensor; got dtype {t.dtype}")


def _fp32(t: torch.Tensor):
    """A context in which autocast is off on `t`'s device, so ``.float()`` inputs stay fp32 in matmuls
    (under bf16/fp16 autocast ``a.float() @ b.float()`` would otherwise be cast back down)."""
    return torch.autocast(device_type=t.device.type, enabled=False)


def _check_pair(u, v, names: tuple[str, str] = ("u", "v")) -> None:
    """u and v must both be [n, d] with the same n and d."""
    _check_matrix(names[0], u)
    _check_matrix(names[1], v)
    if u.shape != v.shape:
        raise InputError(f"{names[0]} and {names[1]} must have the same shape [n, d]; "
                         f"got {names[0]} {_shape(u)} and {names[1]} {_shape(v)}")


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
    _check_pair(u, v)
    with _fp32(u):
        u, v = u.float(), v.float()
        s = u @ v.t()
        target = torch.arange(s.shape[0], device=s.device)
        return F.cross_entropy(s, target) + F.cross_entropy(s.t(), target)
