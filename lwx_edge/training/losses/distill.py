"""Knowledge-distillation losses (docs/METHOD.md §3.6; not in [P]).

Standard recipe of Reimers & Gurevych 2020 with a training-only projection g (docs/METHOD.md §3.6), the proposed
RMS-1 teacher targets, and the relational variant (iii).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...errors import InputError
from .checks import check_matrix, check_pair, fp32, shape


def _check_teacher(teacher, n: int, name_pred: str, pred_shape, same_dim: bool) -> None:
    check_matrix("teacher", teacher)
    if teacher.shape[0] != n or (same_dim and teacher.shape[1] != pred_shape[1]):
        want = "[n, d_T] matching" if same_dim else "[n, d_T] with the n of"
        raise InputError(f"teacher must be {want} {name_pred}; got teacher {shape(teacher)} and "
                         f"{name_pred} {list(pred_shape)}")


def teacher_targets(teacher: torch.Tensor) -> torch.Tensor:
    """t̃_i = √d_T · T_i / ‖T_i‖₂ (row-wise, fp32), so every row has RMS 1 and the KD loss is O(1)
    (docs/METHOD.md §3.6, "Target"). A teacher row of norm 0 is an error (it has no direction)."""
    check_matrix("teacher", teacher)
    with fp32(teacher):
        t = teacher.float()
        norm = torch.linalg.vector_norm(t, dim=1, keepdim=True)
        if bool((norm == 0).any() | ~torch.isfinite(norm).all()):
            rows = torch.nonzero(~(torch.isfinite(norm) & (norm > 0)).flatten()).flatten().tolist()
            raise InputError(f"teacher {shape(teacher)} has rows with zero or non-finite norm at rows "
                             f"{rows[:10]}")
        return t * (math.sqrt(t.shape[1]) / norm)


def output_targets(x: torch.Tensor) -> torch.Tensor:
    """√d · x/‖x‖ row-wise: the student's output on the teacher targets' scale, for distillation in the
    output space (no projection). The MSE to t̃ is then 2·(1 − cos(x, T)): only the direction is distilled,
    which is all the L2-normalised vectors the SDK returns carry."""
    with fp32(x):
        return F.normalize(x.float(), dim=1, eps=1e-12) * math.sqrt(x.shape[1])


def mono_distillation_loss(pred: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Single-side KD: L = mean_{i,k} (g(x_i) − t̃_i)_k², t̃ = :func:`teacher_targets` (docs/METHOD.md §3.6).

    Args:
        pred: projected student vectors g(x) [n, d_T]. teacher: raw teacher vectors [n, d_T], any dtype.
    """
    check_matrix("pred", pred)
    _check_teacher(teacher, pred.shape[0], "pred", pred.shape, same_dim=True)
    target = teacher_targets(teacher).to(pred.device)
    with fp32(pred):
        return (pred.float() - target).pow(2).mean()


def distillation_loss(pred_a: torch.Tensor, pred_b: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Parallel-pair KD, as in docs/METHOD.md §3.6 (both sides regress to the *source* teacher vector):

        L_KD = mean_{i,k} (g(u_i) − t̃_i)_k² + mean_{i,k} (g(v_i) − t̃_i)_k²,   t̃_i = √d_T · T_i/‖T_i‖

    Args:
        pred_a, pred_b: projected student vectors g(u), g(v) [n, d_T].
        teacher: raw teacher vectors of the source sentences [n, d_T], any dtype.
    """
    check_pair(pred_a, pred_b, names=("pred_a", "pred_b"))
    _check_teacher(teacher, pred_a.shape[0], "pred_a", pred_a.shape, same_dim=True)
    target = teacher_targets(teacher).to(pred_a.device)
    with fp32(pred_a):
        return (pred_a.float() - target).pow(2).mean() + (pred_b.float() - target).pow(2).mean()


def relational_loss(u: torch.Tensor, v: torch.Tensor, teacher: torch.Tensor, form: str = "mse",
                    temperature: float = 0.05) -> torch.Tensor:
    """Relational KD [O] (docs/METHOD.md §3.6); needs no dimension match between student and teacher:

        C_t = cos(t_i, t_j),  C_uu = cos(u_i, u_j),  C_vv = cos(v_i, v_j),  C_uv = cos(u_i, v_j)
        mse:      L_rel = (1/n²) Σ_ij (C_uu − C_t)² + (1/n²) Σ_ij (C_vv − C_t)² + (1/n²) Σ_ij (C_uv − C_t)²
        softmax:  L_rel = Σ_{C ∈ uu, vv, uv, vu} (1/n) Σ_i KL(softmax_{j≠i}(C_t,ij/τ) ‖ softmax_{j≠i}(C_ij/τ))

    ``mse`` matches every pair's cosine (the cross block's diagonal asks cos(u_i, v_i) = 1); ``softmax`` matches
    only each row's ranking of the other sentences, weighted toward its nearest ones (the diagonal, the pair
    itself, is left to the alignment term). Zero vectors get cosine 0 (normalised with ε=1e-12).

    Args:
        u, v: student sentence vectors [n, d]. teacher: teacher vectors of the source sentences [n, d_T].
        form: ``mse`` or ``softmax``. temperature: the softmax form's τ.
    """
    check_pair(u, v)
    _check_teacher(teacher, u.shape[0], "u", u.shape, same_dim=False)
    if form not in ("mse", "softmax"):
        raise InputError(f"relational form must be 'mse' or 'softmax', got {form!r}")
    with fp32(u):
        nu, nv = F.normalize(u.float(), dim=1), F.normalize(v.float(), dim=1)
        nt = F.normalize(teacher.float(), dim=1).to(nu.device)
        c_t = nt @ nt.t()
        if form == "mse":
            return ((nu @ nu.t() - c_t).pow(2).mean() + (nv @ nv.t() - c_t).pow(2).mean()
                    + (nu @ nv.t() - c_t).pow(2).mean())
        if u.shape[0] < 3:
            raise InputError(f"the softmax relational form needs a batch of at least 3, got {u.shape[0]}")
        off = ~torch.eye(u.shape[0], dtype=torch.bool, device=nu.device)
        rows = u.shape[0]

        def log_rows(c: torch.Tensor) -> torch.Tensor:  # log-softmax over j ≠ i, the diagonal dropped
            return F.log_softmax(c[off].view(rows, rows - 1) / temperature, dim=1)

        target = log_rows(c_t)
        cross = nu @ nv.t()
        return torch.stack([F.kl_div(log_rows(c), target, log_target=True, reduction="batchmean")
                            for c in (nu @ nu.t(), nv @ nv.t(), cross, cross.t())]).sum()
