"""``lwx-edge embed``: embed text lines with a bundle, to .npy or JSONL."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ._options import threads_option


def embed(
    bundle: Path = typer.Argument(..., metavar="BUNDLE",
                                  help="Model bundle directory, or 'default' for the shipped model."),
    texts: List[str] = typer.Argument(None, metavar="TEXT", help="Texts to embed (or use --input)."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", metavar="FILE",
                                         help="A UTF-8 text file, one sentence per line ('-': standard input)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                          help="Write a .npy array (or .jsonl: text and vector per line); default: "
                                               "JSON lines to standard output."),
    batch_size: int = typer.Option(64, "--batch-size", metavar="N",
                                   help="Most texts the model runs at once (more: faster, more memory)."),
    backend: str = typer.Option("auto", "--backend", metavar="NAME",
                                help="Runtime: auto, onnx, executorch or torch (auto: the first the bundle and this "
                                     "install can run)."),
    threads: Optional[int] = threads_option(),
    progress: bool = typer.Option(False, "--progress", help="Show a progress bar."),
) -> None:
    """Embed sentences; vectors are L2-normalised float32. Blank lines of --input are skipped; a text with
    nothing to embed (only invisible characters, say) gets an all-zero vector and a note naming its line."""
    import numpy as np

    from ..atomic import is_stream, write_text_atomic
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
        from ..atomic import atomic_file

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
