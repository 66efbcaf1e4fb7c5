"""``lwx-edge embed``: embed text lines with a bundle, to .npy or JSONL."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ._options import threads_option


def embed(
    bundle: Path = typer.Argument(..., help="Model bundle directory, or 'default' for the shipped model."),
    texts: List[str] = typer.Argument(None, help="Texts to embed (or use --input)."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", help="A text file, one sentence per line."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write .npy (or .jsonl); default JSONL to stdout."),
    batch_size: int = typer.Option(64, "--batch-size"),
    backend: str = typer.Option("auto", "--backend", help="auto | onnx | executorch | torch."),
    threads: Optional[int] = threads_option(),
    progress: bool = typer.Option(False, "--progress", help="Show a progress bar."),
) -> None:
    """Embed sentences; vectors are L2-normalised float32."""
    import numpy as np

    from ..bundle import write_text_atomic
    from ..encoder import Encoder
    from ..errors import InputError
    from ._texts import gather

    if output and output.suffix not in (".npy", ".jsonl"):
        raise InputError(f"{output}: --output must end in .npy (a float32 array) or .jsonl (text + vector per line)")
    texts = gather(texts, input)
    enc = Encoder.load(bundle, backend=backend, threads=threads)
    vecs = enc.embed(texts, batch_size=batch_size, progress=progress, truncation="ignore")
    if enc.last_truncated:
        typer.echo(f"note: {len(enc.last_truncated)} input(s) were longer than the model's max length "
                   f"and were truncated: {enc.last_truncated[:10]}", err=True)
    if output and output.suffix == ".npy":
        from ..bundle import atomic_file

        with atomic_file(output) as tmp:
            with open(tmp, "wb") as f:
                np.save(f, vecs)
    else:
        lines = "".join(json.dumps({"text": t, "embedding": [round(float(x), 6) for x in v]}, ensure_ascii=False) + "\n"
                        for t, v in zip(texts, vecs))
        if output:
            write_text_atomic(output, lines)
        else:
            sys.stdout.write(lines)
