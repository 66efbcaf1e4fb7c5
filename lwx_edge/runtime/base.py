"""What a backend is: the ``Backend`` protocol and the ``BackendSpec`` a backend module declares."""
from __future__ import annotations

import importlib.util
import os
import warnings
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np


def usable_threads(threads: int | None, what: str = "threads") -> int | None:
    """``threads`` capped at the CPUs this process may use, with a warning naming ``what`` when it was more (a
    thread pool of 100,000 threads takes minutes and gigabytes to start, and more threads than CPUs only
    contend); None stays None (each runtime's own default)."""
    if threads is None:
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    if threads > cpus:
        warnings.warn(f"{what}={threads} is more than the {cpus} CPU(s) this process may use; using {cpus}",
                      UserWarning, stacklevel=3)
        return cpus
    return threads


class Backend(Protocol):
    """What ``Encoder`` needs of a backend: ``run(input_ids, attention_mask)`` -> float32 [batch, d]."""
    name: str
    call_overhead: float  # one call's own cost in row·token steps (lwx_edge.sub_batches.plan_batches)

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class BackendSpec:
    """What ``Encoder.load`` and ``export_bundle`` need to know of a backend.

    ``open(path, bundle, *, threads=None, max_batch=None, device="cpu") -> Backend`` opens ``path`` (one of
    ``artifacts``, inside ``bundle``: a :class:`lwx_edge.bundle.Bundle`, or None for a file being exported).
    """

    name: str
    artifacts: dict[str, str]           # precision -> file name, the preferred first
    modules: tuple[str, ...]            # importable modules the runtime needs
    install: str                        # how to install them
    open: Callable[..., Backend]
    priority: int                       # backend="auto" tries the lowest first
    format: str | None = None           # its ``lwx-edge export --format`` name; None: not made by export
    exporter: str | None = None         # the module of its export twin
    aliases: tuple[str, ...] = ()
    any_precision: bool = False         # its one file serves every precision= request (torch: fp32 weights)
    missing: str = ""                   # why a bundle without its files cannot use it ("" : run the export)

    def installed(self) -> bool:
        for mod in self.modules:
            try:
                if importlib.util.find_spec(mod) is None:
                    return False
            except (ImportError, ValueError):  # a blocked or half-imported module
                return False
        return True

    def export_hint(self, bundle: str | os.PathLike) -> str:
        from ..shipped import is_default

        if is_default(bundle):  # rebuilt from the shipped int8 ONNX program into the cache
            return f"lwx-edge export default --format {self.format}"
        return f"lwx-edge export {bundle} --int8 --format {self.format}"
