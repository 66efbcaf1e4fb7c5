"""The trainer's divergence guard: notice a run going wrong, roll back to the last good state, go on slower.

Three signs, each named with the loss term behind it:

- a non-finite loss term or gradient at a step (the step is not applied);
- a spike: the total loss above ``spike_factor`` times the median of the last ``window`` steps;
- collapse at an evaluation: the probe set's unrelated texts get nearly one vector (:mod:`lwx_edge.collapse`).

On a sign the trainer restores the last good state (model and optimizer, kept at every evaluation that showed no
sign), scales the learning rate by ``lr_factor`` and goes on from there; after ``max_rollbacks`` rollbacks it
stops with :class:`DivergenceError`. Every event goes to metrics.jsonl and the log.
"""
from __future__ import annotations

import copy
import math
from collections import deque

from ..errors import LwxError

COLLAPSE_MARGIN = 0.1  # a collapse is a jump: from at least this far below the limit to above it


class DivergenceError(LwxError):
    """The run kept diverging after its rollbacks."""


class DivergenceGuard:
    """Watches the loss terms of every step and the collapse measure of every evaluation (see the module)."""

    def __init__(self, max_rollbacks: int = 3, lr_factor: float = 0.5, spike_factor: float = 10.0,
                 window: int = 100, batch_size: int | None = None):
        self.max_rollbacks, self.lr_factor, self.spike_factor = max_rollbacks, lr_factor, spike_factor
        self.batch_size = batch_size
        self.recent: dict[str, deque] = {}
        self.window = window
        self.good: dict | None = None
        self.good_terms: dict[str, float] = {}
        self.good_cos: float | None = None
        self.rollbacks = 0

    def check_step(self, rec: dict[str, float], terms: tuple[str, ...]) -> tuple[str, str] | None:
        """(what happened, the term behind it) if this step's losses diverge, else None (and the step counts in
        the window)."""
        bad = [k for k in terms if not math.isfinite(rec.get(k, 0.0))]
        if bad or not math.isfinite(rec["loss"]):
            return "a non-finite loss", ", ".join(bad) or "loss"
        if not math.isfinite(rec.get("grad_norm", 0.0)):
            return f"a non-finite gradient (norm {rec['grad_norm']})", "the gradient of every term together"
        past = self.recent.get("loss")
        if past is not None and len(past) == self.window:
            median = sorted(past)[len(past) // 2]
            if median > 0 and rec["loss"] > self.spike_factor * median:
                return (f"a loss spike ({rec['loss']:.4g}, {self.spike_factor:g}x the median of the last "
                        f"{self.window} steps, {median:.4g})"), self._rising(rec, terms)
        for k in ("loss", *terms):
            self.recent.setdefault(k, deque(maxlen=self.window)).append(rec[k])
        return None

    def check_eval(self, unrelated_cos: float, limit: float) -> tuple[str, str] | None:
        """(what happened, the term behind it) if the model collapsed: the probe's unrelated cosine above
        ``limit`` where the last good state was clearly below it (by :data:`COLLAPSE_MARGIN`: a start near or above
        it, as a tiny model's may be, is where the run is, not a divergence), or not finite. Else None."""
        was_fine = self.good_cos is not None and self.good_cos <= limit - COLLAPSE_MARGIN
        if not math.isfinite(unrelated_cos) or (unrelated_cos > limit and was_fine):
            return (f"representation collapse (unrelated probe texts at cosine {unrelated_cos:.3f})",
                    self._collapsed_term())
        return None

    def keep(self, model, optimizer, state: dict, unrelated_cos: float | None = None) -> None:
        """Remember a good state (CPU copies of the weights and the optimizer, ``state``: step, time, ..., and the
        collapse measure of its evaluation, if any)."""
        self.good_cos = unrelated_cos
        self.good = {"model": {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()},
                     "optimizer": _to_cpu(optimizer.state_dict()), "state": dict(state)}
        self.good_terms = self._means()

    def roll_back(self, model, optimizer, what: str, term: str, step: int) -> dict:
        """Restore the last good state; returns it (step, time, ...). DivergenceError after max_rollbacks."""
        self.rollbacks += 1
        if self.good is None or self.rollbacks > self.max_rollbacks:
            raise DivergenceError(
                f"training diverged at step {step}: {what}, in {term}; stopped after {self.rollbacks - 1} "
                f"rollback(s) with the learning rate scaled down to {self.lr_factor ** (self.rollbacks - 1):g}. "
                "Lower --lr, raise warmup_steps, or check the data and the loss weights")
        model.load_state_dict(self.good["model"])
        optimizer.load_state_dict(self.good["optimizer"])
        self.recent.clear()
        return dict(self.good["state"])

    def _collapsed_term(self) -> str:
        """The alignment loss when it sits at 2·ln n (every in-batch candidate equally likely: all vectors alike),
        else the term that grew most."""
        now = self._means()
        if "align" in now and self.batch_size and now["align"] > 0.9 * 2 * math.log(self.batch_size):
            return f"align (mean {now['align']:.2f}, at 2·ln {self.batch_size} = {2 * math.log(self.batch_size):.2f})"
        return self._rising(now, tuple(k for k in now if k != "loss"))

    def _means(self) -> dict[str, float]:
        return {k: sum(v) / len(v) for k, v in self.recent.items() if v}

    def _rising(self, now: dict[str, float], terms) -> str:
        """The term that grew most since the last good state (relative to its size then)."""
        ratios = {k: now[k] / self.good_terms[k] for k in terms
                  if k in now and self.good_terms.get(k, 0) > 0 and math.isfinite(now[k])}
        return max(ratios, key=ratios.get) if ratios else "unknown"


def _to_cpu(obj):
    """A copy of a state dict with every tensor copied to the CPU (the live state keeps changing)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return copy.deepcopy(obj)


__all__ = ["COLLAPSE_MARGIN", "DivergenceError", "DivergenceGuard"]
