"""The SDK (issue #5): Encoder backends, batching, truncation, threads, errors, similarity and search.

A tiny bundle with random weights and a real SentencePiece model is exported once (ONNX and ExecuTorch,
fp32 and int8); every backend then embeds the same texts. No mocks.
"""
import hashlib
import json
import random
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from lwx_edge import Encoder
from lwx_edge.bundle import write_manifest
from lwx_edge.encoder import EmptyTextWarning, TruncationWarning
from lwx_edge.errors import BundleError, InputError
from lwx_edge.search import search, similarity

torch = pytest.importorskip("torch")
export_mod = pytest.importorskip("lwx_edge.export")
from lwx_edge.export import executorch as et_mod  # noqa: E402

HAS_ET, ET_WHY = et_mod.available()
needs_et = pytest.mark.skipif(not HAS_ET, reason=f"ExecuTorch unavailable: {ET_WHY}")
MAX_LEN = 24
VOCAB = {
    "en": "the cat dog house file network server window music book city water is big small new old and with",
    "fr": "le chat chien maison fichier réseau serveur fenêtre musique livre ville eau est grand petit et avec",
    "de": "der katze hund haus datei netz server fenster musik buch stadt wasser ist groß klein neu und mit",
    "es": "el gato perro casa archivo red servidor ventana música libro ciudad agua es grande pequeño y con",
    "it": "il gatto cane casa file rete server finestra musica libro città acqua è grande piccolo e con",
}


def sentences(n: int, seed: int = 0, lo: int = 2, hi: int = 12) -> list[str]:
    rng = random.Random(seed)
    langs = list(VOCAB)
    return [" ".join(rng.choice(VOCAB[langs[i % 5]].split()) for _ in range(rng.randint(lo, hi))).capitalize()
            + "." for i in range(n)]


def make_bundle(path: Path, tok: Path, seed: int) -> Path:
    from lwx_edge.training.checkpoint import save_bundle
    from lwx_edge.training.model import ModelConfig, SentenceEncoder

    torch.manual_seed(seed)
    enc = SentenceEncoder(ModelConfig(vocab_size=200, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN)).eval()
    return save_bundle(enc, tok, path, {"note": "test_sdk tiny bundle"})


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    from lwx_edge.tokenizer import train_tokenizer

    return train_tokenizer(sentences(500, seed=1), tmp_path_factory.mktemp("sdk_tok") / "tok.model",
                           vocab_size=200, progress=False)


@pytest.fixture(scope="module")
def bundle(tok, tmp_path_factory):
    """A tiny bundle exported fp32 and int8 to every available format."""
    from lwx_edge.export import export_bundle

    d = make_bundle(tmp_path_factory.mktemp("sdk") / "bundle", tok, seed=0)
    formats = ("pte", "onnx") if HAS_ET else ("onnx",)
    export_bundle(d, formats=formats, int8=False, max_batch=8)
    export_bundle(d, formats=formats, int8=True, max_batch=8)
    return d


@pytest.fixture(scope="module")
def texts():
    return sentences(40, seed=7)


def rehash(d: Path) -> None:
    """Rewrite the manifest for the files now in ``d`` (as if a tool had vouched for them)."""
    m = json.loads((d / "manifest.json").read_text())
    write_manifest(d, {k: v for k, v in m.items()
                       if k not in ("format", "format_version", "lwx_edge_version", "created", "files")})


def cos(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ------------------------------------------------------------------------------------------ backends

def test_auto_picks_onnx_int8_and_shapes(bundle, texts):
    enc = Encoder.load(bundle)
    assert (enc.backend_name, enc.artifact, enc.precision) == ("onnx", "model.int8.onnx", "int8")
    v = enc.embed(texts)
    assert v.shape == (40, 64) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    raw = enc.embed(texts, normalize=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1, atol=1e-3)


@pytest.mark.parametrize("backend, precision, floor", [
    ("onnx", "fp32", 0.99999), ("executorch", "fp32", 0.99999), ("onnx", "int8", 0.999), ("executorch", "int8", 0.999)])
def test_backends_agree_with_torch(bundle, texts, backend, precision, floor):
    if backend == "executorch" and not HAS_ET:
        pytest.skip(ET_WHY)
    ref = Encoder.load(bundle, backend="torch").embed(texts, normalize=False)
    enc = Encoder.load(bundle, backend=backend, precision=precision)
    assert enc.precision == precision
    v = enc.embed(texts, normalize=False)
    assert cos(v, ref).min() >= floor
    if precision == "fp32":
        assert np.abs(v - ref).max() < 1e-4


@pytest.mark.parametrize("backend, precision", [
    ("torch", "fp32"), ("onnx", "fp32"), ("onnx", "int8"),
    pytest.param("executorch", "fp32", marks=needs_et), pytest.param("executorch", "int8", marks=needs_et)])
def test_a_text_gets_the_same_vector_alone_or_in_any_batch(bundle, texts, backend, precision):
    """Same text, same vector (1 - cos <= 1e-6): alone, in sorted batches, backwards, shuffled, beside long texts;
    int8 included (activations are quantized per token, never per batch)."""
    enc = Encoder.load(bundle, backend=backend, precision=precision)
    together = enc.embed(texts, batch_size=16)  # sorted by length, padded, chunked (pte max batch 8)
    alone = np.concatenate([enc.embed([t]) for t in texts])
    backwards = enc.embed(texts[::-1], batch_size=7)[::-1]
    order = np.random.default_rng(0).permutation(len(texts))
    shuffled = np.empty_like(together)
    shuffled[order] = enc.embed([texts[i] for i in order], batch_size=5)
    long = max(texts, key=len)  # each batch padded to the longest text
    beside_long = np.concatenate([enc.embed([t, long])[:1] for t in texts[:10]])
    for other in (together, backwards, shuffled, beside_long):
        assert 1 - cos(alone[:len(other)], other).min() <= 1e-6
    if precision == "fp32":
        assert np.abs(together - alone).max() < 1e-5


def test_batches_are_sorted_and_padded_to_their_own_length(bundle, texts):
    """embed() sorts texts by length and pads each batch only to its own longest text."""
    enc = Encoder.load(bundle, backend="onnx", precision="fp32")
    shapes, run = [], enc.backend.run

    def recording_run(ids, mask):
        shapes.append(ids.shape)
        assert mask[:, -1].any()  # no all-padding column
        return run(ids, mask)

    enc.backend.run = recording_run
    enc.backend.call_overhead = float("inf")  # one call per batch_size texts (no planned splits)
    ref = enc.embed(texts, batch_size=40)
    got = enc.embed(texts, batch_size=8)
    assert shapes[0][0] == 40 and [s[0] for s in shapes[1:]] == [8] * 5
    assert [s[1] for s in shapes[1:]] == sorted(s[1] for s in shapes[1:]) and shapes[1][1] < shapes[-1][1]
    assert np.abs(got - ref).max() < 1e-5
    shapes.clear()
    enc.backend.call_overhead = 0.0  # every length its own call: no padding at all
    planned = enc.embed(texts, batch_size=40)
    assert np.abs(planned - ref).max() < 1e-5
    assert sum(s[0] for s in shapes) == 40 and len({s[1] for s in shapes}) == len(shapes)


@needs_et
def test_executorch_chunks_big_batches_by_length(bundle, texts):
    """A call with more rows than the .pte takes runs sorted chunks cut to their own length, in input order."""
    from lwx_edge.tokenizer import Tokenizer

    enc = Encoder.load(bundle, backend="executorch", precision="fp32")
    ids, mask = Tokenizer.pad(enc.tokenizer.encode(texts[:20]).ids)
    ids, mask = np.pad(ids, ((0, 0), (0, 3))), np.pad(mask, ((0, 0), (0, 3)))  # extra all-padding columns
    shapes, execute = [], enc.backend._execute
    enc.backend._execute = lambda x, m: shapes.append(x.shape) or execute(x, m)
    got = enc.backend.run(ids, mask)
    assert [s[0] for s in shapes] == [8, 8, 4]
    assert [s[1] for s in shapes] == sorted(s[1] for s in shapes) and shapes[-1][1] == mask.sum(1).max()
    alone = np.concatenate([execute(ids[i:i + 1, :mask[i].sum()], mask[i:i + 1, :mask[i].sum()]) for i in range(20)])
    assert np.abs(got - alone).max() < 1e-5


def test_truncation_is_reported_never_silent(bundle):
    enc = Encoder.load(bundle)
    long = " ".join(sentences(20, seed=3))
    batch = ["short one.", long, "another short one.", long + " more"]
    assert enc.truncated(batch) == [1, 3]
    assert enc.token_counts(batch)[1] > MAX_LEN
    with pytest.warns(TruncationWarning, match=r"2 of 4 text\(s\) are longer than the model's max length \(24"):
        v = enc.embed(batch)
    assert enc.last_truncated == [1, 3]
    assert np.isfinite(v).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.embed(["short one."])
        assert enc.last_truncated == []
        enc.embed(batch, truncation="ignore")
        assert enc.last_truncated == [1, 3]
    with pytest.raises(InputError, match="would be truncated"):
        enc.embed(batch, truncation="error")


def test_parallel_threads_give_the_same_vectors(bundle, texts):
    for backend in ("onnx",) + (("executorch",) if HAS_ET else ()):
        enc = Encoder.load(bundle, backend=backend)  # int8: dynamic activation scales depend on the batch,
        expected = [enc.embed(texts[i::4], batch_size=3) for i in range(4)]  # so compare like batches
        results, errors = {}, []

        def work(i):
            try:
                sub = texts[i::4]
                for _ in range(5):
                    results[i] = enc.embed(sub, batch_size=3)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for i in range(4):
            assert np.abs(results[i] - expected[i]).max() < 1e-6, backend


# ------------------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("bad, message", [
    (["ok", 3], "text 1 is int, expected str"),
    (["ok", None], "text 1 is NoneType"),
    ([b"bytes", "ok"], "text 0 is bytes"),
    ({"a": 1}, "expected a list of strings, got dict"),
])
def test_bad_texts_are_clear_errors(bundle, bad, message):
    enc = Encoder.load(bundle)
    with pytest.raises(InputError, match=message):
        enc.embed(bad)
    with pytest.raises(InputError, match=message):  # also when empty texts are welcome
        enc.embed([*bad, ""] if isinstance(bad, list) else bad, empty="ignore")


@pytest.mark.parametrize("bad, message", [
    (["ok", ""], "text 1 is empty or whitespace-only"),
    (["ok", "   "], "text 1 is empty or whitespace-only"),
    ("", "text 0 is empty"),
    (["\x00\x00"], "text 0 has no tokens after normalisation \\(only control or invisible characters"),
    (["ok", "ok", "\u200b\ufeff"], "text 2 has no tokens after normalisation \\(only control or invisible"),
])
def test_empty_texts_raise_only_when_asked(bundle, bad, message):
    enc = Encoder.load(bundle)
    with pytest.raises(InputError, match=message):
        enc.embed(bad, empty="error")
    with pytest.raises(InputError, match="empty must be 'warn', 'ignore' or 'error', got 'zero'"):
        enc.embed(["ok"], empty="zero")


@pytest.mark.parametrize("backend", ["onnx", "torch", pytest.param("executorch", marks=needs_et)])
def test_an_empty_text_gets_a_zero_vector_and_never_reaches_the_backend(bundle, backend):
    """Policy (issue 37 item 10): a text with nothing to embed gets an all-zero vector (no NaN, also normalised),
    one EmptyTextWarning per call names how many and which, ``last_empty`` lists them; the rest of the batch is
    embedded as if they were not there, and no empty row reaches the planner or the backend."""
    enc = Encoder.load(bundle, backend=backend, precision="fp32")
    rows, run = [], enc.backend.run

    def recording_run(ids, mask):
        rows.extend(mask.sum(1).tolist())
        return run(ids, mask)

    enc.backend.run = recording_run
    batch = ["the cat is big.", "", "   \t", "\u200b", "le chien est petit.", "\x00\ufeff", "server network."]
    with pytest.warns(EmptyTextWarning) as caught:
        v = enc.embed(batch, batch_size=2)
    assert len(caught) == 1 and str(caught[0].message) == (
        "4 of 7 text(s) have nothing to embed (empty, whitespace, or only control or invisible characters) and got "
        "all-zero vectors (indices 1, 2, 3, 5; see Encoder.last_empty)")
    assert caught[0].filename == __file__  # points at the caller
    assert enc.last_empty == [1, 2, 3, 5] and enc.last_truncated == []
    assert v.shape == (7, 64) and v.dtype == np.float32 and np.isfinite(v).all()
    assert not v[[1, 2, 3, 5]].any()
    assert np.allclose(np.linalg.norm(v[[0, 4, 6]], axis=1), 1, atol=1e-5)
    assert len(rows) == 3 and min(rows) >= 1  # three texts ran, none of them an empty row
    alone = enc.embed(["the cat is big.", "le chien est petit.", "server network."])
    assert np.abs(v[[0, 4, 6]] - alone).max() < 1e-5
    raw = enc.embed(batch, normalize=False, empty="ignore")
    assert not raw[[1, 2, 3, 5]].any() and np.isfinite(raw).all()
    assert enc.similarity(v[1], v[0]) == 0.0
    with pytest.warns(EmptyTextWarning, match="1 of 1 text"):
        assert enc.similarity("", "the cat is big.") == 0.0
    assert enc.similarity(v, v)[1].tolist() == [0.0] * 7
    # all empty: zeros of the right size, and the backend is not called at all
    rows.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        none = enc.embed(["", " ", "\u200b"], empty="ignore")
        one = enc.embed("", empty="ignore")
    assert none.shape == (3, 64) and not none.any() and one.shape == (64,) and not one.any() and rows == []
    assert enc.last_empty == [0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.embed(["the cat."])
    assert enc.last_empty == []  # per call
    assert enc.token_counts(["the cat.", ""])[1] == 0 and enc.truncated(["", "the cat."]) == []


def test_empty_texts_in_heads_and_the_index(bundle, texts, tmp_path):
    """Zero vectors pass through the heads (fit and predict) and through Index.search without NaN; Index.add
    still refuses an empty text before writing anything (it checks every text first)."""
    from lwx_edge.heads import LogisticHead, MLPHead
    from lwx_edge.index import Index

    enc = Encoder.load(bundle)
    labels = ["a" if i % 2 else "b" for i in range(len(texts))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyTextWarning)
        for cls in (LogisticHead, MLPHead):
            head = cls(encoder=enc).fit(texts + ["", "\u200b"], labels + ["a", "b"])
            proba = head.predict_proba(["", texts[0], "\u200b"])
            assert proba.shape == (3, 2) and np.isfinite(proba).all()
            assert np.allclose(proba.sum(1), 1, atol=1e-5)
        ix = Index.open(tmp_path / "ix.lwx", enc, create=True)
        ix.add(["t0", "t1"], texts[:2])
        with pytest.raises(InputError, match="text 1 is empty"):
            ix.add(["p", "q"], ["a cat", ""])
        assert len(ix) == 2
        hits = ix.search("\u200b", top_k=2)
        assert [h.score for h in hits] == [0.0, 0.0]
        ix.close()


def test_numpy_batch_sizes_and_huge_vectors(bundle):
    enc = Encoder.load(bundle)
    assert enc.embed(["a cat", "a dog"], batch_size=np.int64(1)).shape[0] == 2
    big = np.full(8, 1e30, dtype=np.float32)
    assert enc.similarity(big, big) == pytest.approx(1.0)


def test_familiar_api_one_text_empty_list_and_sentence_transformers_names(bundle):
    enc = Encoder.load(bundle, precision="fp32")  # int8 activations are quantized per call: compare in fp32
    batch = enc.embed(["a short text", "another one"])
    one = enc.embed("a short text")
    assert one.shape == (enc.dim,) and np.abs(one - batch[0]).max() < 1e-5
    empty = enc.embed([])
    assert empty.shape == (0, enc.dim) and empty.dtype == np.float32 and enc.last_truncated == []
    assert np.array_equal(enc.encode(["a short text", "another one"]), batch)
    raw = enc.encode(["a short text"], normalize_embeddings=False, show_progress_bar=False)
    assert abs(np.linalg.norm(raw[0]) - 1) > 1e-3 and np.allclose(raw[0] / np.linalg.norm(raw[0]), batch[0], atol=1e-6)
    assert enc.get_sentence_embedding_dimension() == enc.dim == batch.shape[1]


def test_the_embed_progress_bar_shows_in_terminals_only(bundle, texts, capsys, monkeypatch):
    """``progress=True`` draws a transient bar on a terminal; in a log file (``lwx-edge eval ... 2> log``) one bar
    per call would be noise, so a stderr that is not a terminal gets none."""
    enc = Encoder.load(bundle, precision="fp32")
    plain = enc.embed(texts[:40], batch_size=8)
    capsys.readouterr()
    assert np.array_equal(enc.embed(texts[:40], batch_size=8, progress=True), plain)
    assert "embed" not in capsys.readouterr().err  # pytest's captured stderr is not a terminal
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    enc.embed(texts[:40], batch_size=8, progress=True)
    assert "embed" in capsys.readouterr().err


def test_bad_paths_and_arguments(bundle, tmp_path):
    with pytest.raises(BundleError, match="no such bundle|does not exist|not found"):
        Encoder.load(tmp_path / "nowhere")
    with pytest.raises(InputError, match="unknown backend"):
        Encoder.load(bundle, backend="tpu")
    with pytest.raises(InputError, match="threads"):
        Encoder.load(bundle, threads=0)
    with pytest.raises(InputError, match="batch_size"):
        Encoder.load(bundle).embed(["x"], batch_size=0)


def test_unreadable_or_corrupt_model_files(bundle, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(bundle, d)
    (d / "model.int8.onnx").write_bytes(b"not a model")
    with pytest.raises(BundleError, match="model.int8.onnx is (truncated|corrupt)"):
        Encoder.load(d)
    # a garbage file the manifest vouches for: the runtime's refusal becomes a clear BundleError
    rehash(d)
    with pytest.raises(BundleError, match="onnxruntime cannot read this model"):
        Encoder.load(d, backend="onnx", precision="int8")
    shutil.rmtree(d)
    shutil.copytree(bundle, d)
    for f in ("model.onnx", "model.int8.onnx"):
        (d / f).unlink()
    with pytest.raises(BundleError, match="model.int8.onnx is listed in the manifest but missing"):
        Encoder.load(d)
    rehash(d)
    with pytest.raises(BundleError, match="bundle has no onnx model .*lwx-edge export"):
        Encoder.load(d, backend="onnx")


# ------------------------------------------------------------------------------------------ similarity/search

def test_similarity_shapes_and_values(bundle):
    enc = Encoder.load(bundle)
    # the int8 ONNX model quantises activations per batch, so one text in two batches differs slightly
    s = enc.similarity("The cat is big.", "The cat is big.")
    assert isinstance(s, float) and s == pytest.approx(1.0, abs=1e-5)
    row = enc.similarity("The cat.", ["The cat.", "Le chat.", "Der hund."])
    assert row.shape == (3,) and row[0] == pytest.approx(1.0, abs=1e-4)
    mat = enc.similarity(["a", "b"], ["c", "d", "e"])
    assert mat.shape == (2, 3) and np.all(np.abs(mat) <= 1 + 1e-5)
    assert similarity([1.0, 0.0], [[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]]).tolist() == [1.0, 0.0, -1.0]
    with pytest.raises(InputError, match="different dimensions"):
        similarity(np.ones(3), np.ones(4))


def test_search_is_exact_and_batched():
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=(37, 16)), rng.normal(size=(500, 16))
    res = search(q, c, top_k=5, block_elements=1000)  # many blocks
    qn, cn = q / np.linalg.norm(q, axis=1, keepdims=True), c / np.linalg.norm(c, axis=1, keepdims=True)
    brute = np.argsort(-(qn @ cn.T), axis=1, kind="stable")[:, :5]
    assert res.indices.shape == (37, 5) and (res.indices == brute).all()
    assert np.allclose(res.scores, np.take_along_axis(qn @ cn.T, brute, 1), atol=1e-5)
    assert (np.diff(res.scores, axis=1) <= 1e-7).all()
    ties = search([1.0, 0.0], [[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [1.0, 0.0]], top_k=10)
    assert ties.indices.tolist() == [1, 2, 3, 0]  # top_k clipped; ties by lower index
    with pytest.raises(InputError, match="top_k"):
        search(q, c, top_k=0)


def test_encoder_search_with_texts(bundle, texts):
    enc = Encoder.load(bundle)
    res = enc.search([texts[3], texts[10]], texts, top_k=3)
    assert res.indices[:, 0].tolist() == [3, 10]
    assert res.scores[:, 0] == pytest.approx([1.0, 1.0], abs=1e-4)


# ------------------------------------------------------------------------------------------ torch-free path

def test_base_install_path_never_imports_torch(bundle, tmp_path):
    """Load an exported bundle, embed, fit and save a head, load it and predict: with torch unimportable."""
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'executorch', 'safetensors', 'torchao'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
import numpy as np
from lwx_edge import Encoder
from lwx_edge.heads import LogisticHead, MLPHead, load_head
enc = Encoder.load({str(bundle)!r})
assert enc.backend_name == 'onnx', enc.backend_name
texts = ['the cat is big.', 'le chat est grand.', 'server network file.', 'serveur réseau fichier.'] * 6
labels = ['animal', 'animal', 'it', 'it'] * 6
for cls in (LogisticHead, MLPHead):
    head = cls(encoder=enc).fit(texts, labels)
    head.save({str(tmp_path)!r} + '/' + cls.kind)
    back = load_head({str(tmp_path)!r} + '/' + cls.kind, encoder=enc)
    assert (back.predict(texts) == head.predict(texts)).all()
print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch', 'safetensors')))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"


@needs_et
def test_loading_an_executorch_encoder_with_threads_while_another_runs_does_not_crash(bundle):
    """The thread pool is process-wide; resetting it under a running execute used to segfault (rc 139)."""
    code = f"""
import threading
from lwx_edge import Encoder
a = Encoder.load({str(bundle)!r}, backend="executorch", threads=1)
stop = threading.Event()
def work():
    while not stop.is_set():
        a.embed(["a few words to embed", "and some more words here"] * 8)
t = threading.Thread(target=work)
t.start()
for n in (2, 1, 2, 1, 2):
    Encoder.load({str(bundle)!r}, backend="executorch", threads=n).embed(["x"])
stop.set()
t.join()
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.returncode, r.stderr[-2000:])


def test_a_damaged_executorch_program_is_refused_before_the_runtime_sees_it(tmp_path, default_pte):
    """The runtime aborts the process on some damaged programs, so the header is checked first."""
    from lwx_edge.runtime.executorch_backend import check_program

    good = default_pte / "model.int8.pte"
    check_program(good)
    raw = good.read_bytes()
    (tmp_path / "cut.pte").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(BundleError, match="the ExecuTorch program is truncated"):
        check_program(tmp_path / "cut.pte")
    (tmp_path / "onnx.pte").write_bytes((default_pte / "model.int8.onnx").read_bytes()[:4096])
    with pytest.raises(BundleError, match="not an ExecuTorch program"):
        check_program(tmp_path / "onnx.pte")
    if HAS_ET:  # the same through Encoder.load with verification off
        d = tmp_path / "bundle"
        shutil.copytree(default_pte, d)
        (d / "model.int8.pte").write_bytes(raw[: len(raw) // 2])
        with pytest.raises(BundleError, match="truncated"):
            Encoder.load(d, backend="executorch", verify=False)


def test_torch_backend_needs_weights_and_says_so(bundle, tmp_path):
    d = tmp_path / "noweights"
    shutil.copytree(bundle, d)
    (d / "model.safetensors").unlink()
    rehash(d)
    with pytest.raises(BundleError, match="torch backend needs the weights"):
        Encoder.load(d, backend="torch")
    assert Encoder.load(d).embed(["still works."]).shape == (1, 64)


# ------------------------------------------------------------------------------------------ heads x encoders

def test_head_refuses_another_encoder(bundle, tok, tmp_path, texts):
    from lwx_edge.heads import HeadError, LogisticHead, load_head

    labels = ["a" if i % 2 else "b" for i in range(len(texts))]
    enc = Encoder.load(bundle)
    head = LogisticHead(encoder=enc).fit(texts, labels)
    head.save(tmp_path / "head")
    back = load_head(tmp_path / "head", encoder=Encoder.load(bundle, backend="torch"))  # same weights
    assert back.predict(texts).tolist() == head.predict(texts).tolist()
    other = make_bundle(tmp_path / "other", tok, seed=1)
    with pytest.raises(HeadError, match="fitted on another encoder"):
        load_head(tmp_path / "head", encoder=Encoder.load(other))
    # the same bundle with its int8 ONNX model swapped for another model's (manifest re-hashed): the file
    # that runs is checked, not merely some file of the bundle
    from lwx_edge.export import export_bundle

    export_bundle(other, formats=("onnx",), int8=True)
    swapped = tmp_path / "swapped"
    shutil.copytree(bundle, swapped)
    shutil.copyfile(other / "model.int8.onnx", swapped / "model.int8.onnx")
    rehash(swapped)
    with pytest.raises(HeadError, match="fitted on another encoder"):
        load_head(tmp_path / "head", encoder=Encoder.load(swapped, backend="onnx"))


def test_head_files_that_cannot_be_trusted_are_refused(bundle, tmp_path, texts):
    from lwx_edge.heads import HeadError, LogisticHead, load_head

    enc = Encoder.load(bundle)
    LogisticHead(encoder=enc).fit(texts, ["a" if i % 2 else "b" for i in range(len(texts))]).save(tmp_path / "h")
    meta = json.loads((tmp_path / "h" / "head.json").read_text())

    def broken(change, message):
        d = tmp_path / f"h{len(list(tmp_path.iterdir()))}"
        shutil.copytree(tmp_path / "h", d)
        m = json.loads(json.dumps(meta))
        change(m, d)
        (d / "head.json").write_text(json.dumps(m))
        with pytest.raises(HeadError, match=message):
            load_head(d, encoder=enc)

    broken(lambda m, d: m["encoder"].pop("sha256"), "encoder record is malformed")
    broken(lambda m, d: m.pop("encoder"), "has no 'encoder' entry")
    broken(lambda m, d: m["weights"].pop("sha256"), "records no sha256 for its weights")

    def nan_weights(m, d):
        with np.load(d / "head.npz") as z:
            arrays = {k: z[k] for k in z.files}
        arrays[m["layers"][0]["weight"]][0, 0] = np.nan
        np.savez(d / "head.npz", **arrays)
        m["weights"]["sha256"] = hashlib.sha256((d / "head.npz").read_bytes()).hexdigest()

    broken(nan_weights, "NaN, infinite or non-numeric")


# ------------------------------------------------------------------------------------------ CLI

def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "lwx_edge", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """CSV files: topic by vocabulary (animals vs computers), English train, French eval."""
    root = tmp_path_factory.mktemp("labelled")
    rng = random.Random(0)
    words = {"en": {"animal": "cat dog", "it": "file network server window"},
             "fr": {"animal": "chat chien", "it": "fichier réseau serveur fenêtre"}}
    for lang, n in (("en", 80), ("fr", 30)):
        rows = ["text,label"]
        for i in range(n):
            label = ("animal", "it")[i % 2]
            rows.append(" ".join(rng.choice(words[lang][label].split()) for _ in range(4)) + f",{label}")
        (root / f"{lang}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_cli_fit_predict_search(bundle, labelled, tmp_path):
    r = cli("fit", bundle, labelled / "en.csv", "-o", tmp_path / "head", "--kind", "logistic",
            "--eval-lang", f"fr={labelled / 'fr.csv'}", "--json", tmp_path / "report.json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "dev (16 held-out examples): accuracy" in r.stdout and "fr (zero-shot, 30 examples)" in r.stdout
    assert "true \\ pred" in r.stdout and f"-> {tmp_path / 'head'}" in r.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["dev"]["n"] == 16 and 0 <= report["fr"]["accuracy"] <= 1
    meta = json.loads((tmp_path / "head" / "head.json").read_text())
    assert meta["info"]["examples"] == 80 and meta["info"]["reports_fitted_on"] == 64  # refitted on all
    assert meta["info"]["results"]["dev"]["n"] == 16 and "refitted on all after the dev report" in r.stdout

    r = cli("predict", bundle, tmp_path / "head", "cat dog cat dog", "server file network")
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [line.split("\t") for line in r.stdout.splitlines()]
    assert [x[2] for x in lines] == ["cat dog cat dog", "server file network"]
    assert all(x[0] in ("animal", "it") and 0.5 <= float(x[1]) <= 1 for x in lines)
    r = cli("predict", bundle, tmp_path / "head", "--json", "le chat")
    row = json.loads(r.stdout)
    assert set(row["proba"]) == {"animal", "it"} and sum(row["proba"].values()) == pytest.approx(1, abs=1e-5)

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat is big.\nserver network file.\nle chien est petit.\n", encoding="utf-8")
    r = cli("search", bundle, "server network file.", "--corpus", corpus, "-k", "2", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    hit = json.loads(r.stdout)["hits"]
    assert len(hit) == 2 and hit[0]["text"] == "server network file." and hit[0]["score"] == pytest.approx(1, abs=1e-3)


def test_cli_version():
    from lwx_edge import __version__

    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"lwx-edge {__version__}"


def test_cli_embed_to_npy_with_backend(bundle, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("the cat.\n\nle chat.\n", encoding="utf-8")
    r = cli("embed", bundle, "--input", src, "-o", tmp_path / "v.npy", "--backend", "onnx", "--threads", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    v = np.load(tmp_path / "v.npy")
    assert v.shape == (2, 64) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)


def test_cli_embed_names_the_file_and_line_of_a_text(bundle, tmp_path):
    """Notes and errors about a text name its file and real line (1-based, blank lines counted), or its
    argument; an empty text does not stop the job: its row is all zeros."""
    src = tmp_path / "notes.txt"
    src.write_bytes("the cat.\n\n   \n\r\n\u200b\nle chat.\n".encode("utf-8"))  # line 5: a zero-width space
    r = cli("embed", bundle, "--input", src, "-o", tmp_path / "v.npy")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (f"note: 1 text(s) have nothing to embed (empty, or only control or invisible characters) and got "
            f"all-zero vectors: {src} line 5") in r.stderr
    v = np.load(tmp_path / "v.npy")
    assert v.shape == (3, 64) and not v[1].any() and np.allclose(np.linalg.norm(v[[0, 2]], axis=1), 1, atol=1e-5)
    long = " ".join(sentences(20, seed=3))
    src.write_text(f"the cat.\n\n{long}\n\u200b\n", encoding="utf-8")
    r = cli("embed", bundle, "a dog.", "--input", src)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"were truncated: {src} line 3" in r.stderr and f"all-zero vectors: {src} line 4" in r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["text"] for x in rows] == ["a dog.", "the cat.", long, "\u200b"] and not any(rows[3]["embedding"])
    src.write_bytes(b"fine\n\nalso fine\ncaf\xe9 au lait\n")  # Latin-1, not UTF-8, on line 4
    r = cli("embed", bundle, "--input", src)
    assert r.returncode == 2 and f"error: {src} line 4: not valid UTF-8 (byte 0xe9, byte 4 of the line)" in r.stderr
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "embed", str(bundle), "--input", "-"],
                       input="one\n\n\x00\n".encode(), capture_output=True, timeout=300)
    assert r.returncode == 0 and b"all-zero vectors: stdin line 3" in r.stderr, r.stderr[-2000:]


def test_cli_texts_keep_where_they_came_from(tmp_path):
    from lwx_edge.cli._texts import gather, gather_located, located, places

    src = tmp_path / "in.txt"
    src.write_bytes(b"\xef\xbb\xbfone\r\n\r\ntwo\rthree\n  \nfour")  # BOM, CRLF, a lone CR, no final newline
    texts, where = gather_located(["arg"], src)
    assert texts == ["arg", "one", "two", "three", "four"]
    assert where == ["argument 1", f"{src} line 1", f"{src} line 3", f"{src} line 4", f"{src} line 6"]
    assert gather(None, src) == texts[1:]
    err = located(InputError("text 2 has no tokens after normalisation"), where)
    assert str(err) == f"{src} line 3: no tokens after normalisation"
    assert str(located(InputError("text 9 is empty"), where)) == "text 9 is empty"  # not one of ours: unchanged
    assert places(list(range(5)), where, limit=2) == f"argument 1, {src} line 1 and 3 more"
    with pytest.raises(InputError, match="no texts"):
        gather_located(None, None)


def test_cli_errors_are_one_line_with_exit_code_2(bundle, labelled, tok, tmp_path):
    cases = [
        (("fit", bundle, labelled / "en.csv", "-o", tmp_path / "h", "--text-col", "txt"), "no column 'txt'"),
        (("fit", bundle, tmp_path / "none.csv", "-o", tmp_path / "h"), "no such labelled file"),
        (("fit", bundle, labelled / "en.csv", "-o", tmp_path / "h", "--eval-lang", "fr"), "LANG=FILE"),
        (("fit", bundle, labelled / "en.csv", "-o", tmp_path / "h", "--kind", "svm"), "unknown head kind 'svm'"),
        (("embed", tmp_path / "nobundle", "x"), "no such bundle directory"),
        (("embed", bundle), "no texts"),
        (("predict", bundle, tmp_path / "nohead", "x"), "no such head directory"),
        (("search", bundle, "q", "--corpus", tmp_path / "none.txt"), "no such file"),
        (("embed", bundle, "ok", "caf\udce9"), "argument 2: not valid Unicode"),  # a non-UTF-8 argument
        (("embed", bundle, "x", "-o", tmp_path / "v.txt"), "--output must end in .npy"),
        (("embed", bundle, "x", "--threads", "0"), "--threads"),
    ]
    for args, message in cases:
        r = cli(*args)
        assert r.returncode == 2, (args, r.stderr[-1000:])
        assert "error: " in r.stderr and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "h").exists()  # nothing half-written
    # a head used with another bundle
    assert cli("fit", bundle, labelled / "en.csv", "-o", tmp_path / "h2").returncode == 0
    other = make_bundle(tmp_path / "other", tok, seed=1)
    from lwx_edge.export import export_bundle

    export_bundle(other, formats=("onnx",), int8=True)
    r = cli("predict", other, tmp_path / "h2", "x")
    assert r.returncode == 2 and "fitted on another encoder" in r.stderr
