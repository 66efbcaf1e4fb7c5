"""Which model an encoder runs (issue 37, defect 5): the identity heads record and check names the model by its
provenance (the fp32 weights it came from), so a training bundle and its own export share it, and it is bound to
the file actually loaded, never taken from the manifest alone (``verify=False`` loads unchecked files)."""
import json
import shutil

import numpy as np
import pytest
from conftest import make_tiny_bundle

from hostile import rehash
from lwx_edge import Encoder
from lwx_edge.atomic import sha256_file
from lwx_edge.bundle import Bundle
from lwx_edge.heads import HeadError, LogisticHead, load_head
from lwx_edge.heads.persistence import encoder_identity

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

TEXTS = ["the cat", "the dog", "a red car", "a green car", "le chat", "le chien", "music", "la musique"]
LABELS = ["a", "a", "b", "b", "a", "a", "c", "c"]


def another_model(path, vocab: int = 160, dim: int = 32) -> None:
    """An ONNX encoder of another model (mean of random token vectors) with an lwx-edge model's inputs and output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.random.default_rng(7).normal(size=(vocab, dim)).astype(np.float32), "table")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["tokens"]),
         helper.make_node("ReduceMean", ["tokens", "axes"], ["sentence_embedding"], keepdims=0)],
        "another", [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
                    for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", dim])], [table, axes])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))


@pytest.fixture(scope="module")
def exported(tiny_corpus, tmp_path_factory):
    """A training bundle, its own int8 ONNX export (a copy), and another model's ONNX file."""
    from lwx_edge.export import export_bundle

    root = tmp_path_factory.mktemp("identity")
    train = make_tiny_bundle(tiny_corpus, root / "train")
    export_bundle(train, formats=("onnx",), int8=True, out=root / "export")
    other = root / "other"
    shutil.copytree(root / "export", other)
    (other / "model.safetensors").unlink()
    manifest = json.loads((other / "manifest.json").read_text())
    del manifest["files"]["model.safetensors"]
    (other / "manifest.json").write_text(json.dumps(manifest))
    another_model(other / "model.int8.onnx")
    rehash(other)
    return {"train": train, "export": root / "export", "other": other}


def test_a_training_bundle_and_its_export_are_one_model(exported, tmp_path):
    torch_enc = Encoder.load(exported["train"], backend="torch")
    onnx_enc = Encoder.load(exported["export"], backend="onnx")
    weights = Bundle.load(exported["train"]).sha256("model.safetensors")
    a, b = encoder_identity(torch_enc), encoder_identity(onnx_enc)
    assert a["sha256"] == b["sha256"] == weights
    assert (a["identity_from"], b["identity_from"]) == ("weights", "export")
    assert b["artifact_sha256"] == sha256_file(exported["export"] / "model.int8.onnx")
    # a head fitted on the training bundle's torch backend works with the int8 export, and the other way round
    LogisticHead(encoder=torch_enc, C=1.0).fit(TEXTS, LABELS).save(tmp_path / "torch-head")
    head = load_head(tmp_path / "torch-head", encoder=onnx_enc)
    assert head.predict(["the cat"]).shape == (1,)
    LogisticHead(encoder=onnx_enc, C=1.0).fit(TEXTS, LABELS).save(tmp_path / "onnx-head")
    load_head(tmp_path / "onnx-head", encoder=torch_enc)
    # another model is still refused
    with pytest.raises(HeadError, match="fitted on another encoder \\(model differs"):
        load_head(tmp_path / "torch-head", encoder=Encoder.load(exported["other"], backend="onnx"))


def test_a_swapped_model_is_refused_even_unverified(exported, tmp_path):
    """verify=False: the model file is hashed when a head asks which model it is, not read off the manifest."""
    onnx_enc = Encoder.load(exported["export"], backend="onnx")
    LogisticHead(encoder=onnx_enc, C=1.0).fit(TEXTS, LABELS).save(tmp_path / "head")
    swapped = tmp_path / "swapped"
    shutil.copytree(exported["export"], swapped)
    (swapped / "model.int8.onnx").unlink()
    shutil.copyfile(exported["other"] / "model.int8.onnx", swapped / "model.int8.onnx")

    enc = Encoder.load(swapped, backend="onnx", verify=False)  # loads: the files are not checked
    assert not np.allclose(enc.embed(TEXTS), onnx_enc.embed(TEXTS), atol=1e-3)  # another model's vectors
    assert "model.int8.onnx" not in enc.bundle._hashes  # nothing hashed at load: lazily, when asked
    ident = encoder_identity(enc)
    assert ident["matches_manifest"] is False and ident["identity_from"] == "file"
    assert ident["sha256"] == sha256_file(exported["other"] / "model.int8.onnx")
    with pytest.raises(HeadError, match="fitted on another encoder \\(model differs.*model.int8.onnx is not the "
                                        "file its bundle's manifest lists"):
        load_head(tmp_path / "head", encoder=enc)
    head = load_head(tmp_path / "head")  # without an encoder, then given one: refused when it embeds texts
    head.encoder = enc
    with pytest.raises(HeadError, match="fitted on another encoder"):
        head.predict(["the cat"])
    # the manifest re-hashed to vouch for the swap: parity.json's record of the export no longer matches the
    # file, so the model is named by the file alone, and the head is refused too
    rehash(swapped)
    enc = Encoder.load(swapped, backend="onnx")
    assert encoder_identity(enc)["identity_from"] == "file"
    with pytest.raises(HeadError, match="fitted on another encoder \\(model differs"):
        load_head(tmp_path / "head", encoder=enc)


def test_an_unverified_untouched_bundle_has_the_verified_identity(exported, tmp_path):
    checked = encoder_identity(Encoder.load(exported["export"], backend="onnx"))
    enc = Encoder.load(exported["export"], backend="onnx", verify=False)
    assert encoder_identity(enc) == {**checked, "bundle": str(exported["export"])}
    # the file changed after the load (same size): hashed again, and no longer the model the manifest names
    path = exported["export"] / "model.int8.onnx"
    copy = tmp_path / "copy"
    shutil.copytree(exported["export"], copy)
    enc = Encoder.load(copy, backend="onnx", verify=False)
    assert encoder_identity(enc)["matches_manifest"] is True
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    (copy / "model.int8.onnx").write_bytes(bytes(data))
    assert encoder_identity(enc)["matches_manifest"] is False


def test_heads_fitted_before_provenance_still_load(exported, tmp_path):
    """A head saved by an older lwx-edge recorded the model file it ran (its sha256) as the encoder's."""
    enc = Encoder.load(exported["export"], backend="onnx")
    LogisticHead(encoder=enc, C=1.0).fit(TEXTS, LABELS).save(tmp_path / "head")
    meta = json.loads((tmp_path / "head" / "head.json").read_text())
    onnx_sha = sha256_file(exported["export"] / "model.int8.onnx")
    meta["encoder"] = {k: v for k, v in meta["encoder"].items()
                       if k not in ("artifact_sha256", "identity_from", "matches_manifest")}
    meta["encoder"].update(sha256=onnx_sha, model_files={"model.int8.onnx": onnx_sha})
    (tmp_path / "head" / "head.json").write_text(json.dumps(meta))
    load_head(tmp_path / "head", encoder=enc)


def test_an_index_refuses_a_swapped_model_even_unverified_and_accepts_the_same_model_by_provenance(exported,
                                                                                                  tmp_path):
    from lwx_edge import Index
    from lwx_edge.index import IndexFileError

    onnx_enc = Encoder.load(exported["export"], backend="onnx")
    with Index.open(tmp_path / "notes.lwxindex", onnx_enc, create=True) as index:
        index.add([f"n{i}" for i in range(len(TEXTS))], TEXTS)
    # the training bundle's torch backend is the same model (the export records the weights it came from)
    with Index.open(tmp_path / "notes.lwxindex", Encoder.load(exported["train"], backend="torch")) as index:
        assert index.search("the cat", top_k=1)[0].id == "n0"
    swapped = tmp_path / "swapped"
    shutil.copytree(exported["export"], swapped)
    (swapped / "model.int8.onnx").unlink()
    shutil.copyfile(exported["other"] / "model.int8.onnx", swapped / "model.int8.onnx")
    enc = Encoder.load(swapped, backend="onnx", verify=False)
    assert enc.identity()["matches_manifest"] is False
    with pytest.raises(IndexFileError, match="built by another encoder \\(model differs"):
        Index.open(tmp_path / "notes.lwxindex", enc)
