"""``lwx-edge train``: train the dual-transformer encoder and write a bundle."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from ._extras import require
from ._options import threads_option

if TYPE_CHECKING:
    from ..training.config import TrainConfig

LIST_OPTIONS = ("corpus", "mono", "dev_pairs", "dev_xsr")  # repeatable options: given, they replace the list


def train(
    corpus: List[Path] = typer.Option([], "--corpus", "-c", metavar="FILE|DIR",
                                      help="Parallel training pairs: *.en-xx.tsv[.gz] files, or directories of "
                                           "train.*.tsv (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR",
                                       help="Run directory: checkpoints, metrics and the finished bundle (default "
                                            "runs/lwx)."),
    mono: List[Path] = typer.Option([], "--mono", metavar="FILE|DIR",
                                    help="Monolingual text for distillation: train.{lang}.txt files, or their "
                                         "directory (repeatable)."),
    dev_pairs: List[Path] = typer.Option([], "--dev-pairs", metavar="FILE|DIR",
                                         help="Parallel dev pairs for the dev loss: files, or directories of "
                                              "dev.*.tsv (repeatable)."),
    dev_docs: Optional[Path] = typer.Option(None, "--dev-docs", metavar="FILE",
                                            help="DDTP dev.docs.jsonl: document retrieval precision@1 while "
                                                 "training."),
    dev_xsr: List[Path] = typer.Option([], "--dev-xsr", metavar="FILE|DIR",
                                       help="Parallel dev files, or directories of dev.*.tsv: retrieval "
                                            "precision@1, averaged with --dev-docs to pick the best checkpoint "
                                            "(repeatable)."),
    config: List[Path] = typer.Option([], "--config", metavar="FILE",
                                      help="JSON file of training settings, e.g. recipes/default.json; repeatable: "
                                           "later files overlay earlier ones, then the options and --set apply."),
    tokenizer: Optional[Path] = typer.Option(None, "--tokenizer", metavar="FILE",
                                             help="Use this SentencePiece model instead of training one."),
    init_from: Optional[Path] = typer.Option(None, "--init-from", metavar="BUNDLE",
                                             help="Start from this bundle's encoder and tokenizer: a training "
                                                  "bundle, or an exported int8 one such as 'default'."),
    vocab_size: Optional[int] = typer.Option(None, "--vocab-size", metavar="N",
                                             help="Pieces of the SentencePiece model trained for the run (default "
                                                  "16000)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", metavar="N",
                                             help="Translation pairs per step, over all GPUs (default 128)."),
    lr: Optional[float] = typer.Option(None, "--lr", metavar="RATE", help="Peak learning rate (default 1e-3)."),
    epochs: Optional[int] = typer.Option(None, "--epochs", metavar="N",
                                         help="Passes over the training pairs (default 12)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", metavar="N", help="Stop after this many steps."),
    max_time: Optional[float] = typer.Option(None, "--max-time", metavar="SECONDS",
                                             help="Stop after this many seconds of training."),
    teacher: Optional[str] = typer.Option(None, "--teacher", metavar="use|none",
                                          help="Distillation teacher: use (multilingual Universal Sentence Encoder "
                                               "v3, from the [teacher] extra; the default) or none."),
    device: Optional[str] = typer.Option(None, "--device", metavar="auto|cpu|cuda",
                                         help="Where to train: auto (a GPU when there is one; the default), cpu or "
                                              "cuda."),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N",
                                       help="Random seed of the data order and the initial weights (default 0)."),
    set_: List[str] = typer.Option([], "--set", metavar="KEY=VALUE",
                                   help="Override one training setting, e.g. weights.sim=0 (repeatable; applied "
                                        "last)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue the run in OUT from its last checkpoint, exactly where it stopped."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Train an encoder on translation pairs (with distillation from a teacher) and write OUT/bundle."""
    cfg = _config(config, set_, corpus=corpus, mono=mono, dev_pairs=dev_pairs, dev_xsr=dev_xsr, out_dir=out,
                  dev_docs=dev_docs, tokenizer=tokenizer, init_from=init_from, vocab_size=vocab_size,
                  batch_size=batch_size, lr=lr, epochs=epochs, max_steps=max_steps, max_time=max_time,
                  teacher=teacher, device=device, seed=seed, threads=threads)
    typer.echo(json.dumps(_run(cfg, resume), indent=2))


def _config(files: List[Path], set_: List[str], **options: Any) -> TrainConfig:
    """The run's settings: the --config files overlaid in order, then the options given (a list option replaces
    the files' list), then each --set. The [train] extra is checked first."""
    require("train", "train")  # before torch is imported or anything is read
    from ..errors import LwxError
    from ..training.config import TrainConfig

    cfg = TrainConfig.from_files(files)
    for name, value in options.items():
        if name in LIST_OPTIONS:
            if value:
                setattr(cfg, name, [str(p) for p in value])
        elif value is not None:
            setattr(cfg, name, str(value) if isinstance(value, Path) else value)
    for item in set_:
        if "=" not in item:
            raise LwxError(f"--set expects key=value, got {item!r}")
        cfg.set(*item.split("=", 1))
    return cfg


def _run(cfg: TrainConfig, resume: bool) -> dict:
    """Train with these settings (the teacher's extra checked first when the run needs the teacher); the result."""
    from ..training.trainer import train as run

    if cfg.teacher == "use" and (cfg.weights.kd or cfg.weights.mono or (cfg.init_from and cfg.tokenizer)):
        require("train", "teacher", instead=", or train without it: --teacher none")
    return run(cfg, resume=resume)
