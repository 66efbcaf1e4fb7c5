"""Atomic file and directory writes, and file hashing: the one writer every module uses (torch-free).

A file is written to a temporary sibling and renamed into place; a directory is assembled in a temporary
sibling and swapped in. A reader never sees half a file. Temporaries carry the writer's pid
(``.NAME.PID-xxxx.tmp``), so the next write of ``NAME`` removes those a killed writer left behind.

Test-only fault injection: with ``LWX_EDGE_FAULT=STEP[@NAME][#N]`` in the environment (read once, at import),
the process SIGKILLs itself at the named step of an atomic write of a file or directory called ``NAME``
(the ``N``-th time it gets there): ``file:written`` (temporary complete), ``file:synced`` (flushed, not yet
renamed), ``file:renamed`` (in place, directory not yet flushed), ``dir:written``, ``dir:synced``,
``dir:old-moved`` (between :func:`atomic_dir`'s two renames), ``dir:renamed`` (new one in place, old copy not
yet removed). ``tests/faults.py`` drives it; unset, each step costs one comparison.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

from .errors import InputError, LwxError

FAULT_ENV = "LWX_EDGE_FAULT"
_FAULT = os.environ.get(FAULT_ENV) or None
_fault_hits = 0


def _fault(step: str, path: Path) -> None:
    """SIGKILL this process if ``LWX_EDGE_FAULT`` names this step (test-only; see the module docstring)."""
    global _fault_hits
    if _FAULT is None:
        return
    spec, _, nth = _FAULT.partition("#")
    want, _, name = spec.partition("@")
    if want == step and name in ("", path.name):
        _fault_hits += 1
        if _fault_hits == int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 1 MB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a device, FIFO or socket (``/dev/stdout``, ``/dev/null``, ``-o >(cmd)``) rather than a
    file, a directory or a name still free: written through, with nothing put beside it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def under_a_file(path: str | os.PathLike) -> bool:
    """Whether a folder above ``path`` is a file, so that nothing can ever be written at ``path``."""
    return any(p.exists() and not p.is_dir() for p in Path(path).parents)


def check_file_target(path: str | os.PathLike) -> None:
    """Refuse an output file :func:`atomic_file` could not write, before any work: a directory, or a path under
    a file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory (give a file name)")
    if under_a_file(path):
        raise InputError(f"{path}: lies under a file")


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, exclusive: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only if the block succeeds.

    A symlink is followed (its target is replaced, the link kept); a FIFO, device or pipe (``/dev/stdout``,
    ``-o >(cmd)``) is written through once the block succeeds, never replaced by a regular file.
    ``exclusive``: never replace an existing ``path``; raise ``FileExistsError`` if another writer took it."""
    path = Path(path)
    check_file_target(path)
    if is_stream(path):
        with _temporary(Path(tempfile.gettempdir()), path.name) as tmp:
            yield tmp
            try:
                with open(tmp, "rb") as src, open(path, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as e:
                raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
        return
    if path.is_symlink():
        link, path = path, path.resolve()
        if not path.parent.is_dir():  # a dangling link's folders are not ours to create
            raise InputError(f"{link}: a link to {path}, whose directory does not exist")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{path}: cannot create its directory ({e.strerror or e})") from None
    remove_stale(path)
    with _temporary(path.parent, path.name) as tmp:
        yield tmp
        _fault("file:written", path)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a bundle is meant to be copied and shared
        _fsync(tmp)
        _fault("file:synced", path)
        try:
            _publish(tmp, path) if exclusive else os.replace(tmp, path)
        except FileExistsError:
            raise
        except OSError as e:
            raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
        _fault("file:renamed", path)
        _fsync(path.parent)


def _publish(tmp: Path, path: Path) -> None:
    """Give ``tmp`` the name ``path`` unless it exists (a hard link is atomic; without links, a check)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # a filesystem without hard links
        if path.exists():
            raise FileExistsError(path) from None
        os.replace(tmp, path)


@contextlib.contextmanager
def _temporary(directory: Path, name: str) -> Iterator[Path]:
    """A temporary file in ``directory``, removed unless the block moved it away."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}-", suffix=".tmp", dir=directory)
    except OSError as e:
        raise InputError(f"{directory / name}: cannot write here ({e.strerror or e})") from None
    os.close(fd)
    try:
        yield Path(tmp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def remove_stale(path: Path) -> None:
    """Remove the temporaries (``.NAME.PID-xxxx.tmp``) that writers of ``path`` killed mid-write left behind:
    only those whose process is gone."""
    prefix = f".{path.name}."
    try:
        siblings = [p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(".tmp")]
    except OSError:
        return
    for p in siblings:
        m = re.fullmatch(r"(\d+)-[a-z0-9_]+\.tmp", p.name[len(prefix):])
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, not ours to signal
    return True


def parse_json(text: str | bytes, where, what: str, error: type[LwxError] = InputError):
    """``json.loads(text)``, or ``error`` naming ``where`` (a file) and ``what`` it is when the text is not JSON
    this process can read: not UTF-8, not JSON, nested too deeply, or holding an integer longer than Python
    converts (``sys.get_int_max_str_digits()``, 4,300 digits: a ``ValueError`` from deep inside ``json``)."""
    try:
        return json.loads(text.decode("utf-8") if isinstance(text, (bytes, bytearray)) else text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors too
        why = " ".join(str(e).split())[:200] or type(e).__name__
        raise error(f"{where}: {what} is corrupt (not valid JSON: {why})") from None


def read_json(path: str | os.PathLike, what: str, error: type[LwxError] = InputError, missing: str | None = None):
    """The JSON document in file ``path`` (``what`` it is, for messages), or ``error`` naming the file: missing
    (``missing``, if given, is that message), not a regular file (a FIFO would block the read), unreadable, or
    not JSON (:func:`parse_json`). Every JSON file lwx-edge reads from a bundle or head goes through here."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            raise error(f"{path}: {what} is not a regular file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(missing or f"{path}: {what} is missing") from None
    except OSError as e:
        raise error(f"{path}: {what} cannot be read ({e.strerror or e})") from None
    return parse_json(data, path, what, error)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 text atomically (:func:`atomic_file`)."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented JSON atomically."""
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
    ``path``, which :func:`recover_dir` (called here first, and by readers) puts back. A symlink is followed:
    its target directory is replaced and the link kept (as :func:`atomic_file` does for files)."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_dir():  # a directory replaces a directory, never a file
        raise FileExistsError(f"{path} is a file, not a directory; refusing to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(path)
    remove_stale(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        _fault("dir:written", path)
        os.chmod(tmp, 0o755)
        for f in tmp.rglob("*"):
            if f.is_file():
                os.chmod(f, 0o644)
                _fsync(f)
        _fsync(tmp)
        _fault("dir:synced", path)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}-{time.time_ns()}")
            os.replace(path, old)
            _fault("dir:old-moved", path)
        os.replace(tmp, path)
        _fault("dir:renamed", path)
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
    the single writer of ``path`` (e.g. the trainer of a run directory), never while another may be writing;
    without it, only the temporaries of writers whose process is gone are removed (a killed export's whole copy
    does not wait for the next write)."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    remove_stale(path)
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
