"""The JavaScript package (web/) against the Python SDK: tools/web_fixtures.py writes the fixtures, node's test runner
runs web/test/ on them: identical token ids on 1,000+ probe texts, vectors within cosine 0.9999 (onnxruntime-node
and onnxruntime-web's WebAssembly build), head probabilities within 1e-5, clear errors for damaged or mismatched
bundles and heads, and the demo page in headless Chromium (a typed cross-lingual query, offline).

Needs Node >= 20 with web/node_modules (cd web && npm ci) and Chromium (apt-get install -y chromium
chromium-driver); skipped without them, or failed when LWX_REQUIRE_WEB=1 (set by CI, which installs them).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
REQUIRED = os.environ.get("LWX_REQUIRE_WEB") == "1"


def _require(what: str | None) -> None:
    if what:
        if REQUIRED:
            pytest.fail(f"LWX_REQUIRE_WEB=1 but {what}")
        pytest.skip(what)


def _require_node() -> None:
    node = shutil.which("node")
    if node is None:
        _require("no node on PATH (Node >= 20)")
        return
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        _require(f"Node >= 20 is needed, found {version}")
    elif not (WEB / "node_modules" / "onnxruntime-node").is_dir():
        _require("web/node_modules is missing (cd web && npm ci)")


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    _require_node()
    out = tmp_path_factory.mktemp("web-fixtures")
    r = subprocess.run([sys.executable, str(REPO / "tools" / "web_fixtures.py"), str(out)], capture_output=True,
                       text=True, timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _node_test(files: list[str], fixtures: Path, extra_env: dict | None = None, timeout: int = 600) -> dict:
    env = {**os.environ, "LWX_WEB_FIXTURES": str(fixtures), **(extra_env or {})}
    r = subprocess.run(["node", "--test", "--test-concurrency=1", *files], cwd=WEB, env=env, capture_output=True,
                       text=True, timeout=timeout)
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|skipped|cancelled) (\d+)$", r.stdout, re.M)}
    assert r.returncode == 0 and counts.get("fail") == 0, (r.stdout[-6000:] + r.stderr[-3000:])
    return counts


def test_node_parity_with_the_python_sdk(fixtures):
    counts = _node_test(["test/parity.test.mjs"], fixtures)
    assert counts["pass"] == counts["tests"] == 4, counts
    report = json.loads((WEB / "build" / "parity-node.json").read_text(encoding="utf-8"))
    assert report["token_probes"] >= 1000 and report["token_ids_identical"] == report["token_probes"]
    for runtime in ("node", "wasm"):
        assert report[runtime]["cos_min"] >= 0.9999, report[runtime]
        for head in report[runtime]["heads"].values():
            assert head["max_prob_diff_same_vectors"] <= 1e-5


def test_node_errors(fixtures):
    counts = _node_test(["test/errors.test.mjs"], fixtures)
    assert counts["pass"] == counts["tests"] >= 8, counts


def test_node_units(fixtures):
    counts = _node_test(["test/unit.test.mjs"], fixtures)
    assert counts["pass"] == counts["tests"] == 6, counts


def test_the_demo_page_in_headless_chromium(fixtures):
    if not CHROMIUM.exists():
        _require(f"no Chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    counts = _node_test(["test/browser.test.mjs"], fixtures, {"LWX_REQUIRE_BROWSER": "1"})
    assert counts["pass"] == counts["tests"] == 1 and counts.get("skipped", 0) == 0, counts
    report = json.loads((WEB / "build" / "parity-browser.json").read_text(encoding="utf-8"))
    assert report["texts"] >= 1000 and report["cos_min"] >= 0.9999


def test_the_type_declarations_compile():
    _require_node()
    tsc = WEB / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        _require("web/node_modules/.bin/tsc is missing (cd web && npm ci)")
    r = subprocess.run([str(tsc), "-p", "tsconfig.json"], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_npm_dependency_is_pinned_by_the_lock_file():
    package = json.loads((WEB / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((WEB / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["lockfileVersion"] == 3
    declared = {**package["dependencies"], **package["devDependencies"]}
    for name, version in declared.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name}: {version} is a range, not a pinned version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
    for path, entry in lock["packages"].items():  # every package at one version, checked by its hash
        if path:
            assert re.fullmatch(r"\d+\.\d+\.\d+(-[\w.]+)?", entry.get("version", "")), path
            assert entry.get("integrity", "").startswith("sha512-"), path
    # no install scripts run (onnxruntime-node's would download CUDA libraries from outside the npm registry)
    assert "ignore-scripts=true" in (WEB / ".npmrc").read_text(encoding="utf-8")


def _web_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Web")
    return text[start:text.index("\n## ", start + 1)]


def test_the_readme_web_section_runs_as_written(tmp_path):
    """The README's JavaScript lines, run as a script inside web/ from a directory holding the model and a head fitted
    with the CLI line its comment names; its npm commands are the package's scripts."""
    _require_node()
    section = _web_section()
    (js,) = re.findall(r"```js\n(.*?)```", section, flags=re.S)
    (bash,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    scripts = json.loads((WEB / "package.json").read_text(encoding="utf-8"))["scripts"]
    for name in re.findall(r"npm run (\w+)", bash):
        assert name in scripts, name
    assert "npm ci" in bash and "npm test" in bash and "benchmarks/web_<cpu>.json" in bash
    (tmp_path / "lwx_edge").symlink_to(REPO / "lwx_edge")
    (tmp_path / "examples").symlink_to(REPO / "examples")
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "fit", "default", "examples/intents.en.csv", "-o", "my-head"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    script = WEB / "build" / "readme_web_snippet.mjs"  # inside the package: 'lwx-edge-web' resolves to it
    script.parent.mkdir(exist_ok=True)
    script.write_text(js, encoding="utf-8")
    r = subprocess.run(["node", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    similarity, label = r.stdout.split()
    assert 0.5 < float(similarity) <= 1.0
    assert label == "music"
