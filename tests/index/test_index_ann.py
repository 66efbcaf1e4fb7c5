"""lwx_edge.Index's optional approximate graph ([ann] extra, usearch): recall, consistency, a derived sidecar."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from lwx_edge.errors import BackendUnavailable
from lwx_edge.index import Index
from lwx_edge.index import ann as _ann

DIM = 256


class FakeEncoder:
    """Just enough of an Encoder to create an index of ``DIM``-d vectors (they come from add_vectors)."""

    dim, max_len, bundle = DIM, 64, None

    def identity(self) -> dict:
        return {"sha256": "f" * 64, "tokenizer_sha256": "t" * 64, "bundle": "fake"}


def clustered(n: int, seed: int = 0, clusters: int = 40) -> np.ndarray:
    """Unit vectors around ``clusters`` fixed centres (the same for every seed: queries fall among items)."""
    centres = np.random.default_rng(123).standard_normal((clusters, DIM)).astype(np.float32)
    rng = np.random.default_rng(seed)
    v = centres[rng.integers(0, clusters, n)] + rng.standard_normal((n, DIM)).astype(np.float32) * 2.0
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def recall(approx, exact) -> float:
    return float(np.mean([len({h.id for h in a} & {h.id for h in e}) / len(e) for a, e in zip(approx, exact)]))


@pytest.fixture
def big(tmp_path):
    pytest.importorskip("usearch")
    v = clustered(4000)
    with Index.open(tmp_path / "big.lwxindex", FakeEncoder(), create=True) as ix:
        ix.add_vectors([f"i{k}" for k in range(len(v))], v, metadata=[{"even": k % 2 == 0} for k in range(len(v))])
        yield ix, v


def test_recall_at_10_against_exact(big, monkeypatch):
    ix, v = big
    queries = clustered(200, seed=1)
    exact = ix.search(queries, top_k=10, approximate=False)
    approx = ix.search(queries, top_k=10, approximate=True)
    r = recall(approx, exact)
    print(f"recall@10 approximate vs exact, {len(v)} items, {len(queries)} queries: {r:.4f}")
    assert r >= 0.98
    for a, e in zip(approx, exact):  # candidates are rescored exactly: a hit found by both scores the same
        scores = {h.id: h.score for h in e}
        assert all(h.score == pytest.approx(scores[h.id], abs=1e-6) for h in a if h.id in scores)
        assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)
    assert _ann.sidecar_path(ix.path).is_file()
    # approximate=None: exact below APPROX_MIN_ITEMS, the graph from there on
    import lwx_edge.index.search as index_mod

    calls = []
    real = Index._search_graph
    monkeypatch.setattr(Index, "_search_graph", lambda self, *a: calls.append(1) or real(self, *a))
    ix.search(queries[0], top_k=10)
    assert calls == []
    monkeypatch.setattr(index_mod, "APPROX_MIN_ITEMS", 1000)
    assert [h.id for h in ix.search(queries[0], top_k=10)] == [h.id for h in approx[0]]
    assert calls == [1]
    # where= is always exact, whatever approximate says
    even = ix.search(queries[:20], top_k=10, where={"even": True}, approximate=True)
    assert calls == [1]
    assert [[h.id for h in x] for x in even] == \
        [[h.id for h in x] for x in ix.search(queries[:20], top_k=10, where={"even": True}, approximate=False)]


def test_deleted_and_replaced_items_follow_the_graph(big, monkeypatch):
    ix, v = big
    ix.search(v[0], top_k=10, approximate=True)  # the graph is built and saved
    gone = [f"i{k}" for k in range(0, 4000, 7)]
    ix.delete(gone)
    new = clustered(300, seed=2)
    replaced = [f"i{k}" for k in range(1, 600, 2)]  # some of them deleted above: added back
    ix.add_vectors(replaced, new, replace=True)
    ix.add_vectors(["fresh"], new[:1] * -1)
    hits = ix.search(v[:200], top_k=10, approximate=True)
    assert not {h.id for hh in hits for h in hh} & (set(gone) - set(replaced))  # deleted ids never come back
    assert len(ix) == 4000 - len(set(gone) - set(replaced)) + 1
    for k in range(0, 300, 10):  # a replaced item is found under its new vector
        assert ix.search(new[k], top_k=1, approximate=True)[0].id == replaced[k]
    assert ix.search(-new[0], top_k=1, approximate=True)[0].id == "fresh"
    r = recall(hits, ix.search(v[:200], top_k=10, approximate=False))
    print(f"recall@10 after deleting {len(gone)} and replacing 300: {r:.4f}")
    assert r >= 0.98
    ix.close()  # saves the graph, as of this generation

    builds = []
    real = _ann.Graph.build
    monkeypatch.setattr(_ann.Graph, "build", classmethod(lambda cls, *a, **kw: builds.append(1) or real(*a, **kw)))
    with Index.open(ix.path, FakeEncoder()) as again:
        assert again.search(-new[0], top_k=1, approximate=True)[0].id == "fresh"
        assert builds == []  # the saved sidecar was current
        other = Index.open(ix.path, FakeEncoder(), approximate=False)  # another writer, graph not loaded
        other.delete(["fresh"])
        other.add_vectors(["late"], new[1:2] * -1)
        other.close()
        assert again.search(-new[0], top_k=1, approximate=True)[0].id != "fresh"
        assert again.search(-new[1], top_k=1, approximate=True)[0].id == "late"
        assert builds == [1]  # the sidecar is of an older generation: rebuilt


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated", "stale", "flipped"])
def test_a_missing_or_damaged_sidecar_is_rebuilt(big, damage, caplog):
    ix, v = big
    expected = [h.id for h in ix.search(v[3], top_k=10, approximate=True)]
    ix.close()
    side = _ann.sidecar_path(ix.path)
    good = side.read_bytes()
    if damage == "missing":
        side.unlink()
    elif damage == "garbage":
        side.write_bytes(b"\x00junk" * 1000)
    elif damage == "truncated":
        side.write_bytes(good[:len(good) // 2])
    elif damage == "flipped":  # one bit of the body: the checksum tells (subprocess tests: tests/index/test_index_hostile.py)
        side.write_bytes(good[:-100] + bytes([good[-100] ^ 1]) + good[-99:])
    else:  # another writer changed the file: the sidecar is of an older generation
        with Index.open(ix.path, FakeEncoder(), approximate=False) as w:
            w.delete(["i3"])
            w.add_vectors(["i3"], v[3:4])
    caplog.clear()
    with caplog.at_level("INFO", logger="lwx_edge"), Index.open(ix.path, FakeEncoder()) as again:
        got = [h.id for h in again.search(v[3], top_k=10, approximate=True)]
        assert got[0] == "i3" and len(got) == 10
        if damage != "stale":  # the graph is built on every core, so two builds may differ in a near tie
            assert len(set(got) & set(expected)) >= 9
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    if damage in ("missing", "stale"):  # nothing wrong with the file: no warning
        assert warned == []
    else:
        assert len(warned) == 1 and warned[0].startswith(f"{side}: the approximate-search sidecar is damaged (")
        assert ("checksum" in warned[0]) == (damage == "flipped")
    assert side.read_bytes()[:len(_ann.MAGIC)] == _ann.MAGIC
    assert _ann.Graph.load(side, _ann.Graph.header(np.array(sorted(_rowids(ix.path))), DIM, _generation(ix.path)))


def _rowids(path):
    import sqlite3

    return [r for (r,) in sqlite3.connect(path).execute("SELECT rowid FROM items")]


def _generation(path):
    import sqlite3

    return int(sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def test_without_the_extra_search_is_exact_and_true_names_the_extra(tmp_path, monkeypatch):
    import lwx_edge.index.search as index_mod

    monkeypatch.setitem(sys.modules, "usearch", None)  # import usearch -> ImportError
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    monkeypatch.setattr(index_mod, "APPROX_MIN_ITEMS", 10)
    assert not _ann.available()
    v = clustered(50)
    with Index.open(tmp_path / "plain.lwxindex", FakeEncoder(), create=True) as ix:
        ix.add_vectors([f"i{k}" for k in range(50)], v)
        assert ix.search(v[7], top_k=3)[0].id == "i7"  # auto: exact without usearch
        with pytest.raises(BackendUnavailable, match=r"pip install 'lwx-edge\[ann\]'"):
            ix.search(v[7], top_k=3, approximate=True)
    with pytest.raises(BackendUnavailable, match=r"pip install 'lwx-edge\[ann\]'"):
        Index.open(tmp_path / "plain.lwxindex", FakeEncoder(), approximate=True)
    assert not _ann.sidecar_path(tmp_path / "plain.lwxindex").exists()
