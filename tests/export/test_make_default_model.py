"""tools/make_default_model.py --attach: result files join the shipped model in one atomic, verified step."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lwx_edge.bundle import Bundle, write_manifest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "make_default_model.py"


def small_bundle(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"model": {"d_model": 8}}))
    (root / "tokenizer.model").write_bytes(b"not a real tokenizer; --attach never reads it")
    write_manifest(root, {"training": {"step": 7}})
    return root


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True)


def test_attach_adds_the_file_to_the_manifest_and_keeps_the_record(tmp_path):
    model = small_bundle(tmp_path / "model")
    results = tmp_path / "eval_test.json"
    results.write_text(json.dumps({"split": "test", "results": {"x": 1}}))
    r = run("--attach", results, "--out", model)
    assert r.returncode == 0, r.stderr
    b = Bundle.load(model)  # sha256 of every listed file verified
    assert set(b.manifest["files"]) == {"config.json", "tokenizer.model", "eval_test.json", "README.md"}
    assert (model / "README.md").read_text().startswith("# Model card: the lwx-edge default model")
    assert b.manifest["results"] == ["eval_test.json"] and b.manifest["training"] == {"step": 7}
    assert json.loads((model / "eval_test.json").read_text())["split"] == "test"


def test_attach_refuses_a_file_that_is_not_json_and_leaves_the_model_as_it_was(tmp_path):
    model = small_bundle(tmp_path / "model")
    before = (model / "manifest.json").read_bytes()
    bad = tmp_path / "eval_test.json"
    bad.write_text("{ half written")
    r = run("--attach", bad, "--out", model)
    assert r.returncode != 0 and "eval_test.json: not a readable JSON file" in r.stderr
    assert (model / "manifest.json").read_bytes() == before and not (model / "eval_test.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval_test.json", "model"]  # no temporary left
