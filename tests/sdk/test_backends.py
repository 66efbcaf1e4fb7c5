"""The backend registry: adding a backend is two files, its runtime module and its export twin. Here both are
written into a temporary folder, registered, exported through ``export_bundle`` and loaded through
``Encoder.load`` without changing anything in lwx_edge."""
from __future__ import annotations

import shutil
import sys
import textwrap

import numpy as np
import pytest

from lwx_edge import Encoder, encoder, runtime

BACKEND_FILE = '''
"""A toy backend: the encoder's weights in model.npz (its config beside them), run by PyTorch."""
import json

import numpy as np

from lwx_edge.runtime import BackendSpec


class NpzBackend:
    name = "npz"
    call_overhead = 16.0

    def __init__(self, path):
        import torch

        from lwx_edge.training.model import ModelConfig, SentenceEncoder

        with np.load(path) as z:
            config = json.loads(str(z["config"]))
            state = {k: torch.from_numpy(z[k]) for k in z.files if k != "config"}
        self.model = SentenceEncoder(ModelConfig.from_dict(config)).eval()
        self.model.load_state_dict(state)
        self.dim = config["d_model"]

    def run(self, input_ids, attention_mask):
        import torch

        with torch.no_grad():
            return self.model(torch.from_numpy(input_ids), torch.from_numpy(attention_mask)).numpy()


BACKEND = BackendSpec(
    name="npz", artifacts={"fp32": "model.npz"}, modules=("numpy", "torch"), install="pip install torch",
    open=lambda path, bundle=None, **options: NpzBackend(path), priority=100, format="npz",
    exporter="toy_export")
'''

EXPORT_FILE = '''
"""The export twin of toy_backend: writes model.npz."""
import json

import numpy as np

MANIFEST_FIELDS = ("tensors",)
PARITY_FIELDS = ()


def available():
    return True, ""


def export(encoder, path, *, int8, max_batch, max_len, work, metadata, say):
    say(f"exporting {path.name}: npz fp32")
    state = {k: v.detach().numpy() for k, v in encoder.state_dict().items()}
    with open(path, "wb") as f:
        np.savez(f, config=np.array(json.dumps(encoder.config.to_dict())), **state)
    return {"format": "npz", "quantization": "none (fp32)", "tensors": len(state)}
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    src = tmp_path / "toy"
    src.mkdir()
    (src / "toy_backend.py").write_text(textwrap.dedent(BACKEND_FILE))
    (src / "toy_export.py").write_text(textwrap.dedent(EXPORT_FILE))
    monkeypatch.syspath_prepend(str(src))
    import toy_backend

    runtime.register(toy_backend.BACKEND)
    yield toy_backend.BACKEND
    runtime.REGISTRY.pop("npz")
    for mod in ("toy_backend", "toy_export"):
        sys.modules.pop(mod, None)


def test_builtin_backends_come_from_the_registry():
    assert encoder.BACKENDS == ("auto", "onnx", "executorch", "torch")
    assert encoder.ARTIFACTS[0] == ("onnx", "model.int8.onnx", "int8")
    assert runtime.get("pte").name == "executorch" and runtime.get("ort").name == "onnx"


def test_a_backend_added_in_two_files_exports_and_loads(toy, tiny_bundle, tmp_path):
    pytest.importorskip("torch")
    from lwx_edge.export import FORMATS, artifact_name, export_bundle

    assert "npz" in FORMATS and artifact_name("npz", False) == "model.npz" and "npz" in encoder.BACKENDS
    out = tmp_path / "bundle"
    report = export_bundle(tiny_bundle, formats="npz", out=out)
    assert report["artifacts"]["model.npz"]["passed"]
    assert report["manifest_artifacts"]["model.npz"]["tensors"] > 0

    enc = Encoder.load(out, backend="npz")
    assert enc.backend_name == "npz" and enc.artifact == "model.npz" and enc.precision == "fp32"
    texts = ["a cat on the sofa", "un chat sur le canapé"]
    ref = Encoder.load(out, backend="torch").embed(texts)
    assert np.abs(enc.embed(texts) - ref).max() < 1e-6
    assert Encoder.load(out).backend_name == "torch"  # "auto" tries it last (priority 100)

    runtime.REGISTRY.pop("npz")
    with pytest.raises(Exception, match="unknown backend 'npz'"):
        Encoder.load(out, backend="npz")
    runtime.register(toy)
    shutil.rmtree(out)


def test_the_executorch_backend_loads_the_runtime_without_the_compiler(default_pte):
    """tools/bench_load.py: importing ``executorch.runtime`` drags in ``executorch.exir`` (most of a 41 s load);
    the backend imports the native runtime module alone, and still embeds."""
    pytest.importorskip("executorch")
    import subprocess

    code = ("import sys; from lwx_edge import Encoder; v = Encoder.load(backend='executorch', threads=1)"
            ".embed('Where is the station?'); print(v.shape, 'executorch.exir' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "(512,) False"


def _fake_pybindings(monkeypatch, **submodules):
    """Stand-in ``executorch.extension.pybindings`` package (no ExecuTorch needed) holding these submodules."""
    import types

    names = ["executorch", "executorch.extension", "executorch.extension.pybindings"]
    for name in names:
        mod = types.ModuleType(name)
        mod.__path__ = []
        monkeypatch.setitem(sys.modules, name, mod)
    for key in ("_C", "_portable_lib"):  # the real ones, if an earlier test loaded them, must not answer
        if key in submodules:
            monkeypatch.setitem(sys.modules, f"{names[-1]}.{key}", submodules[key])
        else:
            monkeypatch.delitem(sys.modules, f"{names[-1]}.{key}", raising=False)


def test_the_executorch_runtime_module_of_older_releases_is_found(monkeypatch):
    """ExecuTorch 1.2 (built for torch 2.11) names its native module ``_portable_lib``; 1.5 ``_C``."""
    import types

    from lwx_edge.runtime import executorch_backend

    older, newer = types.ModuleType("older"), types.ModuleType("newer")
    _fake_pybindings(monkeypatch, _portable_lib=older)
    assert executorch_backend._native_runtime() is older
    _fake_pybindings(monkeypatch, _C=newer, _portable_lib=older)
    assert executorch_backend._native_runtime() is newer


def test_a_runtime_that_fails_to_load_shows_its_own_error(monkeypatch):
    """A ``_C`` that exists but cannot load (built for another torch) is the error to show, not a missing
    ``_portable_lib``."""
    from lwx_edge.runtime import executorch_backend

    class BrokenLoad:
        def find_spec(self, name, path=None, target=None):
            if name == "executorch.extension.pybindings._C":
                raise ImportError("_C.so: undefined symbol: materialize_cow_storage")

    _fake_pybindings(monkeypatch)
    monkeypatch.setattr(sys, "meta_path", [BrokenLoad(), *sys.meta_path])
    with pytest.raises(ImportError, match="undefined symbol"):
        executorch_backend._native_runtime()
