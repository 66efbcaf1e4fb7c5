"""``lwx-edge search``: exact cosine nearest neighbours of queries in a corpus of lines."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ._options import threads_option


def search(
    bundle: Path = typer.Argument(..., metavar="BUNDLE",
                                  help="Model bundle directory, or 'default' for the shipped model."),
    queries: List[str] = typer.Argument(None, metavar="QUERY", help="Query texts (or use --input)."),
    corpus: Path = typer.Option(..., "--corpus", "-c", metavar="FILE",
                                help="UTF-8 text file to search, one entry per line."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", metavar="FILE",
                                         help="Queries from a UTF-8 text file, one per line ('-': standard input)."),
    top_k: int = typer.Option(5, "--top-k", "-k", metavar="K", help="Results per query."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a readable list."),
    backend: str = typer.Option("auto", "--backend", metavar="NAME",
                                help="Runtime: auto, onnx, executorch or torch (auto: the first the bundle and this "
                                     "install can run)."),
    threads: Optional[int] = threads_option(),
) -> None:
    """For each query, the TOP_K most similar corpus lines (cosine, exact)."""
    from ..encoder import Encoder
    from ..errors import InputError
    from ..search import search as nearest
    from ._texts import gather

    if str(corpus) == "-" and input is not None and str(input) == "-":
        raise InputError("--corpus - and --input - cannot both read standard input; give one of them as a file")
    items = gather(queries, input, "queries")
    docs = gather(None, corpus, "corpus lines")
    enc = Encoder.load(bundle, backend=backend, threads=threads)
    q = enc.embed(items, truncation="ignore")
    c = enc.embed(docs, progress=len(docs) > 5000, truncation="ignore")
    res = nearest(q, c, top_k=top_k)
    for text, idx, scores in zip(items, res.indices, res.scores):
        hits = [{"rank": r + 1, "index": int(i), "score": round(float(s), 4), "text": docs[i]}
                for r, (i, s) in enumerate(zip(idx, scores))]
        if as_json:
            sys.stdout.write(json.dumps({"query": text, "hits": hits}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{text}\n" + "".join(f"  {h['rank']}. {h['score']:.3f}  {h['text']}\n" for h in hits))
