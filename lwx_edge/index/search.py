"""Search: exact (int8 rows scored in float32, with an int8 first pass on large indexes), or candidates from
the approximate graph rescored exactly; ``where=`` filters on metadata."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast, overload

import numpy as np

from ..errors import InputError
from . import ann
from .items import IndexItems
from .scan import Int8Scan
from .sqlite import _guarded
from .values import (
    _APPROX_EXTRA,
    _CHUNK_ROWS,
    _INT64,
    _SCORE_BLOCK,
    Hit,
    IndexFileError,
    _float_rows,
    _need_ann,
    _positive_int,
    _shown,
    _tristate,
    _utf8,
    quantize,
)

APPROX_MIN_ITEMS = 50_000   # approximate=None uses the graph from this many items on (tools/bench_index.py)
SCAN_MIN_ITEMS = 16_384     # exact search takes an int8 first pass (lwx_edge.index.scan) from this many items on


class IndexSearch(IndexItems):
    """Search over an index file's items."""

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
        if mode is True and not ann.available():
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
            mode is True or (mode is None and len(rowids) >= APPROX_MIN_ITEMS and ann.available()))
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
        result, provably (:meth:`lwx_edge.index.scan.Int8Scan.candidates`)."""
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

