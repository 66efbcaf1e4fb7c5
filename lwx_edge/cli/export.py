"""``lwx-edge export``: the artefacts of a bundle for each backend export makes (ExecuTorch .pte on XNNPACK,
ONNX), with a parity report."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lwx_edge import runtime

from ..errors import BundleError
from ._extras import require


def _formats() -> str:
    return ", ".join(f"{s.format} ({' / '.join(s.artifacts.values())})" for s in runtime.backends() if s.exporter)


# What exporting each format needs of the [export] extra, beyond torch and safetensors (every export loads the
# fp32 weights with torch); pytorch_tokenizers is optional (its tokenizer parity check is skipped without it).
_FORMAT_MODULES = {"onnx": ("onnx", "onnxscript"), "pte": ("executorch",)}


def _modules(formats: str | None, int8: bool) -> list[str]:
    """The modules an export of ``formats`` (comma-separated; None: every format) needs; an unknown format
    name needs nothing here (export_bundle refuses it, naming the known ones)."""
    names = [f.strip().lower() for f in formats.split(",")] if formats is not None else list(_FORMAT_MODULES)
    needed = ["torch", "safetensors"]
    for name in names:
        needed += _FORMAT_MODULES.get(name, ())
        if name == "pte" and int8:
            needed.append("torchao")  # the int8 program's weight-only quantization of the token table
    return list(dict.fromkeys(needed))


def _bundle_path(bundle: Path) -> Path:
    """``bundle``, with 'default' (when no such directory is here) read as the shipped default's directory.
    The shipped default has no fp32 weights to export from: a BundleError says so, and what to do instead."""
    from ..encoder import DEFAULT_MODEL

    if str(bundle) == "default" and not bundle.exists():
        bundle = DEFAULT_MODEL
    try:
        is_default = bundle.resolve() == DEFAULT_MODEL.resolve()
    except OSError:
        is_default = False
    if is_default and not (bundle / "model.safetensors").is_file():
        raise BundleError(
            "default: the shipped default model is already exported (model.int8.onnx and model.int8.pte, which "
            "every other command runs) and ships no fp32 weights (model.safetensors) to export from; to export a "
            "model based on it, first write a bundle with weights (lwx-edge transfer default --tokenizer "
            "NEW.model -o DIR, or lwx-edge train --init-from default ...), then run lwx-edge export DIR --int8")
    return bundle


def export(
    bundle: Path = typer.Argument(..., metavar="BUNDLE",
                                  help="A bundle with fp32 weights (config.json, model.safetensors, "
                                       "tokenizer.model), as train and transfer write; the shipped default has "
                                       "none."),
    int8: bool = typer.Option(False, "--int8",
                              help="Write the int8 models (model.int8.*) instead of fp32 ones."),
    format: Optional[str] = typer.Option(None, "--format", "-f", metavar="FORMATS",
                                         help=f"Comma-separated; default all: {_formats()}."),
    max_batch: int = typer.Option(16, "--max-batch", metavar="N",
                                  help="Largest batch the .pte accepts (its memory plan grows with it)."),
    max_len: Optional[int] = typer.Option(None, "--max-len", metavar="N",
                                          help="Longest token sequence (default: the model's max_len)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR",
                                       help="Write into a copy of the bundle in DIR instead of the bundle."),
    min_cos_mean: float = typer.Option(0.999, "--min-cos-mean", metavar="COS",
                                       help="int8: fail if the mean cosine to fp32 is lower."),
    min_cos_min: float = typer.Option(0.99, "--min-cos-min", metavar="COS",
                                      help="int8: fail if the lowest cosine to fp32 is lower."),
    json_out: bool = typer.Option(False, "--json", help="Print the parity report as JSON instead of a table."),
    allow_collapsed: bool = typer.Option(False, "--allow-collapsed",
                                         help="Export even a model that gives unrelated texts nearly the same "
                                              "vector (refused by default: a collapsed training run)."),
) -> None:
    """Export BUNDLE to each format (ExecuTorch, ONNX), check parity against the PyTorch encoder, record it in the manifest.

    Artefacts are written atomically into the bundle (or --out) with parity.json, and listed with their
    sha256 in manifest.json. Nothing is written if a parity check fails.
    """
    bundle = _bundle_path(bundle)  # the shipped default: refused, saying why
    require("export", "export", _modules(format, int8))  # before torch is imported or the bundle is read
    import json

    from lwx_edge.export import ParityError, export_bundle
    from lwx_edge.export.parity import format_table

    try:
        report = export_bundle(bundle, formats=format, int8=int8, max_batch=max_batch, max_len=max_len, out=out,
                               min_cos_mean=min_cos_mean, min_cos_min=min_cos_min, allow_collapsed=allow_collapsed)
    except ParityError as e:
        typer.echo(format_table(e.report))
        raise
    if json_out:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    typer.echo(format_table(report))
    typer.echo("")
    for name, path in report["paths"].items():
        typer.echo(f"wrote {path}")
    typer.echo(f"parity report: {Path(report['output_dir']) / 'parity.json'}; manifest updated")
