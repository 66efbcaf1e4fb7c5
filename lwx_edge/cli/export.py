"""``lwx-edge export``: the artefacts of a bundle for each backend export makes (ExecuTorch .pte on XNNPACK,
ONNX), with a parity report."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lwx_edge import runtime

from ..errors import BundleError
from ._extras import EXTRAS, missing, require


def _formats() -> str:
    return ", ".join(f"{s.format} ({' / '.join(s.artifacts.values())})" for s in runtime.backends() if s.exporter)


# The extra each format needs (every export loads the fp32 weights with torch): ONNX comes with [export],
# ExecuTorch with [executorch] (its toolchain adds ~1.2 GB; torchao quantizes the .pte's token table).
_FORMAT_EXTRA = {"onnx": "export", "pte": "executorch"}


def _formats_to_write(formats: str | None) -> str:
    """``formats`` as given, checked against the installed extras; None: every format whose extra is
    installed (ONNX alone after pip install 'lwx-edge[export]', saying so). An unknown format name needs
    nothing here (export_bundle refuses it, naming the known ones)."""
    if formats is not None:
        for name in dict.fromkeys(f.strip().lower() for f in formats.split(",")):
            if name in _FORMAT_EXTRA:
                require("export", _FORMAT_EXTRA[name])
        return formats
    ready = [name for name, extra in _FORMAT_EXTRA.items() if not missing(EXTRAS[extra])]
    if not ready:
        require("export", "export")
    for name, extra in _FORMAT_EXTRA.items():
        if name not in ready:
            typer.echo(f"note: no {name} export: its toolchain is not installed (pip install "
                       f"\"lwx-edge[{extra}]\"); exporting {', '.join(ready)}", err=True)
    return ",".join(ready)


def _shipped_default(bundle: Path) -> bool:
    """Whether ``bundle`` names the shipped default ('default', when no such directory is here, or its
    directory): it has no fp32 weights, so export rebuilds its ExecuTorch program from its int8 ONNX program."""
    from ..shipped import DEFAULT_MODEL, is_default

    if str(bundle) == "default" and not bundle.exists():
        bundle = DEFAULT_MODEL
    return is_default(bundle) and not (bundle / "model.safetensors").is_file()


def _export_default(formats: str | None, out: Path | None, max_batch: int, json_out: bool) -> None:
    """``lwx-edge export default``: a copy of the default with its ExecuTorch program rebuilt (export/rebuild.py)."""
    if formats is not None and {f.strip().lower() for f in formats.split(",")} != {"pte"}:
        raise BundleError("default: the shipped default already carries its ONNX program (model.int8.onnx) and no "
                          "fp32 weights; `lwx-edge export default` builds its ExecuTorch program (--format pte). "
                          "To export a model based on it, first write a bundle with weights (lwx-edge transfer "
                          "default --tokenizer NEW.model -o DIR, or lwx-edge train --init-from default ...), then "
                          "run lwx-edge export DIR --int8")
    require("export default", "executorch")
    import json

    from lwx_edge.export.parity import format_table
    from lwx_edge.export.rebuild import rebuild_default

    result = rebuild_default(out, max_batch=max_batch)
    if json_out:
        typer.echo(json.dumps({k: v for k, v in result.items() if k != "report"}, indent=2, ensure_ascii=False))
        return
    typer.echo(format_table(result["report"]))
    onnx = result["rebuilt_from"]["cos_to_onnx"]
    typer.echo(f"\nrebuilt from the shipped model.int8.onnx: cosine to it mean {onnx['cos_mean']:.5f}, "
               f"min {onnx['cos_min']:.5f} ({onnx['texts']} probe texts)")
    typer.echo(f"wrote {result['path']}; Encoder.load(backend=\"executorch\") loads it"
               + ("" if out is None else f" from {result['output_dir']}"))


def export(
    bundle: Path = typer.Argument(..., metavar="BUNDLE",
                                  help="A bundle with fp32 weights (config.json, model.safetensors, "
                                       "tokenizer.model), as train and transfer write; 'default': build the "
                                       "shipped default's ExecuTorch program from its ONNX program."),
    int8: bool = typer.Option(False, "--int8",
                              help="Write the int8 models (model.int8.*) instead of fp32 ones."),
    format: Optional[str] = typer.Option(None, "--format", "-f", metavar="FORMATS",
                                         help=f"Comma-separated; default: every format whose extra is installed: "
                                              f"{_formats()}."),
    max_batch: int = typer.Option(16, "--max-batch", metavar="N",
                                  help="Largest batch the .pte accepts (its memory plan grows with it)."),
    max_len: Optional[int] = typer.Option(None, "--max-len", metavar="N",
                                          help="Longest token sequence (default: the model's max_len)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR",
                                       help="Write into a copy of the bundle in DIR instead of the bundle "
                                            "(default: the default's copy goes to the user cache)."),
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
    if _shipped_default(bundle):
        _export_default(format, out, max_batch, json_out)
        return
    format = _formats_to_write(format)  # the extras each format needs: before torch is imported or the bundle is read
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
