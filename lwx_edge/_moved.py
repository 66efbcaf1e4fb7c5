"""Old import paths kept for one release. Each shim module (``lwx_edge/train.py``, ...) is two lines: it warns
once, on import, with a DeprecationWarning naming the new path, and forwards every name to the new modules."""
from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable

# old module -> the modules its names now live in (searched in this order)
MOVED: dict[str, tuple[str, ...]] = {
    "lwx_edge.train": ("lwx_edge.training.trainer", "lwx_edge.training.config", "lwx_edge.training.inputs",
                       "lwx_edge.training.objective"),
    "lwx_edge.model": ("lwx_edge.training.model",),
    "lwx_edge.checkpoint": ("lwx_edge.training.checkpoint",),
    "lwx_edge.warmstart": ("lwx_edge.training.transfer",),
    "lwx_edge.guard": ("lwx_edge.training.guard",),
    "lwx_edge.losses": ("lwx_edge.training.losses",),
    "lwx_edge.batching": ("lwx_edge.sub_batches",),
    "lwx_edge.export.probe": ("lwx_edge.probe",),
    "lwx_edge.heads.io": ("lwx_edge.heads.persistence",),
}
RENAMED = {"_read_pairs": "read_pairs", "_read_mono": "read_mono"}  # lwx_edge.train's private readers


def forward(old: str) -> Callable[[str], Any]:
    """Warn that ``old`` is deprecated and return the module ``__getattr__`` that forwards to its new home."""
    new = MOVED[old]
    warnings.warn(f"{old} is deprecated and will be removed in the next release: import from {' or '.join(new)}",
                  DeprecationWarning, stacklevel=3)

    def __getattr__(name: str) -> Any:
        for module in new:
            mod = importlib.import_module(module)
            if hasattr(mod, RENAMED.get(name, name)):
                return getattr(mod, RENAMED.get(name, name))
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    return __getattr__
