"""The shipped default model: where it lies, and where its ExecuTorch copy is built.

The package carries what the torch-free base install runs: the int8 ONNX program and its tokenizer
(``lwx_edge/default_model``). The ExecuTorch program (``model.int8.pte``, 15 MB) needs ExecuTorch's runtime, so
it is not shipped: ``lwx-edge export default`` (extra ``[executorch]``) rebuilds it once from the int8 ONNX
program into a copy of the default in the user's cache, ``built_default_dir()``, and ``Encoder.load(backend=
"executorch")`` finds it there. The copy's directory is named after the ONNX program it was rebuilt from, so a
new default never picks up an old copy.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import BundleError

# The int8 model shipped inside the package (tools/make_default_model.py builds it); Encoder.load() loads it.
DEFAULT_MODEL = Path(__file__).resolve().parent / "default_model"
PTE = "model.int8.pte"
ONNX = "model.int8.onnx"
CACHE_ENV = "LWX_EDGE_CACHE"


def default_model_path() -> Path:
    """The shipped default bundle, or a BundleError saying it is not part of this install."""
    if not (DEFAULT_MODEL / "manifest.json").is_file():
        raise BundleError(f"no default model in this install ({DEFAULT_MODEL} is missing); give a bundle path, "
                          "or rebuild it: python tools/make_default_model.py BUNDLE")
    return DEFAULT_MODEL


def is_default(path: str | os.PathLike) -> bool:
    """Whether ``path`` is the shipped default's directory."""
    try:
        return Path(path).resolve() == DEFAULT_MODEL.resolve()
    except OSError:
        return False


def cache_dir() -> Path:
    """lwx-edge's cache: ``$LWX_EDGE_CACHE``, else ``$XDG_CACHE_HOME/lwx-edge``, else ``~/.cache/lwx-edge``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "lwx-edge"


def built_default_dir() -> Path:
    """Where ``lwx-edge export default`` writes the default's copy with its ExecuTorch program: the cache,
    under a name bound to the shipped ONNX program's sha256."""
    try:
        files = json.loads((default_model_path() / "manifest.json").read_text(encoding="utf-8"))["files"]
        sha = files[ONNX]["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BundleError(f"{DEFAULT_MODEL}: manifest.json does not list {ONNX} ({e})") from None
    return cache_dir() / f"default-{str(sha)[:12]}"


def default_for(backend_format: str | None) -> Path:
    """The default bundle to load for a backend of export format ``backend_format`` ("pte": the built copy,
    which must exist; any other: the shipped directory)."""
    path = default_model_path()
    if backend_format != "pte" or (path / PTE).is_file():
        return path
    built = built_default_dir()
    if (built / "manifest.json").is_file() and (built / PTE).is_file():
        return built
    raise BundleError(
        f"the default model ships its ONNX program only; build its ExecuTorch program ({PTE}) once with "
        f"`lwx-edge export default` (needs pip install 'lwx-edge[executorch]'; it writes {built})")
