"""Export (issue #4): real ExecuTorch/ONNX exports of a tiny bundle, fp32 and int8, with their parity report.

No mocks: a tiny SentenceEncoder with random weights and a real SentencePiece model are saved as a bundle,
exported once per module (pte+onnx, fp32 then int8), and the artefacts are run with onnxruntime and the
ExecuTorch Python runtime. The .pte parts skip (with the reason) when executorch is not importable.
"""
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lwx_edge.atomic import sha256_file
from lwx_edge.bundle import Bundle, write_manifest
from lwx_edge.errors import BundleError, InputError
from lwx_edge.tokenizer import Tokenizer, train_tokenizer
from lwx_edge.training.checkpoint import load_encoder, save_bundle
from lwx_edge.training.model import ModelConfig, SentenceEncoder

REPO = Path(__file__).resolve().parents[2]
MAX_LEN = 32

export_mod = pytest.importorskip("lwx_edge.export")
from lwx_edge._quiet import python_quiet  # noqa: E402
from lwx_edge.export import ExportError, ParityError, export_bundle  # noqa: E402
from lwx_edge.export import executorch as et_mod  # noqa: E402
from lwx_edge.export import onnx as onnx_mod  # noqa: E402

with python_quiet():  # import-time deprecation noise of executorch/torch.jit
    HAS_ONNX, ONNX_WHY = onnx_mod.available()
    HAS_ET, ET_WHY = et_mod.available()
if not HAS_ONNX:
    pytest.skip(f"ONNX export unavailable: {ONNX_WHY}", allow_module_level=True)
needs_et = pytest.mark.skipif(not HAS_ET, reason=f"ExecuTorch unavailable, .pte parts skipped: {ET_WHY}")
FORMATS = ("pte", "onnx") if HAS_ET else ("onnx",)

WORDS = {
    "en": "the a cat dog house file network server window update music book city water train coffee is was "
          "big small new old fast slow green red open closed saved deleted my your our and or but with".split(),
    "fr": "le la un une chat chien maison fichier réseau serveur fenêtre mise jour musique livre ville eau train "
          "café est était grand petit nouveau vieux rapide lent vert rouge ouvert fermé et ou mais avec".split(),
    "de": "der die das ein eine katze hund haus datei netz server fenster musik buch stadt wasser zug kaffee "
          "ist war groß klein neu alt schnell langsam grün rot offen geschlossen und oder aber mit".split(),
    "es": "el la un una gato perro casa archivo red servidor ventana música libro ciudad agua tren café es "
          "era grande pequeño nuevo viejo rápido lento verde rojo abierto cerrado y o pero con".split(),
    "it": "il la un una gatto cane casa file rete server finestra musica libro città acqua treno caffè è "
          "era grande piccolo nuovo vecchio veloce lento verde rosso aperto chiuso e o ma con".split(),
}


def generated_sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = WORDS[list(WORDS)[i % 5]]
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))).capitalize() + ".")
    return out


def make_bundle(path: Path, tok_path: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    enc = SentenceEncoder(ModelConfig(vocab_size=300, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN)).eval()
    return save_bundle(enc, tok_path, path, {"note": "test_export tiny bundle"})


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
    root = tmp_path_factory.mktemp("exp_tok")
    return train_tokenizer(generated_sentences(600), root / "tok.model", vocab_size=300, progress=False)


@pytest.fixture(scope="module")
def source_bundle(tiny_tokenizer, tmp_path_factory):
    """An un-exported tiny bundle (never modified by the tests)."""
    return make_bundle(tmp_path_factory.mktemp("exp_src") / "bundle", tiny_tokenizer)


@pytest.fixture(scope="module")
def exported(source_bundle, tmp_path_factory):
    """A copy of the tiny bundle, exported fp32 then int8 (pte + onnx) in place: (dir, fp32 report, int8 report)."""
    d = tmp_path_factory.mktemp("exp_out") / "bundle"
    shutil.copytree(source_bundle, d)
    logs = []
    r32 = export_bundle(d, formats=FORMATS, int8=False, log=logs.append)
    r8 = export_bundle(d, formats=FORMATS, int8=True, log=logs.append)
    assert any("exporting" in m for m in logs)
    return d, r32, r8


def names(int8: bool) -> list[str]:
    return [export_mod.artifact_name(f, int8) for f in FORMATS]


def eager(bundle_dir: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    enc = load_encoder(Bundle.load(bundle_dir))
    with torch.no_grad():
        return enc(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()


def random_batch(B: int, T: int, seed: int = 0, vocab: int = 300):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab, size=(B, T), dtype=np.int64)
    mask = np.ones((B, T), dtype=np.int64)
    for i in range(1, B):  # varied lengths: right padding
        n = int(rng.integers(1, T + 1))
        ids[i, n:] = 0
        mask[i, n:] = 0
    return ids, mask


def snapshot(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): sha256_file(p) for p in sorted(d.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------------------- packaging

def test_packaging_lists_every_package():
    """pyproject lists packages explicitly: none may be forgotten, and none is mapped from elsewhere."""
    import tomllib

    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in cfg
    listed = set(cfg["packages"])
    on_disk = {"lwx_edge." + p.relative_to(REPO / "lwx_edge").as_posix().replace("/", ".")
               for p in (REPO / "lwx_edge").rglob("*") if p.is_dir() and p.name != "__pycache__"
               and any(p.glob("*.py"))} | {"lwx_edge"}
    assert on_disk <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(on_disk - listed)}"


def test_import_is_light_and_resolves_to_the_package():
    code = ("import sys, lwx_edge.export as e; assert 'torch' not in sys.modules, 'torch imported'; "
            "print(e.__file__)")
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == (REPO / "lwx_edge" / "export" / "__init__.py").resolve()


# ----------------------------------------------------------------------------------------- parity numbers

def test_fp32_parity(exported):
    _, r32, _ = exported
    assert sorted(r32["artifacts"]) == sorted(names(False))
    for name, e in r32["artifacts"].items():
        assert e["passed"], (name, e["failures"])
        assert e["cos_min"] >= 0.99999, name
        assert e["cos_mean"] >= 0.99999, name
        assert e["max_abs_diff"] <= 1e-4, name
        assert e["batch_invariance"] <= 1e-5, name
        assert e["nn_top1_agreement"] == 1.0, name
        assert len(e["shapes"]) >= 3
    assert r32["batch_sizes"] == [1, 4, 16]
    assert r32["reference"]["batch_invariance"] <= 1e-5


def test_int8_parity_and_size(exported):
    d, r32, r8 = exported
    assert sorted(r8["artifacts"]) == sorted(names(True))
    for name, e in r8["artifacts"].items():
        assert e["passed"], (name, e["failures"])
        assert e["cos_mean"] >= 0.999, name
        assert e["cos_min"] >= 0.99, name
        assert e["nn_top1_agreement"] >= 0.9, name
        assert e["batch_invariance_cos"] <= 1e-6, name  # per-token activation scales
        fp32_name = name.replace(".int8", "")
        assert (d / name).stat().st_size < 0.6 * (d / fp32_name).stat().st_size  # tiny model: scales dominate more


def test_parity_json_and_printed_table(exported):
    d, r32, r8 = exported
    parity = json.loads((d / "parity.json").read_text())
    assert sorted(parity["artifacts"]) == sorted(names(False) + names(True))  # merged across the two runs
    for name, e in parity["artifacts"].items():
        assert e["sha256"] == sha256_file(d / name)
    assert parity["probe"]["languages"] == ["en", "fr", "de", "es", "it"]
    assert parity["probe"]["at_max_len"] >= 1
    table = export_mod.parity.format_table(r8)
    for name in names(True):
        assert name in table
    assert "cos mean" in table and "CppSPTokenizer" in table


def test_manifest_lists_artifacts_and_bundle_still_verifies(exported):
    d, _, _ = exported
    b = Bundle.load(d)  # verifies every sha256
    m = b.manifest
    assert m["training"] == {"note": "test_export tiny bundle"}
    for name in names(False) + names(True):
        assert m["files"][name]["sha256"] == sha256_file(d / name)
        a = m["artifacts"][name]
        assert a["format"] == ("executorch" if name.endswith(".pte") else "onnx")
        assert a["precision"] == ("int8" if ".int8." in name else "fp32")
        assert a["max_len"] == MAX_LEN
        assert a["inputs"] == {"input_ids": "int64 [batch, seq]", "attention_mask": "int64 [batch, seq], 1 = token"}
        assert a["output"] == {"sentence_embedding": "float32 [batch, 64]"}
        assert a["tokenizer"] == "tokenizer.model"
        assert "CppSPTokenizer" in a["tokenizer_runtime"]
        assert a["quantization"]
        if name.endswith(".pte"):
            assert a["max_batch"] == 16 and a["arena_bytes"] > 0
    assert "parity.json" in m["files"]
    assert not [p for p in d.iterdir() if p.name.startswith(".")], "temporary files left behind"


def test_tokenizer_ids_match_cpp_sentencepiece(exported, tiny_tokenizer):
    _, r32, _ = exported
    tp = r32["tokenizer_parity"]
    pytest.importorskip("pytorch_tokenizers")
    assert tp["status"] == "ok", tp
    assert tp["identical"] == tp["texts"] >= 50
    assert "normali" in tp["note"]
    # and independently of the report
    from pytorch_tokenizers import CppSPTokenizer

    from lwx_edge.text import normalize

    cpp = CppSPTokenizer()
    cpp.load(str(tiny_tokenizer))
    tok = Tokenizer(tiny_tokenizer, max_len=10_000)
    for text in generated_sentences(50, seed=7) + ["Ça coûte 12,50 € – d’accord ?", "ÉCOLE  Straße\tcafé"]:
        assert list(cpp.encode(normalize(text), 0, 0)) == tok.encode_one(text)


# ----------------------------------------------------------------------------------------- running the files

def test_onnx_runs_at_several_shapes(exported):
    import onnxruntime as ort

    d, _, _ = exported
    for name in ("model.onnx", "model.int8.onnx"):
        s = ort.InferenceSession(str(d / name), providers=["CPUExecutionProvider"])
        assert [(i.name, i.type) for i in s.get_inputs()] == [("input_ids", "tensor(int64)"),
                                                              ("attention_mask", "tensor(int64)")]
        assert [o.name for o in s.get_outputs()] == ["sentence_embedding"]
        assert s.get_modelmeta().custom_metadata_map["lwx_edge.max_len"] == str(MAX_LEN)
        for B, T in [(1, 1), (1, 2), (3, 7), (8, MAX_LEN), (40, 5)]:
            ids, mask = random_batch(B, T, seed=B * 100 + T)
            out = s.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]
            ref = eager(d, ids, mask)
            assert out.shape == (B, 64) and out.dtype == np.float32
            if name == "model.onnx":
                assert np.abs(out - ref).max() <= 1e-4
            cos = (out * ref).sum(1) / np.linalg.norm(out, axis=1) / np.linalg.norm(ref, axis=1)
            assert cos.min() >= 0.99, (name, B, T)


def test_int8_onnx_quantizes_activations_per_token_with_or_without_graph_optimisation(exported):
    """No per-batch DynamicQuantizeLinear is left; onnxruntime's optimiser (which fuses MatMulInteger chains)
    leaves the per-token scales alone: optimised and unoptimised sessions agree, in any batch."""
    import onnx
    import onnxruntime as ort

    d, _, _ = exported
    ops = [n.op_type for n in onnx.load(str(d / "model.int8.onnx")).graph.node]
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops
    assert ops.count("MatMulIntegerToFloat") == 6 * 2  # q, k, v, out and the 2 FFN maps of each of 2 layers
    ids, mask = random_batch(6, 9, seed=3)
    runs = []
    for level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        s = ort.InferenceSession(str(d / "model.int8.onnx"), so, providers=["CPUExecutionProvider"])
        batch = s.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        n = mask.sum(1)
        alone = np.concatenate([s.run(None, {"input_ids": ids[i:i + 1, :k], "attention_mask": mask[i:i + 1, :k]})[0]
                                for i, k in enumerate(n)])
        assert np.abs(batch - alone).max() <= 1e-5 * np.abs(alone).max()
        runs.append(batch)
    assert np.abs(runs[0] - runs[1]).max() <= 1e-5 * np.abs(runs[1]).max()


def test_per_row_rewrite_refuses_a_graph_it_does_not_know():
    from onnx import TensorProto, helper

    from lwx_edge.export.quantize import per_row_activations

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    q = helper.make_tensor_value_info("q", TensorProto.UINT8, [2, 4])
    graph = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
                               helper.make_node("Identity", ["q"], ["y"])], "g", [x], [q])
    with pytest.raises(ValueError, match="without a constant weight"):
        per_row_activations(helper.make_model(graph))


@needs_et
def test_onnx_backend_keeps_layernorm_unfused(exported, tmp_path):
    """The SDK's sessions skip onnxruntime's slow SkipLayerNormalization fusion; plain sessions would use it."""
    import onnx
    import onnxruntime as ort

    from lwx_edge.runtime.onnx_backend import DISABLED_OPTIMIZERS

    d, _, _ = exported

    def fused_ops(disabled):
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
        ort.InferenceSession(str(d / "model.int8.onnx"), so, providers=["CPUExecutionProvider"],
                             disabled_optimizers=disabled)
        return {n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node}

    assert "SkipLayerNormalization" in fused_ops([])
    ops = fused_ops(DISABLED_OPTIMIZERS)
    assert "SkipLayerNormalization" not in ops and "LayerNormalization" in ops


def test_pte_runs_standalone_at_dynamic_shapes(exported):
    """Plain ExecuTorch runtime (no lwx_edge.export): fp32 and int8, dynamic batch and length."""
    import executorch.kernels.quantized  # noqa: F401  (embedding_byte)
    from executorch.runtime import Runtime

    d, _, _ = exported
    rt = Runtime.get()
    for name in ("model.pte", "model.int8.pte"):
        prog = rt.load_program(str(d / name))
        assert prog.load_method("get_max_batch").execute([])[0] == 16
        assert prog.load_method("get_max_seq_len").execute([])[0] == MAX_LEN
        method = prog.load_method("forward")
        for B, T in [(1, 1), (2, 2), (5, 9), (16, MAX_LEN)]:
            ids, mask = random_batch(B, T, seed=B + T)
            out = method.execute([torch.from_numpy(ids), torch.from_numpy(mask)])[0].numpy()
            ref = eager(d, ids, mask)
            assert out.shape == (B, 64)
            if name == "model.pte":
                assert np.abs(out - ref).max() <= 1e-4
            cos = (out * ref).sum(1) / np.linalg.norm(out, axis=1) / np.linalg.norm(ref, axis=1)
            assert cos.min() >= 0.99, (name, B, T)


def test_onnx_loads_without_lwx_edge(exported):
    """The SDK contract: the artefacts need only their runtime, not lwx_edge(.export)."""
    d, _, _ = exported
    code = ("import sys; sys.modules['lwx_edge'] = None; import numpy as np, onnxruntime as ort; "
            f"s = ort.InferenceSession({str(d / 'model.int8.onnx')!r}, providers=['CPUExecutionProvider']); "
            "ids = np.array([[5, 6, 7, 0]], dtype=np.int64); m = np.array([[1, 1, 1, 0]], dtype=np.int64); "
            "print(s.run(['sentence_embedding'], {'input_ids': ids, 'attention_mask': m})[0].shape)")
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(1, 64)"


def test_text_longer_than_max_len_is_truncated_and_reported(exported):
    import onnxruntime as ort

    d, r32, _ = exported
    probe = r32["probe"]
    assert probe["max_len"] == MAX_LEN and probe["tokens_max"] == MAX_LEN
    over = [t for t in probe["truncated"] if t["index"] == probe["texts"] - 1]  # the over-length probe text
    assert over and over[0]["tokens_before"] > MAX_LEN and over[0]["tokens_kept"] == MAX_LEN
    tok = Tokenizer(d / "tokenizer.model", max_len=MAX_LEN)
    enc = tok.encode(["short one", " ".join(generated_sentences(30))])
    assert enc.truncated == [1] and enc.lengths_before[1] > MAX_LEN and len(enc.ids[1]) == MAX_LEN
    ids, mask = Tokenizer.pad(enc.ids)
    s = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
    out = s.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    assert np.isfinite(out).all() and out.shape == (2, 64)


# ----------------------------------------------------------------------------------------- errors

def test_bundle_without_weights(source_bundle, tmp_path):
    d = tmp_path / "noweights"
    shutil.copytree(source_bundle, d)
    (d / "model.safetensors").unlink()
    write_manifest(d, {"training": {}})
    with pytest.raises(BundleError, match="model.safetensors"):
        export_bundle(d, formats="onnx")
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "manifest.json", "tokenizer.model"]


def test_corrupt_and_mismatched_bundles(source_bundle, tmp_path):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(source_bundle, corrupt)
    raw = bytearray((corrupt / "model.safetensors").read_bytes())
    raw[-5] ^= 0xFF
    (corrupt / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(BundleError, match="corrupt"):
        export_bundle(corrupt, formats="onnx")

    with pytest.raises(BundleError):
        export_bundle(tmp_path / "does-not-exist", formats="onnx")

    mismatched = tmp_path / "mismatched"  # config says d_model 32, weights are 64: manifest is consistent
    shutil.copytree(source_bundle, mismatched)
    cfg = json.loads((mismatched / "config.json").read_text())
    cfg["model"]["d_model"] = cfg["embedding_dim"] = 32
    (mismatched / "config.json").write_text(json.dumps(cfg))
    write_manifest(mismatched, {"training": {}})
    with pytest.raises(BundleError, match="do not match"):
        export_bundle(mismatched, formats="onnx")

    small_vocab = tmp_path / "small_vocab"  # tokenizer has more pieces than the model's table
    shutil.copytree(source_bundle, small_vocab)
    cfg = json.loads((small_vocab / "config.json").read_text())
    cfg["model"]["vocab_size"] = 100
    (small_vocab / "config.json").write_text(json.dumps(cfg))
    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(**cfg["model"]))
    save_bundle(enc, source_bundle / "tokenizer.model", small_vocab)
    with pytest.raises(BundleError, match="tokenizer"):
        export_bundle(small_vocab, formats="onnx")


def test_bad_arguments(source_bundle):
    with pytest.raises(InputError, match="format"):
        export_bundle(source_bundle, formats="tflite")
    with pytest.raises(InputError, match="max_len"):
        export_bundle(source_bundle, formats="onnx", max_len=MAX_LEN + 1)
    with pytest.raises(InputError, match="max_batch"):
        export_bundle(source_bundle, formats="onnx", max_batch=0)
    assert "model.onnx" not in os.listdir(source_bundle)


def test_unwritable_output_dir(source_bundle, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(ExportError, match="cannot write"):
        export_bundle(source_bundle, formats="onnx", out=blocker / "out")
    with pytest.raises(ExportError, match="cannot write"):
        export_bundle(source_bundle, formats="onnx", out=blocker)
    not_empty = tmp_path / "not_empty"
    not_empty.mkdir()
    (not_empty / "x.txt").write_text("x")
    with pytest.raises(ExportError, match="not empty"):
        export_bundle(source_bundle, formats="onnx", out=not_empty)
    if os.geteuid() != 0:  # root ignores permission bits
        ro = tmp_path / "ro"
        shutil.copytree(source_bundle, ro)
        before = snapshot(ro)
        os.chmod(ro, 0o555)
        try:
            with pytest.raises(ExportError, match="cannot write"):
                export_bundle(ro, formats="onnx")
        finally:
            os.chmod(ro, 0o755)
        assert snapshot(ro) == before


def test_work_directories_of_killed_exports_are_removed(tmp_path, monkeypatch):
    import tempfile

    from lwx_edge.export import _remove_stale_work_dirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead, alive, other = (tmp_path / "lwx-export-999999999-abc", tmp_path / f"lwx-export-{os.getpid()}-def",
                          tmp_path / "lwx-export-xyz")
    for d in (dead, alive, other):
        d.mkdir()
    _remove_stale_work_dirs()
    assert not dead.exists() and alive.exists() and other.exists()


def test_int8_below_threshold_fails_and_leaves_nothing(exported, tmp_path):
    d, _, _ = exported
    before = snapshot(d)
    with pytest.raises(ParityError, match=r"cosine mean .* < 1\.0") as ei:  # int8 is never exact
        export_bundle(d, formats=FORMATS, int8=True, min_cos_mean=1.0)
    assert snapshot(d) == before  # nothing replaced, nothing added (no temp files either)
    assert set(ei.value.report["artifacts"]) == set(names(True))
    assert not any(e["passed"] for e in ei.value.report["artifacts"].values())
    out = tmp_path / "new_copy"
    with pytest.raises(ParityError):
        export_bundle(d, formats="onnx", int8=True, min_cos_min=1.0, out=out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ----------------------------------------------------------------------------------------- CLI

def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "lwx_edge", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


def test_cli_export_to_out_copy_then_int8_into_same_copy(source_bundle, tmp_path):
    out = tmp_path / "edge"
    r = _cli("export", source_bundle, "--format", "onnx", "--out", out, "--max-len", 24)
    assert r.returncode == 0, r.stderr
    assert "model.onnx" in r.stdout and "cos mean" in r.stdout and "pass" in r.stdout
    assert "LeafSpec" not in r.stderr and "torchvision" not in r.stderr  # exporter noise filtered (lwx_edge._quiet)
    r = _cli("export", source_bundle, "--format", "onnx", "--int8", "--out", out, "--max-len", 24)
    assert r.returncode == 0, r.stderr
    b = Bundle.load(out)
    assert {"model.onnx", "model.int8.onnx"} <= set(b.manifest["artifacts"])
    assert b.manifest["artifacts"]["model.onnx"]["max_len"] == 24
    assert "model.onnx" not in os.listdir(source_bundle)  # the source bundle is untouched


def test_cli_errors_are_clear(source_bundle, tmp_path):
    r = _cli("export", tmp_path / "missing")
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr
    r = _cli("export", source_bundle, "--format", "onnx", "--int8", "--min-cos-mean", "1.0",
             "--out", tmp_path / "o")
    assert r.returncode == 2 and "parity check failed" in r.stderr and "Traceback" not in r.stderr
    assert "FAIL" in r.stdout
    assert not (tmp_path / "o").exists()
    for value in ("nan", "1.1", "-2"):  # a nan bound passed every export; one above 1 failed only at the end
        r = _cli("export", source_bundle, "--format", "onnx", "--int8", "--min-cos-min", value, "--out", tmp_path / "o")
        assert r.returncode == 2 and "min_cos_min must be a cosine between -1 and 1" in r.stderr, r.stderr
        assert not (tmp_path / "o").exists()


def _collapsed_bundle(tok_path: Path, path: Path) -> Path:
    """A tiny bundle whose last LayerNorm has gain 0: every text gets its bias, one vector (a collapsed run)."""
    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(vocab_size=300, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN)).eval()
    with torch.no_grad():
        enc.blocks[-1].ln2.weight.zero_()
        enc.blocks[-1].ln2.bias.normal_()
    return save_bundle(enc, tok_path, path, {"note": "collapsed"})


def test_a_collapsed_model_is_refused_with_what_it_means_unless_allowed(tiny_tokenizer, source_bundle, tmp_path):
    from lwx_edge.collapse import CollapsedModelError, check

    d = _collapsed_bundle(tiny_tokenizer, tmp_path / "collapsed")
    before = snapshot(d)
    with pytest.raises(CollapsedModelError, match=r"collapsed: unrelated probe texts get nearly the same vector "
                                                   r"\(mean cosine 1\.000"):
        export_bundle(d, formats="onnx", int8=True)
    assert snapshot(d) == before
    r = _cli("export", d, "--format", "onnx", "--out", tmp_path / "o")
    assert r.returncode == 2 and "the model is collapsed" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()
    report = export_bundle(d, formats="onnx", out=tmp_path / "anyway", allow_collapsed=True)
    assert report["artifacts"]["model.onnx"]["passed"]
    # the healthy random bundle passes the same check, far below the limit
    enc = load_encoder(Bundle.load(source_bundle))
    tok = Bundle.load(source_bundle).tokenizer()

    def embed(texts):
        from lwx_edge.tokenizer import Tokenizer

        ids, mask = Tokenizer.pad(tok.encode(list(texts)).ids)
        with torch.no_grad():
            return enc(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()

    assert check(embed, "healthy") < 0.9
    with pytest.raises(CollapsedModelError, match="x: the model gives non-finite vectors"):
        check(lambda texts: np.full((len(texts), 4), np.nan), "x")


def test_a_4bit_token_table_exports_exactly_and_reads_back(tiny_tokenizer, tmp_path):
    from lwx_edge.training.model import snap_to_int4
    from lwx_edge.training.transfer import dequantize_onnx

    torch.manual_seed(1)
    enc = SentenceEncoder(ModelConfig(vocab_size=300, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN,
                                      table_bits=4)).eval()
    d = save_bundle(enc, tiny_tokenizer, tmp_path / "b4", {})
    report = export_bundle(d, formats=FORMATS, int8=True)
    for name, e in report["artifacts"].items():
        assert e["passed"] and e["cos_mean"] >= 0.999 and e["cos_min"] >= 0.99, (name, e)
    table = snap_to_int4(enc.tok.weight).numpy()  # what the encoder reads
    back = dequantize_onnx(d / "model.int8.onnx")["tok.weight"]
    assert np.array_equal(back, table)  # the 4-bit table is stored exactly
    # 4 bits a value: the weights take less room than with the same model's 8-bit table (a tiny model's
    # file is mostly node metadata, so the initializers are compared)
    enc8 = SentenceEncoder(ModelConfig(**{**enc.config.to_dict(), "table_bits": 8})).eval()
    enc8.load_state_dict(enc.state_dict())
    d8 = save_bundle(enc8, tiny_tokenizer, tmp_path / "b8", {})
    export_bundle(d8, formats=("onnx",), int8=True)

    def weight_bytes(path):
        import onnx
        from onnx import numpy_helper

        return sum(numpy_helper.to_array(t).nbytes for t in onnx.load(str(path)).graph.initializer)

    smaller = weight_bytes(d8 / "model.int8.onnx") - weight_bytes(d / "model.int8.onnx")
    assert 300 * 64 * 0.4 < smaller < 300 * 64 * 0.5  # half the 8-bit table's 19.2 kB, less the fp16 scales


def test_the_fp32_artefact_of_a_4bit_table_holds_the_rows_as_floats(tiny_tokenizer, tmp_path):
    from lwx_edge.export.graph import ExportEncoder, Int4Embedding
    from lwx_edge.training.model import snap_to_int4

    torch.manual_seed(2)
    enc = SentenceEncoder(ModelConfig(vocab_size=300, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN,
                                      table_bits=4)).eval()
    fp32, packed = ExportEncoder(enc, MAX_LEN), ExportEncoder(enc, MAX_LEN, packed_table=True)
    assert isinstance(packed.tok, Int4Embedding) and isinstance(fp32.tok, torch.nn.Embedding)
    assert torch.equal(fp32.tok.weight, snap_to_int4(enc.tok.weight))
    ids, mask = (torch.from_numpy(a) for a in random_batch(3, 9))
    with torch.no_grad():
        want = enc(ids, mask)
        assert torch.allclose(fp32(ids, mask), want, atol=1e-5) and torch.allclose(packed(ids, mask), want, atol=1e-5)


def test_a_factorised_4bit_table_exports_and_reads_back(tiny_tokenizer, tmp_path):
    from lwx_edge.training.model import snap_to_int4
    from lwx_edge.training.transfer import dequantize_onnx

    torch.manual_seed(3)
    cfg = ModelConfig(vocab_size=300, d_model=64, n_heads=4, d_ff=128, max_len=MAX_LEN, table_bits=4, table_rank=32)
    enc = SentenceEncoder(cfg).eval()
    with torch.no_grad():  # distinct LayerNorms (the exporter shares equal constants, as a fresh model's are)
        for name, p in enc.named_parameters():
            if "ln" in name:
                p.add_(torch.randn_like(p) * 0.1)
    d = save_bundle(enc, tiny_tokenizer, tmp_path / "r32", {})
    report = export_bundle(d, formats=FORMATS, int8=True)
    for name, e in report["artifacts"].items():
        assert e["passed"] and e["cos_mean"] >= 0.999 and e["cos_min"] >= 0.99, (name, e)
    back = dequantize_onnx(d / "model.int8.onnx")
    assert set(back) == set(enc.state_dict()) and back["tok.weight"].shape == (300, 32)
    assert np.array_equal(back["tok.weight"], snap_to_int4(enc.tok.weight).numpy())  # rows stored exactly
    # the map stays fp32 in the int8 ONNX (its 7-bit form cost the most parity of any layer) and reads back exactly
    assert np.array_equal(back["tok_proj.weight"], enc.tok_proj.weight.detach().numpy())
    assert np.array_equal(back["tok_proj.bias"], enc.tok_proj.bias.detach().numpy())
    assert "(tok_proj) kept fp32" in report["manifest_artifacts"]["model.int8.onnx"]["quantization"]
    import onnx

    graph = onnx.load(str(d / "model.int8.onnx")).graph
    consts = {t.name for t in graph.initializer}
    fp32_weights = [n.input[1] for n in graph.node if n.op_type == "MatMul" and n.input[1] in consts]
    assert len(fp32_weights) == 1  # the map; every other weight matrix is int8
    again = SentenceEncoder(cfg).eval()
    assert again.load_weights(back) == 1.0
    ids, mask = (torch.from_numpy(a) for a in random_batch(3, 9))
    with torch.no_grad():
        cos = torch.nn.functional.cosine_similarity(again(ids, mask), enc(ids, mask))
    assert cos.min() > 0.999
