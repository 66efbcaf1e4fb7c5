"""The training wing (torch side: ``pip install 'lwx-edge[train]'``): everything that makes a bundle's weights.

``config`` (TrainConfig, LossWeights, the schedule), ``trainer`` (the loop, single process or torchrun DDP),
``inputs`` (the corpora a run reads), ``objective`` and ``losses/`` (the loss terms), ``model`` (the dual
encoder and its exported half), ``checkpoint`` (safetensors bundles and checkpoints), ``start`` and
``transfer`` (starting from a bundle, ``lwx-edge transfer``), ``guard`` (divergence rollback), ``run_log``.
Nothing of the SDK imports this package (tests/structure/test_imports.py)."""
from __future__ import annotations

from .config import LossWeights, TrainConfig
from .trainer import Trainer, train

__all__ = ["LossWeights", "TrainConfig", "Trainer", "train"]
