"""The sentence-transformers contract of ``Encoder`` (issue 38 item 3): ``encode`` takes SentenceTransformer.encode's
keyword arguments and does the sensible thing with each, ``max_seq_length``, ``get_sentence_embedding_dimension``,
``similarity``; an Encoder pickles (joblib, scikit-learn's ``n_jobs``). Runs on the shipped default model (ONNX,
torch-free), which loads in well under a second."""
import csv
import inspect
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from lwx_edge import Encoder
from lwx_edge.encoder import DEFAULT_MODEL, EmptyTextWarning, TruncationWarning
from lwx_edge.errors import BundleError, InputError

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["A man is eating food.", "Un homme mange.", "Ein Mann isst etwas.", "The server is down again.",
         "Il server non risponde."]


@pytest.fixture(scope="module")
def model():
    return Encoder.load()


def intents():
    rows = list(csv.DictReader(open(REPO / "examples" / "intents.en.csv", encoding="utf-8")))
    return [r["text"] for r in rows], [r["label"] for r in rows]


# ------------------------------------------------------------------------------------------ encode

def test_ordinary_sentence_transformers_code_runs_unchanged(capsys):
    model = Encoder.load()   # instead of SentenceTransformer(...)
    emb = model.encode(["A man is eating food.", "Un homme mange."], batch_size=32, show_progress_bar=False,
                       convert_to_numpy=True, normalize_embeddings=True)
    print(model.similarity(emb, emb).shape)
    print(model.get_sentence_embedding_dimension(), model.max_seq_length)
    assert capsys.readouterr().out.splitlines() == ["(2, 2)", "512 200"]
    sim = model.similarity(emb, emb)
    assert np.allclose(np.diag(sim), 1, atol=1e-5) and 0.5 < sim[0, 1] < 1  # a translation pair
    assert np.allclose(sim, sim.T, atol=1e-6)


def test_encode_has_sentence_transformers_parameters_in_their_order(model):
    names = list(inspect.signature(model.encode).parameters)
    assert names == ["sentences", "prompt_name", "prompt", "batch_size", "show_progress_bar", "output_value",
                     "precision", "convert_to_numpy", "convert_to_tensor", "device", "normalize_embeddings",
                     "truncate_dim", "pool", "chunk_size", "kwargs"]


def test_accepted_keywords_give_the_same_vectors(model):
    ref = model.embed(TEXTS)
    same = [
        model.encode(TEXTS),
        model.encode(TEXTS, batch_size=2, show_progress_bar=None, output_value="sentence_embedding",
                     precision="float32", convert_to_numpy=True, convert_to_tensor=False, device=None,
                     normalize_embeddings=True, truncate_dim=None, pool=None, chunk_size=None),
        model.encode(TEXTS, device="cpu", show_progress_bar=True),
        model.encode(np.array(TEXTS)),  # sentence-transformers takes a numpy array of str
        model.encode(tuple(TEXTS), truncation="error", empty="error"),  # embed()'s own keywords pass through
    ]
    for got in same:
        assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (5, 512)
        assert 1 - (got * ref).sum(1).min() < 1e-6
    one = model.encode("A man is eating food.")  # one string: one 1-d vector, as sentence-transformers
    assert one.shape == (512,) and 1 - float(one @ ref[0]) < 1e-6
    raw = model.encode(TEXTS, normalize_embeddings=False)
    norms = np.linalg.norm(raw, axis=1)
    assert not np.allclose(norms, 1, atol=1e-3) and np.allclose(raw / norms[:, None], ref, atol=1e-5)
    assert model.encode([]).shape == (0, 512)


def test_truncate_dim_keeps_the_first_dimensions_then_normalises(model):
    raw = model.encode(TEXTS, normalize_embeddings=False)
    cut = model.encode(TEXTS, truncate_dim=64)
    assert cut.shape == (5, 64) and cut.flags.c_contiguous
    assert np.allclose(cut, raw[:, :64] / np.linalg.norm(raw[:, :64], axis=1, keepdims=True), atol=1e-5)
    assert np.allclose(model.encode(TEXTS, truncate_dim=64, normalize_embeddings=False), raw[:, :64], atol=1e-6)
    assert model.encode("x", truncate_dim=512).shape == (512,)
    assert model.encode(["", "x"], truncate_dim=8, empty="ignore")[0].tolist() == [0.0] * 8
    for bad in (0, 513, -1, 2.5, True, "64"):
        with pytest.raises(InputError, match=r"truncate_dim must be an integer from 1 to 512 \(the vector size\)"):
            model.encode(TEXTS, truncate_dim=bad)


def test_prompts_are_prepended_to_texts_with_something_to_embed():
    model = Encoder.load()
    with_prompt = model.encode(TEXTS, prompt="query: ")
    assert np.allclose(with_prompt, model.encode(["query: " + t for t in TEXTS]), atol=1e-5)
    assert (with_prompt * model.encode(TEXTS)).sum(1).min() < 0.999  # the prompt changes the vectors
    with pytest.raises(InputError, match=r"prompt_name='query': this Encoder has no such prompt \(its prompts: "
                                         r"none\); set enc.prompts"):
        model.encode(TEXTS, prompt_name="query")
    with pytest.raises(InputError, match=r"second positional argument is prompt_name.*batch_size=64 by keyword"):
        model.encode(TEXTS, 64)
    model.prompts = {"query": "query: ", "passage": "passage: "}
    assert np.allclose(model.encode(TEXTS, prompt_name="query"), with_prompt, atol=1e-6)
    assert np.allclose(model.encode(TEXTS, prompt_name="passage", prompt="query: "), with_prompt, atol=1e-6)
    with pytest.raises(InputError, match=r"its prompts: 'query', 'passage'"):
        model.encode(TEXTS, prompt_name="doc")
    model.default_prompt_name = "query"
    assert np.allclose(model.encode(TEXTS), with_prompt, atol=1e-6)
    with pytest.warns(EmptyTextWarning, match="1 of 2 text"):
        v = model.encode(["", "x"])  # the prompt alone is not a text: still a zero vector
    assert not v[0].any() and model.last_empty == [0]
    with pytest.raises(InputError, match="prompt must be a string"):
        model.encode(TEXTS, prompt=3)


@pytest.mark.parametrize("kwargs, message", [
    ({"output_value": "token_embeddings"}, r"output_value='token_embeddings': only sentence embeddings are available"),
    ({"output_value": None}, r"output_value=None: only sentence embeddings are available"),
    ({"precision": "int8"}, r"precision='int8': quantised outputs are not offered; the vectors are float32"),
    ({"precision": "binary"}, r"precision='binary': quantised outputs"),
    ({"precision": "float16"}, r"precision='float16': choose one of float32, int8, uint8, binary, ubinary"),
    ({"device": "cuda"}, r"device='cuda': this Encoder runs on 'cpu' \(the onnx backend; ONNX and ExecuTorch run on "
                         r"the CPU only\)"),
    ({"device": "mps"}, r"device='mps'"),
    ({"device": ["cpu", "cpu"]}, r"multi-process encoding\) is not supported"),
    ({"pool": {"processes": []}}, r"pool= and chunk_size= .* are not supported.*joblib"),
    ({"chunk_size": 100}, r"pool= and chunk_size="),
    ({"convert_to_tensors": True}, r"unexpected keyword argument 'convert_to_tensors'"),
])
def test_what_the_runtime_cannot_do_is_refused_clearly(model, kwargs, message):
    with pytest.raises(InputError, match=message):
        model.encode(TEXTS, **kwargs)


def test_tensors_when_torch_is_there(model):
    torch = pytest.importorskip("torch")
    ref = model.encode(TEXTS)
    t = model.encode(TEXTS, convert_to_tensor=True)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and tuple(t.shape) == (5, 512)
    assert np.allclose(t.numpy(), ref, atol=1e-6)
    parts = model.encode(TEXTS, convert_to_numpy=False)  # sentence-transformers: a list of 1-d tensors
    assert isinstance(parts, list) and len(parts) == 5 and all(tuple(p.shape) == (512,) for p in parts)
    assert tuple(model.encode("x", convert_to_tensor=True).shape) == (512,)
    assert tuple(model.encode("x", convert_to_numpy=False).shape) == (512,)
    assert model.encode(TEXTS, device=torch.device("cpu")).shape == (5, 512)
    sim = model.similarity(t, t)  # tensors in, numpy out
    assert isinstance(sim, np.ndarray) and sim.shape == (5, 5) and np.allclose(np.diag(sim), 1, atol=1e-5)


def test_tensors_without_torch_are_a_clear_error(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    for kwargs in ({"convert_to_tensor": True}, {"convert_to_numpy": False}):
        with pytest.raises(InputError, match=r"return torch tensors, and torch is not installed"):
            model.encode(TEXTS, **kwargs)
    assert model.encode(TEXTS).shape == (5, 512)


def test_encode_never_imports_torch():
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'executorch'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
from lwx_edge import Encoder
m = Encoder.load()
print(m.encode(['a', 'b'], batch_size=8, show_progress_bar=False, normalize_embeddings=True).shape)
try:
    m.encode('a', convert_to_tensor=True)
except Exception as e:
    print(type(e).__name__, e)
print(sorted(k for k in sys.modules if k.split('.')[0] == 'torch'))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines() == [
        "(2, 512)", "InputError convert_to_tensor=True and convert_to_numpy=False return torch tensors, and torch "
        "is not installed (pip install torch); leave them at their defaults for a numpy array", "[]"]


# ------------------------------------------------------------------------------------------ max_seq_length

def test_max_seq_length_can_go_down_never_up():
    model = Encoder.load()
    assert model.max_seq_length == model.get_max_seq_length() == model.max_len == 200
    assert model.get_sentence_embedding_dimension() == model.dim == 512
    long = "the heating is making noises again and the plumber cannot come before next week " * 3
    full = model.token_counts([long])[0]
    assert 20 < full < 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole = model.encode(long)
    model.max_seq_length = 8
    assert model.max_seq_length == model.max_len == model.tokenizer.max_len == 8
    with pytest.warns(TruncationWarning, match=r"max length \(8 tokens\)"):
        head = model.encode([long, "short"])
    assert model.last_truncated == [0]
    assert np.allclose(head[0], model.encode(model.tokenizer.decode(model.tokenizer.encode_one(long))), atol=1e-5)
    assert float(head[0] @ whole) < 0.999
    for bad in (0, -3, 201, 10_000, 2.5, True, "8", None):
        with pytest.raises(InputError, match=r"max_seq_length must be an integer from 1 to 200 \(the model's max "
                                             r"length; it cannot see further\), got"):
            model.max_seq_length = bad
    assert model.max_seq_length == 8
    model.max_seq_length = 200
    assert np.allclose(model.encode(long), whole, atol=1e-6)


# ------------------------------------------------------------------------------------------ pickling

def test_pickle_round_trip_gives_identical_vectors():
    model = Encoder.load(threads=1)
    model.max_seq_length = 50
    model.prompts = {"query": "query: "}
    back = pickle.loads(pickle.dumps(model))
    assert back is not model and back.max_seq_length == 50 and back.prompts == {"query": "query: "}
    assert (back.backend_name, back.artifact, back.precision, back.backend.threads) == ("onnx", "model.int8.onnx",
                                                                                        "int8", 1)
    assert back.bundle.path.resolve() == DEFAULT_MODEL
    assert np.array_equal(back.encode(TEXTS, prompt_name="query"), model.encode(TEXTS, prompt_name="query"))
    assert back._load_args["path"] is None  # the default model: whichever the unpickling install ships
    # joblib unpickles the Encoder with every task: later copies share the runtime, not their settings
    again = pickle.loads(pickle.dumps(model))
    assert again.backend is back.backend and again.tokenizer is not back.tokenizer
    again.max_seq_length = 10
    again.prompts["doc"] = "doc: "
    assert (back.max_seq_length, again.max_seq_length, model.max_seq_length) == (50, 10, 50)
    assert back.prompts == {"query": "query: "}


def test_pickle_reopens_a_bundle_by_path_and_refuses_another_one(tmp_path):
    from lwx_edge.encoder import _unpickle

    d = tmp_path / "copy"
    shutil.copytree(DEFAULT_MODEL, d)
    model = Encoder.load(d, backend="onnx", verify=False)
    assert model._load_args == {"path": str(d.resolve()), "backend": "onnx", "threads": None, "precision": "int8",
                                "device": "cpu", "verify": False}
    back = pickle.loads(pickle.dumps(model))
    assert back.bundle.path.resolve() == d.resolve()
    assert np.array_equal(back.encode(TEXTS), model.encode(TEXTS))
    fn, (args, state) = model.__reduce__()
    assert fn is _unpickle
    with pytest.raises(BundleError, match="not the one this Encoder was pickled from"):
        fn(args, {**state, "sha256": "0" * 64})
    other = Encoder.load(d, threads=1)
    shutil.rmtree(d)
    with pytest.raises(BundleError, match="no such bundle|does not exist|not found|cannot be read"):
        pickle.loads(pickle.dumps(other))  # pickling hashes the model file: the deleted bundle is named


def test_an_encoder_not_made_by_load_says_why_it_cannot_be_pickled(model):
    bare = Encoder(model.tokenizer, model.backend, model.bundle)
    with pytest.raises(TypeError, match="not made by Encoder.load, so it cannot be pickled"):
        pickle.dumps(bare)


def test_joblib_parallel_over_an_encoder(model):
    from joblib import Parallel, delayed

    parts = Parallel(n_jobs=2)(delayed(model.encode)(TEXTS[i::2]) for i in range(2))
    assert np.allclose(parts[0], model.encode(TEXTS[0::2]), atol=1e-6)
    assert np.allclose(parts[1], model.encode(TEXTS[1::2]), atol=1e-6)


def test_scikit_learn_cross_validation_with_n_jobs(model):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    texts, labels = intents()  # 40 English requests, 4 intents
    scores = cross_val_score(make_pipeline(FunctionTransformer(model.encode), LogisticRegression()), texts, labels,
                             cv=3, n_jobs=2)
    assert scores.shape == (3,) and scores.mean() > 0.8
