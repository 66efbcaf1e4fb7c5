"""``lwx-edge index``: a persistent vector index file (add, search, info, delete)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from ._options import threads_option

if TYPE_CHECKING:
    from ..index import Index

app = typer.Typer(help="A persistent vector index (one SQLite file): embed once, search many times.",
                  no_args_is_help=True)

MODEL_HELP = "Model bundle directory, or 'default' for the shipped model (must be the one that built the index)."


def read_items(path: Path, id_col: str, text_col: str) -> tuple[list[str | int], list[str], list[dict[str, Any] | None]]:
    """(ids, texts, metadata) from .txt (a text per line, id = line number), .csv/.tsv (header row; other
    columns become metadata) or .jsonl (objects; other keys become metadata), read strictly by
    :func:`lwx_edge.textfiles.read_items` (an error names the file and line)."""
    from ..textfiles import read_items as read_items_file

    items = read_items_file(path, id_col, text_col)
    return items.ids, items.texts, items.metadata


def _open(index: Path, model: str, threads: Optional[int], create: bool = False, backend: str = "auto") -> Index:
    from ..encoder import Encoder
    from ..index import Index

    if not create and not index.exists():
        Index.open(index)  # the clear "no such index file" error, before loading a model
    return Index.open(index, Encoder.load(model, backend=backend, threads=threads), create=create)


@app.command("add")
def add(
    index: Path = typer.Argument(..., help="Index file (created if missing)."),
    input: Path = typer.Option(..., "--input", "-i", help="Items: .txt (a text per line), .csv/.tsv, .jsonl."),
    id_col: str = typer.Option("id", "--id-col", help="Column/key with the item id (.csv/.tsv/.jsonl)."),
    text_col: str = typer.Option("text", "--text-col", help="Column/key with the text."),
    model: str = typer.Option("default", "--model", "-m", help=MODEL_HELP),
    upsert: bool = typer.Option(False, "--upsert", help="Replace items whose id is already in the index."),
    no_text: bool = typer.Option(False, "--no-text", help="Store vectors and metadata only, not the texts."),
    backend: str = typer.Option("auto", "--backend", help="auto | onnx | executorch | torch."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Embed the items of a file and add them to the index (a transaction per batch)."""
    ids, texts, meta = read_items(input, id_col, text_col)
    with _open(index, model, threads, create=True, backend=backend) as ix:
        write = ix.upsert if upsert else ix.add
        n = write(ids, texts, meta, store_text=not no_text)
        typer.echo(f"{index}: {'upserted' if upsert else 'added'} {n} items, {len(ix)} in all", err=True)


@app.command("search")
def search(
    index: Path = typer.Argument(..., help="Index file."),
    queries: List[str] = typer.Argument(None, help="Query texts (or use --input)."),
    input: Optional[Path] = typer.Option(None, "--input", help="Queries from a file, one per line."),
    top_k: int = typer.Option(5, "--top-k", "-k", help="Results per query."),
    where: List[str] = typer.Option([], "--where", help="KEY=VALUE: only items whose metadata has it (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a readable list."),
    approximate: Optional[bool] = typer.Option(
        None, "--approximate/--exact",
        help="Use the approximate graph (needs pip install 'lwx-edge[ann]'), or never; default: from "
             "50,000 items on when installed. --where searches are always exact."),
    model: str = typer.Option("default", "--model", "-m", help=MODEL_HELP),
    backend: str = typer.Option("auto", "--backend", help="auto | onnx | executorch | torch."),
    threads: Optional[int] = threads_option(),
) -> None:
    """For each query, the TOP_K nearest items of the index (cosine; exact, or the approximate graph)."""
    from ..errors import InputError
    from ._texts import gather

    items = gather(queries, input, "queries")
    filters = {}
    for spec in where:
        if "=" not in spec:
            raise InputError(f"--where expects KEY=VALUE, got {spec!r}")
        key, value = spec.split("=", 1)
        try:
            filters[key] = json.loads(value)
        except ValueError:
            filters[key] = value
    with _open(index, model, threads, backend=backend) as ix:
        results = ix.search(items, top_k=top_k, where=filters or None, approximate=approximate)
    for text, hits in zip(items, results):
        rows = [{"rank": r + 1, "id": h.id, "score": round(h.score, 4), "text": h.text, "metadata": h.metadata}
                for r, h in enumerate(hits)]
        if as_json:
            sys.stdout.write(json.dumps({"query": text, "hits": rows}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{text}\n" + "".join(
                f"  {h['rank']}. {h['score']:.3f}  [{h['id']}] {h['text'] if h['text'] is not None else ''}\n"
                for h in rows))


@app.command("info")
def info(
    index: Path = typer.Argument(..., help="Index file."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON record."),
) -> None:
    """How many items, dimension, storage, size and the encoder that built the index."""
    from ..index import Index

    with Index.open(index) as ix:
        rec = ix.info()
    if as_json:
        typer.echo(json.dumps(rec, indent=2, ensure_ascii=False))
        return
    enc = rec["encoder"]
    typer.echo(f"{rec['path']}: {rec['items']:,} items, {rec['dim']}-d {rec['storage']} vectors, "
               f"{rec['bytes'] / 1e6:.2f} MB ({rec['bytes'] / max(rec['items'], 1):.0f} bytes per item)\n"
               f"encoder: {str(enc.get('sha256'))[:12]}... ({enc.get('bundle', '?')}, {enc.get('artifact', '?')})\n"
               f"text contract: {json.dumps(rec['text_contract'], ensure_ascii=False)}")


@app.command("delete")
def delete(
    index: Path = typer.Argument(..., help="Index file."),
    ids: List[str] = typer.Argument(..., help="Ids to remove (all must exist; integers are matched too)."),
) -> None:
    """Remove items by id, in one transaction (nothing is removed if an id is unknown)."""
    from ..index import Index

    with Index.open(index) as ix:
        keys = [i if i in ix or not i.lstrip("-").isdigit() else int(i) for i in ids]
        n = ix.delete(keys)
        typer.echo(f"{index}: deleted {n} items, {len(ix)} left", err=True)
