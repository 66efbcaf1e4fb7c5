"""lwx_edge.Index against hostile files and arguments (issue 37): a damaged approximate-search sidecar never
crashes the process and is rebuilt; a read-only index opens and answers; damaged pages and rows, a full disk, a
lock and wrong argument types each raise one LwxError (IndexFileError naming the file, InputError naming the
argument), never a raw sqlite3/numpy/Python error."""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sqlite3
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lwx_edge.index.sqlite as index_mod
from lwx_edge.errors import InputError, LwxError
from lwx_edge.index import Index, IndexFileError
from lwx_edge.index import ann as _ann

DIM = 64


class FakeEncoder:
    """Just enough of an Encoder to create an index of ``DIM``-d vectors (they come from add_vectors)."""

    dim, max_len, bundle = DIM, 64, None

    def identity(self) -> dict:
        return {"sha256": "f" * 64, "tokenizer_sha256": "t" * 64, "bundle": "fake"}


def clustered(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 20 fixed centres (the same for every seed: queries fall among the items)."""
    centres = np.random.default_rng(123).standard_normal((20, DIM)).astype(np.float32)
    rng = np.random.default_rng(seed)
    v = centres[rng.integers(0, 20, n)] + rng.standard_normal((n, DIM)).astype(np.float32) * 1.5
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def names(path: Path) -> str:
    """A regex for messages that name the index file."""
    return re.escape(str(path))


def ids_of(hits) -> list:
    return [[h.id for h in x] for x in hits]


@pytest.fixture
def built(tmp_path):
    """A closed index of 300 items (texts, metadata) and its vectors."""
    v = clustered(300)
    path = tmp_path / "hostile.lwxindex"
    with Index.open(path, FakeEncoder(), create=True) as ix:
        ix.add_vectors([f"i{k}" for k in range(300)], v, texts=[f"text {k}" for k in range(300)],
                       metadata=[{"k": k % 3, "even": k % 2 == 0} for k in range(300)])
    return path, v


# ---------------------------------------------------------------------------------------- the sidecar (defect 3)
N_ANN = 1500
SIDE_SCRIPT = textwrap.dedent("""
    import json, logging, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s")
    from test_index_hostile import FakeEncoder
    from lwx_edge.index import Index
    from lwx_edge.index import ann as _ann
    builds = []
    real = _ann.Graph.build
    # one thread: the same graph as the intact sidecar's, built the same way
    _ann.Graph.build = classmethod(lambda cls, *a, **kw: builds.append(1) or real(*a, threads=1))
    queries = np.load({queries!r})
    with Index.open({path!r}, FakeEncoder()) as ix:
        hits = ix.search(queries, top_k=10, approximate=True)
        for q in queries[:20]:  # one at a time too: many walks through the graph
            ix.search(q, top_k=5, approximate=True)
    print(json.dumps({{"ids": [[h.id for h in x] for x in hits], "builds": len(builds)}}))
""")


@pytest.fixture(scope="module")
def ann_index(tmp_path_factory):
    """A closed index with its saved sidecar (a graph built on one thread: one graph for these items), the
    sidecar's bytes, queries and the approximate search's top 10 with the intact sidecar."""
    pytest.importorskip("usearch")
    root = tmp_path_factory.mktemp("ann")
    path = root / "ann.lwxindex"
    v = clustered(N_ANN)
    queries = clustered(40, seed=1)
    np.save(root / "queries.npy", queries)
    real = _ann.Graph.build
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_ann.Graph, "build", classmethod(lambda cls, *a, **kw: real(*a, threads=1)))
        with Index.open(path, FakeEncoder(), create=True) as ix:
            ix.add_vectors([f"i{k}" for k in range(N_ANN)], v)
            ix.search(queries[0], approximate=True)  # built and saved
    with Index.open(path, FakeEncoder()) as ix:
        approx = ids_of(ix.search(queries, top_k=10, approximate=True))
        exact = ids_of(ix.search(queries, top_k=10, approximate=False))
    assert sum(a[0] == e[0] for a, e in zip(approx, exact)) >= 38  # a working graph
    return path, _ann.sidecar_path(path).read_bytes(), root / "queries.npy", approx


def _parts(data: bytes) -> tuple[int, dict, bytes]:
    """(where the body starts, the header, the body) of a sidecar."""
    n = struct.unpack_from("<I", data, len(_ann.MAGIC))[0]
    start = len(_ann.MAGIC) + 4 + n
    return start, json.loads(data[start - n:start]), data[start:]


def _forge(data: bytes, body: bytes) -> bytes:
    """The sidecar ``data`` with ``body`` and a header that vouches for it (length and checksum)."""
    _, head, _ = _parts(data)
    head.update(bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
    blob = json.dumps(head, sort_keys=True).encode()
    return _ann.MAGIC + struct.pack("<I", len(blob)) + blob + body


def _layout(body: bytes) -> dict:
    """Offsets in a usearch body: the graph header, the level table, the first node; the node count."""
    rows, cols = struct.unpack_from("<II", body, 0)
    g = 8 + rows * cols + 64  # after the vectors and usearch's 64-byte header
    size = struct.unpack_from("<Q", body, g)[0]
    return {"graph": g, "levels": g + 40, "nodes": g + 40 + 2 * size, "size": size}


def _wild_neighbours(body: bytes) -> bytes:
    """``body`` with the first base-level neighbour of every node pointing far beyond the graph."""
    at = _layout(body)
    g = struct.unpack_from("<5Q", body, at["graph"])
    levels = np.frombuffer(body, "<i2", at["size"], at["levels"]).astype(np.int64)
    starts = at["nodes"] + np.concatenate([[0], np.cumsum(10 + 4 + 4 * g[2] + levels * (4 + 4 * g[1]))[:-1]])
    out = bytearray(body)
    for s in starts.tolist():
        out[s + 14:s + 18] = struct.pack("<I", 0x7FFFFFF0)
    return bytes(out)


def _overwrite(b: bytes, at: int, new: bytes) -> bytes:
    return b[:at] + new + b[at + len(new):]


def _damaged(data: bytes, damage: str) -> bytes:
    start, _, body = _parts(data)
    at = _layout(body)
    junk = random.Random(damage).randbytes(64)
    if damage == "body-vectors":  # the red team's case: the header intact, 64 bytes of the body overwritten
        return _overwrite(data, start + 1000, junk)
    if damage == "body-neighbours":
        return _overwrite(data, start + at["nodes"] + 4000, junk)
    if damage == "forged-neighbours":  # a body whose checksum is right and whose neighbour ids are wild
        return _forge(data, _wild_neighbours(body))
    if damage == "forged-entry":  # the graph's entry node beyond its nodes
        return _forge(data, _overwrite(body, at["graph"] + 32, struct.pack("<Q", 1 << 31)))
    if damage == "forged-levels":  # every node claims the top level: offsets beyond the body
        return _forge(data, _overwrite(body, at["levels"], b"\x05\x00" * 32))
    if damage == "forged-size":  # a graph header claiming more nodes than there are
        return _forge(data, _overwrite(body, at["graph"], struct.pack("<Q", 1 << 40)))
    raise AssertionError(damage)


@pytest.mark.parametrize("damage", ["body-vectors", "body-neighbours", "forged-neighbours", "forged-entry",
                                    "forged-levels", "forged-size"])
def test_a_damaged_sidecar_never_crashes_and_is_rebuilt(ann_index, tmp_path, damage):
    src, good, queries, approx = ann_index
    path = tmp_path / "ann.lwxindex"
    path.write_bytes(src.read_bytes())
    side = _ann.sidecar_path(path)
    side.write_bytes(_damaged(good, damage))
    r = subprocess.run([sys.executable, "-c", SIDE_SCRIPT.format(tests=str(Path(__file__).parent), path=str(path),
                                                                 queries=str(queries))],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"returncode {r.returncode} (a negative one is a signal): {r.stderr[-3000:]}"
    out = json.loads(r.stdout)
    assert out["builds"] == 1  # the damaged graph was not used: a new one was built ...
    assert out["ids"] == approx  # ... finds what the intact sidecar finds ...
    assert re.search(rf"WARNING {re.escape(str(side))}: the approximate-search sidecar is damaged", r.stderr)
    assert side.read_bytes() == good  # ... and was saved in place of the damaged one


def test_the_body_check_refuses_every_forged_layout(ann_index):
    """check_body in-process (it reads the body with numpy only; usearch never sees a refused one)."""
    _, good, _, _ = ann_index
    _, _, body = _parts(good)
    rowids = np.arange(1, N_ANN + 1)
    assert _ann.check_body(body, DIM, N_ANN, rowids) is None
    at = _layout(body)
    node0 = at["nodes"]
    forged = {
        "wild neighbour": _overwrite(body, node0 + 14, struct.pack("<I", N_ANN)),  # slot == node count
        "long list": _overwrite(body, node0 + 10, struct.pack("<I", 33)),  # more neighbours than room
        "level table": _overwrite(body, at["levels"], struct.pack("<h", -1)),
        "node level": _overwrite(body, node0 + 8, struct.pack("<h", 1)),
        "entry": _overwrite(body, at["graph"] + 32, struct.pack("<Q", N_ANN)),
        "connectivity": _overwrite(body, at["graph"] + 8, struct.pack("<Q", 17)),
        "key": _overwrite(body, node0, struct.pack("<Q", 10**6)),
        "usearch version": _overwrite(body, at["graph"] - 64 + 7, b"\x09\x00"),
        "truncated": body[:-1],
        "longer": body + b"\x00",
        "rows": _overwrite(body, 0, struct.pack("<I", 10**6)),
    }
    for what, b in forged.items():
        assert _ann.check_body(b, DIM, N_ANN, rowids), what
    assert _ann.check_body(body, DIM, N_ANN, rowids + 1)  # another set of rowids
    assert _ann.check_body(body, DIM, N_ANN - 1)  # another item count


# ---------------------------------------------------------------------------------------- read-only (defect 6)
def _listing(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _check_read_only(ix: Index, path: Path, v: np.ndarray, expected) -> None:
    assert ix.read_only and ix.info()["read_only"] and ix.info()["items"] == len(ix) == 300
    assert ix.get("i7") == {"id": "i7", "text": "text 7", "metadata": {"k": 1, "even": False}}
    assert "i7" in ix
    assert ids_of(ix.search(v[:5], top_k=5)) == expected[0]
    assert ids_of(ix.search(v[:5], top_k=5, where={"k": 2})) == expected[1]
    if _ann.available():  # a graph may be built, in memory only: no sidecar beside a read-only index
        approx = ids_of(ix.search(v[:5], top_k=5, approximate=True))  # HNSW: near, not always exact
        for got, want in zip(approx, expected[0]):
            assert got[0] == want[0] and len(set(got) & set(want)) >= 4, (got, want)
    for write in (lambda: ix.add_vectors(["new"], v[:1]), lambda: ix.add_vectors(["i1"], v[:1], replace=True),
                  lambda: ix.delete(["i1"])):
        with pytest.raises(IndexFileError, match=names(path) + r": the index is read-only"):
            write()
    assert len(ix) == 300


def _expected(path, v):
    with Index.open(path, FakeEncoder()) as ix:
        return ids_of(ix.search(v[:5], top_k=5)), ids_of(ix.search(v[:5], top_k=5, where={"k": 2}))


@pytest.mark.parametrize("how", ["read_only=True", "mode=ro URI", "immutable URI"])
def test_a_read_only_index_opens_answers_and_refuses_writes(built, how):
    path, v = built
    expected = _expected(path, v)
    before = _listing(path.parent)
    if how == "read_only=True":
        ix = Index.open(path, FakeEncoder(), read_only=True)
    else:
        ix = Index.open(f"{path.as_uri()}?{'mode=ro' if how == 'mode=ro URI' else 'immutable=1'}", FakeEncoder())
    with ix:
        _check_read_only(ix, path, v, expected)
    assert _listing(path.parent) == before  # no WAL, no shared memory, no sidecar; the file untouched


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes to read-only files anyway")
def test_a_read_only_file_and_directory_open_read_only(built):
    path, v = built
    expected = _expected(path, v)
    before = _listing(path.parent)
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        with Index.open(path, FakeEncoder()) as ix:
            _check_read_only(ix, path, v, expected)
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)
    assert _listing(path.parent) == before


def test_a_file_this_process_cannot_write_opens_read_only(built, monkeypatch):
    """What chmod does for a user who is not root (the test above), as root: os.access says no."""
    path, v = built
    expected = _expected(path, v)
    before = _listing(path.parent)
    real = os.access
    monkeypatch.setattr(index_mod.os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real(p, mode))
    with Index.open(path, FakeEncoder()) as ix:
        assert "not writable" in ix._read_only
        _check_read_only(ix, path, v, expected)
    assert _listing(path.parent) == before


def test_a_read_only_reader_sees_a_live_writers_commits(built):
    path, v = built
    with Index.open(path, FakeEncoder()) as writer:
        writer.add_vectors(["late"], -v[:1])  # committed to the WAL, not yet folded into the file
        with Index.open(path, FakeEncoder(), read_only=True) as reader:
            assert reader.search(-v[0], top_k=1)[0].id == "late"
            writer.add_vectors(["later"], -v[1:2])
            assert reader.search(-v[1], top_k=1)[0].id == "later" and len(reader) == 302
    with pytest.raises(IndexFileError, match=names(path.with_name("none.lwxindex")) + ".*read-only"):
        Index.open(path.with_name("none.lwxindex"), FakeEncoder(), create=True, read_only=True)


# ---------------------------------------------------------------------------------------- errors (defect 7)
def test_a_full_disk_is_an_index_error_and_the_index_stays_whole(built):
    path, v = built
    extra = clustered(400, seed=4)
    with Index.open(path, FakeEncoder()) as ix:
        before = ids_of(ix.search(extra[:5], top_k=5))
        pages = ix.conn.execute("PRAGMA page_count").fetchone()[0]
        ix.conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL: no page to grow into
        with pytest.raises(IndexFileError, match=names(path) + r": the disk is full.*rolled back"):
            ix.add_vectors([f"x{k}" for k in range(400)], extra, batch_size=100)
        with pytest.raises(IndexFileError, match=names(path) + r": the disk is full"):
            ix.add_vectors(["y"], extra[:1], texts=["x" * 9000])  # one item, with a text of three pages
        assert len(ix) == 300 and ids_of(ix.search(extra[:5], top_k=5)) == before
        ix.conn.execute("PRAGMA max_page_count = 1073741823")
        assert ix.add_vectors([f"x{k}" for k in range(400)], extra, batch_size=100) == 400
        assert ix.search(extra[7], top_k=1)[0].id == "x7"
    with Index.open(path, FakeEncoder()) as again:  # the file is whole
        assert again.info()["items"] == 700


def test_a_locked_index_is_an_index_error(built):
    path, v = built
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        with Index.open(path, FakeEncoder()) as ix:
            ix.conn.execute("PRAGMA busy_timeout = 50")
            with pytest.raises(IndexFileError, match=names(path) + r": the index is locked"):
                ix.add_vectors(["new"], v[:1])
            other.execute("ROLLBACK")
            assert ix.add_vectors(["new"], v[:1]) == 1
    finally:
        other.close()


def _root_page(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'items'").fetchone()[0]
    finally:
        con.close()


def test_damaged_pages_are_reported_by_info_and_search(built):
    path, v = built
    data = bytearray(path.read_bytes())
    data[(_root_page(path) - 1) * 4096] = 0x42  # the items table's root page: not a b-tree page any more
    path.write_bytes(bytes(data))
    with Index.open(path, FakeEncoder()) as ix:  # opening reads the meta table only
        with pytest.raises(IndexFileError, match=names(path) + r": the index file is damaged \(quick_check: "):
            ix.info()
        with pytest.raises(IndexFileError, match=names(path) + r": the index file is damaged"):
            ix.search(v[0], top_k=3)
        with pytest.raises(IndexFileError, match=names(path) + r": the index file is damaged"):
            ix.get("i3")
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "index", "info", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "error:" in r.stderr and "damaged" in r.stderr and str(path) in r.stderr


def test_bit_flips_anywhere_give_index_errors_only(built):
    path, v = built
    good = path.read_bytes()
    rng = random.Random(0)
    failures = 0
    for trial in range(30):
        data = bytearray(good)
        page = rng.randrange(1, len(data) // 4096)
        for _ in range(rng.choice([1, 8, 64])):
            data[page * 4096 + rng.randrange(4096)] ^= 1 << rng.randrange(8)
        copy = path.with_name(f"flip{trial}.lwxindex")
        copy.write_bytes(bytes(data))
        try:
            with Index.open(copy, FakeEncoder()) as ix:
                for step in (ix.info, lambda: ix.search(v[:3], top_k=5), lambda: ix.search(v[0], where={"k": 1}),
                             lambda: ix.get("i5"), lambda: len(ix)):
                    try:
                        step()
                    except LwxError as e:
                        assert str(copy) in str(e)
                        failures += 1
        except LwxError as e:
            assert str(copy) in str(e)
            failures += 1
    assert failures  # some flips were found (the rest hit bytes no check can tell from data)


ROW_EDITS = {  # hand edits of the items table: (SQL, what the error says)
    "scale='abc'": ("UPDATE items SET scale = 'abc' WHERE rowid = 8", r"rowid 8 has the scale 'abc'"),
    "scale=inf": ("UPDATE items SET scale = 9e999 WHERE rowid = 8", r"rowid 8 has the scale inf"),
    "scale=-1": ("UPDATE items SET scale = -1 WHERE rowid = 8", r"rowid 8 has the scale -1.0"),
    "BLOB id": ("UPDATE items SET id = x'6937' WHERE rowid = 8", r"rowid 8 has a bytes id"),
    "REAL id": ("UPDATE items SET id = 7.5 WHERE rowid = 8", r"rowid 8 has a float id"),
    "BLOB text": ("UPDATE items SET text = x'ff00' WHERE rowid = 8", r"rowid 8 has a bytes text"),
    "vector=5": ("UPDATE items SET vector = 5 WHERE rowid = 8", r"rowid 8 has a vector of type int"),
    "short vector": ("UPDATE items SET vector = x'0102' WHERE rowid = 8", r"rowid 8 has a 2-byte vector"),
}


def _edit(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    try:
        con.execute(sql)
        con.commit()
    finally:
        con.close()


@pytest.mark.parametrize("edit", list(ROW_EDITS))
def test_hand_edited_rows_are_index_errors(built, edit):
    path, v = built
    sql, says = ROW_EDITS[edit]
    _edit(path, sql)
    with Index.open(path, FakeEncoder()) as ix:
        with pytest.raises(IndexFileError, match=names(path) + r": the index file is damaged \(items of rowid 8 "):
            ix.info()
        with pytest.raises(IndexFileError, match=names(path) + ": item " + says + ".*damaged"):
            ix.search(v[7], top_k=3)  # item i7 (rowid 8) is its own best hit: never ranked at Infinity
        if "id" in edit or "text" in edit:
            with pytest.raises(IndexFileError, match=names(path) + ": item " + says):
                ix.search(v[7], top_k=3, where={"k": 1})


@pytest.mark.parametrize("key,value,says", [
    ("encoder", "[1]", "encoder and text_contract must be JSON objects"),
    ("text_contract", "3", "encoder and text_contract must be JSON objects"),
    ("encoder", "{", "JSONDecodeError"),
    ("dim", "0", "dim is '0'"),
    ("dim", "abc", "dim is 'abc'"),
    ("dim", "100000000", "dim is '100000000'"),
    ("storage", "float32", "storage is 'float32'"),
])
def test_a_hand_edited_meta_table_is_an_index_error(built, key, value, says):
    path, _ = built
    _edit(path, f"UPDATE meta SET value = '{value}' WHERE key = '{key}'")
    for encoder in (None, FakeEncoder()):
        with pytest.raises(IndexFileError, match=names(path) + r": the index's meta table is damaged \(" +
                           re.escape(says)):
            Index.open(path, encoder)


@pytest.mark.parametrize("stored", ['{"k": 1, "x": NaN}', "{", "[1]"])
def test_one_damaged_metadata_value_does_not_poison_where_searches(built, stored):
    """An older lwx-edge stored NaN as JSON's non-standard NaN; SQLite's json_extract refused the row and with
    it every where= search. Such a row now matches no where= search; it reads back as Python's json reads it
    (NaN included), or without metadata where that is not a JSON object."""
    path, v = built
    with Index.open(path, FakeEncoder()) as ix:
        expected = [h.id for h in ix.search(v[0], top_k=300, where={"k": 1}) if h.id != "i1"]
    _edit(path, f"UPDATE items SET metadata = '{stored}' WHERE id = 'i1'")
    with Index.open(path, FakeEncoder()) as ix:
        assert [h.id for h in ix.search(v[0], top_k=300, where={"k": 1})] == expected
        odd = [h.id for h in ix.search(v[0], top_k=300, where={"even": False})]
        assert len(odd) == 149 and "i1" not in odd
        got = ix.get("i1")
        assert got["text"] == "text 1" and [h.id for h in ix.search(v[1], top_k=1)] == ["i1"]
        if "NaN" in stored:
            assert got["metadata"]["k"] == 1 and np.isnan(got["metadata"]["x"])
        else:
            assert got["metadata"] is None


def test_nan_in_metadata_is_refused_at_add_and_numpy_values_round_trip(built):
    path, v = built
    with Index.open(path, FakeEncoder()) as ix:
        for bad, says in (({"x": float("nan")}, r"metadata 1 holds NaN or an infinite number at 'x'"),
                          ({"x": [1.0, float("inf")]}, r"metadata 1 holds NaN or an infinite number"),
                          ({"x": np.float32("nan")}, r"metadata 1 holds NaN"),
                          ({"x": {1, 2}}, r"metadata 1 cannot be stored as JSON \(a set value"),
                          ({"x": b"raw"}, r"metadata 1 cannot be stored as JSON \(a bytes value"),
                          ({1: "a", "b": 2}, r"metadata 1 cannot be stored as JSON")):
            with pytest.raises(InputError, match=says):
                ix.add_vectors(["ok", "bad"], v[:2], metadata=[{"k": 1}, bad])
        assert len(ix) == 300 and "ok" not in ix  # refused before anything was written
        ix.add_vectors(["np"], v[:1], metadata=[{"k": np.int64(9), "w": np.float32(0.5), "b": np.bool_(True)}])
        assert ix.get("np")["metadata"] == {"k": 9, "w": 0.5, "b": True}
        assert [h.id for h in ix.search(v[0], top_k=5, where={"k": 9})] == ["np"]
        assert [h.id for h in ix.search(v[0], top_k=5, where={"k": np.int64(9), "b": True})] == ["np"]


BAD_ARGUMENTS = {  # call on (index, vectors) -> the message, which names the argument
    "ids=None": (lambda ix, v: ix.add_vectors(None, v[:1]), r"ids must be a list, got NoneType"),
    "ids=[1.5]": (lambda ix, v: ix.add_vectors([1.5], v[:1]), r"ids must be strings or integers, got float"),
    "ids=[b'x']": (lambda ix, v: ix.add_vectors([b"x"], v[:1]), r"ids must be strings or integers, got bytes"),
    "ids=[2**64]": (lambda ix, v: ix.add_vectors([2**64], v[:1]), r"ids must fit in 64 bits"),
    "ids=[surrogate]": (lambda ix, v: ix.add_vectors(["\ud800"], v[:1]), r"ids is not valid Unicode"),
    "vectors=strings": (lambda ix, v: ix.add_vectors(["a"], [["x"] * DIM]), r"vectors must be an array of numbers"),
    "vectors=objects": (lambda ix, v: ix.add_vectors(["a"], np.array([[object()] * DIM])),
                        r"vectors must be an array of numbers, got an array of object"),
    "vectors=complex": (lambda ix, v: ix.add_vectors(["a"], v[:1] + 1j), r"vectors must be real numbers"),
    "vectors=None": (lambda ix, v: ix.add_vectors(["a"], None), r"vectors must be an array of numbers"),
    "vectors [d]": (lambda ix, v: ix.add_vectors(["a"], v[0]), rf"vectors must have shape \[n, {DIM}\]"),
    "vectors NaN": (lambda ix, v: ix.add_vectors(["a"], v[:1] * np.nan), r"vectors contain NaN"),
    "texts=5": (lambda ix, v: ix.add_vectors(["a"], v[:1], texts=5), r"texts must be a list, got int"),
    "texts=[5]": (lambda ix, v: ix.add_vectors(["a"], v[:1], texts=[5]), r"text 0 must be a string, got int"),
    "metadata=5": (lambda ix, v: ix.add_vectors(["a"], v[:1], metadata=5), r"metadata must be a list, got int"),
    "batch_size=0": (lambda ix, v: ix.add_vectors(["a"], v[:1], batch_size=0), r"batch_size must be a positive"),
    "k='3'": (lambda ix, v: ix.search(v[0], top_k="3"), r"top_k must be a positive integer, got '3'"),
    "k=-1": (lambda ix, v: ix.search(v[0], top_k=-1), r"top_k must be a positive integer, got -1"),
    "k=2.0": (lambda ix, v: ix.search(v[0], top_k=2.0), r"top_k must be a positive integer, got 2.0"),
    "where=[]": (lambda ix, v: ix.search(v[0], where=[("k", 1)]), r"where must be a dict .*got list"),
    "where='k=1'": (lambda ix, v: ix.search(v[0], where="k=1"), r"where must be a dict .*got str"),
    "where value": (lambda ix, v: ix.search(v[0], where={"k": {1}}), r"where\['k'\]: only plain values"),
    "where key": (lambda ix, v: ix.search(v[0], where={"a'b": 1}), r"where keys must be metadata names"),
    "approximate": (lambda ix, v: ix.search(v[0], approximate="yes"), r"approximate must be True, False or None"),
    "query=None": (lambda ix, v: ix.search(None), r"query must be a text, a list of texts or an array"),
    "query=5": (lambda ix, v: ix.search(5), r"query must be a text, a list of texts or an array"),
    "query [3]": (lambda ix, v: ix.search(v[0][:3]), rf"query vectors must have shape \[{DIM}\] or \[n, {DIM}\]"),
    "query [1, 2, d]": (lambda ix, v: ix.search(v[None, :2]), r"query vectors must have shape"),
    "query strings": (lambda ix, v: ix.search(np.array(["a"] * DIM)), r"query vectors must be an array of numbers"),
    "query NaN": (lambda ix, v: ix.search(v[0] * np.nan), r"query vectors contain NaN"),
    "get([1])": (lambda ix, v: ix.get([1]), r"item_id must be a string or an integer, got list"),
    "get(None)": (lambda ix, v: ix.get(None), r"item_id must be a string or an integer, got NoneType"),
    "delete(None)": (lambda ix, v: ix.delete(None), r"ids must be a list, got NoneType"),
    "delete([1.5])": (lambda ix, v: ix.delete([1.5]), r"ids must be strings or integers, got float"),
    "open(None)": (lambda ix, v: Index.open(None), r"an index path must be a file name, got None"),
    "open(encoder=str)": (lambda ix, v: Index.open(ix.path, "enc"), r"encoder must be an lwx_edge Encoder"),
    "open(approximate=1)": (lambda ix, v: Index.open(ix.path, approximate=1), r"approximate must be True, False"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_wrong_argument_types_are_input_errors(built, case):
    path, v = built
    call, says = BAD_ARGUMENTS[case]
    with Index.open(path, FakeEncoder()) as ix:
        with pytest.raises(InputError, match=says):
            call(ix, v)
        assert len(ix) == 300


def test_numpy_ids_and_k_are_taken_and_non_ids_are_in_no_index(built):
    path, v = built
    with Index.open(path, FakeEncoder()) as ix:
        ix.add_vectors([np.int64(7)], -v[:1])
        assert ix.get(np.int64(7))["id"] == 7 and 7 in ix and np.int32(7) in ix
        assert [h.id for h in ix.search(-v[0], top_k=np.int64(1))] == [7]
        assert [h.id for h in ix.search(list(-v[0]), top_k=1)] == [7]  # a list of numbers is one vector
        assert [1] not in ix and None not in ix and 2**70 not in ix and b"i1" not in ix
    with pytest.raises(IndexFileError, match=names(path) + ": the index is closed"):
        ix.search(v[0])
