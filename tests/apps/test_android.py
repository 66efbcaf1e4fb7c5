"""The Android demo's JVM core (android_demo/core) against the Python SDK: tools/android_parity.py writes the
fixtures, android_demo/run_jvm_tests.sh compiles the Java code with javac and runs its JUnit 4 tests on them
(identical token ids on a multilingual probe set, head probabilities within 1e-5, identical top-k).

Two tokenizers: the shipped model (lwx_edge/default_model; else $LWX_ANDROID_TOKENIZER or the
tokenizer.model a training run left in runs/default) when there is one, and always the tiny 160-piece
model of the test corpus (many unknown characters).
Also the index file: the JVM's VectorIndex reads the index.lwxindex that lwx_edge.index.Index wrote and returns
the same top-k ids as Index.search for the probe queries.
Needs a JDK, Debian's junit4 and its SQLite JDBC driver (apt-get install -y default-jdk-headless junit4
libxerial-sqlite-jdbc-java); skipped without them, or failed when LWX_REQUIRE_JVM=1 (set by CI, which installs
them).
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "android_demo" / "run_jvm_tests.sh"
TOOL = REPO / "tools" / "android_parity.py"
JUNIT = Path(os.environ.get("JUNIT_JAR", "/usr/share/java/junit4.jar"))
HAMCREST = Path(os.environ.get("HAMCREST_JAR", "/usr/share/java/hamcrest-core.jar"))
SQLITE_JDBC = [Path(p) for p in os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar").split(":") if p]


def _require_jvm() -> None:
    """Skip without a JDK, the JUnit jars or the SQLite JDBC driver -- or fail, when LWX_REQUIRE_JVM=1 (CI
    installs them)."""
    missing = None
    if shutil.which("javac") is None or shutil.which("java") is None:
        missing = "no JDK on PATH (apt-get install -y default-jdk-headless junit4 libxerial-sqlite-jdbc-java)"
    elif not (JUNIT.is_file() and HAMCREST.is_file()):
        missing = f"JUnit 4 / hamcrest jars not found ({JUNIT}, {HAMCREST}); apt-get install -y junit4"
    elif not SQLITE_JDBC or not all(p.is_file() for p in SQLITE_JDBC):
        missing = (f"SQLite JDBC driver not found ({':'.join(map(str, SQLITE_JDBC))}); "
                   "apt-get install -y libxerial-sqlite-jdbc-java, or set SQLITE_JDBC_JAR")
    if missing:
        if os.environ.get("LWX_REQUIRE_JVM") == "1":
            pytest.fail(f"LWX_REQUIRE_JVM=1 but {missing}")
        pytest.skip(missing)


def _minimal_bundle(tokenizer: Path, out: Path, dim: int, max_len: int) -> Path:
    """A bundle with only config.json + tokenizer.model: all the JVM parity tests read."""
    from lwx_edge.bundle import make_config, write_manifest

    out.mkdir(parents=True)
    shutil.copyfile(tokenizer, out / "tokenizer.model")
    (out / "config.json").write_text(json.dumps(make_config({"max_len": max_len, "d_model": dim,
                                                             "vocab_size": 16000}, dim)))
    write_manifest(out)
    return out


def _head(kind: str, dim: int, out: Path) -> Path:
    """A head fitted with the SDK on synthetic, clustered embeddings."""
    from lwx_edge.heads import LogisticHead, MLPHead

    rng = np.random.default_rng(0)
    centers = rng.standard_normal((3, dim))
    y = np.repeat(["news", "sport", "music"], 40)
    X = (centers[np.repeat(np.arange(3), 40)] + 0.8 * rng.standard_normal((120, dim))).astype(np.float32)
    head = (MLPHead(hidden_layer_sizes=(16,), max_epochs=3) if kind == "mlp" else LogisticHead()).fit(X, y)
    return head.save(out)


def _write_fixtures(bundle: Path, head: Path, out: Path) -> dict:
    r = subprocess.run([sys.executable, str(TOOL), str(bundle), str(head), str(out), "--fuzz", "300"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((out / "parity.json").read_text())


def test_jvm_core_matches_the_python_sdk(tmp_path, tiny_corpus):
    _require_jvm()
    shipped = REPO / "lwx_edge" / "default_model"
    fixtures = []
    trained = [Path(p) for p in (os.environ.get("LWX_ANDROID_TOKENIZER"),
                                 REPO / "runs" / "default" / "tokenizer.model",
                                 REPO / "runs" / "default" / "best" / "tokenizer.model") if p]
    trained = [p for p in trained if p.is_file()]
    if (shipped / "manifest.json").is_file():
        real_bundle = shipped
    elif trained:
        real_bundle = _minimal_bundle(trained[0], tmp_path / "b16k", 512, 200)
    else:
        real_bundle = None
    if real_bundle is not None:
        info = _write_fixtures(real_bundle, _head("mlp", 512, tmp_path / "head_mlp"), tmp_path / "fx_16k")
        assert info["texts"] > 350 and info["texts_truncated"] >= 5 and info["texts_with_error"] >= 5
        fixtures.append(tmp_path / "fx_16k")
    tiny = _minimal_bundle(tiny_corpus["tokenizer"], tmp_path / "btiny", 48, 32)
    _write_fixtures(tiny, _head("logistic", 48, tmp_path / "head_log"), tmp_path / "fx_tiny")
    fixtures.append(tmp_path / "fx_tiny")

    r = subprocess.run(["bash", str(RUNNER), *map(str, fixtures)], capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert re.search(r"^OK \(\d+ tests\)", r.stdout, re.M), out[-3000:]
    lines = [l[l.index("[parity]"):] for l in r.stdout.splitlines() if "[parity]" in l]
    print("\n".join(lines))  # the counts, visible with pytest -s
    for fx in fixtures:
        tok = [l for l in lines if f"{fx.name}: token ids identical" in l]
        assert tok, out[-3000:]
        n, total = map(int, re.search(r"identical for (\d+)/(\d+) probe texts", tok[0]).groups())
        assert n == total > 350
        assert any(f"{fx.name}: head (" in l and "labels identical" in l for l in lines)
        assert any(f"{fx.name}: top-k identical" in l for l in lines)
        idx = [l for l in lines if f"{fx.name}: index top-k identical" in l]
        assert idx, out[-3000:]
        n, total = map(int, re.search(r"identical for (\d+)/(\d+) queries", idx[0]).groups())
        assert n == total == 20
        assert int(re.search(r"(\d+) with equal scores in the top-k", idx[0]).group(1)) >= 1, idx[0]
