"""Which process a run is (torchrun's environment), its device, and what every rank must share."""
from __future__ import annotations

import os

import numpy as np
import torch
import torch.distributed as dist

from ..errors import LwxError


def dist_info() -> tuple[int, int, int]:
    """(rank, world size, local rank): torchrun's, or a single process's (0, 1, 0)."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    return 0, 1, 0


def run_device(device: str, local_rank: int) -> torch.device:
    """The torch device of ``device`` (auto | cpu | cuda) for this process."""
    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise LwxError("--device cuda was asked for but no CUDA device is available")
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def to_device(batch: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """A numpy batch as tensors on ``device`` (without its ``index``)."""
    return {k: torch.from_numpy(v).to(device, non_blocking=True) for k, v in batch.items() if k != "index"}


def from_rank0(value, world: int):
    """Rank 0's ``value`` on every rank (pickled; for what ranks compute alike but need not agree bit for bit)."""
    if world == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]
