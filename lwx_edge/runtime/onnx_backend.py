"""ONNX backend: runs ``model.onnx`` / ``model.int8.onnx`` with onnxruntime (CPU). Torch-free.

This is the base-install path: ``pip install lwx-edge`` brings onnxruntime, numpy and sentencepiece, and
nothing here (or in what it imports) imports torch. ``InferenceSession.run`` is thread-safe, so several
threads may share one backend.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BackendUnavailable, BundleError, LwxError
from ..sub_batches import CALL_OVERHEAD
from .base import BackendSpec

if TYPE_CHECKING:
    from ..bundle import Bundle

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "sentence_embedding"
# onnxruntime's CPU SkipLayerNormalization kernel (what this fusion makes of "residual add + LayerNorm") ran
# 3-4x slower than the unfused Add + LayerNormalization on our encoder (0.83 ms per node at 32 x 11 tokens,
# 37% of an int8 forward pass, onnxruntime 1.32); without it batched int8 throughput rises by about a third.
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


class OnnxBackend:
    """``run(input_ids int64 [n, T], attention_mask int64 [n, T]) -> float32 [n, d]`` with onnxruntime."""

    name = "onnx"
    call_overhead = CALL_OVERHEAD  # Encoder.embed splits a batch where padding would cost more than a call

    def __init__(self, path: str | os.PathLike, threads: int | None = None):
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise BackendUnavailable(f"onnxruntime is not installed ({e}); pip install onnxruntime") from None
        self.path = Path(path)
        so = ort.SessionOptions()
        so.log_severity_level = 3  # errors only
        if threads:
            so.intra_op_num_threads = int(threads)
            so.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(self.path), so, providers=["CPUExecutionProvider"],
                                                disabled_optimizers=DISABLED_OPTIMIZERS)
        except Exception as e:  # onnxruntime raises its own exception types (InvalidProtobuf, Fail, ...)
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BundleError(f"{self.path}: onnxruntime cannot read this model ({msg[:300]})") from None
        inputs = {i.name: i.type for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if set(inputs) != set(INPUT_NAMES) or OUTPUT_NAME not in outputs:
            raise BundleError(f"{self.path}: not an lwx-edge encoder model (inputs {sorted(inputs)}, outputs "
                              f"{outputs}; expected inputs {list(INPUT_NAMES)} and output {OUTPUT_NAME!r})")
        bad = {k: v for k, v in inputs.items() if v != "tensor(int64)"}
        if bad:
            raise BundleError(f"{self.path}: inputs must be int64, got {bad}")
        shape = [o.shape for o in self.session.get_outputs() if o.name == OUTPUT_NAME][0]
        self.dim = shape[-1] if shape and isinstance(shape[-1], int) else None
        self.threads = threads
        try:
            meta = self.session.get_modelmeta().custom_metadata_map
        except Exception:
            meta = {}
        self.metadata = dict(meta)
        self.max_batch = None  # dynamic batch

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": np.ascontiguousarray(input_ids, dtype=np.int64),
                 "attention_mask": np.ascontiguousarray(attention_mask, dtype=np.int64)}
        try:
            out = self.session.run([OUTPUT_NAME], feeds)[0]
        except Exception as e:
            raise LwxError(f"{self.path}: onnxruntime failed on a batch of shape {feeds['input_ids'].shape} "
                           f"({type(e).__name__}: {str(e)[:300]})") from None
        return np.asarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"OnnxBackend({str(self.path)!r}, threads={self.threads})"


def _open(path: str | os.PathLike, bundle: Bundle | None = None, *, threads: int | None = None,
          max_batch: int | None = None, device: str = "cpu") -> OnnxBackend:
    return OnnxBackend(path, threads=threads)


BACKEND = BackendSpec(
    name="onnx", artifacts={"int8": "model.int8.onnx", "fp32": "model.onnx"}, modules=("onnxruntime",),
    install="pip install onnxruntime", open=_open, priority=10, format="onnx", exporter="lwx_edge.export.onnx",
    aliases=("ort",))
