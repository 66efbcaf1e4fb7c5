"""The batch planner: exact, bounded, complete, and what it changes in an embed call."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lwx_edge.sub_batches import plan_batches, plan_cost


def brute_force(lengths, max_batch, overhead):
    """The cheapest partition of the sorted texts into contiguous runs, by trying every cut."""
    s = sorted(lengths)
    n, best = len(s), float("inf")
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        runs = [s[a:b] for a, b in zip(bounds, bounds[1:])]
        if all(len(r) <= max_batch for r in runs):
            best = min(best, sum(overhead + len(r) * max(r) for r in runs))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_plan_is_optimal_bounded_and_complete(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 60, size=9).tolist()
    max_batch, overhead = int(rng.integers(2, 6)), float(rng.choice([0.0, 5.0, 30.0, 200.0]))
    groups = plan_batches(lengths, max_batch, overhead)
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(lengths)))
    assert all(1 <= len(g) <= max_batch for g in groups)
    assert plan_cost(lengths, groups, overhead) == pytest.approx(brute_force(lengths, max_batch, overhead))


def test_overhead_decides_between_one_call_and_many():
    lengths = [5] * 31 + [60]  # an app's batch: short texts and one long one
    assert len(plan_batches(lengths, 32, float("inf"))) == 1           # today's single padded call
    split = plan_batches(lengths, 32, 16.0)
    assert [len(g) for g in split] == [31, 1]                          # the long text runs on its own
    assert plan_cost(lengths, split, 16.0) < plan_cost(lengths, [np.arange(32)], 16.0) / 3
    assert [len(g) for g in plan_batches([7] * 70, 32, 16.0)] == [6, 32, 32]  # equal lengths: full batches
    assert plan_batches([], 32, 16.0) == []
    (single,) = plan_batches([9], 32, 16.0)  # one text: one call, without the programme
    assert single.tolist() == [0] and single.dtype.kind == "i"
    with pytest.raises(ValueError, match="max_batch"):
        plan_batches([3], 0, 1.0)


@pytest.mark.parametrize("lengths, where", [([3, 0, 5], "got 0 at index 1"), ([0], "got 0 at index 0"),
                                            ([4, 2, -1], "got -1 at index 2"), ([2, float("nan")], "got nan at index 1")])
def test_an_empty_row_is_never_planned(lengths, where):
    """The planner refuses a length under 1: Encoder.embed keeps texts without tokens out of every batch."""
    with pytest.raises(ValueError, match=f"every length must be >= 1 .*{where}"):
        plan_batches(lengths, 4, 1.0)


def test_embed_calls_the_backend_per_planned_batch_with_unchanged_vectors(tiny_bundle):
    from lwx_edge import Encoder

    enc = Encoder.load(tiny_bundle, backend="torch")
    texts = ["cat"] * 20 + ["the cat sat on the mat near the dog and the dog sat too " * 3]
    calls = []
    run = enc.backend.run
    enc.backend.run = lambda ids, mask: calls.append(ids.shape) or run(ids, mask)
    enc.backend.call_overhead = float("inf")
    one = enc.embed(texts, batch_size=32, truncation="ignore")
    assert len(calls) == 1
    calls.clear()
    enc.backend.call_overhead = 4.0
    planned = enc.embed(texts, batch_size=32, truncation="ignore")
    assert len(calls) == 2 and sorted(c[0] for c in calls) == [1, 20]
    assert np.abs(planned - one).max() < 1e-5
