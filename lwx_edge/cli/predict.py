"""``lwx-edge predict``: labels (and probabilities) of texts with a head fitted by ``lwx-edge fit``."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ._options import threads_option


def predict(
    bundle: Path = typer.Argument(..., help="Model bundle directory the head was fitted on ('default': the shipped model)."),
    head: Path = typer.Argument(..., help="Head directory written by lwx-edge fit."),
    texts: List[str] = typer.Argument(None, help="Texts to classify (or use --input)."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", help="A text file, one text per line ('-': stdin)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines with every class probability."),
    backend: str = typer.Option("auto", "--backend", help="auto | onnx | executorch | torch."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Print one line per text: label, probability, text (tab-separated), or JSON lines with --json."""
    from ..encoder import Encoder
    from ..heads import load_head
    from ._texts import gather

    items = gather(texts, input)
    enc = Encoder.load(bundle, backend=backend, threads=threads)
    h = load_head(head, encoder=enc)  # refused (HeadError) when fitted on another encoder
    proba = h.predict_proba(enc.embed(items, truncation="ignore"))
    best = proba.argmax(axis=1)
    for text, p, k in zip(items, proba, best):
        label = h.classes_[k].item()
        if as_json:
            sys.stdout.write(json.dumps({"text": text, "label": label, "proba": {
                str(c): round(float(q), 6) for c, q in zip(h.classes_.tolist(), p)}}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{label}\t{p[k]:.4f}\t{text}\n")
