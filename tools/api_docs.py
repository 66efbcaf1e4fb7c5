"""Write docs/API.md, the SDK's API reference, from the docstrings and signatures of the public objects.

    python tools/api_docs.py            # rewrite docs/API.md
    python tools/api_docs.py --check    # exit 1 if docs/API.md is out of date (tests/docs/test_api_docs.py)

Only the lean runtime (no torch): what an app developer calls.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "API.md"
# (module, names): the public surface, in reading order
PUBLIC = [
    ("lwx_edge", ["Encoder", "Index"]),
    ("lwx_edge.index", ["Hit", "IndexFileError"]),
    ("lwx_edge.heads", ["LogisticHead", "MLPHead", "make_head", "load_head", "read_labelled", "format_confusion"]),
    ("lwx_edge.search", ["similarity", "search", "SearchResult"]),
    ("lwx_edge.sub_batches", ["plan_batches"]),
    ("lwx_edge.modelcard", ["model_card"]),
    ("lwx_edge.errors", ["LwxError", "InputError", "BundleError", "CorpusError"]),
    ("lwx_edge.heads", ["HeadError"]),
    ("lwx_edge.encoder", ["BackendUnavailable", "TruncationWarning"]),
]


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__ or "(no docstring)")


def _members(cls) -> list[tuple[str, object]]:
    """Public methods and properties, inherited ones included (from lwx_edge classes only)."""
    out, seen = [], set()
    items = [(n, m) for c in cls.__mro__ if c.__module__.startswith("lwx_edge") for n, m in c.__dict__.items()]
    for name, member in items:
        if name.startswith("_") or name in seen:
            continue
        seen.add(name)
        if isinstance(member, (classmethod, staticmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            out.append((name, member))
    return out


def render() -> str:
    parts = ["# lwx-edge API reference", "",
             "Generated from the docstrings by `python tools/api_docs.py`; do not edit by hand.", ""]
    for module_name, names in PUBLIC:
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            kind = "class" if inspect.isclass(obj) else "function"
            sig = "" if inspect.isclass(obj) and issubclass(obj, (Exception, Warning)) else _signature(obj)
            parts += [f"## `{module_name}.{name}{sig}`", "", f"*{kind}*", "", _doc(obj), ""]
            if inspect.isclass(obj) and not issubclass(obj, (Exception, Warning, tuple)):
                for mname, member in _members(obj):
                    if isinstance(member, property):
                        parts += [f"### `{name}.{mname}` (property)", "", _doc(member.fget), ""]
                    else:
                        parts += [f"### `{name}.{mname}{_signature(member)}`", "", _doc(member), ""]
    return "\n".join(parts).rstrip() + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/API.md is out of date")
    a = ap.parse_args()
    text = render()
    if a.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            sys.exit("docs/API.md is out of date: run python tools/api_docs.py")
        return
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text):,} characters)")


if __name__ == "__main__":
    main()
