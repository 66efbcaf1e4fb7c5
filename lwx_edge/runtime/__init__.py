"""Inference backends. Each runs token ids [n, T] + attention mask [n, T] (int64) -> float32 [n, d]."""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Backend(Protocol):
    name: str
    call_overhead: float  # one call's own cost in row·token steps (lwx_edge.batching.plan_batches)

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray: ...
