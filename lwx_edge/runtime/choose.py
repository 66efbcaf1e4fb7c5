"""Which model file of a bundle ``Encoder.load`` opens, with which backend (``backend="auto"``: the first
installed one in the registry's order), or a clear error saying what to export or install."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..bundle import WEIGHTS
from ..errors import BackendUnavailable, BundleError
from . import backends
from .base import BackendSpec

if TYPE_CHECKING:
    from ..bundle import Bundle


def choose(bundle: Bundle, spec: BackendSpec | None,
            precision: str | None) -> tuple[str, BackendSpec, str]:
    """(file, backend, precision) to load (``spec`` None: "auto"), or a clear error."""
    present = [(s, f, p) for s in ([spec] if spec else backends()) for p, f in s.artifacts.items()
               if (precision is None or p == precision or s.any_precision) and bundle.has(f)]
    if spec is not None:
        if not present:
            if spec.format is None:
                raise BundleError(f"{bundle.path}: bundle has no {' / '.join(spec.artifacts.values())}; "
                                  f"{spec.missing}")
            files = " / ".join(f for p, f in spec.artifacts.items() if precision in (None, p))
            raise BundleError(f"{bundle.path}: bundle has no {spec.name} model ({files}); run "
                              f"{spec.export_hint(bundle.path)}")
        if not spec.installed():
            raise BackendUnavailable(f"the {spec.name} backend needs a runtime that is not installed: "
                                     f"{spec.install}")
        return present[0][1], spec, present[0][2]
    for s, f, p in present:
        if s.installed():
            return f, s, p
    if all(s.format is None for s, _, _ in present):
        if bundle.has(WEIGHTS):
            raise BackendUnavailable(
                f"{bundle.path}: bundle has no exported model and torch is not installed; run "
                f"lwx-edge export {bundle.path} --int8 (on a machine with lwx-edge[export]), "
                "or install lwx-edge[train] for the torch backend")
        raise BundleError(f"{bundle.path}: bundle has no exported model; run lwx-edge export "
                          f"{bundle.path} --int8, or install lwx-edge[train] for the torch backend")
    have = ", ".join(f for _, f, _ in present)
    needs = {s.name: s.install for s, _, _ in present}
    raise BackendUnavailable(f"{bundle.path}: no installed runtime can run this bundle's models ({have}): "
                             + "; ".join(f"{n}: {how}" for n, how in needs.items()))
