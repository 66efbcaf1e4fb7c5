"""Sub-batches whose cost follows the real tokens of a call, not its padding (issue 14).

A forward pass over ``rows`` texts padded to ``longest`` tokens costs about ``overhead + rows × longest``
token-steps, where ``overhead`` is what one backend call costs on its own (session dispatch, padding,
copies) expressed in token-steps. An app's unsorted batch of 32 mixed-length texts, run as one call, pays for
every row at the longest text's length; run as 32 calls, it pays the overhead 32 times. ``plan_batches``
finds the cheapest split in between, exactly: on texts sorted by length the best partition is contiguous,
so a dynamic programme over the sorted lengths finds it in O(n · max_batch).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# What one call of the compiled backends (ONNX, ExecuTorch) costs on its own, in token-steps. Measured on the app
# workload (docs/BENCHMARKS.md, "The call overhead"): the 512-FFN default ran 2-8% faster with 4 than with 16.
CALL_OVERHEAD = 4.0


def plan_batches(lengths: Sequence[int], max_batch: int, overhead: float) -> list[np.ndarray]:
    """Indices into ``lengths`` grouped into batches of at most ``max_batch`` rows that minimise
    Σ (overhead + rows × longest). Every batch holds texts of similar length, shortest batch first.
    ``overhead=0`` keeps every length in its own batch; a huge overhead gives fixed chunks of ``max_batch``.
    Every length must be at least 1: a text without tokens has no row to run (``Encoder.embed`` gives it a zero
    vector and keeps it out of the plan)."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    lengths = np.asarray(lengths, dtype=np.float64).reshape(-1)
    if len(lengths) and not lengths.min() >= 1:
        bad = int(np.flatnonzero(~(lengths >= 1))[0])
        raise ValueError(f"every length must be >= 1 (an empty row has nothing to run), got {lengths[bad]:g} "
                         f"at index {bad}")
    n = len(lengths)
    if n <= 1:
        return [np.arange(n)] if n else []
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order]
    best = np.zeros(n + 1)   # best[i]: cheapest cost of the i shortest texts
    cut = np.zeros(n + 1, dtype=np.int64)  # where the last batch of that plan starts
    for i in range(1, n + 1):
        j = np.arange(max(0, i - max_batch), i)
        cost = best[j] + overhead + (i - j) * sorted_len[i - 1]
        k = int(np.argmin(cost))
        best[i], cut[i] = cost[k], j[k]
    groups, i = [], n
    while i > 0:
        groups.append(order[cut[i]:i])
        i = cut[i]
    return groups[::-1]


def plan_cost(lengths: Sequence[int], groups: list[np.ndarray], overhead: float) -> float:
    """Σ (overhead + rows × longest) of a plan: what ``plan_batches`` minimises."""
    lengths = np.asarray(lengths, dtype=np.float64)
    return float(sum(overhead + len(g) * lengths[g].max() for g in groups))
