"""The package's import graph (every import, function-level ones included): no cycles, and the runtime side
never reaches into export or training."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "lwx_edge"

# What an app runs must not import the exporter or the trainer (they need torch and much more).
RUNTIME = ("lwx_edge.runtime", "lwx_edge.encoder", "lwx_edge.bundle", "lwx_edge.tokenizer", "lwx_edge.heads",
           "lwx_edge.search", "lwx_edge.index", "lwx_edge.text", "lwx_edge.errors", "lwx_edge._io",
           "lwx_edge._quiet", "lwx_edge.batching")
FORBIDDEN = ("lwx_edge.export", "lwx_edge.train", "lwx_edge.losses", "lwx_edge.model")


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def import_graph() -> dict[str, set[str]]:
    """module -> the lwx_edge modules it imports (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    modules = {}
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    graph = {}
    for name, (path, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for a in node.names:
                    edges.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_function_level_and_relative_imports():
    g = import_graph()
    assert "lwx_edge.checkpoint" in g["lwx_edge.runtime.torch_backend"]  # inside a method
    assert "lwx_edge.export.parity" in g["lwx_edge.export"]              # from . import parity
    assert "lwx_edge.tokenizer" in g["lwx_edge.bundle"]                  # Bundle.tokenizer


def test_no_import_cycles():
    assert _cycles(import_graph()) == []


def test_the_runtime_side_never_imports_export_or_training():
    bad = [(m, t) for m, targets in import_graph().items() if _within(m, RUNTIME)
           for t in targets if _within(t, FORBIDDEN)]
    assert bad == []
