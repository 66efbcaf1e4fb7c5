"""``lwx-edge export``: the artefacts of a bundle for each backend export makes (ExecuTorch .pte on XNNPACK,
ONNX), with a parity report."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lwx_edge import runtime


def _formats() -> str:
    return ", ".join(f"{s.format} ({' / '.join(s.artifacts.values())})" for s in runtime.backends() if s.exporter)



def export(
    bundle: Path = typer.Argument(..., help="Model bundle directory (config.json, model.safetensors, "
                                            "tokenizer.model)."),
    int8: bool = typer.Option(False, "--int8",
                              help="int8 artefacts (model.int8.*) instead of fp32."),
    format: Optional[str] = typer.Option(None, "--format", "-f",
                                         help=f"Comma-separated, default all: {_formats()}."),
    max_batch: int = typer.Option(16, "--max-batch",
                                  help="Largest batch the .pte accepts (its memory plan grows with it)."),
    max_len: Optional[int] = typer.Option(None, "--max-len",
                                          help="Longest token sequence (default: the model's max_len)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Write into a copy of the bundle in DIR instead of the bundle."),
    min_cos_mean: float = typer.Option(0.999, "--min-cos-mean",
                                       help="int8: fail if the mean cosine to fp32 is lower."),
    min_cos_min: float = typer.Option(0.99, "--min-cos-min", help="int8: fail if the lowest cosine to fp32 is lower."),
    json_out: bool = typer.Option(False, "--json", help="Print the parity report as JSON instead of a table."),
    allow_collapsed: bool = typer.Option(False, "--allow-collapsed",
                                         help="Export even a model that gives unrelated texts nearly the same "
                                              "vector (refused by default: a collapsed training run)."),
) -> None:
    """Export BUNDLE to each format (ExecuTorch, ONNX), check parity against the PyTorch encoder, record it in the manifest.

    Artefacts are written atomically into the bundle (or --out) with parity.json, and listed with their
    sha256 in manifest.json. Nothing is written if a parity check fails.
    """
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
