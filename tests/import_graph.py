"""The package's import graph, read with ``ast``: every import a module can run, module-level and lazy
(function-level) ones, relative ones resolved, ``importlib.import_module("literal")`` calls included. Imports
under ``if TYPE_CHECKING:`` are left out: they are for the type checker and never run."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "lwx_edge"


@dataclass(frozen=True)
class Edge:
    target: str    # a module of lwx_edge, or the top-level name of another package ("torch")
    lazy: bool     # imported inside a function (runs only when that function is called)
    line: int


def modules() -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is a package)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """(node, lazy) for every import statement and literal import_module call that can run."""
    def walk(node, lazy):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield from walk(other, lazy)
                continue
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, lazy
            elif (isinstance(child, ast.Call) and isinstance(child.func, (ast.Attribute, ast.Name))
                  and getattr(child.func, "attr", getattr(child.func, "id", None)) == "import_module"
                  and child.args and isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str)):
                yield child, lazy
            yield from walk(child, inner)
    yield from walk(tree, False)


def import_graph() -> dict[str, list[Edge]]:
    """module -> its edges (``from pkg import mod`` counts as importing ``pkg.mod``; another package counts as its
    top-level name)."""
    mods = modules()
    graph = {}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rpartition(".")[0]
        edges = []
        for node, lazy in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.Call):
                targets = [node.args[0].value]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                if not t.startswith("lwx_edge"):
                    t = t.split(".")[0]
                else:
                    while t not in mods and "." in t:  # lwx_edge.x.attr -> lwx_edge.x
                        t = t.rpartition(".")[0]
                if t != name:
                    edges.append(Edge(t, lazy, node.lineno))
        graph[name] = edges
    return graph


def within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The import circles among lwx_edge modules: strongly connected components of more than one module (Tarjan),
    lazy imports included."""
    succ = {v: sorted({e.target for e in es if e.target in graph}) for v, es in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out
