"""ONNX export with the dynamo exporter (opset 18), dynamic batch and sequence axes (docs/EXPORT.md §3, §4):
the export twin of :mod:`lwx_edge.runtime.onnx_backend`.

Inputs ``input_ids`` / ``attention_mask`` (int64 [batch, seq], 1 = token), output ``sentence_embedding``
(float32 [batch, d], the raw mean-pooled vector). The maximum length and the tokenizer are recorded in the
model's metadata (``onnxruntime.InferenceSession(...).get_modelmeta().custom_metadata_map``).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .versions import package_version

# the facts of an export that its manifest entry records
MANIFEST_FIELDS = ("opset", "exporter", "onnxruntime_version")
PARITY_FIELDS: tuple[str, ...] = ()


def available() -> tuple[bool, str]:
    """Whether ONNX export can run here: (ok, why not)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except Exception as e:
        return False, f"onnx/onnxscript/onnxruntime are not importable ({type(e).__name__}: {e})"
    return True, ""


def export(encoder, path: Path, *, int8: bool, max_batch: int, max_len: int, work: Path, metadata: dict,
           say) -> dict:
    """Write ``path`` (fp32, or int8 by dynamic quantization of the fp32 model), with ``metadata`` in it."""
    precision = "int8" if int8 else "fp32"
    say(f"exporting {path.name}: ONNX {precision} (dynamo, opset 18), dynamic batch, seq 1..{max_len}")
    fp32_path = work / "model.fp32.onnx" if int8 else path
    facts = export_onnx(encoder, fp32_path, max_len=max_len, packed_table=int8)
    if int8:
        proj = getattr(encoder, "tok_proj", None)  # a factorised table's [rank -> d] map stays fp32
        keep = [proj.weight.detach().numpy().T.copy()] if proj is not None else []
        facts.update(quantize(fp32_path, path, work, keep))
        fp32_path.unlink()
    finalize(path, metadata)
    return facts


def export_onnx(encoder, path: str | os.PathLike, *, max_len: int, packed_table: bool = False) -> dict:
    """Export ``encoder`` (a SentenceEncoder) to an fp32 ONNX file at ``path`` (``packed_table``: a ``table_bits=4``
    token table in its 4-bit form, as the int8 artefact stores it; see :class:`ExportEncoder`)."""
    import torch

    from .graph import ExportEncoder, dynamic_shapes, example_inputs

    t0 = time.perf_counter()
    cfg = encoder.config
    model = ExportEncoder(encoder, max_len, packed_table)
    example = example_inputs(cfg.vocab_size, 2, max_len)
    with torch.no_grad():
        program = torch.onnx.export(
            model, example, dynamo=True, opset_version=18, verbose=False,
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],  # not "embedding": clashes internally (docs/EXPORT.md §8, pitfall 9)
            dynamic_shapes=dynamic_shapes(None, max_len), optimize=True)
    program.save(str(path), external_data=False)
    return {"format": "onnx", "precision": "fp32", "quantization": "none (fp32)", "max_len": int(max_len),
            "opset": 18, "export_seconds": round(time.perf_counter() - t0, 1),
            "exporter": f"torch.onnx dynamo (torch {torch.__version__})"}


def finalize(path: str | os.PathLike, metadata: dict[str, str]) -> None:
    """Check the model and store lwx-edge metadata in it (in place)."""
    import onnx

    model = onnx.load(str(path))
    existing = {p.key: p for p in model.metadata_props}
    for k, v in metadata.items():
        if k in existing:
            existing[k].value = str(v)
        else:
            p = model.metadata_props.add()
            p.key, p.value = k, str(v)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def quantize(src: str | os.PathLike, dst: str | os.PathLike, workdir: str | os.PathLike, keep_fp32=()) -> dict:
    """Quantize the ONNX model ``src`` to int8 at ``dst`` (the MatMuls of the ``keep_fp32`` weights stay fp32);
    returns the manifest fields of the recipe."""
    from .quantize import ONNX_FP32_NOTE, ONNX_INT8_RECIPE, quantize_onnx

    t0 = time.perf_counter()
    quantize_onnx(src, dst, workdir, keep_fp32)
    return {"precision": "int8", "quantization": ONNX_INT8_RECIPE + (ONNX_FP32_NOTE if len(keep_fp32) else ""),
            "quantize_seconds": round(time.perf_counter() - t0, 1),
            "onnxruntime_version": package_version("onnxruntime")}
