"""The model bundle: one directory a user can copy (torch-free).

    config.json        architecture + bundle format version
    model.safetensors  encoder weights (never pickle)
    tokenizer.model    the SentencePiece model
    manifest.json      sha256 and size of every other file, versions, how the model was trained

Writes are atomic: a bundle is assembled in a temporary sibling directory and renamed into place;
single files are written to a temporary file and renamed.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import BundleError

FORMAT = "lwx-edge-bundle"
FORMAT_VERSION = 1
CONFIG = "config.json"
MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.model"


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a bundle is meant to be copied and shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success it replaces ``path`` (old one removed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}-{time.time_ns()}")
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _package_version() -> str:
    from . import __version__

    return __version__


def build_manifest(bundle_dir: str | os.PathLike, info: dict | None = None) -> dict:
    """sha256 and size of every file in the bundle (recursively), except the manifest itself."""
    root = Path(bundle_dir)
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != MANIFEST and not p.name.startswith("."):
            files[rel] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "lwx_edge_version": _package_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
        **(info or {}),
    }


def write_manifest(bundle_dir: str | os.PathLike, info: dict | None = None) -> dict:
    manifest = build_manifest(bundle_dir, info)
    write_json_atomic(Path(bundle_dir) / MANIFEST, manifest)
    return manifest


def _read_json(path: Path, what: str) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path.parent}: not a model bundle ({what} {path.name} is missing)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{path}: {what} is corrupt (not valid JSON: {e})") from None
    if not isinstance(obj, dict):
        raise BundleError(f"{path}: {what} is corrupt (expected a JSON object)")
    return obj


@dataclass
class Bundle:
    """A verified bundle on disk. ``Bundle.load`` refuses a missing, corrupt, truncated or mismatched one."""

    path: Path
    config: dict
    manifest: dict = field(repr=False)

    @classmethod
    def load(cls, path: str | os.PathLike, verify: bool = True) -> "Bundle":
        root = Path(path)
        if not root.exists():
            raise BundleError(f"{root}: no such bundle directory")
        if not root.is_dir():
            raise BundleError(f"{root}: a bundle is a directory, got a file")
        manifest = _read_json(root / MANIFEST, "manifest")
        if manifest.get("format") != FORMAT:
            raise BundleError(f"{root}: manifest.json is not an lwx-edge bundle manifest")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise BundleError(
                f"{root}: bundle format version {manifest.get('format_version')} is not supported "
                f"(this lwx-edge reads version {FORMAT_VERSION})")
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise BundleError(f"{root}: manifest.json has no file list")
        for required in (CONFIG, TOKENIZER):
            if required not in files:
                raise BundleError(f"{root}: bundle has no {required}")
        for rel, entry in files.items():
            p = root / rel
            if not p.is_file():
                raise BundleError(f"{root}: {rel} is listed in the manifest but missing")
            if verify:
                size = p.stat().st_size
                if size != entry.get("bytes"):
                    raise BundleError(
                        f"{root}: {rel} is truncated or changed ({size} bytes, manifest says {entry.get('bytes')})")
                if sha256_file(p) != entry.get("sha256"):
                    raise BundleError(f"{root}: {rel} is corrupt (sha256 does not match the manifest)")
        config = _read_json(root / CONFIG, "config")
        if "model" not in config:
            raise BundleError(f"{root}: config.json has no 'model' section")
        return cls(root, config, manifest)

    def file(self, name: str) -> Path:
        if name not in self.manifest["files"]:
            raise BundleError(f"{self.path}: bundle has no {name}")
        return self.path / name

    def has(self, name: str) -> bool:
        return name in self.manifest["files"]

    def sha256(self, name: str) -> str:
        return self.manifest["files"][self.file(name).relative_to(self.path).as_posix()]["sha256"]
