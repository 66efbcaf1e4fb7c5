"""Reading and writing an index's items: get, info, add, upsert, add_vectors, delete."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..errors import InputError
from .sqlite import _guarded
from .store import IndexStore
from .values import (
    _DEFAULT_BATCH,
    _MAX_SCALE,
    FORMAT,
    FORMAT_VERSION,
    IndexFileError,
    _duplicates,
    _float_rows,
    _id,
    _ids,
    _load_meta,
    _metadata_json,
    _positive_int,
    _seq,
    _shown,
    _utf8,
    quantize,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..encoder import Encoder



class IndexItems(IndexStore):
    """The items of an index file: read, add, replace, delete."""

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
        ids, texts, blobs = _checked_items(ids, texts, metadata, vectors)
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


def _checked_items(ids: object, texts: Sequence[str | None] | str | None, metadata: Sequence[dict | None] | None,
                   vectors: np.ndarray | None) -> tuple[list[str | int], list, list[str | None]]:
    """(ids, texts, metadata JSON) of one write, checked to pair up and to be storable; InputError naming the
    first that is not."""
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
    return ids, texts, blobs
