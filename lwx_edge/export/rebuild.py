"""``lwx-edge export default``: the shipped default's ExecuTorch program, rebuilt from its int8 ONNX program.

The package ships the int8 ONNX program only (what the torch-free base install runs). Its weights are read back
(:func:`lwx_edge.training.transfer.encoder_weights`: the int8 matrices and tables dequantized), exported ``--int8`` to
ExecuTorch with the usual parity checks against those weights in fp32, and checked once more against the
shipped ONNX program on the probe texts. The result is a copy of the default (every shipped file, plus
``model.int8.pte``) written atomically to ``out``, by default :func:`lwx_edge.shipped.built_default_dir`, where
``Encoder.load(backend="executorch")`` finds it.

The program keeps the default's identity: parity.json names the weights the ONNX program came from as its
source, and records that it was rebuilt from that program (``rebuilt_from``), so heads and indexes made with the
default accept it. Measured against the fp32 weights the default was exported from (tools/make_default_model.py;
docs/EXPORT.md): cosine mean 0.99968, min 0.99929 over 1,500 conversation and everyday texts, within the int8
thresholds every export meets (0.999 / 0.99).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..bundle import MANIFEST, PARITY, TOKENIZER, Bundle, inside
from ..shipped import ONNX, PTE, built_default_dir, default_model_path
from . import ParityError, export_bundle
from .parity import Thresholds


def rebuild_default(out: str | os.PathLike | None = None, *, max_batch: int = 16,
                    log: Callable[[str], None] | None = None, quiet: bool = True) -> dict:
    """Write a copy of the shipped default with its ExecuTorch program rebuilt from its int8 ONNX program.

    Returns the export's parity report for ``model.int8.pte`` with ``rebuilt_from`` (the ONNX program, and the
    cosine between the two programs' vectors on the probe texts) and ``output_dir``. Raises ``ParityError``
    (nothing written) when the rebuilt program misses the int8 thresholds against the read-back weights or
    against the ONNX program; the errors of :func:`export_bundle` otherwise."""
    from ..atomic import atomic_dir, write_json_atomic
    from ..bundle import update_manifest

    shipped = Bundle.load(default_model_path())  # every file checked against the manifest
    target = _checked_target(Path(out) if out is not None else built_default_dir(), shipped)
    with tempfile.TemporaryDirectory(prefix="lwx-rebuild-") as tmp:
        readback = _read_back(shipped, Path(tmp) / "readback")
        report = export_bundle(readback, formats=("pte",), int8=True, max_batch=max_batch, out=Path(tmp) / "pte",
                               log=log, quiet=quiet)
        staged = Path(report["output_dir"])
        against_onnx = _compare_programs(shipped, staged)
        entry = {**report["artifacts"][PTE], "rebuilt_from": {
            "file": ONNX, "sha256": shipped.sha256(ONNX), "read_back_weights_sha256": report["bundle"][
                "weights_sha256"], "reference": "the fp32 encoder of the program's weights, read back",
            "cos_to_onnx": against_onnx}}
        th = Thresholds()
        if against_onnx["cos_mean"] < th.int8_min_cos_mean or against_onnx["cos_min"] < th.int8_min_cos_min:
            raise ParityError(f"the rebuilt {PTE} does not match the shipped {ONNX} (cosine mean "
                              f"{against_onnx['cos_mean']:.5f}, min {against_onnx['cos_min']:.5f}); nothing was "
                              "written", report)
        artifact = {**report["manifest_artifacts"][PTE], "rebuilt_from": entry["rebuilt_from"]}
        parity = json.loads(shipped.file(PARITY).read_text(encoding="utf-8"))
        parity.setdefault("artifacts", {})[PTE] = entry
        with atomic_dir(target) as d:
            for rel in [*shipped.manifest["files"], MANIFEST]:
                (d / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(inside(shipped.path, rel), d / rel)
            shutil.copyfile(staged / PTE, d / PTE)
            write_json_atomic(d / PARITY, parity)
            update_manifest(d, {PTE: artifact})
    return {**entry, "output_dir": str(target), "path": str(target / PTE), "report": report}


def _checked_target(target: Path, shipped: Bundle) -> Path:
    """``target``, refused (ExportError, before any work) when it is a file, or a directory holding anything but
    an earlier copy of this default: the copy replaces the whole directory."""
    from . import ExportError

    if target.exists() and not target.is_dir():
        raise ExportError(f"cannot write the default's copy to {target}: it is a file")
    if target.is_dir() and any(target.iterdir()):
        try:
            earlier = json.loads((target / "manifest.json").read_text(encoding="utf-8"))["files"][ONNX]["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            earlier = None
        if earlier != shipped.sha256(ONNX):
            raise ExportError(f"--out {target} is not empty and is not a copy of the default model; give a new or "
                              "empty directory (the copy replaces the whole directory)")
    return target


def _read_back(shipped: Bundle, out: Path) -> Path:
    """A training bundle (fp32 weights) of the shipped int8 ONNX program's weights."""
    from ..training.checkpoint import save_bundle
    from ..training.model import SentenceEncoder
    from ..training.transfer import encoder_weights

    state, config, _ = encoder_weights(shipped.path)
    encoder = SentenceEncoder(config)
    encoder.load_weights(state)
    return save_bundle(encoder, shipped.file(TOKENIZER), out, {"read_back_from": ONNX})


def _compare_programs(shipped: Bundle, staged: Path) -> dict:
    """Cosine between the shipped ONNX program's and the rebuilt ExecuTorch program's vectors, probe texts."""
    from ..encoder import Encoder
    from ..probe import probe_texts

    texts = [r["text"] for r in probe_texts()]
    a = Encoder.load(shipped.path, backend="onnx").embed(texts)
    b = Encoder.load(staged, backend="executorch").embed(texts)
    cos = np.sum(a * b, axis=1)
    return {"cos_mean": float(cos.mean()), "cos_min": float(cos.min()), "texts": len(texts)}
