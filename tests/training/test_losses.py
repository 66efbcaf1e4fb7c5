"""Losses against hand-computed examples (docs/METHOD.md §3)."""
import math

import pytest
import torch

from lwx_edge.errors import InputError
from lwx_edge.training.losses import (
    alignment_loss,
    distance_constraint_loss,
    distillation_loss,
    generative_loss,
    generative_targets,
    mono_distillation_loss,
    ranking_loss,
    relational_loss,
    similarity_loss,
    similarity_max_delta,
    teacher_targets,
)

E = math.e


def t(x):
    return torch.tensor(x, dtype=torch.float32)


# ---- generative (UGT / XTR / SMLM) -------------------------------------------------------------------

V = 10
# pair 0: side a masked. original a = [5, 7, 5, 3] -> position 1 (w_t = 7) masked -> [5, 2, 5, 3]
#         (duplicate 5, ℓ_a = 4); b = [7, 4, pad] (ℓ_b = 2) contains w_t = 7 -> overwrite rule.
# pair 1: side b masked. a = [6, 8, 9, pad] (ℓ_a = 3); original b = [4, 8] -> position 0 (w_t = 4)
#         masked -> [2, 8, pad] (ℓ_b = 2).
IDS_A = torch.tensor([[5, 2, 5, 3], [6, 8, 9, 0]])
IDS_B = torch.tensor([[7, 4, 0], [2, 8, 0]])
SIDE = torch.tensor([0, 1])
W_T = torch.tensor([7, 4])


def row(entries):
    r = [0.0] * V
    for k, val in entries.items():
        r[k] = val
    return r


def test_generative_targets_ugt_by_hand():
    q_a, q_b = generative_targets(IDS_A, IDS_B, SIDE, W_T, V)
    assert q_a.dtype == torch.float32 and q_a.shape == (2, V)
    want_a = t([
        # masked side: q[7] = 1/2 then overwritten by 1/(2ℓ_b) = 1/4 because 7 ∈ S_b; q[4] = 1/4
        row({7: 0.25, 4: 0.25}),
        # clean side: 1/ℓ_b = 1/2 over S_b = {<MASK>=2, 8}; not the original 4
        row({2: 0.5, 8: 0.5}),
    ])
    want_b = t([
        # clean side: 1/ℓ_a = 1/4 over the set {5, 2(<MASK>), 3}; duplicate 5 counts once, not renormalised
        row({5: 0.25, 2: 0.25, 3: 0.25}),
        # masked side: q[w_t=4] = 1/2, q[w] = 1/(2ℓ_a) = 1/6 for w ∈ {6, 8, 9}
        row({4: 0.5, 6: 1 / 6, 8: 1 / 6, 9: 1 / 6}),
    ])
    torch.testing.assert_close(q_a, want_a)
    torch.testing.assert_close(q_b, want_b)
    assert q_a[:, 0].sum() == 0 and q_b[:, 0].sum() == 0  # pads never get mass


def test_generative_targets_xtr_and_smlm_by_hand():
    q_a, q_b = generative_targets(IDS_A, IDS_B, SIDE, W_T, V, mode="xtr")
    torch.testing.assert_close(q_a, t([row({7: 0.5, 4: 0.5}), row({2: 0.5, 8: 0.5})]))
    torch.testing.assert_close(q_b, t([row({5: 0.25, 2: 0.25, 3: 0.25}), row({6: 1 / 3, 8: 1 / 3, 9: 1 / 3})]))
    q_a, q_b = generative_targets(IDS_A, IDS_B, SIDE, W_T, V, mode="smlm")
    want = t([row({7: 1.0}), row({4: 1.0})])
    torch.testing.assert_close(q_a, want)
    torch.testing.assert_close(q_b, want)


def test_generative_targets_other_pad_id():
    ids_a = torch.where(IDS_A == 0, torch.full_like(IDS_A, 9), torch.where(IDS_A == 9, 0, IDS_A))
    ids_b = torch.where(IDS_B == 0, torch.full_like(IDS_B, 9), IDS_B)
    q_a, q_b = generative_targets(ids_a, ids_b, SIDE, W_T, V, pad_id=9)
    assert q_b[1, 0] == pytest.approx(1 / 6) and q_b[1, 9] == 0  # id 0 now real, 9 now pad


def test_generative_loss_is_batchmean_kl_and_grad_is_soft_ce():
    torch.manual_seed(0)
    la = torch.randn(2, V, requires_grad=True)
    lb = torch.randn(2, V, requires_grad=True)
    loss = generative_loss(la, lb, IDS_A, IDS_B, SIDE, W_T)
    q_a, q_b = generative_targets(IDS_A, IDS_B, SIDE, W_T, V)
    ref = 0.0
    for logits, q in ((la, q_a), (lb, q_b)):
        for i in range(2):
            zs = logits[i].detach().tolist()
            lse = math.log(sum(math.exp(z) for z in zs))
            for k in range(V):
                if q[i, k] > 0:
                    qk = float(q[i, k])
                    ref += qk * (math.log(qk) - (zs[k] - lse)) / 2
    assert loss.item() == pytest.approx(ref, rel=1e-5)
    assert loss.item() > 0
    ga, gb = torch.autograd.grad(loss, (la, lb))
    ce = -(q_a * torch.log_softmax(la, -1)).sum() / 2 - (q_b * torch.log_softmax(lb, -1)).sum() / 2
    ga2, gb2 = torch.autograd.grad(ce, (la, lb))
    torch.testing.assert_close(ga, ga2)
    torch.testing.assert_close(gb, gb2)


def _spec_targets(ids_a, ids_b, side, w_t, vocab, mode):
    """q_a, q_b row by row from docs/METHOD.md §3.2, in plain Python (pad id 0)."""
    def weights(ids):
        real = [i for i in ids if i != 0]
        return {i: 1 / len(real) for i in real}

    q_a, q_b = torch.zeros(len(ids_a), vocab), torch.zeros(len(ids_a), vocab)
    for i, (a, b) in enumerate(zip(ids_a.tolist(), ids_b.tolist())):
        wa, wb = weights(a), weights(b)
        if mode == "smlm":
            rows = ({w_t[i]: 1.0}, {w_t[i]: 1.0})
        elif mode == "xtr":
            rows = (wb, wa)
        else:
            def masked(other):
                return {w_t[i]: 0.5, **{k: v / 2 for k, v in other.items()}}  # then S_O's entries (assignment)
            rows = (masked(wb), wa) if side[i] == 0 else (wb, masked(wa))
        for q, r in zip((q_a, q_b), rows):
            for k, v in r.items():
                q[i, k] = v
    return q_a, q_b


@pytest.mark.parametrize("mode", ["ugt", "xtr", "smlm"])
def test_generative_loss_by_gather_equals_the_dense_kl(mode):
    """Random batches with repeated ids, pads and w_t both inside and outside the other side: the targets
    match the spec built row by row, and the gathered loss and its gradient match KLDivLoss on the dense q."""
    g = torch.Generator().manual_seed(3)
    n, vocab = 24, 12
    ids_a = torch.randint(1, vocab, (n, 6), generator=g)
    ids_b = torch.randint(1, vocab, (n, 5), generator=g)
    for ids in (ids_a, ids_b):
        for i, keep in enumerate(torch.randint(1, ids.shape[1] + 1, (n,), generator=g).tolist()):
            ids[i, keep:] = 0
    side = torch.randint(0, 2, (n,), generator=g)
    w_t = torch.randint(1, vocab, (n,), generator=g)
    want = _spec_targets(ids_a, ids_b, side.tolist(), w_t.tolist(), vocab, mode)
    got = generative_targets(ids_a, ids_b, side, w_t, vocab, mode=mode)
    for q, q_ref in zip(got, want):
        torch.testing.assert_close(q, q_ref)
    la = torch.randn(n, vocab, generator=g, requires_grad=True)
    lb = torch.randn(n, vocab, generator=g, requires_grad=True)
    loss = generative_loss(la, lb, ids_a, ids_b, side, w_t, mode=mode)
    kl = torch.nn.KLDivLoss(reduction="batchmean")
    ref = kl(torch.log_softmax(la, -1), want[0]) + kl(torch.log_softmax(lb, -1), want[1])
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    for g1, g2 in zip(torch.autograd.grad(loss, (la, lb)), torch.autograd.grad(ref, (la, lb))):
        torch.testing.assert_close(g1, g2)


def test_generative_loss_fp32_under_bf16_logits():
    torch.manual_seed(1)
    la, lb = torch.randn(2, V), torch.randn(2, V)
    full = generative_loss(la, lb, IDS_A, IDS_B, SIDE, W_T)
    half = generative_loss(la.bfloat16(), lb.bfloat16(), IDS_A, IDS_B, SIDE, W_T)
    assert half.dtype == torch.float32
    assert half.item() == pytest.approx(full.item(), rel=2e-2)


def test_generative_errors():
    with pytest.raises(InputError, match="masked_side"):
        generative_targets(IDS_A, IDS_B, torch.tensor([0, 2]), W_T, V)
    with pytest.raises(InputError, match=r"masked_side.*\[3\]"):
        generative_targets(IDS_A, IDS_B, torch.tensor([0, 1, 0]), W_T, V)
    with pytest.raises(InputError, match=r"ids_b.*length 0.*\[1\]"):
        generative_targets(IDS_A, torch.tensor([[7, 4, 0], [0, 0, 0]]), SIDE, W_T, V)
    with pytest.raises(InputError, match=r"ids_a \[2, 4\] and ids_b \[3, 3\]"):
        generative_targets(IDS_A, torch.zeros(3, 3, dtype=torch.long) + 4, SIDE, W_T, V)
    with pytest.raises(InputError, match=r"ids_a ids must lie in \[0, 8\)"):
        generative_targets(IDS_A, IDS_B, SIDE, W_T, 8)
    with pytest.raises(InputError, match="mode"):
        generative_targets(IDS_A, IDS_B, SIDE, W_T, V, mode="mlm")
    with pytest.raises(InputError, match=r"logits_a \[2, 10\] and logits_b \[2, 9\]"):
        generative_loss(torch.zeros(2, V), torch.zeros(2, 9), IDS_A, IDS_B, SIDE, W_T)
    with pytest.raises(InputError, match=r"logits_a \[3, 10\] and ids_a \[2, 4\]"):
        generative_loss(torch.zeros(3, V), torch.zeros(3, V), IDS_A, IDS_B, SIDE, W_T)


# ---- alignment (Eq. 5) ---------------------------------------------------------------------------

def test_alignment_by_hand_and_symmetric():
    u = t([[1, 0], [0, 2]])
    v = t([[2, 0], [1, 1]])
    # S = u vᵀ = [[2, 1], [0, 2]]
    rows = -math.log(E**2 / (E**2 + E**1)) - math.log(E**2 / (E**0 + E**2))     # CE(S), targets 0, 1
    cols = -math.log(E**2 / (E**2 + E**0)) - math.log(E**2 / (E**1 + E**2))     # CE(Sᵀ)
    want = rows / 2 + cols / 2
    assert alignment_loss(u, v).item() == pytest.approx(want, rel=1e-6)
    torch.manual_seed(0)
    a, b = torch.randn(5, 3), torch.randn(5, 3)
    assert alignment_loss(a, b).item() == pytest.approx(alignment_loss(b, a).item(), rel=1e-6)


def test_alignment_3x3_by_hand():
    u = t([[1, 0], [0, 1], [1, 1]])
    v = t([[1, 0], [0, 1], [0, 0]])
    # S = [[1,0,0],[0,1,0],[1,1,0]]
    ce_rows = (-math.log(E / (E + 2)) - math.log(E / (E + 2)) - math.log(1 / (2 * E + 1))) / 3
    # Sᵀ = [[1,0,1],[0,1,1],[0,0,0]]
    ce_cols = (-math.log(E / (2 * E + 1)) - math.log(E / (2 * E + 1)) - math.log(1 / 3)) / 3
    assert alignment_loss(u, v).item() == pytest.approx(ce_rows + ce_cols, rel=1e-6)


def test_alignment_is_fp32_under_autocast():
    torch.manual_seed(0)
    u, v = torch.randn(8, 16) * 3, torch.randn(8, 16) * 3
    ref = alignment_loss(u, v)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = alignment_loss(u.bfloat16(), v.bfloat16())
    assert got.dtype == torch.float32
    # inputs rounded to bf16 but the matmul in fp32: much closer than a bf16 matmul would be
    ref_rounded = alignment_loss(u.bfloat16().float(), v.bfloat16().float())
    assert got.item() == pytest.approx(ref_rounded.item(), rel=1e-6)
    assert got.item() == pytest.approx(ref.item(), rel=5e-2)


# ---- similarity (Eq. 6) --------------------------------------------------------------------------

def test_similarity_by_hand_sum_with_diagonal():
    u = t([[1, 0], [0, 1]])    # u uᵀ = I  -> A = [[a, 1-a], [1-a, a]], a = e/(e+1)
    v = t([[1, 0], [1, 0]])    # v vᵀ = 1  -> B = 1/2 everywhere
    a = E / (E + 1)
    d = a - 0.5                # Δ = ±d on all four entries, the diagonal included
    want = -4 * math.log(math.cos(math.pi / 2 * d))
    assert similarity_loss(u, v).item() == pytest.approx(want, rel=1e-5)
    assert similarity_max_delta(u, v) == pytest.approx(d, rel=1e-6)


def test_similarity_zero_when_equal_and_quadratic_for_small_delta():
    torch.manual_seed(0)
    u = torch.randn(6, 4)
    assert similarity_loss(u, u.clone()).item() == 0.0
    v = u + 1e-2 * torch.randn(6, 4)
    a, b = torch.softmax(u @ u.T, 1), torch.softmax(v @ v.T, 1)
    approx = (math.pi**2 / 8) * ((a - b) ** 2).sum().item()
    assert approx > 0
    assert similarity_loss(u, v).item() == pytest.approx(approx, rel=1e-3)


def test_similarity_clamp_keeps_it_finite():
    u = t([[100, 0], [0, 100]])      # A = I (to fp32 precision)
    v = t([[10, 0], [20, 0]])        # v vᵀ = [[100, 200], [200, 400]] -> B = [[0, 1], [0, 1]]
    # Δ = [[1, -1], [0, 0]] -> clamped to ±(1 - 1e-4); cos(π/2 (1 - ε)) = sin(π/2 ε)
    assert similarity_max_delta(u, v) == pytest.approx(1.0)
    want = -2 * math.log(math.sin(math.pi / 2 * 1e-4))
    u.requires_grad_()
    loss = similarity_loss(u, v)
    assert loss.item() == pytest.approx(want, rel=1e-3)
    (g,) = torch.autograd.grad(loss, u)
    assert torch.isfinite(g).all()


def test_similarity_cosine_form_is_scale_free_and_batch_size_aware():
    """The cosine form: the same value for vectors scaled by any norm, the paper's row sums averaged over rows
    (so a batch of copies of the same rows scores as the rows do), and its own by-hand value."""
    torch.manual_seed(0)
    u, v = torch.randn(8, 16), torch.randn(8, 16)
    base = similarity_loss(u, v, form="cosine")
    assert similarity_loss(7.0 * u, 0.1 * v, form="cosine").item() == pytest.approx(base.item(), rel=1e-5)
    paper_small, paper_big = similarity_loss(u, v), similarity_loss(7.0 * u, 7.0 * v)
    # the literal form depends on the norms: at 7x, both rows' softmaxes are one-hot on the diagonal (saturated)
    assert paper_small.item() > 1e-3 and paper_big.item() == pytest.approx(0.0, abs=1e-6)
    # a batch of 64 vectors drawn like the 8: a mean over rows, of the same order (a sum would be ~8x)
    big = similarity_loss(torch.randn(64, 16), torch.randn(64, 16), form="cosine").item()
    assert 0.25 * base.item() < big < 4 * base.item()
    # by hand: softmax of cosines over the temperature among the other texts, −Σ log cos(π/2 Δ) / n
    un, vn = torch.nn.functional.normalize(u, dim=1), torch.nn.functional.normalize(v, dim=1)
    off = torch.eye(8, dtype=torch.bool)
    d = (torch.softmax((un @ un.T / 0.05).masked_fill(off, -math.inf), 1)
         - torch.softmax((vn @ vn.T / 0.05).masked_fill(off, -math.inf), 1))
    assert (d.diagonal() == 0).all() and base.item() > 0.1
    want = -torch.log(torch.cos(math.pi / 2 * d.clamp(-(1 - 1e-4), 1 - 1e-4))).sum().item() / 8
    assert base.item() == pytest.approx(want, rel=1e-5)
    assert similarity_max_delta(u, v, form="cosine") == pytest.approx(d.abs().max().item(), rel=1e-5)
    with pytest.raises(InputError, match="form must be one of"):
        similarity_loss(u, v, form="mean")
    with pytest.raises(InputError, match="temperature must be a positive number"):
        similarity_loss(u, v, form="cosine", temperature=0.0)


# ---- distance constraint ([T] Eqs. 7–10) ---------------------------------------------------------

def _distance_by_hand(u, v, alpha, beta, lam, n_neg):
    n = len(u)
    norm = lambda x: math.sqrt(sum(c * c for c in x))  # noqa: E731
    dist = lambda x, y: norm([a - b for a, b in zip(x, y)])  # noqa: E731
    vbar = sum(norm(x) for x in u + v) / (2 * n)
    k = min(n_neg, n - 1)
    total, active = 0.0, []
    for i in range(n):
        dp = dist(u[i], v[i]) / (vbar + 1e-6)
        hinge = 0.0
        for o in range(1, k + 1):
            j = (i + o) % n
            for dn in (dist(u[i], v[j]) / (vbar + 1e-6), dist(v[i], u[j]) / (vbar + 1e-6)):
                h = max(0.0, alpha - (dn - dp))
                active.append(h > 0)
                hinge += h
        total += beta * dp + lam / k * hinge
    return total / n, active


def test_distance_constraint_by_hand():
    u = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    v = [[1.0, 0.2], [0.3, 1.0], [0.9, 0.8]]
    want, active = _distance_by_hand(u, v, 0.5, 0.25, 0.125, 2)
    assert any(active) and not all(active)  # both live and dead hinges
    got = distance_constraint_loss(t(u), t(v), n_neg=2)
    assert got.item() == pytest.approx(want, rel=1e-5)
    # n_neg larger than n-1 is capped at n-1; explicit lam and alpha
    want2, _ = _distance_by_hand(u, v, 1.0, 0.5, 0.3, 2)
    assert distance_constraint_loss(t(u), t(v), alpha=1.0, beta=0.5, lam=0.3, n_neg=20).item() == \
        pytest.approx(want2, rel=1e-5)
    # n_neg = 1 uses only j = i+1
    want3, _ = _distance_by_hand(u, v, 0.5, 0.25, 0.125, 1)
    assert distance_constraint_loss(t(u), t(v), n_neg=1).item() == pytest.approx(want3, rel=1e-5)


def test_distance_constraint_scale_invariant():
    torch.manual_seed(0)
    u, v = torch.randn(7, 5), torch.randn(7, 5)
    a = distance_constraint_loss(u, v, n_neg=3)
    b = distance_constraint_loss(3 * u, 3 * v, n_neg=3)
    assert a.item() == pytest.approx(b.item(), rel=1e-5)


# ---- ranking ([C] §2) ----------------------------------------------------------------------------

def test_ranking_by_hand_one_direction():
    u = t([[1, 0], [0, 1]])
    v = t([[2, 0], [3, 1]])
    # S = u vᵀ = [[2, 3], [0, 1]]
    want = (-math.log(E**2 / (E**2 + E**3)) - math.log(E**1 / (E**0 + E**1))) / 2
    assert ranking_loss(u, v).item() == pytest.approx(want, rel=1e-6)
    # swapped: S' = v uᵀ = [[2, 0], [3, 1]]
    swapped = (-math.log(E**2 / (E**2 + E**0)) - math.log(E**1 / (E**3 + E**1))) / 2
    assert ranking_loss(v, u).item() == pytest.approx(swapped, rel=1e-6)
    assert abs(want - swapped) > 0.1


def test_ranking_with_hard_negatives_by_hand():
    u = t([[1, 0], [0, 1]])
    v = t([[2, 0], [3, 1]])
    h = t([[1, 1], [0, -1], [2, 2]])
    # row 0 scores: [v0 v1 | h0 h1 h2] = [2, 3 | 1, 0, 2], target 0
    # row 1 scores:                       [0, 1 | 1, -1, 2], target 1
    r0 = -math.log(E**2 / (E**2 + E**3 + E**1 + E**0 + E**2))
    r1 = -math.log(E**1 / (E**0 + E**1 + E**1 + E**-1 + E**2))
    assert ranking_loss(u, v, hard_negatives=h).item() == pytest.approx((r0 + r1) / 2, rel=1e-6)
    with pytest.raises(InputError, match=r"hard_negatives.*\[3, 3\].*u \[2, 2\]"):
        ranking_loss(u, v, hard_negatives=torch.zeros(3, 3))


# ---- distillation (docs/METHOD.md §3.6) ---------------------------------------------------------------

def test_teacher_targets_rms_one():
    tt = teacher_targets(torch.tensor([[3.0, 4.0], [0.0, -2.0]], dtype=torch.float16))
    s = math.sqrt(2)
    torch.testing.assert_close(tt, t([[0.6 * s, 0.8 * s], [0.0, -s]]))
    assert tt.dtype == torch.float32
    torch.manual_seed(0)
    tt = teacher_targets(torch.randn(5, 768) * 7)
    torch.testing.assert_close(tt.pow(2).mean(1).sqrt(), torch.ones(5))
    with pytest.raises(InputError, match=r"zero.*rows \[1\]"):
        teacher_targets(t([[1, 0], [0, 0]]))


def test_distillation_loss_by_hand():
    teacher = t([[3, 4], [0, -2]])
    s = math.sqrt(2)
    target = teacher_targets(teacher)
    assert distillation_loss(target.clone(), target.clone(), teacher).item() == pytest.approx(0.0, abs=1e-12)
    pred_a = t([[1, 1], [0, 0]])
    pred_b = target + 1.0
    want_a = ((1 - 0.6 * s) ** 2 + (1 - 0.8 * s) ** 2 + 0.0 + s**2) / 4
    want_b = 1.0
    assert distillation_loss(pred_a, pred_b, teacher).item() == pytest.approx(want_a + want_b, rel=1e-6)
    assert mono_distillation_loss(pred_a, teacher).item() == pytest.approx(want_a, rel=1e-6)
    assert mono_distillation_loss(target, teacher.half()).item() == pytest.approx(0.0, abs=1e-6)


def test_output_space_distillation_is_two_minus_twice_the_cosine():
    from lwx_edge.training.losses import output_targets

    u = t([[3, 4], [-1, 0], [0.5, 0.5]])
    teacher = t([[1, 0], [0, 2], [1, 1]])
    x = output_targets(u)
    assert torch.allclose(x.pow(2).mean(1), torch.ones(3), atol=1e-6)   # RMS 1, the targets' scale
    assert torch.allclose(output_targets(u * 7.5), x, atol=1e-6)        # only the direction counts
    cos = torch.nn.functional.cosine_similarity(u, teacher, dim=1)
    assert mono_distillation_loss(x, teacher).item() == pytest.approx(float((2 - 2 * cos).mean()), rel=1e-5)


def test_relational_loss_by_hand():
    u = t([[1, 0], [0, 1]])        # C_uu = I
    v = t([[1, 0], [1, 1]])        # C_vv = [[1, r], [r, 1]], r = 1/√2
    teacher = t([[1, 0, 0], [2, 0, 0]])  # C_t = 1 everywhere (and d_T ≠ d)
    r = 1 / math.sqrt(2)
    # C_uv[i, j] = cos(u_i, v_j) = [[1, r], [0, r]]
    want = (0 + 1 + 1 + 0) / 4 + (2 * (1 - r) ** 2) / 4 + (0 + (1 - r) ** 2 + 1 + (1 - r) ** 2) / 4
    assert relational_loss(u, v, teacher).item() == pytest.approx(want, rel=1e-6)
    assert relational_loss(teacher[:, :2], teacher[:, :2] * 3, teacher).item() == pytest.approx(0.0, abs=1e-7)


def test_relational_softmax_form_by_hand():
    # n = 3, the diagonal dropped: each row is a softmax over the other two sentences
    u = t([[1, 0], [0, 1], [1, 1]])
    v = t([[1, 0], [0, 1], [-1, 1]])
    teacher = t([[1, 0, 0], [1, 1, 0], [0, 1, 0]])
    tau = 0.5

    def rows(c):
        c = torch.as_tensor(c, dtype=torch.float64)
        return [torch.softmax(torch.stack([c[i, j] for j in range(3) if j != i]) / tau, 0) for i in range(3)]

    cos = lambda a, b: torch.nn.functional.normalize(a.double(), dim=1) @ torch.nn.functional.normalize(b.double(), dim=1).t()
    p = rows(cos(teacher, teacher))
    want = 0.0
    for c in (cos(u, u), cos(v, v), cos(u, v), cos(v, u)):
        want += sum(float((pi * (pi.log() - qi.log())).sum()) for pi, qi in zip(p, rows(c))) / 3
    got = relational_loss(u, v, teacher, form="softmax", temperature=tau)
    assert got.item() == pytest.approx(want, rel=1e-5)
    # only each row's ranking counts: the pair's own cosine (the diagonal) does not enter
    assert relational_loss(teacher, teacher, teacher, form="softmax").item() == pytest.approx(0.0, abs=1e-6)
    far = relational_loss(u, v, teacher, form="softmax", temperature=0.05)
    assert far.item() > got.item()  # a sharper τ weighs the nearest neighbour's order more
    with pytest.raises(InputError, match="relational form must be 'mse' or 'softmax', got 'l1'"):
        relational_loss(u, v, teacher, form="l1")
    with pytest.raises(InputError, match="at least 3, got 2"):
        relational_loss(u[:2], v[:2], teacher[:2], form="softmax")


# ---- shapes and gradients ------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [alignment_loss, similarity_loss, distance_constraint_loss, ranking_loss,
                                similarity_max_delta])
def test_pair_shape_errors(fn):
    with pytest.raises(InputError, match=r"u and v.*u \[3, 4\] and v \[2, 4\]"):
        fn(torch.zeros(3, 4), torch.zeros(2, 4))
    with pytest.raises(InputError, match=r"u \[3, 4\] and v \[3, 5\]"):
        fn(torch.zeros(3, 4), torch.zeros(3, 5))
    with pytest.raises(InputError, match=r"u must be 2-D.*\[3\]"):
        fn(torch.zeros(3), torch.zeros(3))
    with pytest.raises(InputError, match=r"v must be non-empty.*\[0, 4\]"):
        fn(torch.ones(1, 4), torch.zeros(0, 4))


def test_distill_shape_errors():
    with pytest.raises(InputError, match=r"pred_a \[2, 3\] and pred_b \[2, 4\]"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3))
    with pytest.raises(InputError, match=r"teacher \[2, 5\].*pred_a \[2, 3\]"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 5))
    with pytest.raises(InputError, match=r"teacher \[3, 3\].*pred \[2, 3\]"):
        mono_distillation_loss(torch.zeros(2, 3), torch.ones(3, 3))
    with pytest.raises(InputError, match=r"teacher \[3, 7\].*u \[2, 3\]"):
        relational_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(3, 7))


def test_all_losses_backpropagate_finite_gradients():
    torch.manual_seed(0)
    n, d = 6, 8
    u = torch.randn(n, d, requires_grad=True)
    v = torch.randn(n, d, requires_grad=True)
    uu, vv = u.detach().clone(), v.detach().clone()
    vv[0] = uu[0]  # a pair at distance 0 (norm's gradient at 0)
    u2, v2 = uu.requires_grad_(), vv.requires_grad_()
    teacher = torch.randn(n, 5)
    proj = torch.nn.Linear(d, 5)
    cases = {
        "align": lambda a, b: alignment_loss(a, b),
        "sim": lambda a, b: similarity_loss(a, b),
        "distance": lambda a, b: distance_constraint_loss(a, b, n_neg=3),
        "ranking": lambda a, b: ranking_loss(a, b, hard_negatives=torch.randn(2 * n, d)),
        "kd": lambda a, b: distillation_loss(proj(a), proj(b), teacher),
        "mono": lambda a, b: mono_distillation_loss(proj(a), teacher) + mono_distillation_loss(proj(b), teacher),
        "rel": lambda a, b: relational_loss(a, b, teacher),
        "rel-softmax": lambda a, b: relational_loss(a, b, teacher, form="softmax"),
    }
    for name, f in cases.items():
        for a, b in ((u, v), (u2, v2)):
            ga, gb = torch.autograd.grad(f(a, b), (a, b))
            assert torch.isfinite(ga).all() and torch.isfinite(gb).all(), name
            assert ga.abs().sum() > 0 and gb.abs().sum() > 0, name
    head = torch.nn.Linear(d, V)
    gen = generative_loss(head(u[:2]), head(v[:2]), IDS_A, IDS_B, SIDE, W_T)
    ga, gb = torch.autograd.grad(gen, (u, v))
    assert torch.isfinite(ga).all() and torch.isfinite(gb).all() and ga.abs().sum() > 0
