"""Unified generative task (UGT = SMLM ⊕ XTR), [P] Eqs. 1–4 (docs/METHOD.md §3.2).

Each side's pooled prediction p_a, p_b ∈ Δ^V gets a target q_a, q_b ∈ R^V built from the token ids after
masking. Sentences are *sets* of ids ([P] footnote 4, N_w = 1) weighted 1/ℓ, with ℓ the true length
counting duplicates, so q is not renormalised when a sentence repeats an id ([R] behaviour).
"""
from __future__ import annotations

import torch

from ...errors import InputError
from .checks import fp32, shape

MODES = ("ugt", "xtr", "smlm")


def _check_ids(name: str, ids) -> None:
    if not isinstance(ids, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise InputError(f"{name} must be 2-D [n, L] with L ≥ 1; got shape {shape(ids)}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise InputError(f"{name} must hold integer token ids; got dtype {ids.dtype}")


def _validate(ids_a, ids_b, masked_side, masked_token, vocab_size: int, mode: str, pad_id: int):
    """Shape checks in Python, value checks vectorised with a single device sync. Returns the true
    lengths ℓ_a, ℓ_b [n] (int64)."""
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}; got {mode!r}")
    if int(vocab_size) < 1:
        raise InputError(f"vocab_size must be ≥ 1; got {vocab_size}")
    _check_ids("ids_a", ids_a)
    _check_ids("ids_b", ids_b)
    n = ids_a.shape[0]
    if ids_b.shape[0] != n:
        raise InputError(f"ids_a and ids_b must have the same batch size n; got ids_a {shape(ids_a)} "
                         f"and ids_b {shape(ids_b)}")
    if n == 0:
        raise InputError("empty batch: ids_a and ids_b have n = 0 rows")
    for name, t in (("masked_side", masked_side), ("masked_token", masked_token)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.shape != (n,):
            raise InputError(f"{name} must have shape [n] = [{n}] to match ids_a {shape(ids_a)}; "
                             f"got {shape(t)}")
        if t.is_floating_point() or t.is_complex():
            raise InputError(f"{name} must be an integer tensor; got dtype {t.dtype}")
    len_a, len_b = (ids_a != pad_id).sum(1), (ids_b != pad_id).sum(1)
    side = masked_side.long()
    checks = {
        "masked_side": ((side != 0) & (side != 1)).any(),
        "masked_token": ((masked_token < 0) | (masked_token >= vocab_size)).any(),
        "ids_a": ((ids_a < 0) | (ids_a >= vocab_size)).any(),
        "ids_b": ((ids_b < 0) | (ids_b >= vocab_size)).any(),
        "len_a": (len_a == 0).any(),
        "len_b": (len_b == 0).any(),
    }
    flags = torch.stack(list(checks.values())).tolist()  # the one sync
    if any(flags):
        bad = dict(zip(checks, flags))
        if bad["masked_side"]:
            raise InputError(f"masked_side must be 0 (side a masked) or 1 (side b masked); got values "
                             f"{sorted(set(side.tolist()) - {0, 1})} in masked_side {shape(masked_side)}")
        if bad["masked_token"]:
            raise InputError(f"masked_token ids must lie in [0, {vocab_size}); got min "
                             f"{int(masked_token.min())}, max {int(masked_token.max())} "
                             f"in masked_token {shape(masked_token)}")
        for name, ids in (("ids_a", ids_a), ("ids_b", ids_b)):
            if bad[name]:
                raise InputError(f"{name} ids must lie in [0, {vocab_size}); got min {int(ids.min())}, "
                                 f"max {int(ids.max())} in {name} {shape(ids)}")
        for name, ids, ln in (("ids_a", ids_a, len_a), ("ids_b", ids_b, len_b)):
            if bad["len_" + name[-1]]:
                rows = torch.nonzero(ln == 0).flatten().tolist()
                raise InputError(f"{name} {shape(ids)} has sentences of length 0 (all pad_id={pad_id}) "
                                 f"at rows {rows[:10]}")
    return len_a, len_b


def _set_entries(ids: torch.Tensor, length: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The id set of each row as gather entries: the row's ids sorted [n, L] and their weights, 1/ℓ on the first
    occurrence of each id and 0 on repeats and pads."""
    ids, _ = ids.sort(dim=1)
    first = torch.ones_like(ids, dtype=torch.bool)
    first[:, 1:] = ids[:, 1:] != ids[:, :-1]
    return ids, (first & (ids != pad_id)).float() / length.unsqueeze(1).float()


def target_entries(ids_a: torch.Tensor, ids_b: torch.Tensor, masked_side: torch.Tensor, masked_token: torch.Tensor,
                   vocab_size: int, mode: str = "ugt", pad_id: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The nonzero entries of the targets q_a, q_b (see :func:`generative_targets`) without the dense [n, V]:
    ``[(ids_a_q, w_a_q), (ids_b_q, w_b_q)]``, each [n, K] ids and fp32 weights, q[i, ids[i, k]] = w[i, k]
    (an id appears once per row with a nonzero weight; zero-weight entries are padding)."""
    len_a, len_b = _validate(ids_a, ids_b, masked_side, masked_token, vocab_size, mode, pad_id)
    ids_a, ids_b = ids_a.long(), ids_b.long()
    w_t = masked_token.long().view(-1, 1).to(ids_a.device)
    if mode == "smlm":
        one = torch.ones(w_t.shape, device=ids_a.device)
        return [(w_t, one), (w_t, one.clone())]
    set_a, set_b = _set_entries(ids_a, len_a, pad_id), _set_entries(ids_b, len_b, pad_id)
    if mode == "xtr":
        return [set_b, set_a]
    a_masked = (masked_side.to(ids_a.device).long() == 0).view(-1, 1)
    out = []
    for masked, (ids, w) in ((a_masked, set_b), (~a_masked, set_a)):
        # the masked side: half the other side's set, and w_t at 1/2 unless the set holds it (Eq. 4's assignment)
        held = ((ids == w_t) & (w > 0)).any(dim=1, keepdim=True)
        w_t_weight = 0.5 * (masked & ~held).float()
        out.append((torch.cat([ids, w_t], dim=1), torch.cat([torch.where(masked, 0.5 * w, w), w_t_weight], dim=1)))
    return out


def generative_targets(ids_a: torch.Tensor, ids_b: torch.Tensor, masked_side: torch.Tensor,
                       masked_token: torch.Tensor, vocab_size: int, mode: str = "ugt",
                       pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense targets q_a, q_b [n, V] (fp32) of the generative task, [P] Eqs. 1, 3, 4 (for inspection and tests;
    the loss gathers :func:`target_entries` instead).

    With S_a, S_b the id sets of the two (masked) sentences, ℓ_a, ℓ_b their true lengths (non-pad tokens,
    duplicates counted), M the masked side, O the other side and w_t the original masked id:

    - ``"ugt"`` ([P] Eqs. 3–4, [R]):
        q_M[w_t] = 1/2, then q_M[w] = 1/(2ℓ_O) for w ∈ S_O  (Eq. 4 case order: *assignment*, so if
        w_t ∈ S_O its entry is 1/(2ℓ_O), not 1/2 + 1/(2ℓ_O));
        q_O[w] = 1/ℓ_M for w ∈ S_M  (Eq. 3; S_M holds the <MASK> id and not w_t).
    - ``"xtr"`` (XTR-only ablation, Eq. 3 for both sides): q_M = 1/ℓ_O over S_O, q_O = 1/ℓ_M over S_M.
    - ``"smlm"`` (SMLM-only ablation, Eq. 1): q_a = q_b = one-hot(w_t).

    Targets are not renormalised (they need not sum to 1) and pads never get mass.

    Args:
        ids_a [n, La], ids_b [n, Lb]: int ids after masking, right-padded with ``pad_id``.
        masked_side [n]: 0 if side a was masked, 1 if side b.
        masked_token [n]: the original id w_t at the masked position.
        vocab_size: V.
    """
    (ids_qa, w_qa), (ids_qb, w_qb) = target_entries(ids_a, ids_b, masked_side, masked_token, vocab_size, mode, pad_id)
    n = ids_qa.shape[0]
    return (torch.zeros(n, vocab_size, device=ids_qa.device).scatter_add_(1, ids_qa, w_qa),
            torch.zeros(n, vocab_size, device=ids_qb.device).scatter_add_(1, ids_qb, w_qb))


def generative_loss(logits_a: torch.Tensor, logits_b: torch.Tensor, ids_a: torch.Tensor, ids_b: torch.Tensor,
                    masked_side: torch.Tensor, masked_token: torch.Tensor, mode: str = "ugt",
                    pad_id: int = 0) -> torch.Tensor:
    """L_gen = KL(q_a ‖ p_a) + KL(q_b ‖ p_b), [P] Eq. 2 with the targets of Eqs. 3–4 (or 1).

        KL(q ‖ p) = (1/n) Σ_i Σ_v q_iv (log q_iv − log p_iv),   p = softmax(logits) in fp32,

    i.e. ``nn.KLDivLoss(reduction="batchmean")`` on log-probabilities ([R]), with 0·log 0 = 0. Computed by
    gather over q's ≤ ℓ+1 nonzero entries, never a dense target (docs/METHOD.md §3.2):
    Σ_v q_v (log q_v − z_v) + (Σ_v q_v)·logsumexp(z), keeping the factor Σ_v q_v ≠ 1. Its gradient w.r.t. the
    logits equals that of the soft cross-entropy −(1/n) Σ q log p.

    Args:
        logits_a, logits_b [n, V]: the generative head's logits from the pooled u and v.
        ids_a, ids_b, masked_side, masked_token, mode, pad_id: as in :func:`generative_targets`.

    Returns:
        scalar loss (fp32).
    """
    for name, t in (("logits_a", logits_a), ("logits_b", logits_b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or not t.is_floating_point():
            got = shape(t) if isinstance(t, torch.Tensor) else type(t).__name__
            raise InputError(f"{name} must be a 2-D floating tensor [n, V]; got {got}")
    if logits_a.shape != logits_b.shape:
        raise InputError(f"logits_a and logits_b must have the same shape [n, V]; got logits_a "
                         f"{shape(logits_a)} and logits_b {shape(logits_b)}")
    if isinstance(ids_a, torch.Tensor) and ids_a.dim() >= 1 and ids_a.shape[0] != logits_a.shape[0]:
        raise InputError(f"logits_a {shape(logits_a)} and ids_a {shape(ids_a)} must have the same "
                         f"batch size n")
    n, vocab = logits_a.shape
    entries = target_entries(ids_a, ids_b, masked_side, masked_token, vocab, mode=mode, pad_id=pad_id)
    with fp32(logits_a):
        total = logits_a.new_zeros((), dtype=torch.float32)
        for logits, (ids, w) in zip((logits_a, logits_b), entries):
            z = logits.float()
            ids, w = ids.to(z.device), w.to(z.device)
            per_row = (torch.xlogy(w, w) - w * z.gather(1, ids)).sum(1) + w.sum(1) * torch.logsumexp(z, dim=1)
            total = total + per_row.sum() / n
        return total
