"""The objective over one batch: what the losses read, the registry's terms, their weighted sum."""
from __future__ import annotations

import torch

from . import losses as L
from .config import LossWeights, TrainConfig
from .losses.registry import active, gathered


def loss_inputs(out: dict, batch: dict, cfg: TrainConfig) -> dict:
    """What the losses read (docs/METHOD.md §3.6): batch fields, the forward outputs (u, v in fp32), and the distilled
    vectors ``kd_a``, ``kd_b``, ``kd_mono``: g(·) with the training-only projection, or the output itself
    (unit length, √d scale)."""
    x = {**batch, **out, "u": out["u"].float(), "v": out["v"].float()}
    if cfg.kd_space == "projection":
        x.update({f"kd_{k}": out[f"proj_{k}"] for k in ("a", "b", "mono") if f"proj_{k}" in out})
    else:
        x.update({f"kd_{k}": L.output_targets(out[name]) for k, name in (("a", "u"), ("b", "v"), ("mono", "mono"))
                  if name in out})
    return x


def compute_losses(out: dict, batch: dict, cfg: TrainConfig, world: int) -> dict[str, torch.Tensor]:
    """Every loss of the registry (:data:`lwx_edge.training.losses.LOSSES`) that runs on this (local) batch; under DDP the
    batch-level ones read all-gathered inputs, so they see the global batch."""
    x = loss_inputs(out, batch, cfg)
    losses = active(cfg.weights, x)
    glob = x
    if world > 1:
        from torch.distributed.nn.functional import all_gather

        glob = {**x, **{k: torch.cat(all_gather(x[k])) for k in gathered(losses)}}
    return {loss.name: loss(glob if loss.batch_level else x, cfg) for loss in losses}


def total_loss(terms: dict[str, torch.Tensor], weights: LossWeights) -> torch.Tensor:
    """Σ_k weight_k · term_k over the computed loss terms."""
    return sum(getattr(weights, k) * v for k, v in terms.items())
