"""Inference backends and their registry. A backend runs token ids [n, T] + attention mask [n, T] (int64) ->
float32 [n, d].

Each backend is one module here, ``<name>_backend.py``, that defines ``BACKEND``, a :class:`BackendSpec`: the
files it runs (one per precision), the modules its runtime needs, how to install them, how to make its files
(``lwx-edge export --format``, done by its export twin ``lwx_edge.export.<module>``) and how to open one.
``Encoder.load`` and ``export_bundle`` loop over :func:`backends`; adding a backend is its module and its export
twin. :func:`register` adds one defined elsewhere. Importing this package imports no runtime (the backend
modules import theirs when a model is opened).
"""
from __future__ import annotations

import importlib
import pkgutil

from .base import Backend, BackendSpec

__all__ = ["Backend", "BackendSpec", "register", "backends", "get", "artifacts"]

REGISTRY: dict[str, BackendSpec] = {}
_discovered = False


def register(spec: BackendSpec) -> BackendSpec:
    """Add (or replace) a backend."""
    _discover()
    REGISTRY[spec.name] = spec
    return spec


def backends() -> list[BackendSpec]:
    """Every registered backend, in the order backend="auto" tries them."""
    _discover()
    return sorted(REGISTRY.values(), key=lambda s: s.priority)


def get(name: str) -> BackendSpec | None:
    """The backend called ``name`` (or one of its aliases), or None."""
    for spec in backends():
        if name == spec.name or name in spec.aliases:
            return spec
    return None


def artifacts() -> tuple[tuple[str, str, str], ...]:
    """(backend, file, precision) of every backend, in the order backend="auto" prefers them."""
    return tuple((s.name, f, p) for s in backends() for p, f in s.artifacts.items())


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.endswith("_backend"):
            spec = importlib.import_module(f"{__name__}.{mod.name}").BACKEND
            REGISTRY.setdefault(spec.name, spec)
