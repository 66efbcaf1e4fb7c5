"""The open index: its connection, the vectors cached in memory, the approximate graph that follows them, and
the write transactions that count the file's generations."""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from ..errors import LwxError
from . import ann
from .scan import Int8Scan
from .sqlite import _sqlite_error
from .values import _MAX_SCALE, IndexFileError, _short

if TYPE_CHECKING:
    from ..encoder import Encoder



class IndexStore:
    """An index file's connection, cache and graph (:class:`lwx_edge.index.Index` adds reading, writing and
    search)."""

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
        self._ann: ann.Graph | None = None
        self._scan: Int8Scan | None = None  # follows the cache: appends extend it, anything else drops it

    # ------------------------------------------------------------------------------------------ opening
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
        if (self._ann is None and self.approximate is not False and ann.sidecar_path(self.path).is_file()
                and ann.available()):
            rowids = self._vectors()[0]
            self._ann = ann.Graph.load(ann.sidecar_path(self.path),
                                        ann.Graph.header(rowids, self.dim, cast(int, self._cache_generation)),
                                        rowids)

    def _graph(self) -> ann.Graph:
        """The graph of the cached vectors: the one in memory, the sidecar's, or a new one (then saved)."""
        rowids, q, _ = self._vectors()
        if self._ann is not None and self._ann.generation == self._cache_generation:
            return self._ann
        head = ann.Graph.header(rowids, self.dim, cast(int, self._cache_generation))  # set by _vectors()
        self._ann = ann.Graph.load(ann.sidecar_path(self.path), head, rowids)
        if self._ann is None:
            self._ann = ann.Graph.build(rowids, q, cast(int, self._cache_generation))
            self._save_graph()
        return self._ann

    def _save_graph(self) -> None:
        g = self._ann
        if (g is not None and g.dirty and self._cache is not None and g.generation == self._cache_generation
                and self._read_only is None):  # nothing is written beside a read-only index
            g.save(ann.sidecar_path(self.path), ann.Graph.header(self._cache[0], self.dim, g.generation))

