"""``lwx-edge info``: the model card of a bundle (what it is, its training data, what it was measured to do)."""
from __future__ import annotations

import json
from pathlib import Path

import typer


def info(
    bundle: Path = typer.Argument(Path("default"), metavar="BUNDLE",
                                  help="Model bundle directory, or 'default' for the shipped model."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest (files, training, artefacts) as JSON."),
) -> None:
    """Print the model card of BUNDLE (markdown), built from its config, manifest and shipped evaluation."""
    from ..bundle import Bundle
    from ..encoder import default_model_path
    from ..modelcard import model_card

    is_default = str(bundle) == "default"
    path = default_model_path() if is_default else bundle
    if as_json:
        typer.echo(json.dumps(Bundle.load(path).manifest, indent=2, ensure_ascii=False))
        return
    typer.echo(model_card(path, name="the lwx-edge default model" if is_default else str(bundle)))
