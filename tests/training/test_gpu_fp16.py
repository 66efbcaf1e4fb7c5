"""tools/gpu_run/fp16.py: a bundle travels back from the GPU machine as float16 pieces and is whole again here."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "gpu_run"))
import fp16  # noqa: E402

from lwx_edge import Encoder  # noqa: E402
from lwx_edge.bundle import Bundle  # noqa: E402

TEXTS = ["the cat sleeps", "le chat dort", "der Hund bellt laut"]


def test_a_bundle_round_trips_through_float16_pieces(tiny_bundle, tmp_path):
    files = fp16.pack(tiny_bundle, tmp_path / "packed", piece_mb=0.02)
    pieces = [f for f in files if f.name.startswith(fp16.PIECES)]
    assert len(pieces) >= 2 and all(f.stat().st_size <= 0.02 * 2**20 for f in pieces)
    assert sum(f.stat().st_size for f in pieces) < 0.6 * (tiny_bundle / "model.safetensors").stat().st_size
    back = fp16.unpack(tmp_path / "packed", tmp_path / "back")
    Bundle.load(back, verify=True)                               # every file matches its manifest entry
    assert json.loads((back / "manifest.json").read_text())["weights_note"] == fp16.NOTE
    a, b = Encoder.load(tiny_bundle).embed(TEXTS), Encoder.load(back).embed(TEXTS)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.9999 and not np.array_equal(a, b)       # float16 rounding, nothing more


def test_unpack_names_a_missing_piece_or_file(tiny_bundle, tmp_path):
    fp16.pack(tiny_bundle, tmp_path / "packed", piece_mb=0.02)
    (tmp_path / "packed" / "tokenizer.model").unlink()
    with pytest.raises(SystemExit, match="not a packed bundle .missing tokenizer.model"):
        fp16.unpack(tmp_path / "packed", tmp_path / "back")
    fp16.pack(tiny_bundle, tmp_path / "packed", piece_mb=0.02)
    sorted((tmp_path / "packed").glob(fp16.PIECES + "*"))[-1].unlink()
    with pytest.raises(SystemExit, match="do not join into a safetensors file"):
        fp16.unpack(tmp_path / "packed", tmp_path / "back")
    assert not (tmp_path / "back").exists()


def test_packing_again_into_the_same_folder_leaves_no_stale_pieces(tiny_bundle, tmp_path):
    fp16.pack(tiny_bundle, tmp_path / "packed", piece_mb=0.02)
    files = fp16.pack(tiny_bundle, tmp_path / "packed", piece_mb=1)           # one piece now, not several
    assert sorted((tmp_path / "packed").glob(fp16.PIECES + "*")) == [f for f in files if fp16.PIECES in f.name]
    a = Encoder.load(fp16.unpack(tmp_path / "packed", tmp_path / "back")).embed(TEXTS)
    assert np.allclose(a, Encoder.load(tiny_bundle).embed(TEXTS), atol=1e-2)
