"""A persistent vector index in one SQLite file: embed once, search many times, on the phone as in Python.

    from lwx_edge import Encoder, Index
    enc = Encoder.load()
    with Index.open("notes.lwxindex", enc, create=True) as index:
        index.add(["n1", "n2"], ["Dentist on Tuesday at 9", "Buy milk and eggs"], metadata=[{"lang": "en"}, None])
        hits = index.search("when is the dentist?", top_k=5)     # [Hit(id, score, text, metadata), ...]

The file (format ``lwx-edge-index`` version 1; the Android demo's JVM core reads the same file):

* ``meta(key TEXT PRIMARY KEY, value TEXT)``: ``format``, ``format_version``, ``dim``, ``storage`` ("int8"),
  ``encoder`` (JSON: the sha256 of the model files and tokenizer that made the vectors) and ``text_contract``
  (JSON: the tokenizer's normalisation and ``max_len``);
* ``items(rowid INTEGER PRIMARY KEY, id NOT NULL UNIQUE, text, metadata, vector BLOB, scale REAL)``: ``id`` is
  the caller's (text or integer), ``metadata`` a JSON object or NULL, ``vector`` the unit-length embedding as
  ``dim`` signed bytes with ``vector ≈ scale · int8`` (one scale per vector: 516 bytes for 512 dimensions,
  recall@10 against float32 measured by ``tools/bench_index.py``).

Every ``add``/``upsert``/``delete`` batch is one transaction (a crash leaves the batches committed before it),
the file runs in WAL mode so readers in other processes keep working while one writes, and ``close`` folds
the WAL back into the file, so the file alone can be copied to a phone. Search is exact: the int8 vectors
are held in memory (dim bytes per item) and scored in chunks (summed in float64, kept as float32: identical rows
score identically), so memory stays flat. From
``SCAN_MIN_ITEMS`` items on an integer first pass (:mod:`lwx_edge._scan`: onnxruntime's int8 GEMM over the rows,
packed once, one more dim bytes per item) picks the rows that can make the top k, and only those are scored in
float32: the same hits, several times faster.

Approximate search (``pip install 'lwx-edge[ann]'``, usearch HNSW; :mod:`lwx_edge._ann`): from
``APPROX_MIN_ITEMS`` items on, or whenever ``approximate=True``, an unfiltered search asks a graph for
candidates and rescores them exactly. The graph is derived from the file, never a source of truth: a sidecar
``NAME.ann`` keyed by rowid, tied to the ``generation`` the meta table counts up on every write; a sidecar
that is missing, damaged or stale is rebuilt (its body is checksummed and its layout checked before usearch
reads it). ``where=`` searches are always exact.

A file that cannot be written (a shipped or read-only mounted index, or ``read_only=True``, or a
``file:...?mode=ro`` URI) opens read-only: it searches and reads, a write raises :class:`IndexFileError`, and
nothing (no WAL, no sidecar) is created beside it. Every failure of the file (damaged pages or rows, a full
disk, a lock, a read-only file) is an :class:`IndexFileError` naming the file, and every bad argument an
:class:`~lwx_edge.errors.InputError` naming the argument: no raw ``sqlite3`` error leaves the index.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, cast, overload
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from . import _ann
from ._io import remove_stale
from ._scan import Int8Scan
from .errors import InputError, LwxError

if TYPE_CHECKING:
    from typing import TypeVar

    from numpy.typing import ArrayLike

    from .encoder import Encoder

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["Index", "Hit", "IndexFileError", "quantize", "dequantize"]

log = logging.getLogger(__name__)

FORMAT, FORMAT_VERSION = "lwx-edge-index", 1
_CHUNK_ROWS = 2048          # rows converted at once: 2048 x 512 float64 = 8 MB
_SCORE_BLOCK = 1 << 22      # scores held at once (queries x items): 16 MB of float32
_DEFAULT_BATCH = 256        # texts embedded and committed per transaction
APPROX_MIN_ITEMS = 50_000   # approximate=None uses the graph from this many items on (tools/bench_index.py)
SCAN_MIN_ITEMS = 16_384     # exact search takes an int8 first pass (lwx_edge._scan) from this many items on
_APPROX_EXTRA = 20          # the graph's candidates per query: 2 * top_k + this, rescored exactly
_MAX_DIM = 1 << 16          # a meta table claiming more dimensions is damaged
_MAX_SCALE = 1.0001 / 127   # a stored row is a unit vector: its scale (largest entry / 127) is at most 1/127
_INT64 = (-(1 << 63), 1 << 63)


class IndexFileError(LwxError):
    """An index file that is missing, corrupt, of another format, or built by another encoder."""


class Hit(NamedTuple):
    """One search result: the item's ``id``, cosine ``score``, stored ``text`` and ``metadata`` (or None)."""

    id: str | int
    score: float
    text: str | None
    metadata: dict | None


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows -> (int8 rows, float32 scales) with ``row ≈ scale · int8`` (symmetric, one scale per row)."""
    v = np.asarray(vectors, dtype=np.float32)
    scale = np.maximum(np.abs(v).max(axis=1), 1e-12) / 127.0
    q = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """int8 rows times their per-row scale, as float32."""
    return q.astype(np.float32) * np.asarray(scale, dtype=np.float32)[:, None]


def _contract(encoder: Encoder) -> dict:
    """The text contract the vectors were made under: normalisation and length limit."""
    bundle = getattr(encoder, "bundle", None)
    cfg = bundle.config if bundle is not None else {}
    tok = dict(cfg.get("tokenizer", {})) if isinstance(cfg.get("tokenizer"), dict) else {}
    tok.pop("file", None)
    return {"tokenizer": tok, "max_len": int(encoder.max_len)}


def _id(i: object, what: str = "item_id", kinds: str = "a string or an integer") -> str | int:
    """One item id as SQLite stores it: a str, or an int (numpy integers too) of 64 bits."""
    if isinstance(i, np.integer):
        i = int(i)
    if isinstance(i, bool) or not isinstance(i, (str, int)):
        raise InputError(f"{what} must be {kinds}, got {type(i).__name__} ({_short(i)})")
    if isinstance(i, int) and not _INT64[0] <= i < _INT64[1]:
        raise InputError(f"{what} must fit in 64 bits, got {i}")
    if isinstance(i, str):
        _utf8(i, what)
    return i


def _ids(ids: object, what: str = "ids") -> list[str | int]:
    if isinstance(ids, (str, bytes, int, np.integer)):
        ids = [ids]
    return [_id(i, what, "strings or integers") for i in _seq(ids, what)]


def _seq(x: object, what: str) -> list:
    """``x`` as a list, or InputError naming ``what`` when it is not a sequence of items."""
    if isinstance(x, (dict, bytes)) or not isinstance(x, Iterable):
        raise InputError(f"{what} must be a list, got {type(x).__name__}")
    return list(x)


def _utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (a lone surrogate): {_short(text)}") from None


def _short(x: object) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _positive_int(x: object, what: str) -> int:
    if isinstance(x, np.integer):
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise InputError(f"{what} must be a positive integer, got {_short(x)}")
    return x


def _tristate(x: object, what: str) -> bool | None:
    if x is not None and not isinstance(x, bool):
        raise InputError(f"{what} must be True, False or None, got {_short(x)}")
    return x


def _metadata_json(m: object, n: int) -> str | None:
    """The JSON text of one item's metadata, or InputError: JSON has no NaN or infinity (SQLite's JSON
    functions would refuse the row, and with it every ``where=`` search), and only plain values."""
    if m is None:
        return None
    if not isinstance(m, dict):
        raise InputError(f"metadata {n} must be a dict or None, got {type(m).__name__}")

    def plain(o: object) -> Any:  # numpy scalars (from pandas, say) are stored as the Python values they hold
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(f"a {type(o).__name__} value ({_short(o)})")
    try:
        out = json.dumps(m, ensure_ascii=False, sort_keys=True, allow_nan=False, default=plain)
    except ValueError:
        bad = [k for k, v in m.items() if isinstance(v, (float, np.floating)) and not math.isfinite(v)]
        raise InputError(f"metadata {n} holds NaN or an infinite number{' at ' + _shown(bad) if bad else ''}; "
                         "JSON (and so the index) has no such values: store null or a string") from None
    except (TypeError, RecursionError) as e:
        raise InputError(f"metadata {n} cannot be stored as JSON ({e}): use text, numbers, true/false, null, "
                         "lists and objects with text keys") from None
    _utf8(out, f"metadata {n}")
    return out


def _duplicates(ids: list) -> list:
    seen, dup = set(), []
    for i in ids:
        if i in seen and i not in dup:
            dup.append(i)
        seen.add(i)
    return dup


def _shown(items: list, n: int = 5) -> str:
    return ", ".join(repr(x) for x in items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def _guarded(method: _F) -> _F:
    """Make a public method raise every ``sqlite3`` error as the index's :class:`IndexFileError` (or
    :class:`InputError` for a value SQLite cannot take), naming the file: see :meth:`Index._error`."""
    @functools.wraps(method)
    def wrapper(self: Index, *args: Any, **kwargs: Any) -> Any:
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


class Index:
    """Items (id, text, metadata, int8 vector) in one SQLite file, searched by cosine: exactly, or through an
    approximate graph for large indexes (the ``[ann]`` extra). Open or create one with :meth:`Index.open`;
    close it (or use ``with``) so the file alone holds everything."""

    def __init__(self, path: Path, conn: sqlite3.Connection, encoder: Encoder | None, meta: dict,
                 approximate: bool | None = None, read_only: str | None = None):
        self._conn: sqlite3.Connection | None
        self.encoder: Encoder | None
        self.path, self._conn, self.encoder, self.meta = path, conn, encoder, meta
        self.dim = int(meta["dim"])
        self.approximate = approximate
        self._read_only = read_only  # why the index cannot be written, or None
        self._checked = False  # quick_check has described a damaged file once
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # rowids, int8 [n, d], scales
        self._version: int | None = None
        self._cache_generation: int | None = None  # the meta table's generation the cache reflects
        self._ann: _ann.Graph | None = None
        self._scan: Int8Scan | None = None  # follows the cache: appends extend it, anything else drops it

    # ------------------------------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str | os.PathLike, encoder: Encoder | None = None, *, create: bool = False,
             approximate: bool | None = None, read_only: bool | None = None) -> Index:
        """Open an index file; ``create=True`` makes a new one when ``path`` does not exist (needs
        ``encoder``). Refuses (``IndexFileError``) a file that is not an index, is damaged, or was built by
        another encoder than ``encoder`` (pass ``encoder=None`` to read ids, texts and metadata only).
        ``approximate``: the default of :meth:`search` (None: the approximate graph from
        ``APPROX_MIN_ITEMS`` items on when usearch is installed; True: always, needs the ``[ann]`` extra;
        False: always exact). ``read_only``: True opens the file for reading only (as does a
        ``file:PATH?mode=ro`` URI); None (the default) does so when the file or its directory cannot be
        written (a shipped index, a read-only mount). A read-only index searches and reads; writing raises
        ``IndexFileError``; nothing is created beside it."""
        path, read_only = _index_path(path, _tristate(read_only, "read_only"))
        approximate = _tristate(approximate, "approximate")
        if encoder is not None and not callable(getattr(encoder, "identity", None)):
            raise InputError(f"encoder must be an lwx_edge Encoder (or None), got {type(encoder).__name__}")
        if approximate is True and not _ann.available():
            raise _need_ann()
        if path.is_dir():
            raise IndexFileError(f"{path}: is a directory, not an index file")
        if not path.exists():
            if not create:
                raise IndexFileError(f"{path}: no such index file (Index.open(path, encoder, create=True) "
                                     "or lwx-edge index add makes one)")
            if encoder is None:
                raise InputError("creating an index needs the encoder that will fill it")
            if read_only:
                raise IndexFileError(f"{path}: no such index file, and a read-only index cannot be created")
            return cls._create(path, encoder, approximate)
        why: str | None
        if read_only is None and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            why = "the file or its directory is not writable"
        else:
            why = "opened read-only" if read_only else None
        conn, why = cls._connect_existing(path, why)
        if why is None:  # what a creator killed between publishing the file and removing its temporary left
            remove_stale(path)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            cols = [r[1] for r in conn.execute("PRAGMA table_info(items)").fetchall()]
            conn.execute("SELECT count(*) FROM items").fetchone()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise IndexFileError(f"{path}: not an lwx-edge index, or damaged ({e})") from None
        if meta.get("format") != FORMAT:
            conn.close()
            raise IndexFileError(f"{path}: not an lwx-edge index (format {_short(meta.get('format'))})")
        lacking = [c for c in ("id", "text", "metadata", "vector", "scale") if c not in cols]
        if lacking:
            conn.close()
            raise IndexFileError(f"{path}: not an lwx-edge index, or damaged (its items table has no column "
                                 f"{', '.join(lacking)})")
        if meta.get("format_version") != str(FORMAT_VERSION):
            conn.close()
            raise IndexFileError(f"{path}: index format version {_short(meta.get('format_version'))} "
                                 f"(this lwx-edge reads version {FORMAT_VERSION})")
        try:
            damage = cls._check_meta(meta)
        except (KeyError, ValueError, TypeError, RecursionError) as e:
            damage = f"{type(e).__name__}: {_short(str(e))}"
        if damage:
            conn.close()
            raise IndexFileError(f"{path}: the index's meta table is damaged ({damage})")
        index = cls(path, conn, encoder, meta, approximate, why)
        if encoder is not None:
            try:
                index._check_encoder(encoder)
            except LwxError:
                conn.close()
                raise
        return index

    @staticmethod
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

    @classmethod
    def _connect_existing(cls, path: Path, read_only: str | None) -> tuple[sqlite3.Connection, str | None]:
        """:meth:`_connect` to an existing file, which must be an SQLite file. The file is never open()ed here:
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
            return cls._connect(path, read_only)
        except IndexFileError as e:
            if "not a database" in str(e):
                raise not_sqlite from None
            raise

    @classmethod
    def _connect(cls, path: Path, read_only: str | None) -> tuple[sqlite3.Connection, str | None]:
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

    @classmethod
    def _create(cls, path: Path, encoder: Encoder, approximate: bool | None = None) -> Index:
        from .bundle import atomic_file

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
        return cls.open(path, encoder, approximate=approximate)

    def _check_encoder(self, encoder: Encoder) -> None:
        recorded, ident = self.meta["encoder"], encoder.identity()
        # the same model: the weights it came from, or the very file the index was built with (older indexes
        # record the file); both bound to the bytes loaded (Encoder.identity)
        files = recorded.get("model_files")
        ours = {v for v in (files.values() if isinstance(files, dict) else ()) if isinstance(v, str)}
        ours |= {recorded.get("sha256")} if isinstance(recorded.get("sha256"), str) else set()
        running = ident.get("artifact_sha256") or (ident.get("model_files") or {}).get(ident.get("artifact") or "")
        same = (ident.get("sha256") is not None and ident.get("sha256") == recorded.get("sha256")
                or running in ours
                or ident.get("sha256") is None and running is None and not ours)  # neither names a model file
        what = ("model" if not same else
                "tokenizer" if recorded.get("tokenizer_sha256") != ident.get("tokenizer_sha256") else
                "embedding size" if int(self.dim) != int(getattr(encoder, "dim", None) or self.dim) else None)
        if what:
            raise IndexFileError(
                f"{self.path}: this index was built by another encoder ({what} differs: built with "
                f"{str(recorded.get('sha256'))[:12]}... from {recorded.get('bundle', '?')}, this encoder is "
                f"{str(ident.get('sha256'))[:12]}... from {ident.get('bundle', '?')}); its vectors are not "
                "comparable: open it with that encoder, or rebuild the index with this one")

    def close(self) -> None:
        """Fold the WAL back into the file (so the file alone is the index) and close it."""
        if self._conn is not None:
            if self._read_only is None:
                self._save_graph()
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass  # another connection is reading (its own close checkpoints), or the disk is full
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
            self._cache = self._scan = None  # the memory of the vectors and of the int8 first pass

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:
            pass

    @property
    def read_only(self) -> bool:
        """Whether the index was opened read-only (see :meth:`open`): searches and reads only."""
        return self._read_only is not None

    def _error(self, e: sqlite3.Error) -> LwxError:
        """The LwxError for a ``sqlite3`` error of this index; the first time the file looks damaged, SQLite's
        ``quick_check`` says where."""
        detail = ""
        name, msg = getattr(e, "sqlite_errorname", None) or "", str(e)
        damaged = name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in msg
        if damaged and not self._checked and self._conn is not None:
            self._checked = True
            with contextlib.suppress(sqlite3.Error):
                problems = self._quick_check(3)
                if problems:
                    detail = f"; quick_check: {problems}"
        return _sqlite_error(self.path, e, detail)

    def _quick_check(self, most: int) -> str | None:
        """SQLite's ``quick_check`` of the file (the b-trees' structure, not the rows' content): None if it
        finds nothing wrong, else its first ``most`` findings on one line."""
        rows = [str(r) for (r,) in self.conn.execute(f"PRAGMA quick_check({int(most)})").fetchall()]
        if rows == ["ok"]:
            return None
        lines = [x.strip() for r in rows for x in r.splitlines() if x.strip() and not x.startswith("***")]
        return "; ".join(lines)[:500]

    def _writable(self) -> None:
        if self._read_only is not None:
            raise IndexFileError(f"{self.path}: the index is read-only ({self._read_only}); it cannot be changed: "
                                 "copy it somewhere writable to add, replace or delete items")

    @property
    def conn(self) -> sqlite3.Connection:
        """The open ``sqlite3`` connection, for reading (write through the Index, or its cache goes stale)."""
        if self._conn is None:
            raise IndexFileError(f"{self.path}: the index is closed")
        return self._conn

    # ------------------------------------------------------------------------------------------ reading
    @_guarded
    def __len__(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM items").fetchone()[0])

    @_guarded
    def __contains__(self, item_id: object) -> bool:
        try:
            item_id = _id(item_id)
        except InputError:
            return False  # not an id: in no index
        return self.conn.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone() is not None

    @_guarded
    def get(self, item_id: str | int | np.integer) -> dict[str, Any] | None:
        """``{"id", "text", "metadata"}`` of one item, or None."""
        row = self.conn.execute("SELECT rowid, id, text, metadata FROM items WHERE id = ?",
                                (_id(item_id, "item_id"),)).fetchone()
        if row is None:
            return None
        item, text, meta = self._checked_row(*row)
        return {"id": item, "text": text, "metadata": meta}

    @_guarded
    def info(self) -> dict[str, Any]:
        """What the file holds: count, dimension, storage, size, the encoder and text contract. Checks the file
        on the way (SQLite's ``quick_check`` and the stored rows' types and ranges: about 15 ms per 10,000
        items) and raises ``IndexFileError`` saying what is damaged."""
        try:
            size = self.path.stat().st_size + sum(p.stat().st_size for p in
                                                  (self.path.with_name(self.path.name + s) for s in ("-wal",))
                                                  if p.exists())
        except OSError as e:
            raise IndexFileError(f"{self.path}: cannot read the index file ({e.strerror or e})") from None
        self._checked = True
        problems = self._quick_check(5)
        if problems:
            raise IndexFileError(f"{self.path}: the index file is damaged (quick_check: {problems}); restore it "
                                 "from a copy or rebuild it")
        bad = self.conn.execute(
            "SELECT rowid FROM items WHERE typeof(vector) != 'blob' OR length(vector) != ? OR typeof(scale) NOT IN "
            "('real', 'integer') OR NOT (scale > 0 AND scale <= ?) OR typeof(id) NOT IN ('text', 'integer') OR "
            "typeof(text) NOT IN ('text', 'null') OR typeof(metadata) NOT IN ('text', 'null') LIMIT 5",
            (self.dim, _MAX_SCALE)).fetchall()
        if bad:
            raise IndexFileError(f"{self.path}: the index file is damaged (items of rowid "
                                 f"{_shown([r for (r,) in bad])} have a wrong id, text, metadata, vector or scale)")
        return {"path": str(self.path), "format": FORMAT, "format_version": FORMAT_VERSION, "items": len(self),
                "dim": self.dim, "storage": self.meta.get("storage", "int8"), "bytes": size,
                "encoder": self.meta["encoder"], "text_contract": self.meta["text_contract"],
                "read_only": self.read_only}

    def _checked_row(self, rowid: int, item_id: object, text: object,
                     metadata: Any) -> tuple[str | int, str | None, dict | None]:
        """(id, text, metadata) of a stored row, or IndexFileError where the file holds what the format does
        not (a hand-edited or damaged row)."""
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)):
            raise IndexFileError(f"{self.path}: item rowid {rowid} has a {type(item_id).__name__} id (the format "
                                 "keeps text or integer ids); the file is damaged")
        if text is not None and not isinstance(text, str):
            raise IndexFileError(f"{self.path}: item rowid {rowid} has a {type(text).__name__} text; the file "
                                 "is damaged")
        return item_id, text, _load_meta(metadata)

    # ------------------------------------------------------------------------------------------ writing
    @_guarded
    def add(self, ids: str | int | np.integer | Iterable[str | int | np.integer], texts: Sequence[str] | str,
            metadata: Sequence[dict | None] | None = None, *, store_text: bool = True,
            batch_size: int = _DEFAULT_BATCH, progress: bool | None = None) -> int:
        """Embed and insert new items, ``batch_size`` per transaction. Refuses (before any change) ids that
        are repeated or already in the index; use :meth:`upsert` to replace. Returns the number added."""
        return self._write(ids, texts, metadata, replace=False, store_text=store_text, batch_size=batch_size,
                           progress=progress)

    @_guarded
    def upsert(self, ids: str | int | np.integer | Iterable[str | int | np.integer], texts: Sequence[str] | str,
               metadata: Sequence[dict | None] | None = None, *, store_text: bool = True,
               batch_size: int = _DEFAULT_BATCH, progress: bool | None = None) -> int:
        """Insert new items and replace existing ones with the same id (text, metadata and vector)."""
        return self._write(ids, texts, metadata, replace=True, store_text=store_text, batch_size=batch_size,
                           progress=progress)

    @_guarded
    def add_vectors(self, ids: str | int | np.integer | Iterable[str | int | np.integer], vectors: ArrayLike,
                    texts: Sequence[str] | None = None, metadata: Sequence[dict | None] | None = None, *,
                    replace: bool = False, batch_size: int = 10_000) -> int:
        """Insert items whose vectors are already computed (by this encoder: ``[n, dim]``, unit length).
        ``replace=True`` upserts. Same checks and transactions as :meth:`add`."""
        v = _float_rows(vectors, "vectors")
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise InputError(f"vectors must have shape [n, {self.dim}], got {v.shape}")
        return self._write(ids, texts, metadata, replace=replace, store_text=texts is not None,
                           batch_size=batch_size, progress=False, vectors=v)

    @_guarded
    def delete(self, ids: str | int | np.integer | Iterable[str | int | np.integer]) -> int:
        """Remove items by id, in one transaction; refuses (removing nothing) if any id is unknown."""
        ids = _ids(ids)
        self._writable()
        missing = [i for i in ids if i not in self]
        if missing:
            raise InputError(f"{self.path}: no item with id {_shown(missing)}; nothing was deleted")
        self._graph_for_writes()
        with self._transaction():
            rows = [r for (r,) in self._rowids(ids)]
            self.conn.executemany("DELETE FROM items WHERE rowid = ?", [(r,) for r in rows])
            generation = self._bump_generation()
        self._drop_cached(rows, generation)
        return len(rows)

    def _write(self, ids: str | int | np.integer | Iterable[str | int | np.integer],
               texts: Sequence[str | None] | str | None,
               metadata: Sequence[dict | None] | None, *, replace: bool, store_text: bool, batch_size: int,
               progress: bool | None, vectors: np.ndarray | None = None) -> int:
        self._writable()
        if self.encoder is None and vectors is None:
            raise InputError(f"{self.path}: opened without an encoder; Index.open(path, encoder) to add items")
        batch_size = _positive_int(batch_size, "batch_size")
        ids = _ids(ids)
        if isinstance(texts, str):
            texts = [texts]
        texts = [None] * len(ids) if texts is None else _seq(texts, "texts")
        if len(texts) != len(ids):
            raise InputError(f"got {len(ids)} ids and {len(texts)} texts; they must pair up")
        for n, t in enumerate(texts):
            if t is not None and not isinstance(t, str):
                raise InputError(f"text {n} must be a string, got {type(t).__name__}")
            if t is not None:
                _utf8(t, f"text {n}")
        if vectors is not None and len(vectors) != len(ids):
            raise InputError(f"got {len(ids)} ids and {len(vectors)} vectors; they must pair up")
        metadata = [None] * len(ids) if metadata is None else _seq(metadata, "metadata")
        if len(metadata) != len(ids):
            raise InputError(f"got {len(ids)} ids and {len(metadata)} metadata entries; they must pair up")
        blobs = [_metadata_json(m, n) for n, m in enumerate(metadata)]
        dup = _duplicates(ids)
        if dup:
            raise InputError(f"ids repeat within this call: {_shown(dup)}; nothing was added")
        if not replace:
            existing = [i for i in ids if i in self]
            if existing:
                raise InputError(f"{self.path}: ids already in the index: {_shown(existing)}; nothing was "
                                 "added (use upsert to replace them)")
        if vectors is None and texts:
            # every text checked before anything is written (an encoder: checked above)
            cast("Encoder", self.encoder).tokenizer.check(cast("list[str]", texts))
        self._graph_for_writes()
        starts = range(0, len(ids), batch_size)
        if progress or (progress is None and len(ids) > 5 * batch_size):
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc=f"index {self.path.name}", unit="batch")
        for s in starts:
            sl = slice(s, s + batch_size)
            v = vectors[sl] if vectors is not None else cast("Encoder", self.encoder).embed(
                cast("list[str]", texts[sl]), truncation="ignore")
            q, scale = quantize(v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12))
            rows = [(i, t if store_text else None, m, v.tobytes(), float(c))
                    for i, t, m, v, c in zip(ids[sl], texts[sl], blobs[sl], q, scale)]
            with self._transaction():
                old = [r for (r,) in self._rowids(ids[sl])] if replace else []
                if old:
                    self.conn.executemany("DELETE FROM items WHERE rowid = ?", [(r,) for r in old])
                top = self.conn.execute("SELECT coalesce(max(rowid), 0) FROM items").fetchone()[0]
                self.conn.executemany("INSERT INTO items (id, text, metadata, vector, scale) VALUES (?, ?, ?, ?, ?)",
                                      rows)  # one writer: the new rows take the rowids above the old maximum
                new = [r for (r,) in self.conn.execute("SELECT rowid FROM items WHERE rowid > ? ORDER BY rowid",
                                                       (top,))]
                generation = self._bump_generation()
            self._drop_cached(old, generation)
            self._append_cached(np.array(new, dtype=np.int64), q, scale, generation)
        return len(ids)

    def _rowids(self, ids: list) -> Iterable[tuple[int]]:
        out = []
        for s in range(0, len(ids), 500):
            part = ids[s:s + 500]
            out += self.conn.execute(f"SELECT rowid FROM items WHERE id IN ({','.join('?' * len(part))})",
                                     part).fetchall()
        return out

    def _bump_generation(self) -> int:
        """Count this write in the meta table (inside its transaction); the new generation."""
        self.conn.execute("INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) "
                          "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)")
        return self._generation()

    def _generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        try:
            return int(row[0]) if row else 0
        except ValueError:
            return 0

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------------------------------ the cache
    def _vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rowids, int8 vectors, scales), reloaded when another connection has committed since."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._cache is None or version != self._version:
            self.conn.execute("BEGIN")  # rows and generation from one snapshot
            try:
                rows = self.conn.execute("SELECT rowid, vector, scale FROM items ORDER BY rowid").fetchall()
                generation = self._generation()
            finally:
                self.conn.execute("COMMIT")
            n = len(rows)
            q = np.empty((n, self.dim), dtype=np.int8)
            for k, (_, blob, _) in enumerate(rows):
                if type(blob) is not bytes or len(blob) != self.dim:
                    what = f"a {len(blob)}-byte vector" if type(blob) is bytes else \
                        f"a vector of type {type(blob).__name__}"
                    raise IndexFileError(f"{self.path}: item rowid {rows[k][0]} has {what} (the index stores "
                                         f"{self.dim} bytes); the file is damaged")
                q[k] = np.frombuffer(blob, dtype=np.int8)
            scale = np.array([r[2] if type(r[2]) in (float, int) else np.nan for r in rows], dtype=np.float64)
            bad = np.flatnonzero(~((scale > 0) & (scale <= _MAX_SCALE)))  # NaN (not a number), inf, <= 0
            if len(bad):
                raise IndexFileError(f"{self.path}: item rowid {rows[bad[0]][0]} has the scale "
                                     f"{_short(rows[bad[0]][2])} (a stored vector's is in (0, 1/127]); "
                                     f"the file is damaged{f' ({len(bad)} such items)' if len(bad) > 1 else ''}")
            self._cache = (np.fromiter((r[0] for r in rows), dtype=np.int64, count=n), q,
                           scale.astype(np.float32))
            self._version, self._cache_generation = version, generation
            self._scan = None
        return self._cache

    def _append_cached(self, rowids: np.ndarray, q: np.ndarray, scale: np.ndarray, generation: int) -> None:
        if self._cache is not None:
            r, v, s = self._cache
            self._cache = (np.concatenate([r, rowids]), np.concatenate([v, q]), np.concatenate([s, scale]))
            if self._scan is not None:
                self._scan.extend(q, scale)
        self._graph_follows(generation, add=(rowids, q))

    def _drop_cached(self, rowids: Sequence[int] | np.ndarray, generation: int) -> None:
        if self._cache is not None and len(rowids):
            r, v, s = self._cache
            keep = ~np.isin(r, np.asarray(rowids, dtype=np.int64))
            self._cache = (r[keep], v[keep], s[keep])
            self._scan = None
        self._graph_follows(generation, remove=rowids)

    # ------------------------------------------------------------------------------------------ the graph
    def _graph_follows(self, generation: int, add: tuple[np.ndarray, np.ndarray] | None = None,
                       remove: Sequence[int] | np.ndarray = ()) -> None:
        """After one committed write: the cache and a graph that reflected the generation before it follow
        it; a graph that did not (another process wrote in between) is dropped, to be rebuilt."""
        if self._cache is not None and self._cache_generation in (generation - 1, generation):
            self._cache_generation = generation
        elif self._cache is not None:
            self._cache, self._version = None, None  # reload on the next search
        g = self._ann
        if g is None:
            return
        if g.generation not in (generation - 1, generation) or self._cache is None:
            self._ann = None
            return
        if len(remove):
            g.remove(remove)
        if add is not None:
            g.add(*add)
        g.generation = generation

    def _graph_for_writes(self) -> None:
        """Before a write: load a current sidecar, so that the write updates it instead of outdating it."""
        if (self._ann is None and self.approximate is not False and _ann.sidecar_path(self.path).is_file()
                and _ann.available()):
            rowids = self._vectors()[0]
            self._ann = _ann.Graph.load(_ann.sidecar_path(self.path),
                                        _ann.Graph.header(rowids, self.dim, cast(int, self._cache_generation)),
                                        rowids)

    def _graph(self) -> _ann.Graph:
        """The graph of the cached vectors: the one in memory, the sidecar's, or a new one (then saved)."""
        rowids, q, _ = self._vectors()
        if self._ann is not None and self._ann.generation == self._cache_generation:
            return self._ann
        head = _ann.Graph.header(rowids, self.dim, cast(int, self._cache_generation))  # set by _vectors()
        self._ann = _ann.Graph.load(_ann.sidecar_path(self.path), head, rowids)
        if self._ann is None:
            self._ann = _ann.Graph.build(rowids, q, cast(int, self._cache_generation))
            self._save_graph()
        return self._ann

    def _save_graph(self) -> None:
        g = self._ann
        if (g is not None and g.dirty and self._cache is not None and g.generation == self._cache_generation
                and self._read_only is None):  # nothing is written beside a read-only index
            g.save(_ann.sidecar_path(self.path), _ann.Graph.header(self._cache[0], self.dim, g.generation))

    # ------------------------------------------------------------------------------------------ search
    @overload
    def search(self, query: str, top_k: int = ..., where: dict | None = ...,  # type: ignore[overload-overlap]
               *, approximate: bool | None = ...) -> list[Hit]: ...

    @overload
    def search(self, query: Sequence[str], top_k: int = ..., where: dict | None = ..., *,
               approximate: bool | None = ...) -> list[list[Hit]]: ...

    @overload
    def search(self, query: np.ndarray | Sequence[float] | Sequence[Sequence[float]], top_k: int = ...,
               where: dict | None = ..., *, approximate: bool | None = ...) -> list[Hit] | list[list[Hit]]: ...

    @_guarded
    def search(self, query: str | Sequence[str] | np.ndarray | Sequence[float] | Sequence[Sequence[float]],
               top_k: int = 10, where: dict | None = None, *,
               approximate: bool | None = None) -> list[Hit] | list[list[Hit]]:
        """The ``top_k`` items nearest to ``query`` (a text, or a unit vector), best first; a list of
        queries gives a list of lists. ``where={"key": value, ...}`` keeps items whose metadata has those
        values (always searched exactly). ``approximate`` overrides the index's default (see :meth:`open`):
        the graph's candidates are rescored exactly, so scores and tie order are the exact search's."""
        top_k = _positive_int(top_k, "top_k")
        mode = self.approximate if approximate is None else _tristate(approximate, "approximate")
        if mode is True and not _ann.available():
            raise _need_ann()
        if where is not None and not isinstance(where, dict):
            raise InputError(f"where must be a dict of metadata values (or None), got {type(where).__name__}")
        qv, single = self._query_vectors(query)
        rowids, q, scale = self._vectors()
        keep = None
        if where:
            keep = np.isin(rowids, self._where(where))
            rowids, q, scale = rowids[keep], q[keep], scale[keep]
        k = min(top_k, len(rowids))
        if k == 0:
            return cast("list[Hit] | list[list[Hit]]", [] if single else [[] for _ in range(len(qv))])
        graph = not where and k < len(rowids) and (
            mode is True or (mode is None and len(rowids) >= APPROX_MIN_ITEMS and _ann.available()))
        if graph:
            best_i, best_s = self._search_graph(qv, k, rowids, q, scale)
        else:
            best_i, best_s = self._search_exact(qv, k, q, scale, keep)
        wanted = rowids[np.unique(np.concatenate(best_i).astype(np.int64))]
        rows = self._rows(wanted)
        if len(rows) != len(wanted):  # the table scan saw rows that the rowid lookup does not find
            lost = [int(r) for r in wanted if int(r) not in rows]
            raise IndexFileError(f"{self.path}: items of rowid {_shown(lost)} cannot be read back; the file is "
                                 "damaged (restore it from a copy or rebuild it)")
        out = [[Hit(*rows[int(rowids[i])][:1], float(sc), *rows[int(rowids[i])][1:])  # type: ignore[arg-type]
                for i, sc in zip(ii, ss)] for ii, ss in zip(best_i, best_s)]
        return out[0] if single else out

    def _search_exact(self, qv: np.ndarray, k: int, q: np.ndarray, scale: np.ndarray,
                      keep: np.ndarray | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Row positions and scores of the ``k`` best rows per query, by scoring every row (``q``, ``scale``:
        the cached rows, or those ``keep`` selects from them). From ``SCAN_MIN_ITEMS`` items on an integer
        first pass picks the rows that can make the top k and only those are scored in float32: the same
        result, provably (:meth:`lwx_edge._scan.Int8Scan.candidates`)."""
        scan = self._int8_scan()
        if scan is not None:
            return self._rescored(qv, k, scan.candidates(qv, *quantize(qv), k, keep), q, scale)
        best_s, best_i = [], []
        per_block = max(1, _SCORE_BLOCK // len(q))  # queries scored at once: scores stay under 16 MB
        for b in range(0, len(qv), per_block):
            scores = self._scores(qv[b:b + per_block], q, scale)
            for row in scores:  # the k best; among equal scores the lower row first (the JVM agrees)
                kth = -np.partition(-row, k - 1)[k - 1] if len(row) > k else -np.inf
                above = np.flatnonzero(row > kth)
                tied = np.flatnonzero(row == kth)[:k - len(above)]
                idx = np.concatenate([above, tied])
                best_i.append(idx[np.argsort(-row[idx], kind="stable")])
                best_s.append(row[best_i[-1]])
        return best_i, best_s

    def _rescored(self, qv: np.ndarray, k: int, candidates: Sequence[np.ndarray], q: np.ndarray,
                  scale: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The ``k`` best of each query's candidate positions (ascending) by float score, as
        :meth:`_search_exact` orders them (among equal scores the lower row first)."""
        best_s, best_i = [], []
        for n, pos in enumerate(candidates):
            sc = self._scores(qv[n:n + 1], q[pos], scale[pos])[0]
            order = np.lexsort((pos, -sc))[:k]
            best_i.append(pos[order])
            best_s.append(sc[order])
        return best_i, best_s

    def _int8_scan(self) -> Int8Scan | None:
        _, q, scale = self._vectors()
        if len(q) < SCAN_MIN_ITEMS or not Int8Scan.fits(q):
            return None
        if self._scan is None or len(self._scan) != len(q):
            self._scan = Int8Scan(q, scale)
        return self._scan

    def _search_graph(self, qv: np.ndarray, k: int, rowids: np.ndarray, q: np.ndarray,
                      scale: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Like :meth:`_search_exact` over the graph's candidates only, rescored exactly (a query whose
        candidates are fewer than ``k`` live rows is searched exactly)."""
        candidates = self._graph().candidates(quantize(qv)[0], 2 * k + _APPROX_EXTRA)
        best_s, best_i = [], []
        for n, cand in enumerate(candidates):
            pos = np.searchsorted(rowids, cand)  # rowids ascend; a rowid no longer there is dropped
            pos = np.unique(pos[(pos < len(rowids)) & (rowids[np.minimum(pos, len(rowids) - 1)] == cand)])
            i, s = self._search_exact(qv[n:n + 1], k, q, scale) if len(pos) < k else \
                self._rescored(qv[n:n + 1], k, [pos], q, scale)
            best_i += i
            best_s += s
        return best_i, best_s

    @staticmethod
    def _scores(qv: np.ndarray, q: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """[m, n] cosine scores of unit queries against the int8 rows, a chunk at a time. The dot products are
        summed in float64 and rounded to float32, so identical rows get identical scores: a float32 GEMM sums
        a row in an order that depends on where the row falls in the BLAS kernel's tiles (OpenBLAS 0.3.31 gave
        two copies of one row different last bits), which would break the tie rule (equal scores: lower row
        first) that the JVM core shares."""
        out = np.empty((len(qv), len(q)), dtype=np.float32)
        q64 = np.asarray(qv, dtype=np.float64)
        chunk = np.empty((min(_CHUNK_ROWS, len(q)), q.shape[1]), dtype=np.float64)
        for s in range(0, len(q), _CHUNK_ROWS):
            m = min(_CHUNK_ROWS, len(q) - s)
            np.copyto(chunk[:m], q[s:s + m], casting="unsafe")
            out[:, s:s + m] = q64 @ chunk[:m].T
        out *= scale
        return out

    def _query_vectors(self, query: Any) -> tuple[np.ndarray, bool]:
        """(unit query rows, whether ``query`` was one query): texts are embedded, vectors normalised."""
        texts: list | None
        if isinstance(query, str):
            texts, single = [query], True
        elif isinstance(query, np.ndarray):
            texts, single = None, query.ndim == 1
        elif isinstance(query, (dict, bytes, np.generic)) or not isinstance(query, Iterable):
            raise InputError(f"query must be a text, a list of texts or an array of vectors, got "
                             f"{type(query).__name__}")
        else:
            texts, single = list(query), False
            if texts and not all(isinstance(t, str) for t in texts):
                query, texts, single = texts, None, not any(isinstance(t, (str, Iterable))
                                                            for t in texts)  # type: ignore[attr-defined]
        if texts is None:
            v = _float_rows(query, "query vectors")
            if v.ndim not in (1, 2) or v.shape[-1] != self.dim:
                raise InputError(f"query vectors must have shape [{self.dim}] or [n, {self.dim}] (the index's "
                                 f"dimensions), got {v.shape}")
            v = v.reshape(-1, self.dim)
            if not len(v):
                raise InputError("no queries given")
            return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12), single
        if self.encoder is None:
            raise InputError(f"{self.path}: opened without an encoder; pass vectors or Index.open(path, encoder)")
        if not texts:
            raise InputError("no queries given")
        return self.encoder.embed(texts, truncation="ignore"), single

    def _where(self, where: dict) -> np.ndarray:
        if not isinstance(where, dict):
            raise InputError(f"where must be a dict of metadata values, got {type(where).__name__}")
        clauses, args = [], []
        for key, value in where.items():
            if not isinstance(key, str) or not key.replace("_", "").isalnum():
                raise InputError(f"where keys must be metadata names (letters, digits, _), got {key!r}")
            if isinstance(value, np.generic):
                value = value.item()
            if value is not None and not isinstance(value, (str, int, float)):
                raise InputError(f"where[{key!r}]: only plain values (text, numbers, true/false, null) match, "
                                 f"got {type(value).__name__}")
            if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value < _INT64[1]:
                raise InputError(f"where[{key!r}]: {value} does not fit in 64 bits")
            if isinstance(value, str):
                _utf8(value, f"where[{key!r}]")
            # a row whose metadata is not JSON (damaged, or NaN written by an older lwx-edge) matches
            # nothing, rather than failing the whole search
            extract = f"(CASE WHEN typeof(metadata) = 'text' AND json_valid(metadata) " \
                      f"THEN json_extract(metadata, '$.{key}') END)"
            if value is None:
                clauses.append(f"{extract} IS NULL")
            else:
                clauses.append(f"{extract} = ?")
                args.append(int(value) if isinstance(value, bool) else value)
        if not clauses:
            return np.array([], dtype=np.int64)
        sql = "SELECT rowid FROM items WHERE " + " AND ".join(clauses)
        return np.array([r for (r,) in self.conn.execute(sql, args).fetchall()], dtype=np.int64)

    def _rows(self, rowids: np.ndarray) -> dict[int, tuple[str | int, str | None, dict | None]]:
        out = {}
        ids = [int(r) for r in rowids]
        for s in range(0, len(ids), 500):
            part = ids[s:s + 500]
            for rowid, item_id, text, meta in self.conn.execute(
                    f"SELECT rowid, id, text, metadata FROM items WHERE rowid IN ({','.join('?' * len(part))})", part):
                out[rowid] = self._checked_row(rowid, item_id, text, meta)
        return out


def _need_ann() -> LwxError:
    from .errors import BackendUnavailable

    return BackendUnavailable(f"approximate=True needs the approximate index (usearch): {_ann.INSTALL}")


def _load_meta(blob: str | None) -> dict | None:
    """A stored metadata object; None for none, and for what is not a JSON object (a damaged row)."""
    if blob is None:
        return None
    try:
        out = json.loads(blob)
    except (ValueError, TypeError, RecursionError):
        return None
    return out if isinstance(out, dict) else None


def _float_rows(x: Any, what: str) -> np.ndarray:
    """``x`` as a float32 array of finite real numbers, or InputError naming ``what``."""
    if x is None or isinstance(x, (str, bytes, dict)):
        raise InputError(f"{what} must be an array of numbers, got {type(x).__name__}")
    if np.iscomplexobj(x):
        raise InputError(f"{what} must be real numbers, got complex ones")
    try:
        v = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):
        got = f"an array of {x.dtype}" if isinstance(x, np.ndarray) else f"a {type(x).__name__}"
        raise InputError(f"{what} must be an array of numbers, got {got}") from None
    if not np.isfinite(v).all():
        raise InputError(f"{what} contain NaN or infinite values")
    return v
