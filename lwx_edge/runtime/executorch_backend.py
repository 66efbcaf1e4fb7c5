"""ExecuTorch backend: runs ``model.pte`` / ``model.int8.pte`` (XNNPACK) with ExecuTorch's Python runtime.

Nothing is imported from ExecuTorch (which itself needs torch) until a backend is created, and then only its
native runtime module, not the compiler (``_native_runtime``).
Runtime notes (docs/EXPORT.md §2, §7, §8): int8 programs need ``import executorch.kernels.quantized`` before loading
(``embedding_byte``); the thread pool is reset *before* ``load_method`` (XNNPACK keeps the pool it saw);
inputs are contiguous int64; batches above the program's ``max_batch`` run in chunks of rows of similar
length, each cut to its own longest row (right padding). One loaded method owns one planned activation
arena, so calls are serialised with a lock (thread-safe, not parallel). The thread pool is process-wide:
resetting it while another encoder executes crashes the process, so resets and executions share one lock,
and a reset happens only when the thread count changes. The program's header is checked before the runtime
sees the file (a damaged program can abort the process inside the runtime).
"""
from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import numpy as np

from .._quiet import native_quiet
from ..batching import CALL_OVERHEAD
from ..errors import BackendUnavailable, BundleError, LwxError
from .base import BackendSpec


def available() -> tuple[bool, str]:
    """(True, "") if ExecuTorch's runtime can be imported, else (False, why)."""
    try:
        import importlib.util

        if importlib.util.find_spec("executorch") is None:
            return False, "executorch is not installed"
    except (ImportError, ValueError) as e:
        return False, f"executorch is not importable ({e})"
    return True, ""


_RUNTIME_LOCK = threading.RLock()  # ExecuTorch's thread pool is process-wide: resets and executions take turns
_pool_threads: int | None = None


def check_program(path: Path) -> None:
    """Refuse a file that is not a whole ExecuTorch program before the runtime parses it: the flatbuffer
    identifier ``ET..`` and, when the extended header ``eh00`` is there, program and segment sizes that fit."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(40)
    except OSError as e:
        raise BundleError(f"{path}: cannot read the ExecuTorch program ({e.strerror or e})") from None
    if len(head) < 8 or head[4:6] != b"ET" or int.from_bytes(head[:4], "little") >= size:
        raise BundleError(f"{path}: not an ExecuTorch program (bad header); re-export it")
    if head[8:12] == b"eh00" and len(head) >= 40:
        program = int.from_bytes(head[16:24], "little")
        seg_base, seg_size = int.from_bytes(head[24:32], "little"), int.from_bytes(head[32:40], "little")
        if program > size or (seg_size and seg_base + seg_size > size):
            raise BundleError(f"{path}: the ExecuTorch program is truncated ({size} bytes, its header needs "
                              f"{max(program, seg_base + seg_size)}); re-export it")


class ExecuTorchBackend:
    """``run(input_ids int64 [n, T], attention_mask int64 [n, T]) -> float32 [n, d]`` with ExecuTorch."""

    name = "executorch"
    call_overhead = CALL_OVERHEAD  # Encoder.embed splits a batch where padding would cost more than a call

    def __init__(self, path: str | os.PathLike, threads: int | None = None, max_batch: int | None = None):
        self.path = Path(path)
        self.threads = threads
        with native_quiet():  # ExecuTorch's harmless native log lines (cpuinfo, threadpool resets)
            try:
                import torch  # noqa: F401  (the pybindings exchange torch tensors; ExecuTorch's own need)
                native = _native_runtime()
            except ImportError as e:
                raise BackendUnavailable(
                    f"the ExecuTorch runtime is not installed ({e}); pip install 'lwx-edge[export]' "
                    "(or executorch==1.5.1), or use the ONNX model with backend='onnx'") from None
            try:
                import executorch.kernels.quantized  # noqa: F401  (embedding_byte for int8 programs)
            except Exception:
                pass
            check_program(self.path)
            with _RUNTIME_LOCK:
                _set_threads(threads)
                try:
                    self.program = native._load_program(str(self.path))
                    self.method = self.program.load_method("forward")
                except Exception as e:
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    raise BundleError(f"{self.path}: the ExecuTorch runtime cannot load this program "
                                      f"({msg[:300]})") from None
        self.max_batch = int(max_batch or self._constant("get_max_batch") or 1)
        self.max_len = self._constant("get_max_seq_len")
        self.dim = self._constant("get_embedding_dim")

    def _constant(self, name: str) -> int | None:
        try:
            with _RUNTIME_LOCK:
                return int(self.program.load_method(name)([])[0])
        except Exception:
            return None

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        ids = np.ascontiguousarray(input_ids, dtype=np.int64)
        mask = np.ascontiguousarray(attention_mask, dtype=np.int64)
        if ids.shape[0] <= self.max_batch:
            return self._execute(ids, mask)
        # More rows than the program takes: chunks of rows of similar length, each cut to its longest row.
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        out = None
        for s in range(0, len(order), self.max_batch):
            rows = order[s:s + self.max_batch]
            t = max(1, int(lengths[rows].max()))
            vecs = self._execute(ids[rows, :t], mask[rows, :t])
            if out is None:
                out = np.empty((len(order), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
        return out

    def _execute(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch

        x, m = torch.from_numpy(np.ascontiguousarray(ids)), torch.from_numpy(np.ascontiguousarray(mask))
        with _RUNTIME_LOCK:
            try:
                out = self.method([x, m])[0]
            except Exception as e:
                raise LwxError(f"{self.path}: ExecuTorch failed on a batch of shape {tuple(x.shape)} "
                               f"({type(e).__name__}: {str(e)[:300]})") from None
            return out.detach().numpy().astype(np.float32, copy=True)  # the arena is reused by the next call

    def __repr__(self) -> str:
        return f"ExecuTorchBackend({str(self.path)!r}, max_batch={self.max_batch}, threads={self.threads})"


def _set_threads(threads: int | None) -> None:
    """Size the process-wide thread pool once, at the first load that asks (before ``load_method``: XNNPACK
    keeps the pool it saw). Resetting it again while another encoder runs crashed (issue 17) or deadlocked, so a
    later, different request keeps the pool and says so. Call with ``_RUNTIME_LOCK`` held."""
    global _pool_threads
    if not threads or threads == _pool_threads:
        return
    if _pool_threads is not None:
        warnings.warn(f"ExecuTorch's thread pool is process-wide and already has {_pool_threads} thread(s); "
                      f"this encoder shares it (threads={threads} ignored)", UserWarning, stacklevel=4)
        return
    try:
        _native_runtime()._unsafe_reset_threadpool(int(threads))
        _pool_threads = int(threads)
    except Exception:
        pass


def _native_runtime():
    """ExecuTorch's native runtime module. Imported directly: ``executorch.runtime`` wraps the same module, but
    importing it (through ``portable_lib``) imports ExecuTorch's whole compiler (``executorch.exir``), which
    took 31 of the 41 s of a load here (tools/bench_load.py). ExecuTorch 1.2 (the one built for torch 2.11)
    names it ``_portable_lib``."""
    import importlib

    try:
        return importlib.import_module("executorch.extension.pybindings._C")
    except ModuleNotFoundError as e:  # only a missing _C: a failed load (another torch) is the error to show
        if e.name != "executorch.extension.pybindings._C":
            raise
        return importlib.import_module("executorch.extension.pybindings._portable_lib")


def _open(path, bundle=None, *, threads=None, max_batch=None, device="cpu") -> ExecuTorchBackend:
    return ExecuTorchBackend(path, threads=threads, max_batch=max_batch)


BACKEND = BackendSpec(
    name="executorch", artifacts={"int8": "model.int8.pte", "fp32": "model.pte"}, modules=("executorch", "torch"),
    install="pip install 'lwx-edge[export]' (ExecuTorch 1.5.1)", open=_open, priority=20, format="pte",
    exporter="lwx_edge.export.executorch", aliases=("pte",))
