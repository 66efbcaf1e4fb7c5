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
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import BundleError, InputError

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
    """Yield a temporary path next to ``path``; rename it onto ``path`` only if the block succeeds.

    A symlink is followed (its target is replaced, the link kept); a FIFO, device or pipe (``/dev/stdout``,
    ``-o >(cmd)``) is written through once the block succeeds, never replaced by a regular file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory (give a file name)")
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        with _temporary(Path(tempfile.gettempdir()), path.name) as tmp:
            yield tmp
            try:
                with open(tmp, "rb") as src, open(path, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as e:
                raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
        return
    path = path.resolve() if path.is_symlink() else path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{path}: cannot create its directory ({e.strerror or e})") from None
    with _temporary(path.parent, path.name) as tmp:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a bundle is meant to be copied and shared
        _fsync(tmp)
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
        _fsync(path.parent)


@contextlib.contextmanager
def _temporary(directory: Path, name: str) -> Iterator[Path]:
    """A temporary file in ``directory``, removed unless the block moved it away."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise InputError(f"{directory / name}: cannot write here ({e.strerror or e})") from None
    os.close(fd)
    try:
        yield Path(tmp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def _fsync(path: str | os.PathLike) -> None:
    """Flush a file or directory to disk (so a rename never publishes data still in the page cache)."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(path) else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success it replaces ``path`` (old one removed).

    The swap is two renames (``path`` → ``.NAME.old-*``, temporary → ``path``); a kill between them leaves no
    ``path``, which :func:`recover_dir` (called here first, and by readers) puts back."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        for f in tmp.rglob("*"):
            if f.is_file():
                os.chmod(f, 0o644)
                _fsync(f)
        _fsync(tmp)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}-{time.time_ns()}")
            os.replace(path, old)
        os.replace(tmp, path)
        _fsync(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def recover_dir(path: str | os.PathLike, clean_tmp: bool = False) -> Path:
    """Undo what a kill during :func:`atomic_dir` left behind. If ``path`` is missing but its previous version
    waits as ``.NAME.old-*`` (killed between the two renames), rename the newest one back; remove ``.old-*``
    copies once ``path`` exists. ``clean_tmp`` also removes unfinished ``.NAME.*.tmp`` directories: only for
    the single writer of ``path`` (e.g. the trainer of a run directory), never while another may be writing."""
    path = Path(path)
    olds = sorted(path.parent.glob(f".{path.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if olds and not path.exists():
        os.replace(olds.pop(), path)
        _fsync(path.parent)
    if path.exists():
        for old in olds:
            shutil.rmtree(old, ignore_errors=True)
    if clean_tmp:
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    return path


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


def inside(root: str | os.PathLike, rel, what: str = "file") -> Path:
    """``root / rel`` for a listed file name, refusing names that could leave ``root`` (absolute paths, ``..``,
    links out of it): a crafted manifest or head must not make us read, copy or overwrite files elsewhere."""
    root = Path(root)
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise BundleError(f"{root}: invalid {what} name {rel!r}")
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    p = root / rel
    if not p.resolve().is_relative_to(root.resolve()):
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    return p


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
            recover_dir(root)  # a write killed between its two renames
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
            p = inside(root, rel, "manifest entry")
            if not isinstance(entry, dict):
                raise BundleError(f"{root}: manifest entry {rel!r} is malformed (expected an object)")
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
