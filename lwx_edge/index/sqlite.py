"""The index's SQLite file: its path or URI, connecting (WAL, or read-only without creating anything beside
the file), opening and checking an existing file, creating a new one, and SQLite's errors in words."""
from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast
from urllib.parse import parse_qs, unquote, urlsplit

from ..atomic import atomic_file, remove_stale
from ..errors import InputError, LwxError
from .values import _MAX_DIM, FORMAT, FORMAT_VERSION, IndexFileError, _contract, _short

if TYPE_CHECKING:
    from typing import TypeVar

    from ..encoder import Encoder

    _F = TypeVar("_F", bound=Callable[..., Any])

log = logging.getLogger("lwx_edge.index")


def _guarded(method: _F) -> _F:
    """Make a public method raise every ``sqlite3`` error as the index's :class:`IndexFileError` (or
    :class:`InputError` for a value SQLite cannot take), naming the file: see :meth:`Index._error`."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            raise self._error(e) from None
    return cast("_F", wrapper)  # the same signature as method


def _sqlite_error(path: Path, e: sqlite3.Error, detail: str = "") -> LwxError:
    """The LwxError for a ``sqlite3`` error on the index ``path``: what happened, in words."""
    name, msg = getattr(e, "sqlite_errorname", None) or "", str(e)
    if isinstance(e, (sqlite3.InterfaceError, sqlite3.ProgrammingError)):
        if "closed" in msg:
            return IndexFileError(f"{path}: the index is closed")
        return InputError(f"{path}: a value SQLite cannot store or compare ({msg})")
    if name.startswith("SQLITE_FULL") or "disk is full" in msg:
        return IndexFileError(f"{path}: the disk is full, or the index reached its size limit ({msg}); the "
                              "write was rolled back: the file holds what was committed before it")
    if name.startswith("SQLITE_READONLY") or "readonly" in msg:
        return IndexFileError(f"{path}: the index is read-only ({msg}); nothing was written")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in msg:
        return IndexFileError(f"{path}: the index is locked by another process ({msg}); try again")
    if (name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in msg or "not a database" in msg
            or "Could not decode" in msg):  # text that is not UTF-8: damaged bytes
        return IndexFileError(f"{path}: the index file is damaged ({msg}{detail}); restore it from a copy "
                              "or rebuild it")
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return IndexFileError(f"{path}: cannot read or write the index file ({msg})")
    return IndexFileError(f"{path}: {msg}")


def _index_path(path: object, read_only: bool | None) -> tuple[Path, bool | None]:
    """(the file, read_only) of ``Index.open``'s ``path``: a path, or an SQLite URI ``file:PATH?mode=ro``
    (``mode=ro`` or ``immutable=1``: read-only)."""
    if isinstance(path, str) and path.startswith("file:"):
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        if read_only is None and (query.get("mode") == ["ro"] or query.get("immutable") == ["1"]):
            read_only = True
        path = unquote(parts.path)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"an index path must be a file name, got {_short(path)}")
    return Path(path), read_only


def _sqlite_uri(path: Path, query: str) -> str:
    return path.resolve().as_uri() + "?" + query



def _check_meta(meta: dict) -> str | None:
    """Parse the meta table's JSON values in place; what is wrong with them, or None."""
    meta["encoder"] = json.loads(meta["encoder"])
    meta["text_contract"] = json.loads(meta["text_contract"])
    if not isinstance(meta["encoder"], dict) or not isinstance(meta["text_contract"], dict):
        return "encoder and text_contract must be JSON objects"
    dim = meta["dim"]
    if not (isinstance(dim, str) and dim.isdigit() and 0 < int(dim) <= _MAX_DIM):
        return f"dim is {_short(dim)}"
    if meta.get("storage", "int8") != "int8":
        return f"storage is {_short(meta.get('storage'))}, this lwx-edge reads int8"
    return None

def _connect_existing(path: Path, read_only: str | None) -> tuple[sqlite3.Connection, str | None]:
    """:func:`_connect` to an existing file, which must be an SQLite file. The file is never open()ed here:
    closing any descriptor of it would drop the POSIX locks this process's SQLite connections hold, and
    another process would then delete their WAL (SQLite's "how to corrupt a database", 2.2)."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise IndexFileError(f"{path}: cannot read the index file ({e.strerror or e})") from None
    not_sqlite = IndexFileError(f"{path}: not an lwx-edge index (not an SQLite file)")
    if size < 512:  # smaller than SQLite's smallest page
        raise not_sqlite
    try:
        return _connect(path, read_only)
    except IndexFileError as e:
        if "not a database" in str(e):
            raise not_sqlite from None
        raise

def _connect(path: Path, read_only: str | None) -> tuple[sqlite3.Connection, str | None]:
    """A connection to ``path`` and why it is read-only (None: writable). Writable: WAL mode (a file whose
    WAL cannot be set up opens read-only). Read-only: SQLite's ``mode=ro`` where a WAL beside the file
    may hold commits (a writer is live), else ``immutable=1``, which creates nothing beside the file."""
    def connect(target: str, uri: bool) -> sqlite3.Connection:
        return sqlite3.connect(target, uri=uri, isolation_level=None, timeout=30.0, check_same_thread=False)

    conn = None
    try:
        if read_only is None:
            conn = connect(str(path), False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                return conn, None
            except sqlite3.OperationalError as e:
                name = getattr(e, "sqlite_errorname", None) or ""  # Python 3.11+
                if not (name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or "readonly" in str(e)
                        or "unable to open" in str(e)):
                    raise
                conn.close()
                read_only = f"cannot be written ({e})"
        wal = path.with_name(path.name + "-wal")
        if wal.exists():
            try:
                conn = connect(_sqlite_uri(path, "mode=ro"), True)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn, read_only
            except sqlite3.OperationalError as e:
                conn.close()  # type: ignore[union-attr]  # None when read_only was given and connect raised
                log.warning("%s: read-only, and its WAL (%s) cannot be read (%s): the commits it holds "
                            "are not seen", path, wal.name, e)
        conn = connect(_sqlite_uri(path, "immutable=1"), True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn, read_only
    except sqlite3.Error as e:
        if conn is not None:
            conn.close()
        raise _sqlite_error(path, e) from None



def open_file(path: Path, read_only: bool | None) -> tuple[sqlite3.Connection, dict, str | None]:
    """The connection to an existing index file, its checked meta table, and why it is read-only (None:
    writable); IndexFileError for a file that is not an index of this format, or is damaged."""
    why: str | None
    if read_only is None and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        why = "the file or its directory is not writable"
    else:
        why = "opened read-only" if read_only else None
    conn, why = _connect_existing(path, why)
    if why is None:  # what a creator killed between publishing the file and removing its temporary left
        remove_stale(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        cols = [r[1] for r in conn.execute("PRAGMA table_info(items)").fetchall()]
        conn.execute("SELECT count(*) FROM items").fetchone()
    except sqlite3.DatabaseError as e:
        conn.close()
        raise IndexFileError(f"{path}: not an lwx-edge index, or damaged ({e})") from None
    problem = _format_problem(path, meta, cols)
    if problem:
        conn.close()
        raise IndexFileError(problem)
    return conn, meta, why


def _format_problem(path: Path, meta: dict, cols: list) -> str | None:
    """Why the file's meta table and columns are not those of this format (parsing the meta's JSON values in
    place), or None."""
    if meta.get("format") != FORMAT:
        return f"{path}: not an lwx-edge index (format {_short(meta.get('format'))})"
    lacking = [c for c in ("id", "text", "metadata", "vector", "scale") if c not in cols]
    if lacking:
        return (f"{path}: not an lwx-edge index, or damaged (its items table has no column "
                f"{', '.join(lacking)})")
    if meta.get("format_version") != str(FORMAT_VERSION):
        return (f"{path}: index format version {_short(meta.get('format_version'))} "
                f"(this lwx-edge reads version {FORMAT_VERSION})")
    try:
        damage = _check_meta(meta)
    except (KeyError, ValueError, TypeError, RecursionError) as e:
        damage = f"{type(e).__name__}: {_short(str(e))}"
    return f"{path}: the index's meta table is damaged ({damage})" if damage else None


def create_file(path: Path, encoder: Encoder) -> None:
    """A new, empty index file for ``encoder``'s vectors; nothing when another process created it first."""
    dim = encoder.dim or len(encoder.embed("dimension probe"))
    meta = {"format": FORMAT, "format_version": str(FORMAT_VERSION), "dim": str(int(dim)), "storage": "int8",
            "encoder": json.dumps(encoder.identity(), sort_keys=True),
            "text_contract": json.dumps(_contract(encoder), sort_keys=True)}
    try:
        # the schema appears whole or not at all, and never over a file another process created meanwhile
        # (replacing it under that process's open WAL connection corrupted the index)
        with atomic_file(path, exclusive=True) as tmp:
            conn = sqlite3.connect(str(tmp))
            try:
                conn.executescript("""
                        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                        CREATE TABLE items (rowid INTEGER PRIMARY KEY, id NOT NULL UNIQUE, text TEXT,
                                            metadata TEXT, vector BLOB NOT NULL, scale REAL NOT NULL);
                    """)
                conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
                conn.commit()
            finally:
                conn.close()
    except FileExistsError:
        pass  # another process created it first: open that one
    except OSError as e:
        raise IndexFileError(f"{path}: cannot create the index file ({e.strerror or e})") from None
    except sqlite3.Error as e:
        raise _sqlite_error(path, e) from None
