"""Small rooms: no file in lwx_edge/ over 500 lines, no function or method over 60 lines outside tools/, no import
circle among lwx_edge modules (ast-based, lazy imports included: tests/import_graph.py).

How a function is measured: every ``def`` (and ``async def``) at any depth counts on its own, module-level functions,
methods and nested functions alike, as ``end_lineno - lineno + 1`` of its node: from the ``def`` line (decorators
aside) to its last line, docstring included. A nested function's lines therefore also count toward the def that
encloses it. No allow-list: a long file or function fails the test, whoever wrote it."""
from __future__ import annotations

import ast
from pathlib import Path

from import_graph import cycles, import_graph

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
MAX_FILE_LINES, MAX_FUNCTION_LINES = 500, 60


def python_files(*roots: str) -> list[Path]:
    return sorted(p for r in roots for p in (REPO / r).rglob("*.py") if "__pycache__" not in p.parts)


def def_lengths(source: str) -> dict[str, int]:
    """Qualified name ("Class.method", "function.inner") -> lines, for every def in ``source``, at any depth."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def test_the_rule_measures_methods_and_nested_functions_too():
    body = "\n".join(f"        x{i} = {i}" for i in range(60))
    source = (f"class A:\n    @property\n    def long(self):\n{body}\n\n    def short(self):\n        pass\n\n\n"
              f"def outer():\n    def inner():\n{body}\n    return inner\n\n\nasync def coro():\n    pass\n")
    assert def_lengths(source) == {"A.long": 61, "A.short": 2, "outer": 63, "outer.inner": 61, "coro": 2}


def test_no_file_in_the_package_is_over_500_lines():
    long = {str(p.relative_to(REPO)): n for p in python_files("lwx_edge")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert not long, f"split these files (lines): {long}"


def test_no_function_or_method_is_over_60_lines_outside_tools():
    long = {f"{p.relative_to(REPO)} {name}": n for p in python_files("lwx_edge", "tests", "examples")
            for name, n in def_lengths(p.read_text(encoding="utf-8")).items() if n > MAX_FUNCTION_LINES}
    assert not long, f"split these functions into named helpers (lines): {long}"


def test_no_import_circle():
    assert cycles(import_graph()) == []
