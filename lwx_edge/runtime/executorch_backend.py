"""ExecuTorch backend: runs ``model.pte`` / ``model.int8.pte`` (XNNPACK) with ExecuTorch's Python runtime.

Nothing is imported from ExecuTorch (which itself needs torch) until a backend is created, and then only its
native runtime module, not the compiler (``_native_runtime``).
Runtime notes (docs/EXPORT.md §2, §7, §8): int8 programs need ``import executorch.kernels.quantized`` before loading
(``embedding_byte``); the thread pool is reset *before* ``load_method`` (XNNPACK keeps the pool it saw);
inputs are contiguous int64; batches above the program's ``max_batch`` run in chunks of rows of similar
length, each cut to its own longest row (right padding). One loaded method owns one planned activation
arena, so calls are serialised with a lock (thread-safe, not parallel). The thread pool is process-wide and
a loaded method keeps a pointer into it: resetting it once any program is loaded crashes or deadlocks the
process (issue 17, issue 37), so it is sized at most once, before the first program is loaded, and never
reset after; a later encoder asking for another size shares it (with a warning).

The runtime trusts the program it is given, and a damaged one can crash the process (SIGSEGV, or an abort when
it logs a name that is not UTF-8). So before the runtime sees a file: its sha256 is checked against the
bundle's manifest (always, whatever ``verify`` says: ``_open``), its header sizes are checked, and its
FlatBuffer is walked with bounds checks in Python, every name in it required to be text (:func:`check_program`);
the runtime then loads it with its own FlatBuffer verifier on (``Verification.InternalConsistency``).
"""
from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

import numpy as np

from .._quiet import native_quiet
from ..bundle import shown
from ..errors import BackendUnavailable, BundleError, InputError, LwxError
from ..sub_batches import CALL_OVERHEAD
from .base import BackendSpec

if TYPE_CHECKING:
    from ..bundle import Bundle


def available() -> tuple[bool, str]:
    """(True, "") if ExecuTorch's runtime can be imported, else (False, why)."""
    try:
        import importlib.util

        if importlib.util.find_spec("executorch") is None:
            return False, "executorch is not installed"
    except (ImportError, ValueError) as e:
        return False, f"executorch is not importable ({e})"
    return True, ""


_RUNTIME_LOCK = threading.RLock()  # ExecuTorch's thread pool is process-wide: loads and executions take turns
# The thread pool's size from the first program load on: set, the pool is in use and is never reset again.
_pool_threads: int | None = None


def check_program(path: Path) -> None:
    """Refuse a file that is not a whole, well-formed ExecuTorch program before the runtime parses it: the
    flatbuffer identifier ``ET..``; when the extended header ``eh00`` is there, program and segment sizes that
    fit; and a program FlatBuffer whose offsets stay inside it and whose names (methods, operators, backends,
    strings, tensor names) are UTF-8 text: the runtime logs such names, and a log line that is not UTF-8 aborts
    the process inside the Python bindings."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(40)
    except OSError as e:
        raise BundleError(f"{path}: cannot read the ExecuTorch program ({e.strerror or e})") from None
    if len(head) < 8 or head[4:6] != b"ET" or int.from_bytes(head[:4], "little") >= size:
        raise BundleError(f"{path}: not an ExecuTorch program (bad header); re-export it")
    program = size
    if head[8:12] == b"eh00" and len(head) >= 40:
        program = int.from_bytes(head[16:24], "little")
        seg_base, seg_size = int.from_bytes(head[24:32], "little"), int.from_bytes(head[32:40], "little")
        if program > size or (seg_size and seg_base + seg_size > size):
            raise BundleError(f"{path}: the ExecuTorch program is truncated ({size} bytes, its header needs "
                              f"{max(program, seg_base + seg_size)}); re-export it")
    try:
        with open(path, "rb") as f:
            data = f.read(program)
    except OSError as e:
        raise BundleError(f"{path}: cannot read the ExecuTorch program ({e.strerror or e})") from None
    try:
        bad = _bad_name(_FlatBuffer(data))
    except (ValueError, IndexError) as e:
        raise BundleError(f"{path}: the ExecuTorch program is damaged (its structure is broken: {e}); "
                          "re-export it") from None
    if bad:
        raise BundleError(f"{path}: the ExecuTorch program is damaged ({bad} is not text); re-export it")


class _FlatBuffer:
    """Bounds-checked reads of a FlatBuffer (in Python: damage raises ``ValueError``, it cannot crash)."""

    def __init__(self, data: bytes):
        self.data, self.n = data, len(data)

    def _need(self, pos: int, size: int) -> None:
        if pos < 0 or pos + size > self.n:
            raise ValueError(f"bytes {pos}..{pos + size} are outside the {self.n}-byte program")

    def _int(self, pos: int, size: int, signed: bool = False) -> int:
        self._need(pos, size)
        return int.from_bytes(self.data[pos:pos + size], "little", signed=signed)

    def root(self) -> int:
        return self._int(0, 4)

    def field(self, table: int, slot: int) -> int | None:
        vtable = table - self._int(table, 4, signed=True)
        if 4 + 2 * slot + 2 > self._int(vtable, 2):
            return None
        offset = self._int(vtable + 4 + 2 * slot, 2)
        return table + offset if offset else None

    def byte(self, table: int, slot: int) -> int:
        p = self.field(table, slot)
        return 0 if p is None else self._int(p, 1)

    def ref(self, table: int, slot: int) -> int | None:
        p = self.field(table, slot)
        return None if p is None else p + self._int(p, 4)

    def string(self, table: int, slot: int) -> bytes | None:
        p = self.ref(table, slot)
        if p is None:
            return None
        n = self._int(p, 4)
        self._need(p + 4, n)
        return self.data[p + 4:p + 4 + n]

    def tables(self, table: int, slot: int) -> list[int]:
        p = self.ref(table, slot)
        if p is None:
            return []
        n = self._int(p, 4)
        self._need(p + 4, 4 * n)
        return [p + 4 + 4 * i + self._int(p + 4 + 4 * i, 4) for i in range(n)]


# ExecuTorch's program.fbs: the slots (field numbers) of the tables that hold names
_STRING_EVALUE, _TENSOR_EVALUE = 6, 5  # KernelTypes union: NONE, Null, Int, Bool, Double, Tensor, String, ...


def _bad_name(fb: _FlatBuffer) -> str | None:
    """The first name in the program that is not UTF-8 text, as "what #index", or None."""
    def text(b: bytes | None, what: str) -> str | None:
        try:
            (b or b"").decode("utf-8")
        except UnicodeDecodeError:
            return what
        return None

    checks = []
    program = fb.root()
    for i, plan in enumerate(fb.tables(program, 1)):                        # Program.execution_plan
        checks.append((fb.string(plan, 0), f"method name #{i}"))
        meta = fb.ref(plan, 1)                                              # ExecutionPlan.container_meta_type
        if meta is not None:
            checks += [(fb.string(meta, 0), "input spec"), (fb.string(meta, 1), "output spec")]
        for j, value in enumerate(fb.tables(plan, 2)):                      # ExecutionPlan.values: EValue
            kind, val = fb.byte(value, 0), fb.ref(value, 1)
            if val is not None and kind == _STRING_EVALUE:
                checks.append((fb.string(val, 0), f"string value #{j}"))
            elif val is not None and kind == _TENSOR_EVALUE:
                extra = fb.ref(val, 9)                                      # Tensor.extra_tensor_info
                if extra is not None:
                    checks.append((fb.string(extra, 1), f"tensor name #{j}"))
        for j, op in enumerate(fb.tables(plan, 6)):                         # ExecutionPlan.operators
            checks += [(fb.string(op, 0), f"operator name #{j}"), (fb.string(op, 1), f"operator overload #{j}")]
        for j, delegate in enumerate(fb.tables(plan, 7)):                   # ExecutionPlan.delegates
            checks.append((fb.string(delegate, 0), f"backend name #{j}"))
            for spec in fb.tables(delegate, 2):                             # BackendDelegate.compile_specs
                checks.append((fb.string(spec, 0), f"compile spec key of backend #{j}"))
    for i, named in enumerate(fb.tables(program, 7)):                       # Program.named_data
        checks.append((fb.string(named, 0), f"data key #{i}"))
    return next((bad for b, what in checks if (bad := text(b, what))), None)


class ExecuTorchBackend:
    """``run(input_ids int64 [n, T], attention_mask int64 [n, T]) -> float32 [n, d]`` with ExecuTorch."""

    name = "executorch"
    call_overhead = CALL_OVERHEAD  # Encoder.embed splits a batch where padding would cost more than a call

    def __init__(self, path: str | os.PathLike, threads: int | None = None, max_batch: int | None = None):
        for name, value in (("threads", threads), ("max_batch", max_batch)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{name} must be a positive integer or None, got {shown(value)}")
        self.path = Path(path)
        self.threads = threads
        with native_quiet():  # ExecuTorch's harmless native log lines (cpuinfo, threadpool resets)
            try:
                import torch  # noqa: F401  (the pybindings exchange torch tensors; ExecuTorch's own need)
                native = _native_runtime()
            except ImportError as e:
                raise BackendUnavailable(
                    f"the ExecuTorch runtime is not installed ({e}); pip install 'lwx-edge[executorch]' "
                    "(or executorch==1.5.1), or use the ONNX model with backend='onnx'") from None
            try:
                import executorch.kernels.quantized  # noqa: F401  (embedding_byte for int8 programs)
            except Exception:
                pass
            check_program(self.path)
            verification = getattr(getattr(native, "Verification", None), "InternalConsistency", None)
            options = {} if verification is None else {"program_verification": verification}
            with _RUNTIME_LOCK:
                _set_threads(threads)
                try:
                    self.program = native._load_program(str(self.path), **options)
                    self.method = self.program.load_method("forward")
                except Exception as e:
                    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    raise BundleError(f"{self.path}: the ExecuTorch runtime cannot load this program "
                                      f"({msg[:300]})") from None
        # the program's own bound is the truth; a smaller one (the caller's, the manifest's) is obeyed too
        planned = self._constant("get_max_batch")
        self.max_batch = min([b for b in (max_batch, planned) if b and b > 0] or [1])
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
        return cast(np.ndarray, out)  # set: order has rows (max_batch < len(order))

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
    """Size the process-wide thread pool at the first program load (before ``load_method``: XNNPACK keeps the
    pool it saw), and never again. Every loaded method points into the pool, so a reset once any program is
    loaded crashed (issue 17) or deadlocked (issue 37, after a first load with ``threads=None``): the first
    load records the pool as in use whatever ``threads`` is (None: the runtime's default size), and a later
    request for another size keeps the pool and says so. Call with ``_RUNTIME_LOCK`` held."""
    global _pool_threads
    if _pool_threads is not None:
        if threads and threads != _pool_threads:
            warnings.warn(f"ExecuTorch's thread pool is process-wide and already has {_pool_threads} thread(s); "
                          f"this encoder shares it (threads={threads} ignored)", UserWarning, stacklevel=5)
        return
    native = _native_runtime()
    if threads:
        try:
            native._unsafe_reset_threadpool(int(threads))
        except Exception:
            pass
    try:
        size = int(native._threadpool_get_thread_count())
    except Exception:  # a runtime without the query: what was asked for, else the runtime's default
        size = 0
    _pool_threads = size if size > 0 else int(threads or os.cpu_count() or 1)


def _native_runtime() -> ModuleType:
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


def _open(path: str | os.PathLike, bundle: Bundle | None = None, *, threads: int | None = None,
          max_batch: int | None = None, device: str = "cpu") -> ExecuTorchBackend:
    """Open ``path``; inside ``bundle``, only once its sha256 matches the manifest, whether or not the caller
    verified the bundle (``verify=False`` never reaches a native runtime with a damaged program; the hash
    ``Encoder.load`` just computed is reused), and with ``max_batch`` from the manifest checked."""
    if bundle is not None:
        rel = Path(path).relative_to(bundle.path).as_posix()
        bundle.verify([rel], reuse=True)
        if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1):
            raise BundleError(f"{bundle.path}: manifest.json's artifacts entry for {rel}: max_batch must be a "
                              f"positive integer, got {shown(max_batch)}")
    return ExecuTorchBackend(path, threads=threads, max_batch=max_batch)


BACKEND = BackendSpec(
    name="executorch", artifacts={"int8": "model.int8.pte", "fp32": "model.pte"}, modules=("executorch", "torch"),
    install="pip install 'lwx-edge[executorch]' (ExecuTorch 1.5.1)", open=_open, priority=20, format="pte",
    exporter="lwx_edge.export.executorch", aliases=("pte",))
