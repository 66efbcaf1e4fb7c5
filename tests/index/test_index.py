"""lwx_edge.Index: a SQLite file of int8 vectors, searched exactly; transactional, refuses what it must."""
from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import WORDS, make_tiny_bundle

from lwx_edge.errors import InputError
from lwx_edge.index import Index, IndexFileError, dequantize, quantize

TEXTS = [f"the {a} {b} and the {c}" for a, b, c in zip(sorted(WORDS), sorted(WORDS)[7:], sorted(WORDS)[13:])]


@pytest.fixture(scope="module")
def enc(tiny_bundle):
    from lwx_edge import Encoder

    return Encoder.load(tiny_bundle, backend="torch")


@pytest.fixture
def index(enc, tmp_path):
    ids = [f"n{i}" for i in range(len(TEXTS))]
    meta = [{"lang": "en", "even": i % 2 == 0} for i in range(len(TEXTS))]
    with Index.open(tmp_path / "notes.lwxindex", enc, create=True) as ix:
        ix.add(ids, TEXTS, meta, batch_size=4)
        yield ix


def test_int8_storage_keeps_the_vectors():
    v = np.random.default_rng(0).standard_normal((200, 512)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q, s = quantize(v)
    assert q.dtype == np.int8 and s.shape == (200,) and np.abs(q).max() == 127
    cos = (dequantize(q, s) * v).sum(1) / np.linalg.norm(dequantize(q, s), axis=1)
    assert cos.min() > 0.999


def test_add_search_get_and_metadata_filter(index, enc):
    assert len(index) == len(TEXTS) == 17 and "n3" in index and "x" not in index
    hits = index.search(TEXTS[5], top_k=3)
    assert [h.id for h in hits][0] == "n5" and hits[0].score == pytest.approx(1.0, abs=5e-3)
    assert hits[0].text == TEXTS[5] and hits[0].metadata == {"lang": "en", "even": False}
    assert hits[0].score >= hits[1].score >= hits[2].score
    exact = enc.embed(TEXTS) @ enc.embed(TEXTS[5])  # fp32 scores: int8 storage keeps the order here
    assert [h.id for h in hits] == [f"n{i}" for i in np.argsort(-exact)[:3]]
    assert [h.score for h in hits] == pytest.approx(np.sort(exact)[::-1][:3].tolist(), abs=1e-2)
    many = index.search([TEXTS[0], TEXTS[1]], top_k=2)
    assert [m[0].id for m in many] == ["n0", "n1"]
    evens = index.search(TEXTS[5], top_k=20, where={"even": True})
    assert len(evens) == 9 and all(int(h.id[1:]) % 2 == 0 for h in evens)
    assert index.search(TEXTS[5], top_k=5, where={"lang": "fr"}) == []
    assert index.get("n2") == {"id": "n2", "text": TEXTS[2], "metadata": {"lang": "en", "even": True}}
    info = index.info()
    assert info["items"] == 17 and info["dim"] == 32 and info["storage"] == "int8"
    assert info["text_contract"]["max_len"] == 48


def test_upsert_delete_and_refusals_change_nothing(index):
    with pytest.raises(InputError, match="already in the index: 'n1'.*upsert"):
        index.add(["new", "n1"], ["a cat", "a dog"])
    with pytest.raises(InputError, match="repeat within this call: 'z'"):
        index.add(["z", "z"], ["a cat", "a dog"])
    with pytest.raises(InputError, match="text 1 is empty"):
        index.add(["p", "q"], ["a cat", "  "])
    with pytest.raises(InputError, match="2 ids and 1 texts"):
        index.add(["p", "q"], ["a cat"])
    with pytest.raises(InputError, match="no item with id 'nope'; nothing was deleted"):
        index.delete(["n0", "nope"])
    assert len(index) == 17 and "new" not in index and "n0" in index
    index.upsert(["n1", "extra"], ["the big red car", "the small green tree"], [None, {"lang": "de"}])
    assert len(index) == 18 and index.get("n1")["text"] == "the big red car"
    assert index.search("the big red car", top_k=1)[0].id == "n1"
    assert index.delete(["n1", "n2"]) == 2
    assert len(index) == 16 and all(h.id not in ("n1", "n2") for h in index.search(TEXTS[2], top_k=16))


def test_changes_by_another_connection_are_seen_and_the_file_stands_alone(index, enc, tmp_path):
    other = Index.open(index.path, enc)
    assert len(other.search(TEXTS[0], top_k=30)) == 17
    index.add([42], ["the sun at night"])  # integer ids stay integers
    assert other.search("the sun at night", top_k=1)[0].id == 42
    other.close()
    index.close()
    wal = index.path.with_name(index.path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    copy = tmp_path / "copy.lwxindex"
    copy.write_bytes(index.path.read_bytes())  # the file alone is the whole index
    with Index.open(copy, enc) as ix:
        assert len(ix) == 18


def test_another_encoder_and_bad_files_are_refused(index, tiny_corpus, tmp_path):
    from lwx_edge import Encoder

    other = Encoder.load(make_tiny_bundle(tiny_corpus, tmp_path / "other", seed=1), backend="torch")
    with pytest.raises(IndexFileError, match="built by another encoder \\(model differs"):
        Index.open(index.path, other)
    with pytest.raises(IndexFileError, match="no such index file"):
        Index.open(tmp_path / "missing.lwxindex", other)
    (tmp_path / "junk").write_bytes(b"not a database at all" * 10)
    with pytest.raises(IndexFileError, match="not an SQLite file"):
        Index.open(tmp_path / "junk", other)
    sqlite3.connect(tmp_path / "plain.db").execute("CREATE TABLE t (x)")
    with pytest.raises(IndexFileError, match="not an lwx-edge index"):
        Index.open(tmp_path / "plain.db", other)
    with pytest.raises(IndexFileError, match="is a directory"):
        Index.open(tmp_path, other)
    with pytest.raises(InputError, match="top_k must be a positive integer"):
        index.search("cat", top_k=0)
    with pytest.raises(InputError, match="where keys"):
        index.search("cat", where={"a'b": 1})


def test_a_kill_during_add_keeps_exactly_the_committed_batches(tiny_bundle, tmp_path):
    path = tmp_path / "killed.lwxindex"
    script = textwrap.dedent(f"""
        import os, signal
        from conftest import WORDS
        from lwx_edge import Encoder
        from lwx_edge.index import Index
        enc = Encoder.load({str(tiny_bundle)!r}, backend="torch")
        calls = [0]
        embed = enc.embed
        def dying_embed(texts, **kw):
            calls[0] += 1
            if calls[0] == 4:  # the 4th batch: three are committed
                os.kill(os.getpid(), signal.SIGKILL)
            return embed(texts, **kw)
        enc.embed = dying_embed
        ix = Index.open({str(path)!r}, enc, create=True)
        ix.add([f"id{{i}}" for i in range(20)], [f"the {{w}} and the {{w}}" for w in sorted(WORDS)[:20]], batch_size=5)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[1])  # tests/: import conftest
    assert r.returncode == -9, r.stderr[-2000:]
    from lwx_edge import Encoder

    with Index.open(path, Encoder.load(tiny_bundle, backend="torch")) as ix:
        assert len(ix) == 15 and all(f"id{i}" in ix for i in range(15)) and "id15" not in ix
        w = sorted(WORDS)[3]
        assert ix.search(f"the {w} and the {w}", top_k=1)[0].id == "id3"


def test_cli_add_search_info_delete(tiny_bundle, tmp_path):
    items = tmp_path / "notes.csv"
    items.write_text("id,text,lang\n" + "".join(f"n{i},{t},en\n" for i, t in enumerate(TEXTS[:6])), encoding="utf-8")
    ix = tmp_path / "notes.lwxindex"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "lwx_edge", "index", *map(str, args)], capture_output=True,
                              text=True, timeout=120)

    r = cli("add", ix, "--input", items, "--model", tiny_bundle, "--backend", "torch")
    assert r.returncode == 0 and "added 6 items, 6 in all" in r.stderr, r.stderr[-2000:]
    r = cli("add", ix, "--input", items, "--model", tiny_bundle, "--backend", "torch")
    assert r.returncode == 2 and "error:" in r.stderr and "already in the index" in r.stderr
    r = cli("search", ix, TEXTS[2], "-k", "2", "--json", "--where", "lang=en", "--model", tiny_bundle,
            "--backend", "torch")
    assert r.returncode == 0, r.stderr[-2000:]
    hit = __import__("json").loads(r.stdout)["hits"][0]
    assert hit["id"] == "n2" and hit["text"] == TEXTS[2] and hit["metadata"] == {"lang": "en"}
    r = cli("info", ix)
    assert r.returncode == 0 and "6 items, 32-d int8 vectors" in r.stdout
    r = cli("delete", ix, "n1", "n9")
    assert r.returncode == 2 and "no item with id 'n9'" in r.stderr
    r = cli("delete", ix, "n1")
    assert r.returncode == 0 and "deleted 1 items, 5 left" in r.stderr
    r = cli("search", tmp_path / "none.lwxindex", "cat")
    assert r.returncode == 2 and "no such index file" in r.stderr


def test_equal_scores_come_in_row_order_across_chunks(enc, tmp_path, monkeypatch):
    import lwx_edge.index.search as index_mod

    monkeypatch.setattr(index_mod, "_CHUNK_ROWS", 3)  # ties split over several chunks
    rng = np.random.default_rng(0)
    v = rng.standard_normal((10, 32)).astype(np.float32)
    v[[1, 4, 7, 8]] = v[0]  # five identical vectors
    with Index.open(tmp_path / "ties.lwxindex", enc, create=True) as ix:
        ix.add_vectors([f"r{i}" for i in range(10)], v)
        assert [h.id for h in ix.search(v[0], top_k=3)] == ["r0", "r1", "r4"]
        assert [h.id for h in ix.search(v[0], top_k=5)] == ["r0", "r1", "r4", "r7", "r8"]
        with pytest.raises(InputError, match=r"shape \[n, 32\]"):
            ix.add_vectors(["x"], np.zeros((1, 5)))


def test_a_read_only_index_answers_text_queries_and_refuses_writes(index, enc, tmp_path):
    """Issue 37: a shipped (read-only) index opens; the writer beside it (its WAL live) is seen."""
    index.add(["late"], ["the sun at night"])  # committed, still in the WAL
    with Index.open(index.path, enc, read_only=True) as ro:
        assert ro.read_only and len(ro) == 18 and ro.search("the sun at night", top_k=1)[0].id == "late"
        assert [h.id for h in ro.search(TEXTS[5], top_k=3)] == [h.id for h in index.search(TEXTS[5], top_k=3)]
        for write in (lambda: ro.add(["x"], ["a cat"]), lambda: ro.upsert(["n1"], ["a cat"]),
                      lambda: ro.delete(["n1"])):
            with pytest.raises(IndexFileError, match=re.escape(str(index.path)) + ": the index is read-only"):
                write()
    index.close()
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "notes.lwxindex").write_bytes(index.path.read_bytes())
    with Index.open(f"{(shipped / 'notes.lwxindex').as_uri()}?mode=ro", enc) as ro:
        assert ro.read_only and ro.search("the sun at night", top_k=1)[0].id == "late"
        assert ro.info()["items"] == 18
    assert sorted(p.name for p in shipped.iterdir()) == ["notes.lwxindex"]  # no WAL, no -shm beside it


def test_add_refuses_nan_metadata_before_embedding_anything(index):
    with pytest.raises(InputError, match="metadata 1 holds NaN or an infinite number at 'score'"):
        index.add(["a", "b"], ["a cat", "a dog"], [{"score": 1.0}, {"score": float("nan")}])
    assert len(index) == 17 and "a" not in index
    assert len(index.search(TEXTS[0], top_k=20, where={"even": True})) == 9  # where= still works


def test_a_creator_that_loses_the_race_opens_the_index_the_winner_made(enc, tmp_path):
    """Two processes that both saw no file create it at once: the second's new file must not replace the first's
    (which may be open with a WAL already: the replacement read as 'database disk image is malformed')."""
    from lwx_edge import Index

    path = tmp_path / "shared.lwxindex"
    with Index.open(path, enc, create=True) as winner:  # created and written, its WAL connection open
        winner.add(["w1"], ["the winner's note"])
        loser = Index._create(path, enc)  # what the other process runs after its own exists() said no
        try:
            assert loser.get("w1")["text"] == "the winner's note"
            loser.add(["l1"], ["the loser's note"])
        finally:
            loser.close()
        assert len(winner) == 2
    with Index.open(path, enc) as index:
        assert sorted(h.id for h in index.search("note", top_k=5)) == ["l1", "w1"]
        assert index.info()["items"] == 2


def test_opening_an_index_keeps_the_locks_other_connections_of_the_process_hold(enc, tmp_path):
    """Index.open must never open() and close() the file itself: closing any descriptor of a file drops every
    POSIX lock the process holds on it, so another process's connection then believed it was the last one,
    checkpointed and deleted the WAL under this process's open connections ('disk I/O error', then a damaged
    index: found by tools/soak.py)."""
    import subprocess
    import sys

    from lwx_edge import Index

    path = tmp_path / "locks.lwxindex"
    with Index.open(path, enc, create=True) as index:
        index.add(["a"], ["a note"])
    holder = Index.open(path, enc)  # an open WAL connection: holds a shared lock on the file
    holder.search("note", top_k=1)
    try:
        Index.open(path, enc).close()  # another open in this process, then a short-lived reader elsewhere
        code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                "c.execute('select count(*) from items').fetchone(); c.close()")
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
        wal = path.with_name(path.name + "-wal")
        assert wal.exists(), "another process deleted the WAL of a connection this process holds open"
        assert holder.search("note", top_k=1)[0].id == "a"
    finally:
        holder.close()
