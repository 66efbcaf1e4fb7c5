"""The terms of the training objective, one entry each.

Adding a loss takes its function, one :class:`Loss` entry below and a ``LossWeights`` field of the same name.
A term runs when its weight is non-zero and every input it reads is present. The inputs are the batch fields
(``ids_a``, ``teacher``, ``mono_teacher``, ...), the forward outputs (``u``, ``v``, ``logits_a``, ``mono``,
...) and the distilled vectors ``kd_a``, ``kd_b``, ``kd_mono`` (see :func:`lwx_edge.training.objective.loss_inputs`).
Batch-level terms compare every pair with the whole batch (in-batch negatives, cosine matrices): under DDP
the inputs they read are all-gathered, so they see the global batch, exactly as a single process does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .alignment import alignment_loss
from .distance import distance_constraint_loss
from .distill import distillation_loss, mono_distillation_loss, relational_loss
from .generative import generative_loss
from .ranking import ranking_loss
from .similarity import similarity_loss


@dataclass(frozen=True)
class Loss:
    """One loss term: its weight name, function, the inputs it reads, and whether it is batch-level."""
    name: str                              # its LossWeights field and its metrics key
    fn: Callable[..., torch.Tensor]        # called with the inputs named by ``reads``, in that order
    reads: tuple[str, ...]
    batch_level: bool = False              # sees the global batch under DDP
    options: Callable[[object], dict] | None = None  # keyword arguments taken from the TrainConfig

    def __call__(self, inputs: dict, cfg) -> torch.Tensor:
        return self.fn(*(inputs[k] for k in self.reads), **(self.options(cfg) if self.options else {}))


LOSSES: tuple[Loss, ...] = (
    Loss("gen", generative_loss, ("logits_a", "logits_b", "ids_a", "ids_b", "masked_side", "masked_token"),
         options=lambda cfg: {"mode": cfg.gen_mode}),
    Loss("align", alignment_loss, ("u", "v"), batch_level=True),
    Loss("sim", similarity_loss, ("u", "v"), batch_level=True,
         options=lambda cfg: {"form": cfg.sim_form, "temperature": cfg.sim_temperature}),
    Loss("distance", distance_constraint_loss, ("u", "v"), batch_level=True),
    Loss("ranking", ranking_loss, ("u", "v"), batch_level=True),
    Loss("rel", relational_loss, ("u", "v", "teacher"), batch_level=True,
         options=lambda cfg: {"form": cfg.rel_form, "temperature": cfg.rel_temperature}),
    Loss("kd", distillation_loss, ("kd_a", "kd_b", "teacher")),
    Loss("mono", mono_distillation_loss, ("kd_mono", "mono_teacher")),
)


def active(weights, inputs: dict) -> list[Loss]:
    """The losses that run: non-zero weight and every input present (in registry order)."""
    return [loss for loss in LOSSES if getattr(weights, loss.name) and all(k in inputs for k in loss.reads)]


def gathered(losses: list[Loss]) -> list[str]:
    """The inputs that the batch-level ones among ``losses`` read (all-gathered under DDP), in a fixed order."""
    return list(dict.fromkeys(k for loss in losses if loss.batch_level for k in loss.reads))
