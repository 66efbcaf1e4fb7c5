"""Write the parity fixtures of the JavaScript package (``web/``) with the Python SDK.

    python tools/web_fixtures.py OUT_DIR [--bundle default] [--fuzz 900] [--seed 0]

The JavaScript tests (``web/test/``) read OUT_DIR (default ``web/build/fixtures``) and compare the package against
what the Python SDK computes for the same inputs. Plain JSON and ``.npy`` files only (no pickle):

    meta.json              bundle path, counts, versions that wrote it
    tokens.json            probe texts (the Android parity probes, long texts, fuzz, the five languages' example
                           requests and the demo's notes): Tokenizer.encode ids (cut at max_len), truncation, token
                           count before it, or the kind of InputError (empty / no tokens / invalid Unicode)
    vectors.npy            float32 [n, d]: Encoder.load(bundle).embed(texts) (zero rows for texts with nothing)
    head_logistic/, head_mlp/, head_int/   heads fitted with the SDK on examples/intents.*.csv (all five
                           languages); head_int has integer labels and no standardisation
    head_foreign/          the logistic head with the encoder record of another model (the JS side must refuse it)
    head_embeddings.npy    float32 [m, d] random vectors (tiny, huge and zero rows among them)
    head_<kind>_proba_vectors.npy   float64 predict_proba of head_embeddings.npy
    head_<kind>_proba_texts.npy     float64 predict_proba of head_texts (embedded by the SDK)
    head_cases.json        head_texts, classes and predicted labels
    search_corpus.npy, search_queries.npy, search.json   lwx_edge.search.search top-k (exact duplicates: ties)
    units.json, units_stored.npz, units_compressed.npz   small cases for the unit tests: np.savez and
                           np.savez_compressed of known arrays, lwx_edge.sub_batches.plan_batches plans, normalize()

Only the bundle's config.json, tokenizer.model, manifest.json and ONNX model are read (a bundle whose ExecuTorch
program was moved elsewhere works).
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import unicodedata
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

ONNX = "model.int8.onnx"
NOTES = ROOT / "web" / "demo" / "notes.json"
LANGS = ("en", "fr", "de", "es", "it")


def _dump(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def probes(tok, max_len: int, seed: int, n_fuzz: int) -> list[tuple[str, str]]:
    """(kind, text): the JVM parity probes (android_parity.probe_texts, with its long texts and fuzz), the example
    requests of the five languages, the demo's notes, queries and requests, and invalid Unicode."""
    from android_parity import probe_texts  # type: ignore[import-not-found]

    from lwx_edge.heads import read_labelled

    texts = probe_texts(tok, max_len, seed, n_fuzz)
    for lang in LANGS:
        data = read_labelled(ROOT / "examples" / f"intents.{lang}.csv")
        texts.extend((f"intents-{lang}", t) for t in data.texts)
    demo = json.loads(NOTES.read_text(encoding="utf-8"))
    texts.extend((f"note-{n['lang']}", n["text"]) for n in demo["notes"])
    texts.extend(("query", q) for q in demo["queries"])
    texts.extend(("request", q) for q in demo["requests"])
    # casing and mixed scripts across the five languages, emoji inside words
    rng = random.Random(seed + 1)
    words = [t for k, t in texts if k.startswith(("intents-", "note-"))]
    for _ in range(60):
        a, b = rng.sample(words, 2)
        texts.append(("mixed-langs", f"{a} \U0001F600 {b.upper()} \u00bb{rng.choice(words).title()}\u00ab"))
    texts.append(("invalid", "lone \ud800 surrogate"))
    return texts


def token_cases(tok, texts: list[tuple[str, str]]) -> list[dict]:
    from lwx_edge.errors import InputError

    cases = []
    for i, (kind, text) in enumerate(texts):
        case: dict = {"id": i, "kind": kind, "text": text}
        try:
            enc = tok.encode([text])
            case.update(ids=enc.ids[0], truncated=bool(enc.truncated), length_before=enc.lengths_before[0],
                        error=None)
        except InputError as e:
            msg = str(e)
            err = ("invalid_unicode" if "not valid Unicode" in msg else "empty" if "empty" in msg
                   else "no_tokens" if "no tokens" in msg else "other")
            case.update(ids=None, truncated=False, length_before=0, error=err)
        cases.append(case)
    return cases


def _surrogate_free(case: dict) -> dict:
    """JSON cannot carry a lone surrogate as text: such a text is written as its UTF-16 code units."""
    try:
        case["text"].encode("utf-8")
    except UnicodeEncodeError:
        units = case.pop("text").encode("utf-16-le", "surrogatepass")
        case["text_utf16"] = [int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2)]
    return case


def fit_heads(enc, out: Path) -> dict:
    from lwx_edge.heads import LogisticHead, MLPHead, read_labelled

    texts, labels = [], []
    for lang in LANGS:
        data = read_labelled(ROOT / "examples" / f"intents.{lang}.csv")
        texts += list(data.texts)
        labels += list(data.labels)
    X = enc.embed(texts)
    codes = {name: 10 * (i + 1) for i, name in enumerate(sorted(set(labels)))}  # integer labels: classes_type "int"
    heads = {"logistic": LogisticHead(encoder=enc).fit(X, labels),
             "mlp": MLPHead(encoder=enc, hidden_layer_sizes=(64,), max_epochs=30, random_state=0).fit(X, labels),
             "int": LogisticHead(encoder=enc, C=1.0, standardize=False).fit(X, [codes[y] for y in labels])}
    for kind, head in heads.items():
        if out.joinpath(f"head_{kind}").exists():
            shutil.rmtree(out / f"head_{kind}")
        head.save(out / f"head_{kind}", info={"fitted_on": "examples/intents.*.csv"})
    # a head fitted on another encoder: same weights, another model's record
    foreign = out / "head_foreign"
    if foreign.exists():
        shutil.rmtree(foreign)
    shutil.copytree(out / "head_logistic", foreign)
    meta = json.loads((foreign / "head.json").read_text(encoding="utf-8"))
    other = "0" * 63 + "1"
    meta["encoder"] = {**meta["encoder"], "sha256": other, "artifact_sha256": other,
                       "model_files": {ONNX: other}, "bundle": "another/bundle"}
    _dump(foreign / "head.json", meta)
    return heads


def head_fixtures(enc, heads: dict, out: Path, rng: np.random.Generator, requests: list[str]) -> dict:
    d = int(enc.dim)
    E = rng.standard_normal((64, d)).astype(np.float32)
    E[1] *= 1e-3
    E[2] *= 1e3
    E[3] = 0.0
    E[4] = np.abs(E[4])
    np.save(out / "head_embeddings.npy", E)
    texts = list(requests)
    V = enc.embed(texts)
    cases: dict = {"texts": texts, "heads": {}}
    for kind, head in heads.items():
        np.save(out / f"head_{kind}_proba_vectors.npy", head.predict_proba(E).astype(np.float64))
        np.save(out / f"head_{kind}_proba_texts.npy", head.predict_proba(V).astype(np.float64))
        cases["heads"][kind] = {"classes": head.classes_.tolist(), "predicted_vectors": head.predict(E).tolist(),
                                "predicted_texts": head.predict(V).tolist()}
    _dump(out / "head_cases.json", cases)
    return {"vectors": len(E), "texts": len(texts)}


def search_fixtures(out: Path, rng: np.random.Generator, d: int) -> dict:
    from lwx_edge.search import search

    C = rng.standard_normal((300, d)).astype(np.float32)
    C[40] = C[7]   # exact duplicates: equal scores, the lower index comes first
    C[41] = C[7]
    C[45] = C[12]
    Q = rng.standard_normal((24, d)).astype(np.float32)
    Q[0] = C[7]
    Q[1] = C[1] * 3.0
    res = search(Q, C, 10)
    np.save(out / "search_corpus.npy", C)
    np.save(out / "search_queries.npy", Q)
    _dump(out / "search.json", {"top_k": 10, "indices": res.indices.tolist(),
                                "scores": res.scores.astype(float).tolist()})
    return {"corpus": len(C), "queries": len(Q)}


def unit_fixtures(out: Path, rng: np.random.Generator) -> dict:
    from lwx_edge.sub_batches import plan_batches
    from lwx_edge.text import normalize

    arrays = {"f32": np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "f64": np.array([1e-300, -2.5, np.pi]),
              "i64": np.array([-(2 ** 40), 0, 7], dtype=np.int64), "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              "scalar": np.float32(0.5)}
    np.savez(out / "units_stored.npz", **arrays)
    np.savez_compressed(out / "units_compressed.npz", **arrays)
    plans = []
    for n, max_batch, overhead in ((1, 32, 4.0), (7, 3, 4.0), (40, 32, 4.0), (40, 8, 0.0), (40, 32, 1e9), (100, 16, 16.0)):
        lengths = rng.integers(1, 60, size=n).tolist()
        plans.append({"lengths": lengths, "max_batch": max_batch, "overhead": overhead,
                      "groups": [g.tolist() for g in plan_batches(lengths, max_batch, overhead)]})
    samples = ["  A\u00a0b\tc\x1c\x1fd\x85e\u3000f  ", "\ufeffBOM\u200b", "\u00c9COLE \u201cQ\u201d \u2014 \u2026",
               "\u0130stanbul \u039f\u0394\u039f\u03a3", "\ufb01 \uff21 \u2163 x\u00b2"]
    _dump(out / "units.json", {"arrays": {k: np.asarray(v).tolist() for k, v in arrays.items()},
                               "shapes": {k: list(np.asarray(v).shape) for k, v in arrays.items()},
                               "plans": plans, "normalize": [[t, normalize(t, lower=True), normalize(t, lower=False)]
                                                             for t in samples]})
    return {"plans": len(plans)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", default=ROOT / "web" / "build" / "fixtures")
    ap.add_argument("--bundle", default="default", help="model bundle directory, or 'default' (the shipped one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fuzz", type=int, default=900, help="random fuzz texts among the probes (default 900)")
    a = ap.parse_args(argv)

    import onnxruntime
    import sentencepiece

    import lwx_edge
    from lwx_edge import Encoder
    from lwx_edge.encoder import default_model_path

    path = default_model_path() if a.bundle == "default" and not Path(a.bundle).exists() else Path(a.bundle)
    enc = Encoder.load(path, backend="onnx", precision="int8", threads=1)
    tok = enc.tokenizer
    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)

    texts = probes(tok, enc.max_len, a.seed, a.fuzz)
    cases = token_cases(tok, texts)
    _dump(out / "tokens.json", {"max_len": enc.max_len, "tokenizer_sha256": tok.sha256,
                                "cases": [_surrogate_free(c) for c in cases]})
    ok = [c["error"] in (None, "empty", "no_tokens") for c in cases]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        V = np.zeros((len(cases), int(enc.dim)), dtype=np.float32)
        idx = [i for i, good in enumerate(ok) if good]
        V[idx] = enc.embed([texts[i][1] for i in idx], truncation="ignore", empty="ignore")
    np.save(out / "vectors.npy", V)

    heads = fit_heads(enc, out)
    demo = json.loads(NOTES.read_text(encoding="utf-8"))
    rng = np.random.default_rng(a.seed)
    head_info = head_fixtures(enc, heads, out, rng, demo["requests"] + [t for k, t in texts
                                                                        if k.startswith("intents-")])
    search_info = search_fixtures(out, rng, int(enc.dim))
    unit_fixtures(out, rng)
    meta = {
        "format": "lwx-edge-web-fixtures", "format_version": 1, "bundle": str(Path(path).resolve()),
        "artifact": ONNX, "max_len": enc.max_len, "dim": int(enc.dim), "identity": enc.identity()["sha256"],
        "texts": len(cases), "texts_with_error": sum(c["error"] is not None for c in cases),
        "texts_truncated": sum(c["truncated"] for c in cases), "head": head_info, "search": search_info,
        "versions": {"lwx_edge": lwx_edge.__version__, "sentencepiece": sentencepiece.__version__,
                     "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
                     "python": platform.python_version(), "unicode": unicodedata.unidata_version},
    }
    _dump(out / "meta.json", meta)
    print(json.dumps({k: meta[k] for k in ("texts", "texts_with_error", "texts_truncated", "max_len")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
