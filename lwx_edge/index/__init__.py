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
``SCAN_MIN_ITEMS`` items on an integer first pass (:mod:`lwx_edge.index.scan`: onnxruntime's int8 GEMM over the rows,
packed once, one more dim bytes per item) picks the rows that can make the top k, and only those are scored in
float32: the same hits, several times faster.

Approximate search (``pip install 'lwx-edge[ann]'``, usearch HNSW; :mod:`lwx_edge.index.ann`): from
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

import os
from typing import TYPE_CHECKING

from ..errors import InputError, LwxError
from . import ann
from .search import APPROX_MIN_ITEMS, SCAN_MIN_ITEMS, IndexSearch
from .sqlite import _index_path, create_file, open_file
from .values import FORMAT, FORMAT_VERSION, Hit, IndexFileError, _need_ann, _tristate, dequantize, quantize

if TYPE_CHECKING:
    from pathlib import Path

    from ..encoder import Encoder

__all__ = ["Index", "Hit", "IndexFileError", "quantize", "dequantize", "APPROX_MIN_ITEMS", "SCAN_MIN_ITEMS",
           "FORMAT", "FORMAT_VERSION"]


class Index(IndexSearch):
    """Items (id, text, metadata, int8 vector) in one SQLite file, searched by cosine: exactly, or through an
    approximate graph for large indexes (the ``[ann]`` extra). Open or create one with :meth:`Index.open`;
    close it (or use ``with``) so the file alone holds everything."""

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
        if approximate is True and not ann.available():
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
        conn, meta, why = open_file(path, read_only)
        index = cls(path, conn, encoder, meta, approximate, why)
        if encoder is not None:
            try:
                index._check_encoder(encoder)
            except LwxError:
                conn.close()
                raise
        return index

    @classmethod
    def _create(cls, path: Path, encoder: Encoder, approximate: bool | None = None) -> Index:
        create_file(path, encoder)
        return cls.open(path, encoder, approximate=approximate)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

