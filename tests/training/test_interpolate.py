"""tools/interpolate.py: a run's bundle blended with the bundle it started from (WiSE-FT)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_tiny_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from interpolate import interpolate  # noqa: E402

from lwx_edge.errors import LwxError  # noqa: E402

TOOL = Path(__file__).resolve().parents[2] / "tools" / "interpolate.py"


def test_interpolate_is_the_weighted_mean_of_every_weight():
    a = {"w": np.array([[0.0, 2.0]], np.float32), "b": np.array([1.0], np.float32)}
    b = {"w": np.array([[4.0, 2.0]], np.float32), "b": np.array([-1.0], np.float32)}
    mid = interpolate(a, b, 0.25)
    assert np.allclose(mid["w"], [[1.0, 2.0]]) and np.allclose(mid["b"], [0.5]) and mid["w"].dtype == np.float32
    assert all(np.array_equal(interpolate(a, b, 0.0)[k], a[k]) for k in a)
    with pytest.raises(LwxError, match="differ in names: \\['extra'\\]"):
        interpolate(a, {**b, "extra": b["b"]}, 0.5)
    with pytest.raises(LwxError, match="differ in shape: w"):
        interpolate(a, {**b, "w": np.zeros((2, 2), np.float32)}, 0.5)


def _run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_the_blend_of_two_runs_is_a_bundle_between_them_that_records_how_it_was_made(tiny_corpus, tmp_path):
    from safetensors.numpy import load_file

    a, b = make_tiny_bundle(tiny_corpus, tmp_path / "a", seed=0), make_tiny_bundle(tiny_corpus, tmp_path / "b", seed=1)
    done = _run(a, b, 0.75, tmp_path / "blend")
    assert done.returncode == 0, done.stderr
    wa, wb, wm = (load_file(p / "model.safetensors") for p in (a, b, tmp_path / "blend"))
    assert all(np.allclose(wm[k], 0.25 * wa[k] + 0.75 * wb[k], atol=1e-6) for k in wa)
    record = json.loads((tmp_path / "blend" / "manifest.json").read_text())["training"]
    assert record == {"note": "test, seed 1", "interpolated": {"start": str(a), "tuned": str(b), "alpha": 0.75}}


def test_the_command_line_refuses_an_alpha_outside_0_1_and_another_vocabulary(tiny_corpus, tmp_path):
    a = make_tiny_bundle(tiny_corpus, tmp_path / "a")
    bad = _run(a, a, 1.5, tmp_path / "out")
    assert bad.returncode != 0 and "alpha must be in [0, 1], got 1.5" in bad.stderr and "Traceback" not in bad.stderr
    other = _run("default", a, 0.5, tmp_path / "out")
    assert other.returncode != 0 and "architectures differ" in other.stderr and "Traceback" not in other.stderr
    missing = _run(tmp_path / "nowhere", a, 0.5, tmp_path / "out")
    assert missing.returncode != 0 and "no such bundle directory" in missing.stderr
    assert not (tmp_path / "out").exists()


def test_the_model_card_shows_the_blend_after_the_run():
    from lwx_edge.modelcard import _training

    trained = {"step": 4000, "elapsed_s": 260, "device": "cuda:0", "config": {"batch_size": 512, "corpus": ["d/ddtp"]}}
    card = "\n".join(_training({**trained, "interpolated": {"start": "default", "tuned": "r/best", "alpha": 0.5}},
                               trained["config"]))
    assert card.index("4,000 steps") < card.index("Then its weights were blended with those it started from, 0.5 of "
                                                  "the run's and the rest of the start's (`tools/interpolate.py`")
