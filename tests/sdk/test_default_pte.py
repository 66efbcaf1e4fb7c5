"""The shipped default carries no ExecuTorch program (issue 38: the base install carries only what it runs);
`lwx-edge export default` rebuilds it from the int8 ONNX program into the cache, where
`Encoder.load(backend="executorch")` finds it, with the default's identity and its vectors."""
import json

import numpy as np
import pytest

from lwx_edge import Encoder
from lwx_edge.encoder import DEFAULT_MODEL
from lwx_edge.errors import BundleError
from lwx_edge.shipped import PTE, built_default_dir, cache_dir

TEXTS = ["Do you want to come with us?", "Voulez-vous venir avec nous ?", "Kommst du mit uns?",
         "¿Quieres venir con nosotros?", "Vuoi venire con noi?", "Where is the station?", "Où est la gare ?",
         "I'm waiting for someone.", "J'attends quelqu'un.", "Aspetti qualcuno?", "The file could not be saved.",
         "Impossible d'enregistrer le fichier.", "Grazie mille!", "Miam, c'était bon."]


def test_the_cache_follows_its_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("LWX_EDGE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "lwx-edge"
    monkeypatch.setenv("LWX_EDGE_CACHE", str(tmp_path / "mine"))
    onnx_sha = json.loads((DEFAULT_MODEL / "manifest.json").read_text())["files"]["model.int8.onnx"]["sha256"]
    assert built_default_dir() == tmp_path / "mine" / f"default-{onnx_sha[:12]}"  # bound to the shipped program


def test_without_the_built_copy_executorch_says_what_to_run(monkeypatch, tmp_path):
    monkeypatch.setenv("LWX_EDGE_CACHE", str(tmp_path))
    with pytest.raises(BundleError, match=r"ships its ONNX program only; build its ExecuTorch program "
                                          r"\(model.int8.pte\) once with `lwx-edge export default`") as e:
        Encoder.load(backend="executorch")
    assert "lwx-edge[executorch]" in str(e.value) and str(tmp_path) in str(e.value)
    assert Encoder.load().backend_name == "onnx"  # auto: the shipped ONNX program, as before
    with pytest.raises(BundleError, match="lwx-edge export default --format pte"):  # the package's path named
        Encoder.load(DEFAULT_MODEL, backend="executorch")


def test_the_rebuilt_program_is_the_default(default_pte):
    assert default_pte == built_default_dir() and (default_pte / PTE).is_file()
    et, onnx = Encoder.load(backend="executorch"), Encoder.load(backend="onnx")
    assert et.bundle.path == default_pte and et.artifact == PTE
    # the default's identity (its source weights), so heads and indexes made with the ONNX program accept it
    assert et.identity()["sha256"] == onnx.identity()["sha256"]
    assert et.identity()["identity_from"] == "export" and et.identity()["matches_manifest"]
    cos = np.sum(et.embed(TEXTS) * onnx.embed(TEXTS), axis=1)
    assert cos.mean() > 0.999 and cos.min() > 0.99, cos
    parity = json.loads((default_pte / "parity.json").read_text())
    entry = parity["artifacts"][PTE]
    assert entry["passed"] and entry["cos_mean"] >= 0.999 and entry["cos_min"] >= 0.99
    onnx_sha = json.loads((DEFAULT_MODEL / "manifest.json").read_text())["files"]["model.int8.onnx"]["sha256"]
    assert entry["rebuilt_from"]["file"] == "model.int8.onnx" and entry["rebuilt_from"]["sha256"] == onnx_sha
    assert entry["rebuilt_from"]["cos_to_onnx"]["cos_mean"] >= 0.999
    manifest = json.loads((default_pte / "manifest.json").read_text())
    assert manifest["artifacts"][PTE]["rebuilt_from"]["sha256"] == onnx_sha
    assert manifest["training"] == json.loads((DEFAULT_MODEL / "manifest.json").read_text())["training"]


def test_a_pickled_default_reopens_its_built_program(default_pte):
    import pickle

    et = Encoder.load(backend="executorch")
    again = pickle.loads(pickle.dumps(et))
    assert again.bundle.path == default_pte and again.artifact == PTE
    assert np.allclose(again.embed(TEXTS[:3]), et.embed(TEXTS[:3]), atol=1e-6)


def test_a_copy_never_replaces_a_directory_that_is_not_one(tmp_path):
    """--out DIR holding other files is refused before any work: the copy replaces the whole directory."""
    from typer.testing import CliRunner

    from lwx_edge.cli import app

    pytest.importorskip("executorch")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    r = CliRunner().invoke(app, ["export", "default", "--out", str(mine)])
    assert r.exit_code != 0 and "is not empty and is not a copy of the default model" in str(r.exception)
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1
    (tmp_path / "file").write_text("x")
    r = CliRunner().invoke(app, ["export", "default", "--out", str(tmp_path / "file")])
    assert "it is a file" in str(r.exception) and (tmp_path / "file").read_text() == "x"
