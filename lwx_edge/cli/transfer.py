"""``lwx-edge transfer``: a bundle's encoder moved to another tokenizer (vocabulary transfer), no training."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ._extras import require
from ._options import threads_option


def transfer(
    bundle: Path = typer.Argument(..., metavar="BUNDLE",
                                  help="Bundle to start from, or 'default' for the shipped model."),
    tokenizer: Path = typer.Option(..., "--tokenizer", metavar="FILE",
                                   help="The new SentencePiece model (e.g. a larger vocabulary from `lwx-edge data "
                                        "tokenizer --vocab-size N`)."),
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR",
                             help="Directory of the new training bundle (fp32 weights)."),
    teacher: str = typer.Option("use", "--teacher", metavar="use|none",
                                help="use: new pieces start from the teacher's vectors of them (the [teacher] "
                                     "extra); none: from the mean of the old pieces they are made of."),
    table_bits: Optional[int] = typer.Option(None, "--table-bits", metavar="4|8",
                                             help="4: keep the token table on a 4-bit grid, stored so in the "
                                                  "exported models (half the size); default: BUNDLE's."),
    table_rank: Optional[int] = typer.Option(None, "--table-rank", metavar="R",
                                             help="Store the token table as rows of width R and one R -> d map (its "
                                                  "best rank-R form, frequent pieces weighing more): about d/R times "
                                                  "the pieces in the same size; 0: full width; default: BUNDLE's."),
    counts_from: Optional[Path] = typer.Option(None, "--counts-from", metavar="DIR",
                                               help="With --table-rank: weigh pieces by how often they occur in the "
                                                    "train splits of this corpus root (e.g. data/corpus); default: "
                                                    "by their BPE merge order."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Write OUT: BUNDLE's encoder with its token table moved to TOKENIZER; pieces both know keep their row."""
    from ..bundle import check_new_bundle_dir
    from ..errors import LwxError

    if teacher not in ("use", "none"):
        raise LwxError(f"unknown teacher {teacher!r} (use 'use' or 'none')")
    check_new_bundle_dir(out)  # before the teacher and the weights load
    require("transfer", "train")  # before torch is imported or anything is read
    if teacher == "use":
        require("transfer", "teacher", instead=", or start new pieces from their old ones: --teacher none")
    from ..training.transfer import transfer_bundle

    if table_bits not in (None, 4, 8):
        raise LwxError(f"--table-bits must be 4 or 8, got {table_bits}")
    model = None
    if teacher == "use":
        from ..data.teacher import USETeacher

        model = USETeacher(threads)
    texts = None
    if counts_from is not None:
        from ..data.vocab import tokenizer_texts

        texts, _ = tokenizer_texts(counts_from)
    typer.echo(json.dumps(transfer_bundle(str(bundle), tokenizer, out, model, table_bits, table_rank, texts),
                          indent=2))
