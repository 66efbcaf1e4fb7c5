"""``lwx-edge eval``: cross-lingual retrieval and zero-shot classification on DDTP, retrieval on everyday-style
dialogue and everyday text, with reference systems and space diagnostics."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

import typer

from ._extras import require
from ._options import threads_option

REFERENCES = ("teacher", "tfidf", "random", "static")
# texts -> their vectors [n, d] (numpy; TF-IDF: scipy sparse rows)
Embedder = Callable[[Sequence[str]], Any]


def _tfidf(corpus: Path, pair_dirs: list[Path]) -> Embedder:
    """TF-IDF fitted on the train splits the tasks draw from (DDTP documents, and each scored pair corpus)."""
    from ..evaluate import _docs, doc_text, tfidf_embedder, tsv_pairs

    texts = [t for doc in _docs(corpus / "train.docs.jsonl") for lang in ("en", "fr", "de", "es", "it")
             if (t := doc_text(doc, lang, "doc"))]
    for d in pair_dirs:
        for f in sorted(d.glob("train.en-*.tsv")):
            texts += [t for pair in zip(*tsv_pairs(f)) for t in pair]
    return tfidf_embedder(texts, sparse=True)  # the whole vocabulary (package names are strong cues)


def eval_(
    bundles: List[Path] = typer.Argument(..., metavar="BUNDLE",
                                         help="Model bundles to score ('default': the shipped model)."),
    corpus: Path = typer.Option(Path("data/corpus/ddtp"), "--corpus", metavar="DIR",
                                help="DDTP corpus directory ({split}.docs.jsonl, from: lwx-edge data ddtp)."),
    split: str = typer.Option("test", "--split", metavar="dev|test", help="The split to score on."),
    tasks: str = typer.Option("xsr,cls,dialogue,everyday,conversation", "--tasks", metavar="TASKS",
                              help="Comma-separated: xsr (retrieval), cls (zero-shot classification), dialogue "
                                   "(retrieval on Wesnoth dialogue), everyday (retrieval on the everyday corpus), "
                                   "conversation (retrieval on conversational lines of games never trained on)."),
    dialogue: Path = typer.Option(Path("data/corpus/dialogue"), "--dialogue", metavar="DIR",
                                  help="Dialogue corpus directory ({split}.en-xx.tsv, from: lwx-edge data "
                                       "dialogue)."),
    everyday: Path = typer.Option(Path("data/corpus/everyday"), "--everyday", metavar="DIR",
                                  help="Everyday corpus directory ({split}.en-xx.tsv, from: lwx-edge data "
                                       "everyday)."),
    conversation: Path = typer.Option(Path("data/corpus/conversation"), "--conversation", metavar="DIR",
                                      help="Conversation corpus directory ({split}.en-xx.tsv, from: lwx-edge data "
                                           "conversation)."),
    refs: str = typer.Option("teacher,tfidf,random", "--refs", metavar="SYSTEMS",
                             help="Reference systems scored in the same run, comma-separated: teacher (the "
                                  "[teacher] extra), tfidf, random, static (a Model2Vec-style static model "
                                  "distilled from the first BUNDLE); '' for none."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="FILE",
                                       help="Write the results as JSON here (and a .md table beside it)."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Score bundles and reference systems on the same DDTP split; print a markdown table."""
    from ..evaluate import evaluate_ddtp, markdown_table

    task_list, ref_list = _checked_options(split, tasks, refs)
    pair_dirs = _pair_dirs(corpus, split, task_list,
                           {"dialogue": dialogue, "everyday": everyday, "conversation": conversation})
    systems = _bundle_systems(bundles, threads)
    systems.update(_reference_systems(ref_list, corpus, pair_dirs, threads, bundles[0]))
    dirs: dict[str, str | os.PathLike] = dict(pair_dirs)
    results = evaluate_ddtp(systems, corpus, split, task_list, pair_dirs=dirs)  # progress: logging
    table = markdown_table(results, split)
    typer.echo(table)
    if out:
        _write(out, table, {"split": split, "corpus": str(corpus), "tasks": task_list, "results": results})


def _checked_options(split: str, tasks: str, refs: str) -> tuple[list[str], list[str]]:
    """The tasks and reference systems asked for, checked (and the teacher's extra, before any model runs)."""
    from ..errors import InputError
    from ..evaluate import PAIR_TASKS

    if split not in ("dev", "test"):
        raise InputError(f"--split must be dev or test, got {split!r} (the train split is what models learn from)")
    task_list = [t for t in tasks.split(",") if t]
    if not task_list or set(task_list) - {"xsr", "cls", *PAIR_TASKS}:
        raise InputError(f"--tasks takes xsr, cls, {', '.join(PAIR_TASKS)} (comma-separated), got {tasks!r}")
    ref_list = [r for r in refs.split(",") if r]
    if set(ref_list) - set(REFERENCES):
        raise InputError(f"--refs takes {', '.join(REFERENCES)}, got {refs!r}")
    if "teacher" in ref_list:  # before any model runs: the teacher is scored last
        require("eval", "teacher", instead=", or score without the teacher: --refs tfidf,random")
    return task_list, ref_list


def _pair_dirs(corpus: Path, split: str, task_list: list[str], dirs: dict[str, Path]) -> dict[str, Path]:
    """The corpus directory of each pair task asked for, each checked to hold the split (as is the DDTP corpus)."""
    from ..errors import InputError

    if not (corpus / f"{split}.docs.jsonl").is_file():
        raise InputError(f"{corpus}: no {split}.docs.jsonl (build it with: lwx-edge data ddtp)")
    pair_dirs = {t: d for t, d in dirs.items() if t in task_list}
    for task, d in pair_dirs.items():
        if not any((d / f"{split}.en-{lang}.tsv").is_file() for lang in ("fr", "de", "es", "it")):
            raise InputError(f"{d}: no {split}.en-xx.tsv (build it with: lwx-edge data {task}, "
                             f"or leave {task} out of --tasks)")
    return pair_dirs


def _bundle_systems(bundles: List[Path], threads: Optional[int]) -> dict[str, Embedder]:
    """An embedder per bundle, each loaded and checked for collapse (a collapsed one is scored all the same)."""
    from .. import collapse
    from ..encoder import Encoder

    systems: dict[str, Embedder] = {}
    for b in bundles:
        enc = Encoder.load(b, threads=threads)
        try:
            collapse.check(enc.embed, str(b))
        except collapse.CollapsedModelError as e:  # scored all the same: the table then shows it at chance
            typer.secho(f"WARNING: {e}", err=True, fg=typer.colors.RED, bold=True)

        def embed(texts: Sequence[str], enc: Encoder = enc) -> Any:
            return enc.embed(list(texts), batch_size=64, truncation="ignore", progress=len(texts) > 2000)

        systems[f"lwx-edge {b}"] = embed
    return systems


def _reference_systems(ref_list: list[str], corpus: Path, pair_dirs: dict[str, Path],
                       threads: Optional[int], source: Path) -> dict[str, Embedder]:
    """The reference systems asked for, in the table's order: the teacher, TF-IDF, random, the static model
    distilled from ``source`` (static_model.py)."""
    from ..evaluate import random_embedder

    systems: dict[str, Embedder] = {}
    if "teacher" in ref_list:
        from ..data.teacher import USETeacher

        teacher = USETeacher(threads)

        def use(texts: Sequence[str], batch: int = 256) -> Any:
            import numpy as np

            return np.concatenate([teacher.encode(list(texts[s:s + batch])) for s in range(0, len(texts), batch)])

        systems["teacher USE-m v3"] = use
    if "tfidf" in ref_list:
        systems["TF-IDF"] = _tfidf(corpus, list(pair_dirs.values()))
    if "random" in ref_list:
        systems["random"] = random_embedder()
    if "static" in ref_list:
        from ..encoder import Encoder
        from ..static_model import StaticModel

        static = StaticModel.distil(Encoder.load(source, threads=threads))
        systems[f"static from {source} (Model2Vec-style)"] = static.embed
    return systems


def _write(out: Path, table: str, results: dict) -> None:
    """The results as JSON at OUT, and the markdown table beside it (unless OUT is a stream)."""
    from ..atomic import is_stream, write_json_atomic, write_text_atomic

    write_json_atomic(out, results)
    if not is_stream(out):  # /dev/null, /dev/stdout, a FIFO: nothing beside it
        write_text_atomic(out.with_suffix(".md"), table + "\n")
