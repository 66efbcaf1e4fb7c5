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
    """Embed sentences; vectors are L2-normalised float32. Blank lines of --input are skipped; a text with
    nothing to embed (only invisible characters, say) gets an all-zero vector and a note naming its line."""
    import numpy as np

    from .._io import is_stream
    from ..bundle import write_text_atomic
    from ..encoder import Encoder
    from ..errors import InputError
    from ._texts import gather_located, located, places

    stream = output is not None and is_stream(output)  # /dev/stdout, /dev/null, a FIFO: JSONL unless .npy
    if output and not stream and output.suffix not in (".npy", ".jsonl"):
        raise InputError(f"{output}: --output must end in .npy (a float32 array) or .jsonl (text + vector per line)")
    if output and not stream and not output.parent.is_dir():
        raise InputError(f"{output}: no such directory {output.parent} (create it first)")
    texts, where = gather_located(texts, input)
    enc = Encoder.load(bundle, backend=backend, threads=threads)
    try:
        vecs = enc.embed(texts, batch_size=batch_size, progress=progress, truncation="ignore", empty="ignore")
    except InputError as e:
        raise located(e, where) from None
    if enc.last_empty:
        typer.echo(f"note: {len(enc.last_empty)} text(s) have nothing to embed (empty, or only control or "
                   f"invisible characters) and got all-zero vectors: {places(enc.last_empty, where)}", err=True)
    if enc.last_truncated:
        typer.echo(f"note: {len(enc.last_truncated)} text(s) were longer than the model's max length "
                   f"({enc.max_len} tokens) and were truncated: {places(enc.last_truncated, where)}", err=True)
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
