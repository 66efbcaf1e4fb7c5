"""The integer first pass of Index's exact search (lwx_edge.index.scan): exact integer scores, no missed row."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lwx_edge.index.search as index_mod
from lwx_edge.index import Index, quantize
from lwx_edge.index.scan import BLOCK_ROWS, DIM, TEMPLATE, Int8Scan


class FakeEncoder:
    """Just enough of an Encoder to create an index of 512-d vectors (they come from add_vectors)."""

    dim, max_len, bundle = DIM, 64, None

    def identity(self) -> dict:
        return {"sha256": "f" * 64, "tokenizer_sha256": "t" * 64, "bundle": "fake"}


def clustered(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 30 centres, with exact duplicates: near and equal scores are common."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1).standard_normal((30, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 30, n)] + rng.standard_normal((n, DIM)).astype(np.float32) * 0.8
    v[1::97] = v[0]
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_the_shipped_template_is_what_the_tool_writes():
    pytest.importorskip("onnx")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from make_int8_scan import build

    assert TEMPLATE.read_bytes() == build(DIM, BLOCK_ROWS)


def test_integer_scores_are_exact_across_blocks_and_appends():
    rng = np.random.default_rng(0)
    rows = rng.integers(-127, 128, (BLOCK_ROWS + 300, DIM)).astype(np.int8)
    scale = rng.uniform(0.5, 2, len(rows)).astype(np.float32)
    q8 = rng.integers(-127, 128, (3, DIM)).astype(np.int8)
    expected = q8.astype(np.int64) @ rows.T.astype(np.int64)
    whole = Int8Scan(rows, scale)
    assert len(whole) == len(rows) and np.array_equal(whole.scores(q8), expected)
    grown = Int8Scan(rows[:100], scale[:100])
    grown.extend(rows[100:BLOCK_ROWS + 7], scale[100:BLOCK_ROWS + 7])
    grown.extend(rows[BLOCK_ROWS + 7:], scale[BLOCK_ROWS + 7:])
    assert np.array_equal(grown.scores(q8), expected) and grown.max_norm == pytest.approx(whole.max_norm)


def test_candidates_hold_every_row_of_the_float_top_k_ties_included():
    v = clustered(3000)
    q8, scale = quantize(v)
    scan = Int8Scan(q8, scale)
    queries = np.concatenate([v[:1], clustered(20, seed=5)])
    exact = queries @ (q8.astype(np.float32) * scale[:, None]).T
    for k in (1, 10, 40):
        for n, cand in enumerate(scan.candidates(queries, *quantize(queries), k)):
            kth = np.sort(exact[n])[::-1][k - 1]
            assert set(np.flatnonzero(exact[n] >= kth)) <= set(cand.tolist())
            assert len(cand) < 600  # a first pass, not the whole index
    keep = np.arange(len(v)) % 3 == 0
    cand = scan.candidates(queries[:1], *quantize(queries[:1]), 10, keep)[0]
    kept = exact[0, keep]
    assert set(np.flatnonzero(kept >= np.sort(kept)[::-1][9])) <= set(cand.tolist())


@pytest.fixture
def pair(tmp_path, monkeypatch):
    """The same items in two indexes: one scanned first, one scored in float32 throughout."""
    v = clustered(3000)
    ids = [f"i{k}" for k in range(len(v))]
    meta = [{"even": k % 2 == 0} for k in range(len(v))]
    monkeypatch.setattr(index_mod, "APPROX_MIN_ITEMS", 10**9)
    with Index.open(tmp_path / "a.lwxindex", FakeEncoder(), create=True) as a, \
            Index.open(tmp_path / "b.lwxindex", FakeEncoder(), create=True) as b:
        a.add_vectors(ids, v, metadata=meta)
        b.add_vectors(ids, v, metadata=meta)
        yield a, b, v


def _search(index, monkeypatch, scanned: bool, *args, **kw):
    monkeypatch.setattr(index_mod, "SCAN_MIN_ITEMS", 1 if scanned else 10**9)
    return index.search(*args, **kw)


def same(a, b) -> bool:
    """The same hits in the same order, scores equal but for float32 rounding (BLAS rounds a row's dot
    product differently in the last bit depending on how many rows and queries it is given at once)."""
    return all([(h.id, h.metadata) for h in x] == [(h.id, h.metadata) for h in y]
               and np.allclose([h.score for h in x], [h.score for h in y], rtol=0, atol=1e-6)
               for x, y in zip(a, b, strict=True))


def test_scanned_search_returns_the_float_search_exactly(pair, monkeypatch):
    a, b, v = pair
    queries = np.concatenate([v[:1], clustered(30, seed=7)])
    for kw in ({"top_k": 10}, {"top_k": 5, "where": {"even": True}}, {"top_k": 40}):
        assert same(_search(a, monkeypatch, True, queries, **kw), _search(b, monkeypatch, False, queries, **kw))
        for q in queries[:3]:  # one query alone
            assert same([_search(a, monkeypatch, True, q, **kw)], [_search(b, monkeypatch, False, q, **kw)])
    assert a._scan is not None and b._scan is None
    # the duplicates of item 0 tie: they come in row order, as in the float search
    top = _search(a, monkeypatch, True, v[0], top_k=5)
    assert [h.id for h in top] == ["i0", "i1", "i98", "i195", "i292"]


def test_the_scan_follows_appends_deletes_and_replacements(pair, monkeypatch):
    a, b, v = pair
    _search(a, monkeypatch, True, v[0])
    scan = a._scan
    extra = clustered(50, seed=9)
    for ix in (a, b):
        ix.add_vectors([f"x{k}" for k in range(50)], extra)
    assert a._scan is scan and len(scan) == 3050  # appended in place
    queries = np.concatenate([extra[:3], v[5:8]])
    assert same(_search(a, monkeypatch, True, queries, top_k=7), _search(b, monkeypatch, False, queries, top_k=7))
    for ix in (a, b):
        ix.delete(["i5", "x1"])
        ix.add_vectors(["i6"], -v[6:7], replace=True)
    assert same(_search(a, monkeypatch, True, queries, top_k=7), _search(b, monkeypatch, False, queries, top_k=7))
    assert len(a._scan) == len(a) == 3048
