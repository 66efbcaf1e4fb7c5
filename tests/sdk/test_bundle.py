"""The bundle: written atomically, verified on load, refused with a clear error when damaged."""
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from lwx_edge import Encoder
from lwx_edge.atomic import atomic_file, recover_dir
from lwx_edge.bundle import Bundle
from lwx_edge.errors import BundleError, InputError
from lwx_edge.training.checkpoint import save_bundle
from lwx_edge.training.model import ModelConfig, SentenceEncoder


@pytest.fixture(scope="module")
def bundle_dir(tiny_corpus, tmp_path_factory):
    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(vocab_size=160, d_model=32, n_heads=4, d_ff=64, max_len=12)).eval()
    out = tmp_path_factory.mktemp("b") / "bundle"
    save_bundle(enc, tiny_corpus["tokenizer"], out, {"note": "test"})
    return out


def copy(bundle_dir, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(bundle_dir, dst)
    return dst


def test_bundle_layout_and_manifest(bundle_dir):
    names = sorted(p.name for p in bundle_dir.iterdir())
    assert names == ["config.json", "manifest.json", "model.safetensors", "tokenizer.model"]
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert set(manifest["files"]) == {"config.json", "model.safetensors", "tokenizer.model"}
    assert all(len(f["sha256"]) == 64 for f in manifest["files"].values())
    assert manifest["training"] == {"note": "test"}
    # no pickle: safetensors starts with an 8-byte little-endian header length and a JSON header
    raw = (bundle_dir / "model.safetensors").read_bytes()
    assert raw[8:9] == b"{"


def test_embed_shapes_normalisation_and_batch_invariance(bundle_dir):
    enc = Encoder.load(bundle_dir)
    texts = ["the cat", "le chat est sur la table", "a"]
    v = enc.embed(texts)
    assert v.shape == (3, 32) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    alone = np.stack([enc.embed([t])[0] for t in texts])
    assert np.abs(alone - v).max() < 1e-5
    assert np.abs(enc.embed(texts, batch_size=1) - v).max() < 1e-5


def test_truncation_is_reported(bundle_dir):
    enc = Encoder.load(bundle_dir)
    enc.embed(["short", "cat dog " * 40])
    assert enc.last_truncated == [1]


@pytest.mark.parametrize("bad, message", [
    (["ok", ""], "text 1 is empty"), (["ok", 3], "text 1"), (("a", 3), "text 1"),
    (["ok", "caf\udce9 au lait"], "text 1 is not valid Unicode"),  # undecodable bytes read with surrogateescape
])
def test_bad_texts_are_refused(bundle_dir, bad, message):
    with pytest.raises(InputError, match=message):
        Encoder.load(bundle_dir).embed(bad, empty="error")  # by default an empty text gets a zero vector


def test_corrupt_weights_are_refused(bundle_dir, tmp_path):
    b = copy(bundle_dir, tmp_path)
    raw = bytearray((b / "model.safetensors").read_bytes())
    raw[-5] ^= 0xFF
    (b / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(BundleError, match="model.safetensors is corrupt"):
        Encoder.load(b)


def test_truncated_file_is_refused(bundle_dir, tmp_path):
    b = copy(bundle_dir, tmp_path)
    raw = (b / "tokenizer.model").read_bytes()
    (b / "tokenizer.model").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(BundleError, match="tokenizer.model is truncated"):
        Encoder.load(b)


def test_missing_weights_and_manifest_are_refused(bundle_dir, tmp_path):
    b = copy(bundle_dir, tmp_path)
    (b / "model.safetensors").unlink()
    with pytest.raises(BundleError, match="model.safetensors is listed in the manifest but missing"):
        Encoder.load(b)
    (b / "manifest.json").unlink()
    with pytest.raises(BundleError, match="not a model bundle"):
        Bundle.load(b)
    with pytest.raises(BundleError, match="no such bundle"):
        Bundle.load(tmp_path / "nope")


def test_weights_that_do_not_match_the_config_are_refused(bundle_dir, tmp_path):
    from lwx_edge.bundle import write_manifest

    b = copy(bundle_dir, tmp_path)
    cfg = json.loads((b / "config.json").read_text())
    cfg["model"]["d_ff"] = 128
    (b / "config.json").write_text(json.dumps(cfg))
    write_manifest(b)  # a consistent manifest, but the weights belong to another architecture
    with pytest.raises(BundleError, match="do not match config.json"):
        Encoder.load(b)


@pytest.mark.parametrize("rel", ["../outside.txt", "/etc/hostname", "sub/../../outside.txt"])
def test_manifest_entries_outside_the_bundle_are_refused(bundle_dir, tmp_path, rel):
    """A crafted manifest must not make load, export or attach read or copy files elsewhere; the error is the
    same whether the outside file exists or not."""
    b = copy(bundle_dir, tmp_path)
    (tmp_path / "outside.txt").write_text("secret")
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["files"][rel] = {"sha256": "0" * 64, "bytes": 6}
    (b / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="points outside the directory"):
        Bundle.load(b, verify=False)
    with pytest.raises(BundleError, match="points outside the directory"):
        Encoder.load(b)


def test_a_link_out_of_the_bundle_is_refused(bundle_dir, tmp_path):
    b = copy(bundle_dir, tmp_path)
    (tmp_path / "outside.txt").write_text("secret")
    (b / "notes.txt").symlink_to(tmp_path / "outside.txt")
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["files"]["notes.txt"] = {"sha256": "0" * 64, "bytes": 6}
    (b / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="'notes.txt' points outside the directory"):
        Bundle.load(b)


def test_a_write_killed_between_the_two_renames_is_recovered(bundle_dir, tmp_path):
    b = copy(bundle_dir, tmp_path)
    os.replace(b, tmp_path / ".copy.old-1-2")  # the kill: the old version moved aside, the new one not in place
    (tmp_path / ".copy.xyz.tmp").mkdir()
    assert Bundle.load(b).path == b  # the previous version is put back, verified
    assert not (tmp_path / ".copy.old-1-2").exists() and (tmp_path / ".copy.xyz.tmp").exists()  # not its own
    recover_dir(b, clean_tmp=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]
    assert oct((b / "model.safetensors").stat().st_mode & 0o777) == "0o644"


def test_atomic_writes_keep_links_and_special_files_and_refuse_clearly(tmp_path):
    from lwx_edge.atomic import write_text_atomic

    (tmp_path / "target.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "target.txt")
    write_text_atomic(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "target.txt").read_text() == "new"
    write_text_atomic("/dev/null", "written through")  # a device stays a device
    assert not Path("/dev/null").is_file() and Path("/dev/null").exists()
    with pytest.raises(InputError, match="is a directory"):
        write_text_atomic(tmp_path, "x")
    with pytest.raises(InputError, match="target.txt/out.json: lies under a file"):
        write_text_atomic(tmp_path / "target.txt" / "out.json", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "target.txt"]


def test_atomic_file_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with atomic_file(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
