"""The bundle format version: version-1 bundles (text contract implied) load through the upgrade path; other
versions and text contracts this lwx-edge does not apply are refused clearly."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from lwx_edge import Encoder
from lwx_edge.bundle import FORMAT_VERSION, MANIFEST, Bundle, update_manifest, write_manifest
from lwx_edge.errors import BundleError
from lwx_edge.text import RULES

TEXTS = ["A cat sleeps on the sofa.", "Un chat dort sur le canapé.", "«Quoted» — text"]


def _edit(path, **changes):
    obj = json.loads(path.read_text())
    obj.update(changes)
    for k in [k for k, v in changes.items() if v is None]:
        del obj[k]
    path.write_text(json.dumps(obj))


def version1(tiny_bundle, out):
    """The bundle as lwx-edge wrote version 1: no text contract read, format_version 1 everywhere."""
    shutil.copytree(tiny_bundle, out)
    _edit(out / "config.json", format_version=1, tokenizer=None, pooling=None)
    write_manifest(out, {"training": {}})
    _edit(out / MANIFEST, format_version=1)
    return out


def test_version_1_is_read_through_the_upgrade_path(tiny_bundle, tmp_path):
    pytest.importorskip("torch")
    old = version1(tiny_bundle, tmp_path / "v1")
    b = Bundle.load(old)
    assert b.format_version == 1 and b.config["format_version"] == FORMAT_VERSION
    assert b.config["tokenizer"]["normalization"] == RULES and b.config["tokenizer"]["lowercase"] is True
    same = Encoder.load(old, backend="torch").embed(TEXTS, truncation="ignore")
    new = Encoder.load(tiny_bundle, backend="torch").embed(TEXTS, truncation="ignore")
    assert np.abs(same - new).max() == 0

    update_manifest(old)  # a rewrite writes the bundle whole in the current format
    b = Bundle.load(old)
    assert b.format_version == FORMAT_VERSION
    assert json.loads((old / "config.json").read_text())["tokenizer"]["normalization"] == RULES


@pytest.mark.parametrize("version,match", [(FORMAT_VERSION + 1, "newer lwx-edge: upgrade lwx-edge"),
                                           (0, "not supported"), ("2", "not supported"), (None, "not supported")])
def test_unknown_versions_are_refused(tiny_bundle, tmp_path, version, match):
    d = shutil.copytree(tiny_bundle, tmp_path / "b")
    _edit(d / MANIFEST, format_version=version)
    with pytest.raises(BundleError, match=f"format version .*{match}"):
        Bundle.load(d)


@pytest.mark.parametrize("change,match", [
    ({"tokenizer": {"type": "sentencepiece", "file": "tokenizer.model", "normalization": "nfkc-2",
                    "lowercase": True}}, "normalised by rules 'nfkc-2'"),
    ({"tokenizer": None}, "no tokenizer section"),
    ({"pooling": "cls"}, "pooling 'cls'"),
])
def test_a_text_contract_we_do_not_apply_is_refused(tiny_bundle, tmp_path, change, match):
    d = shutil.copytree(tiny_bundle, tmp_path / "b")
    _edit(d / "config.json", **change)
    update_manifest(d)
    with pytest.raises(BundleError, match=match):
        Encoder.load(d, backend="torch")


def test_the_contract_sets_the_casing(tiny_bundle, tmp_path):
    d = shutil.copytree(tiny_bundle, tmp_path / "b")
    cfg = json.loads((d / "config.json").read_text())
    _edit(d / "config.json", tokenizer={**cfg["tokenizer"], "lowercase": False})
    update_manifest(d)
    assert Bundle.load(d).tokenizer().lower is False
    assert Bundle.load(tiny_bundle).tokenizer(max_len=7).lower is True
    assert Bundle.load(tiny_bundle).tokenizer(max_len=7).max_len == 7
