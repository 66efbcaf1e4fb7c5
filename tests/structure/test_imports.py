"""The torch fence: what an app runs (the SDK) never reaches the trainer, the exporter, the data builders or
torch, following every import transitively, lazy (function-level) ones included; no import circles; no module
directly in ``lwx_edge/`` imports torch. The SDK also runs with torch blocked (tests/sdk/test_sdk.py)."""
from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from collections import deque

import pytest

from import_graph import PKG, cycles, import_graph, modules, within
from lwx_edge._moved import MOVED

# The wings an app never needs: torch-side (training, export) or build-time (data builders), and the command
# line that dispatches to all of them.
WINGS = ("lwx_edge.training", "lwx_edge.export", "lwx_edge.data", "lwx_edge.cli", "lwx_edge.__main__")
TORCH = ("torch", "safetensors", "torchao")
SHIMS = tuple(MOVED) + ("lwx_edge._moved",)  # deprecated old paths: they forward into the wings on purpose

# The SDK's two doors to torch, each opened only on request. Their module-level imports are followed like any
# other (the backend registry imports every backend module); their lazy imports are not.
DOORS = {
    "lwx_edge.runtime.torch_backend":
        "backend='torch' runs a bundle's fp32 weights with PyTorch (pip install 'lwx-edge[train]'): opening one "
        "imports torch and the training wing's weight reader (lwx_edge.training.checkpoint); "
        "encode(convert_to_tensor=True) imports torch to return tensors, as sentence-transformers does",
    "lwx_edge.runtime.executorch_backend":
        "ExecuTorch's Python runtime exchanges torch tensors: opening an ExecuTorch model imports torch "
        "(ExecuTorch's own dependency)",
}


def sdk_modules(graph) -> list[str]:
    return sorted(m for m in graph if not within(m, WINGS) and m not in SHIMS)


def path_out(graph, start: str) -> list[str] | None:
    """The shortest import path from ``start`` into a wing or torch, or None."""
    seen, queue = {start: None}, deque([start])
    while queue:
        v = queue.popleft()
        if within(v, WINGS) or v in TORCH or v in SHIMS:
            path = [v]
            while seen[path[-1]] is not None:
                path.append(seen[path[-1]])
            return path[::-1]
        for e in graph.get(v, ()):
            if (e.lazy and v in DOORS) or e.target in seen:
                continue
            if e.target in graph or e.target in TORCH:
                seen[e.target] = v
                queue.append(e.target)
    return None


def test_the_graph_sees_lazy_relative_and_importlib_imports():
    g = import_graph()
    edges = {m: {(e.target, e.lazy) for e in es} for m, es in g.items()}
    assert ("lwx_edge.training.checkpoint", True) in edges["lwx_edge.runtime.torch_backend"]  # inside a method
    assert ("torch", True) in edges["lwx_edge.runtime.torch_backend"]                         # importlib literal
    assert ("lwx_edge.export.parity", False) in edges["lwx_edge.export"]                      # from . import parity
    assert ("lwx_edge.tokenizer", True) in edges["lwx_edge.bundle"]                           # Bundle.tokenizer
    assert not any(t == "torch" for t, _ in edges["lwx_edge.encoder"])  # its torch import is TYPE_CHECKING only


def test_the_sdk_never_reaches_the_wings_or_torch():
    """Every SDK module, every path: printed as ``a -> b -> c`` when one crosses the fence."""
    g = import_graph()
    assert "lwx_edge.encoder" in sdk_modules(g) and "lwx_edge.index.store" in sdk_modules(g)
    crossings = [" -> ".join(p) for m in sdk_modules(g) if (p := path_out(g, m))]
    assert crossings == [], "the SDK reaches a wing or torch:\n" + "\n".join(crossings)


def test_the_fence_would_catch_a_lazy_crossing():
    g = import_graph()
    from import_graph import Edge

    g["lwx_edge.search"] = [*g["lwx_edge.search"], Edge("lwx_edge.collapse", True, 1)]
    g["lwx_edge.collapse"] = [*g["lwx_edge.collapse"], Edge("lwx_edge.training.model", True, 1)]
    assert path_out(g, "lwx_edge.encoder") == ["lwx_edge.encoder", "lwx_edge.search", "lwx_edge.collapse",
                                               "lwx_edge.training.model"]


def test_the_doors_open_into_torch_only_lazily():
    g = import_graph()
    for door in DOORS:
        assert not [e for e in g[door] if not e.lazy and (within(e.target, WINGS) or e.target in TORCH)], door


def test_no_module_directly_in_the_package_imports_torch():
    g = import_graph()
    top = [m for m, (path, _) in modules().items() if path.parent == PKG]
    assert len(top) > 10
    assert [(m, e.line) for m in top for e in g[m] if e.target in TORCH] == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_paths_warn_and_forward(old):
    code = (f"import warnings, importlib; warnings.simplefilter('always')\n"
            f"with warnings.catch_warnings(record=True) as w:\n    m = importlib.import_module({old!r})\n"
            f"assert any(issubclass(x.category, DeprecationWarning) and {old!r} in str(x.message) for x in w), w\n"
            f"new = importlib.import_module({MOVED[old][0]!r})\n"
            f"name = next(n for n in dir(new) if not n.startswith('_') and getattr(new, n).__class__.__name__ != 'module')\n"
            f"assert getattr(m, name) is getattr(new, name), name\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_bundle_writers_moved_with_a_warning():
    import lwx_edge.atomic
    import lwx_edge.bundle

    with pytest.warns(DeprecationWarning, match="lwx_edge.atomic"):
        assert lwx_edge.bundle.atomic_dir is lwx_edge.atomic.atomic_dir
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lwx_edge.bundle.sha256_file is lwx_edge.atomic.sha256_file  # what the bundle itself uses


def test_every_shim_is_listed():
    """A module that only forwards is in lwx_edge._moved.MOVED (so the fence and this file know it)."""
    forwarding = {m for m, (path, _) in modules().items()
                  if "forward(__name__)" in path.read_text(encoding="utf-8")}
    assert forwarding == set(MOVED)
    for m in MOVED:
        path = modules()[m][0]
        assert len(ast.parse(path.read_text(encoding="utf-8")).body) == 3, m  # docstring, import, __getattr__
