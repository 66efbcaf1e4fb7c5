"""PyTorch backend: runs a SentenceEncoder (training checkpoints, bundles with safetensors weights).

torch is imported when a backend is opened, not with this module (the registry imports every backend module).
Before anything is allocated, the weights file's tensor shapes (its header) are compared with the ones the
config describes (worked out on the ``meta`` device, which allocates nothing): a crafted config.json cannot make
the backend allocate more than the weights file holds (``Bundle.load`` bounds the config's sizes too).
"""
from __future__ import annotations

import importlib
import os
import threading
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..bundle import WEIGHTS
from ..errors import InputError
from .base import BackendSpec

if TYPE_CHECKING:
    from ..bundle import Bundle


class TorchBackend:
    """Runs the PyTorch encoder of a bundle's weights (the training-side reference)."""
    name = "torch"
    # What one call costs on its own, in row·token steps (tools/bench_app.py --calibrate): Encoder.embed
    # splits a batch where padding would cost more than another call (lwx_edge.sub_batches).
    call_overhead = 16.0

    def __init__(self, encoder: Any, device: str = "cpu"):  # a lwx_edge.training.model.SentenceEncoder (the torch side)
        import torch

        self.encoder = encoder
        self.device = torch.device(device)
        self._lock = threading.Lock()  # eval()/train() toggling is module state

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        import torch

        ids = torch.from_numpy(np.ascontiguousarray(input_ids, dtype=np.int64)).to(self.device)
        mask = torch.from_numpy(np.ascontiguousarray(attention_mask, dtype=np.int64)).to(self.device)
        with self._lock, torch.no_grad():
            was_training = self.encoder.training
            self.encoder.eval()
            try:
                out = self.encoder(ids, mask)
            finally:
                self.encoder.train(was_training)
        return out.float().cpu().numpy()

    @classmethod
    def from_bundle(cls, bundle: Bundle, device: str = "cpu") -> "TorchBackend":
        from ..training.checkpoint import load_encoder  # checks the weights' names and shapes before allocating

        return cls(load_encoder(bundle, device=device), device=device)


def torch_module() -> Any:
    """torch, imported on demand for ``Encoder.encode(convert_to_tensor=True)`` (sentence-transformers' torch
    outputs), or an InputError saying how to get numpy instead."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise InputError("convert_to_tensor=True and convert_to_numpy=False return torch tensors, and torch is "
                         "not installed (pip install torch); leave them at their defaults for a numpy array") from None


def _open(path: str | os.PathLike, bundle: Bundle | None = None, *, threads: int | None = None,
          max_batch: int | None = None, device: str = "cpu") -> TorchBackend:
    import torch

    if threads:
        torch.set_num_threads(threads)
    return TorchBackend.from_bundle(cast("Bundle", bundle), device=device)  # always inside a bundle


BACKEND = BackendSpec(
    name="torch", artifacts={"fp32": WEIGHTS}, modules=("torch", "safetensors"),
    install="pip install 'lwx-edge[train]'", open=_open, priority=30, any_precision=True,
    missing="the torch backend needs the weights (use backend='onnx' or 'executorch' for exported models)")
