"""PyTorch backend: runs a SentenceEncoder (training checkpoints, bundles with safetensors weights)."""
from __future__ import annotations

import threading

import numpy as np
import torch


class TorchBackend:
    name = "torch"
    # What one call costs on its own, in row·token steps (tools/bench_app.py --calibrate): Encoder.embed
    # splits a batch where padding would cost more than another call (lwx_edge.batching).
    call_overhead = 16.0

    def __init__(self, encoder: torch.nn.Module, device: str | torch.device = "cpu"):
        self.encoder = encoder
        self.device = torch.device(device)
        self._lock = threading.Lock()  # eval()/train() toggling is module state

    @torch.no_grad()
    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        ids = torch.from_numpy(np.ascontiguousarray(input_ids, dtype=np.int64)).to(self.device)
        mask = torch.from_numpy(np.ascontiguousarray(attention_mask, dtype=np.int64)).to(self.device)
        with self._lock:
            was_training = self.encoder.training
            self.encoder.eval()
            try:
                out = self.encoder(ids, mask)
            finally:
                self.encoder.train(was_training)
        return out.float().cpu().numpy()

    @classmethod
    def from_bundle(cls, bundle, device: str = "cpu") -> "TorchBackend":
        from ..checkpoint import load_encoder

        return cls(load_encoder(bundle, device=device), device=device)
