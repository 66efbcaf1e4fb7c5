"""The optional approximate graph of :class:`lwx_edge.Index` (``pip install 'lwx-edge[ann]'``: usearch HNSW).

The SQLite file stays the only source of truth. The graph is derived from it and can always be rebuilt: its
keys are the items' SQLite rowids and its vectors the stored int8 rows themselves (cosine on the int8 rows
ranks like the index's exact scores). It is kept in a sidecar file next to the index, ``NAME.ann``: a short
header (magic, then JSON naming the index ``generation`` it was built from, the item count, the sum of the
rowids and the dimension), then usearch's own serialisation. A sidecar that is missing, damaged or of another
generation is ignored and rebuilt, never an error. Search takes the graph's candidates and rescores them
exactly, so scores and tie order are those of the exact search.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from .errors import BackendUnavailable

MAGIC = b"LWXANN1\n"
# search beam 256: recall@10 against exact at 1M items of tools/bench_index.py is 0.995 (0.974 with 128)
CONNECTIVITY, EXPANSION_ADD, EXPANSION_SEARCH = 16, 128, 256
INSTALL = "pip install 'lwx-edge[ann]'"


def available() -> bool:
    """Whether usearch can be imported."""
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


def _usearch():
    try:
        from usearch.index import Index as UIndex
    except ImportError as e:
        raise BackendUnavailable(f"the approximate index needs usearch ({e}): {INSTALL}") from None
    return UIndex


def sidecar_path(index_path: Path) -> Path:
    """Where the graph of ``index_path`` is kept: ``NAME.ann`` next to it."""
    return index_path.with_name(index_path.name + ".ann")


class Graph:
    """A usearch HNSW graph over int8 rows keyed by rowid, tagged with the index generation it reflects."""

    def __init__(self, graph, generation: int):
        self.graph, self.generation, self.dirty = graph, generation, False

    @classmethod
    def build(cls, rowids: np.ndarray, q: np.ndarray, generation: int, threads: int = 0) -> Graph:
        graph = _usearch()(ndim=q.shape[1], metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                           expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
        if len(rowids):
            graph.add(rowids.astype(np.uint64), q, threads=threads)
        out = cls(graph, generation)
        out.dirty = True
        return out

    @staticmethod
    def header(rowids: np.ndarray, dim: int, generation: int) -> dict:
        """What a sidecar must record to be used for this state of the index."""
        return {"generation": int(generation), "items": int(len(rowids)), "rowid_sum": int(rowids.sum()),
                "dim": int(dim)}

    @classmethod
    def load(cls, path: Path, expect: dict) -> Graph | None:
        """The graph in ``path`` if it is readable and was built from exactly ``expect``; else None."""
        try:
            data = path.read_bytes()
            if not data.startswith(MAGIC):
                return None
            (n,) = struct.unpack_from("<I", data, len(MAGIC))
            start = len(MAGIC) + 4
            head = json.loads(data[start:start + n].decode("utf-8"))
            if head != expect:
                return None
            graph = _usearch().restore(memoryview(data)[start + n:])
            if graph is None or len(graph) != expect["items"] or graph.ndim != expect["dim"]:
                return None
        except Exception:  # missing, truncated, damaged, another usearch: rebuilt by the caller
            return None
        return cls(graph, expect["generation"])

    def save(self, path: Path, head: dict) -> bool:
        """Write the sidecar atomically; False (and nothing changed) if the directory is not writable."""
        from ._io import atomic_file

        blob = json.dumps(head, sort_keys=True).encode("utf-8")
        try:
            with atomic_file(path) as tmp, open(tmp, "wb") as f:
                f.write(MAGIC + struct.pack("<I", len(blob)) + blob)
                f.write(self.graph.save())
        except Exception:  # a read-only directory: keep the graph in memory only
            return False
        self.dirty = False
        return True

    def add(self, rowids: np.ndarray, q: np.ndarray) -> None:
        if len(rowids):
            keys = rowids.astype(np.uint64)
            taken = [k for k in keys.tolist() if k in self.graph]  # a rowid SQLite reused after a delete
            if taken:
                self.graph.remove(np.array(taken, dtype=np.uint64))
            self.graph.add(keys, q, threads=0)
            self.dirty = True

    def remove(self, rowids) -> None:
        keys = [int(k) for k in rowids if int(k) in self.graph]
        if keys:
            self.graph.remove(np.array(keys, dtype=np.uint64))
            self.dirty = True

    def candidates(self, q: np.ndarray, count: int) -> list[np.ndarray]:
        """For each int8 query row, up to ``count`` rowids the graph finds nearest."""
        self.graph.expansion_search = max(EXPANSION_SEARCH, count)
        m = self.graph.search(q, count, threads=1)
        keys = np.atleast_2d(m.keys)
        counts = np.atleast_1d(m.counts) if hasattr(m, "counts") else [keys.shape[1]]
        return [keys[i, :int(c)].astype(np.int64) for i, c in enumerate(counts)]
