"""The checks and the fp32 context every embedding loss of this package shares: shapes, dtypes, autocast off."""
from __future__ import annotations

import torch

from ...errors import InputError


def shape(t: torch.Tensor) -> list[int]:
    """``t``'s shape as a list, for messages."""
    return list(t.shape)


def check_matrix(name: str, t) -> None:
    """`t` must be a non-empty 2-D floating tensor [n, d]."""
    if not isinstance(t, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise InputError(f"{name} must be 2-D [n, d]; got shape {shape(t)}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise InputError(f"{name} must be non-empty; got shape {shape(t)}")
    if not t.is_floating_point():
        raise InputError(f"{name} must be a floating-point tensor; got dtype {t.dtype}")


def fp32(t: torch.Tensor):
    """A context in which autocast is off on `t`'s device, so ``.float()`` inputs stay fp32 in matmuls
    (under bf16/fp16 autocast ``a.float() @ b.float()`` would otherwise be cast back down)."""
    return torch.autocast(device_type=t.device.type, enabled=False)


def check_pair(u, v, names: tuple[str, str] = ("u", "v")) -> None:
    """u and v must both be [n, d] with the same n and d."""
    check_matrix(names[0], u)
    check_matrix(names[1], v)
    if u.shape != v.shape:
        raise InputError(f"{names[0]} and {names[1]} must have the same shape [n, d]; "
                         f"got {names[0]} {shape(u)} and {names[1]} {shape(v)}")
