"""The optional approximate graph of :class:`lwx_edge.Index` (``pip install 'lwx-edge[ann]'``: usearch HNSW).

The SQLite file stays the only source of truth. The graph is derived from it and can always be rebuilt: its
keys are the items' SQLite rowids and its vectors the stored int8 rows themselves (cosine on the int8 rows
ranks like the index's exact scores). It is kept in a sidecar file next to the index, ``NAME.ann``: a short
header (magic, then JSON naming the index ``generation`` it was built from, the item count, the sum of the
rowids, the dimension, and the length and sha256 of the body), then the body: usearch's own serialisation.

usearch trusts what it loads (a damaged neighbour list is read as memory addresses: a segfault), so a sidecar
is used only when its body has the recorded length and checksum *and* its layout checks out before usearch
sees it (:func:`check_body`: every size, level and offset adds up to the body's length, every neighbour is a
node of the graph at the level it is listed on, the keys are exactly the index's rowids). A sidecar that is
missing, damaged, of another usearch or of another generation is ignored (with a logged warning when it is
damaged) and rebuilt, never an error. Search takes the graph's candidates and rescores them exactly, so
scores and tie order are those of the exact search.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BackendUnavailable

log = logging.getLogger(__name__)

MAGIC = b"LWXANN2\n"  # 2: the header records the body's length and sha256 (LWXANN1 sidecars are rebuilt)
# search beam 256: recall@10 against exact at 1M items of tools/bench_index.py is 0.995 (0.974 with 128)
CONNECTIVITY, EXPANSION_ADD, EXPANSION_SEARCH = 16, 128, 256
INSTALL = "pip install 'lwx-edge[ann]'"
_MAX_HEADER = 4096          # bytes of JSON a sidecar header may have
_FREE_KEY = 2 ** 64 - 1     # usearch's key of a removed node (kept in the graph, unlisted)
_MAX_LEVEL = 64             # a graph of 16-connected levels never gets near this many
_CHECK_NODES = 1 << 15      # nodes whose neighbour lists are checked at once (~5 MB of indices)


def available() -> bool:
    """Whether usearch can be imported."""
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


def _usearch() -> Any:
    try:
        from usearch.index import Index as UIndex
    except ImportError as e:
        raise BackendUnavailable(f"the approximate index needs usearch ({e}): {INSTALL}") from None
    return UIndex


def _new(dim: int) -> Any:
    """An empty usearch graph of ``dim``-d int8 rows, configured as every graph of an index is."""
    return _usearch()(ndim=int(dim), metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                      expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


@functools.lru_cache(maxsize=8)
def _reference(dim: int) -> bytes:
    """The serialisation of an empty graph of ``dim``: what the running usearch writes where a body's layout
    does not depend on its content (matrix header, then usearch's 64-byte header, then the graph header)."""
    return bytes(_new(dim).save())


def sidecar_path(index_path: Path) -> Path:
    """Where the graph of ``index_path`` is kept: ``NAME.ann`` next to it."""
    return index_path.with_name(index_path.name + ".ann")


def check_body(body: bytes | memoryview, dim: int, items: int, rowids: np.ndarray | None = None) -> str | None:
    """None if ``body`` (usearch's serialisation of a graph, as :meth:`Graph.save` writes it) is one the running
    usearch can load and search safely, holding ``items`` ``dim``-d int8 rows (keyed exactly by ``rowids``, when
    given); otherwise what is wrong with it. Nothing of ``body`` is trusted: every size is checked against the
    body's length before it is used as an offset, and every neighbour id against the node count (and, above the
    base level, against the levels of the nodes), since usearch follows them as pointers.

    The layout (usearch 2.x, ``index_dense_gt::save_to_stream``): u32 rows, u32 bytes per row, the rows; a
    64-byte header (magic, version, metric/scalar/key/slot kinds, u64 present, deleted, dimensions, multi);
    then the graph: u64 size, connectivity, base connectivity, max level, entry slot; an i16 level per node;
    then each node: u64 key, i16 level, a u32 count and ``connectivity_base`` u32 slots for the base level
    and a u32 count and ``connectivity`` u32 slots for each level above."""
    b = memoryview(body).cast("B")
    ref, n = _reference(int(dim)), len(b)
    if n < len(ref):
        return f"{n} bytes, shorter than any graph"
    rows, cols = struct.unpack_from("<II", b, 0)
    if cols != dim:
        return f"rows of {cols} bytes (the index has {dim} dimensions)"
    head = 8 + rows * cols
    if head + 104 > n:
        return f"{rows} rows of {cols} bytes do not fit in {n} bytes"
    if bytes(b[head:head + 17]) != ref[8:25]:  # magic, version, metric, scalar, key and slot kinds
        return "written by another usearch version or with another layout"
    present, deleted, dims = struct.unpack_from("<QQQ", b, head + 17)
    if dims != dim or b[head + 41] != 0 or present + deleted != rows or present != items:
        return (f"its header says {present} + {deleted} rows of {dims} dimensions (multi={b[head + 41]}); "
                f"the index has {items} items of {dim}")
    g = head + 64
    size, conn, conn_base, max_level, entry = struct.unpack_from("<5Q", b, g)
    if (conn, conn_base) != struct.unpack_from("<QQ", ref, 72 + 8) or size != rows:
        return f"a graph of {size} nodes, connectivity {conn}/{conn_base}"
    if size == 0:
        return None if g + 40 == n else f"{n - g - 40} bytes after an empty graph"
    if max_level > _MAX_LEVEL or entry >= size:
        return f"max level {max_level}, entry node {entry} of {size}"
    return _check_nodes(b, g + 40, size, conn, conn_base, max_level, entry, deleted, items, rowids)


def _check_nodes(b: memoryview, lv_at: int, size: int, conn: int, conn_base: int, max_level: int, entry: int,
                 deleted: int, items: int, rowids: np.ndarray | None) -> str | None:
    """:func:`check_body` from the level table on: the nodes' layout, keys and neighbour lists."""
    n = len(b)
    if lv_at + 2 * size > n:
        return "truncated in the node levels"
    levels = np.frombuffer(b, "<i2", size, lv_at).astype(np.int64)
    if levels.min() < 0 or levels.max() > max_level or levels[entry] != max_level:
        return "node levels out of range"
    nb, nb0 = 4 + 4 * conn, 4 + 4 * conn_base
    sizes = 10 + nb0 + levels * nb
    starts = np.empty(size, dtype=np.int64)
    starts[0] = lv_at + 2 * size
    np.cumsum(sizes[:-1], out=starts[1:])
    starts[1:] += starts[0]
    if int(starts[-1] + sizes[-1]) != n:
        return f"its nodes take {int(starts[-1] + sizes[-1]) - starts[0]} bytes, the body has {n - starts[0]}"
    # every read below is inside the body: the nodes tile it exactly
    u8 = np.frombuffer(b, np.uint8)

    def u32(at: np.ndarray, count: int) -> np.ndarray:
        """[len(at), count] little-endian u32s from byte offsets ``at`` on (any alignment)."""
        rows = np.lib.stride_tricks.sliding_window_view(u8, 4 * count)[at]  # a copy: [len(at), 4 * count]
        return np.ascontiguousarray(rows).view("<u4")

    node_level = u8[starts + 8].astype(np.int64) | (u8[starts + 9].astype(np.int64) << 8)
    if not np.array_equal(node_level, levels & 0xFFFF):
        return "a node's level differs from the level table"
    kw = u32(starts, 2).astype(np.uint64)
    keys = kw[:, 0] | (kw[:, 1] << np.uint64(32))
    live = keys != np.uint64(_FREE_KEY)
    ordered = np.sort(keys[live])
    if int((~live).sum()) != deleted or len(ordered) != items or (ordered[1:] == ordered[:-1]).any():
        return "its keys repeat, or do not match its header"
    if rowids is not None and not np.array_equal(ordered, np.sort(np.asarray(rowids).astype(np.uint64))):
        return "its keys are not the index's rowids"
    for s in range(0, size, _CHECK_NODES):  # the base level: every node
        lists = u32(starts[s:s + _CHECK_NODES] + 10, 1 + conn_base)
        counts, slots = lists[:, 0], lists[:, 1:]
        if counts.max() > conn_base:
            return "a base-level neighbour list longer than its room"
        if (slots[np.arange(conn_base) < counts[:, None].astype(np.int64)] >= size).any():
            return "a neighbour id beyond the graph"
    for lev in range(1, int(max_level) + 1):  # above it, the nodes that reach each level
        nodes = np.flatnonzero(levels >= lev)
        lists = u32(starts[nodes] + 10 + nb0 + (lev - 1) * nb, 1 + conn)
        counts, slots = lists[:, 0], lists[:, 1:]
        if counts.max() > conn:
            return f"a level-{lev} neighbour list longer than its room"
        used = slots[np.arange(conn) < counts[:, None].astype(np.int64)].astype(np.int64)
        if (used >= size).any() or (levels[np.minimum(used, size - 1)] < lev).any():
            return f"a level-{lev} neighbour that is not on level {lev}"
    return None


class Graph:
    """A usearch HNSW graph over int8 rows keyed by rowid, tagged with the index generation it reflects."""

    def __init__(self, graph: Any, generation: int):
        self.graph, self.generation, self.dirty = graph, generation, False

    @classmethod
    def build(cls, rowids: np.ndarray, q: np.ndarray, generation: int, threads: int = 0) -> Graph:
        graph = _new(q.shape[1])
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
    def load(cls, path: Path, expect: dict, rowids: np.ndarray | None = None) -> Graph | None:
        """The graph in ``path`` if it was built from exactly ``expect`` (and holds exactly the keys ``rowids``,
        when given) and its body is intact; else None, with a logged warning when the file is damaged."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("%s: cannot read the approximate-search sidecar (%s); the graph is rebuilt", path,
                        e.strerror or e)
            return None
        try:
            why = cls._damage(data, expect)
        except Exception as e:  # noqa: BLE001 - whatever is wrong with the header, the graph is rebuilt
            why = f"an unreadable header ({type(e).__name__})"
        if why == "stale":
            log.info("%s: the approximate-search sidecar is of another state of the index (or of an older "
                     "lwx-edge); the graph is rebuilt", path)
            return None
        if why is None:
            start = len(MAGIC) + 4 + struct.unpack_from("<I", data, len(MAGIC))[0]
            body = memoryview(data)[start:]
            try:
                why = check_body(body, expect["dim"], expect["items"], rowids)
                if why is None:
                    graph = _new(expect["dim"])
                    graph.load(body)
                    if len(graph) != expect["items"] or graph.ndim != expect["dim"]:
                        why = f"{len(graph)} items of {graph.ndim} dimensions after loading"
            except Exception as e:  # noqa: BLE001 - another usearch, no memory: the graph is rebuilt
                why = f"not loadable ({type(e).__name__}: {e})"
            if why is None:
                return cls(graph, expect["generation"])
            if why.startswith("written by another usearch"):  # an upgrade, not damage
                log.info("%s: the approximate-search sidecar was %s; the graph is rebuilt", path, why)
                return None
        log.warning("%s: the approximate-search sidecar is damaged (%s); ignored, the graph is rebuilt", path, why)
        return None

    @staticmethod
    def _damage(data: bytes, expect: dict) -> str | None:
        """What is wrong with a sidecar's header and checksum ("stale": of another generation), or None."""
        if not data.startswith(MAGIC):
            if data.startswith(MAGIC[:6]) and len(data) >= len(MAGIC):
                return "stale"  # an older lwx-edge's sidecar (LWXANN1: no checksum): rebuilt, not damaged
            return "not a sidecar of this lwx-edge" if len(data) >= len(MAGIC) else "truncated"
        if len(data) < len(MAGIC) + 4:
            return "truncated"
        (n,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4
        if n > _MAX_HEADER or start + n > len(data):
            return f"a header of {n} bytes"
        head = json.loads(data[start:start + n].decode("utf-8"))
        if not isinstance(head, dict):
            return "a header that is not a JSON object"
        if {k: head.get(k) for k in expect} != expect:
            return "stale"
        body = memoryview(data)[start + n:]
        if head.get("bytes") != len(body):
            return f"truncated ({len(body)} bytes of body, the header says {head.get('bytes')})"
        if head.get("sha256") != hashlib.sha256(body).hexdigest():
            return "its checksum does not match"
        return None

    def save(self, path: Path, head: dict) -> bool:
        """Write the sidecar atomically; False (and nothing changed) if the directory is not writable."""
        from ..atomic import atomic_file

        try:
            body = self.graph.save()
            blob = json.dumps({**head, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()},
                              sort_keys=True).encode("utf-8")
            with atomic_file(path) as tmp, open(tmp, "wb") as f:
                f.write(MAGIC + struct.pack("<I", len(blob)) + blob)
                f.write(body)
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

    def remove(self, rowids: Sequence[int] | np.ndarray) -> None:
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
