"""``lwx-edge fit``: fit a classifier head on a labelled file, report dev and cross-lingual accuracy, save it."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from ._options import threads_option

if TYPE_CHECKING:
    import numpy as np

    from ..encoder import Encoder
    from ..heads import BaseHead, LabelledFile


def _eval_spec(spec: str) -> tuple[str, Path]:
    from ..errors import InputError

    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise InputError(f"--eval-lang expects LANG=FILE (e.g. fr=fr.csv), got {spec!r}")
    return name, Path(path)


def _report(title: str, report: dict) -> None:
    from ..heads import format_confusion

    typer.echo(f"{title}: accuracy {report['accuracy']:.3f}, balanced {report['balanced_accuracy']:.3f}, "
               f"macro-F1 {report['macro_f1']:.3f} on {report['n']} examples "
               f"(majority class {report['majority_baseline']:.3f})")
    if report["unseen_labels"]:
        typer.echo(f"  labels the head never saw (counted as errors): {report['unseen_labels']}")
    typer.echo(format_confusion(report))


def fit(
    bundle: Path = typer.Argument(..., help="Model bundle directory, or 'default' for the shipped model."),
    data: Path = typer.Argument(..., help="Labelled examples: .csv, .tsv (header row) or .jsonl."),
    out: Path = typer.Option(..., "--out", "-o", help="Head directory to write (head.json + head.npz)."),
    text_col: str = typer.Option("text", "--text-col", help="Column with the text."),
    label_col: str = typer.Option("label", "--label-col", help="Column with the label."),
    kind: str = typer.Option("logistic", "--kind",
                             help="logistic (the default: scores higher with few examples per label) or mlp (a "
                                  "small neural network; worth a try with hundreds of examples per label)."),
    dev_fraction: float = typer.Option(0.2, "--dev-fraction",
                                       help="Stratified slice held out to report dev accuracy (0 = none)."),
    eval_lang: List[str] = typer.Option([], "--eval-lang",
                                        help="LANG=FILE: accuracy on another language's labelled file "
                                             "(zero-shot cross-lingual, repeatable)."),
    backend: str = typer.Option("auto", "--backend", help="auto | onnx | executorch | torch."),
    threads: Optional[int] = threads_option(),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the dev slice and of the head's own randomness."),
    refit: bool = typer.Option(True, "--refit/--no-refit",
                               help="After reporting on the dev slice, fit the saved head on every example."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the reports as JSON here."),
) -> None:
    """Fit a classifier head on frozen embeddings; print dev accuracy and a confusion table."""
    import warnings

    import numpy as np

    from ..atomic import check_file_target, write_json_atomic
    from ..encoder import Encoder
    from ..heads import make_head
    from ..heads.base import FewExamplesWarning, few_examples, stratified_split
    from ..heads.persistence import check_head_dir

    check_head_dir(out)  # both outputs before the slow part, so that a bad one wastes no fit and leaves no head
    if json_out:
        check_file_target(json_out)
    train, eval_sets = _read(data, text_col, label_col, kind, dev_fraction, eval_lang)
    y = np.asarray(train.labels)
    _, y_idx = np.unique(y, return_inverse=True)
    few = few_examples(y_idx)
    if few:  # said before the slow part, once (the head's own warning is silenced below)
        typer.secho(f"warning: {few}", err=True, fg=typer.colors.YELLOW)
    warnings.simplefilter("ignore", FewExamplesWarning)
    enc = Encoder.load(bundle, backend=backend, threads=threads)
    X = enc.embed(train.texts, progress=True, truncation="ignore")
    tr, dev = stratified_split(y_idx, dev_fraction, np.random.default_rng(seed))
    typer.echo(f"fitting the {kind} head on {len(tr)} examples, {len(np.unique(y_idx[tr]))} labels", err=True)
    head = make_head(kind, encoder=enc, random_state=seed).fit(X[tr], y[tr])
    reports = _reports(head, enc, X, y, dev, eval_sets)
    fitted_on = len(tr)
    if refit and len(dev):  # the reports above measured the head without its dev slice; ship one that saw all
        head = make_head(kind, encoder=enc, random_state=seed).fit(X, y)
        fitted_on = len(y)
    head.save(out, info=_info(data, fitted_on, len(dev), len(tr), reports))
    typer.echo(f"head ({kind}, fitted on {fitted_on} examples"
               + (", refitted on all after the dev report" if fitted_on > len(tr) else "") + f") -> {out}")
    if json_out:
        write_json_atomic(json_out, reports)


def _read(data: Path, text_col: str, label_col: str, kind: str, dev_fraction: float,
          eval_lang: List[str]) -> tuple[LabelledFile, dict[str, LabelledFile]]:
    """The training examples and each --eval-lang file, read once the options are checked."""
    from ..errors import InputError
    from ..heads import make_head, read_labelled

    make_head(kind)  # an unknown --kind fails here, before any embedding
    evals = [_eval_spec(s) for s in eval_lang]
    if not 0 <= dev_fraction < 1:
        raise InputError(f"--dev-fraction must be in [0, 1), got {dev_fraction}")
    train = read_labelled(data, text_col, label_col)
    eval_sets = {name: read_labelled(path, text_col, label_col) for name, path in evals}
    typer.echo(f"{data}: {len(train.texts)} examples, {len(set(train.labels))} labels", err=True)
    return train, eval_sets


def _info(data: Path, fitted_on: int, dev_examples: int, reports_fitted_on: int, reports: dict[str, dict]) -> dict:
    """What the saved head records about its fit: the data, the examples it saw, the reports' headline numbers."""
    return {"data": str(data), "examples": int(fitted_on), "dev_examples": int(dev_examples),
            "reports_fitted_on": int(reports_fitted_on),
            "results": {k: {m: v[m] for m in ("n", "accuracy", "balanced_accuracy", "macro_f1")}
                        for k, v in reports.items()}}


def _reports(head: BaseHead, enc: Encoder, X: np.ndarray, y: np.ndarray, dev: np.ndarray,
             eval_sets: dict[str, LabelledFile]) -> dict[str, dict]:
    """The head scored on the dev slice (when there is one) and on each other language's file, each printed."""
    reports = {}
    if len(dev):
        reports["dev"] = head.evaluate(X[dev], y[dev])
        _report(f"dev ({len(dev)} held-out examples)", reports["dev"])
    for name, ds in eval_sets.items():
        reports[name] = head.evaluate(enc.embed(ds.texts, progress=True, truncation="ignore"), ds.labels)
        _report(f"{name} (zero-shot, {len(ds.texts)} examples)", reports[name])
    return reports
