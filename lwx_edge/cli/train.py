"""``lwx-edge train``: train the dual-transformer encoder and write a bundle."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from ._options import threads_option


def train(
    corpus: List[Path] = typer.Option([], "--corpus", "-c", help="Parallel files *.en-xx.tsv[.gz], or directories of train.*.tsv (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory (checkpoint, metrics, bundle; default runs/lwx)."),
    mono: List[Path] = typer.Option([], "--mono", help="Monolingual files train.{lang}.txt, or their directory (distillation)."),
    dev_pairs: List[Path] = typer.Option([], "--dev-pairs", help="Parallel files, or directories of dev.*.tsv, for the dev loss."),
    dev_docs: Optional[Path] = typer.Option(None, "--dev-docs", help="DDTP dev.docs.jsonl: retrieval P@1."),
    dev_xsr: List[Path] = typer.Option([], "--dev-xsr", help="Parallel dev files, or directories of dev.*.tsv: "
                                       "retrieval P@1, averaged with --dev-docs' to pick the best checkpoint."),
    config: List[Path] = typer.Option([], "--config", help="JSON file of TrainConfig fields, e.g. recipes/default.json; "
                                      "repeatable: later files overlay earlier ones, flags and --set apply last."),
    tokenizer: Optional[Path] = typer.Option(None, "--tokenizer", help="Reuse this SentencePiece model."),
    init_from: Optional[Path] = typer.Option(None, "--init-from", help="Start from this bundle's encoder and "
                                             "tokenizer (a training bundle, or an exported int8 one such as the default)."),
    vocab_size: Optional[int] = typer.Option(None, "--vocab-size", help="SentencePiece vocabulary (default 16000)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Global batch in pairs (default 128)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Peak learning rate (default 1e-3)."),
    epochs: Optional[int] = typer.Option(None, "--epochs", help="Epochs (default 12)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Stop after this many steps."),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="Stop after this many seconds of training."),
    teacher: Optional[str] = typer.Option(None, "--teacher", help="'use' (USE-multilingual v3) or 'none'."),
    device: Optional[str] = typer.Option(None, "--device", help="auto | cpu | cuda."),
    seed: Optional[int] = typer.Option(None, "--seed"),
    set_: List[str] = typer.Option([], "--set", help="Override any config field: key=value, e.g. weights.sim=0."),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUT/checkpoint exactly."),
    threads: Optional[int] = threads_option(),
) -> None:
    """Train the encoder (all losses of the paper plus distillation) and write OUT/bundle."""
    from ..errors import LwxError
    from ..train import TrainConfig
    from ..train import train as run

    cfg = TrainConfig.from_files(config)
    if corpus:
        cfg.corpus = [str(p) for p in corpus]
    if mono:
        cfg.mono = [str(p) for p in mono]
    if dev_pairs:
        cfg.dev_pairs = [str(p) for p in dev_pairs]
    if dev_xsr:
        cfg.dev_xsr = [str(p) for p in dev_xsr]
    for name, value in [("out_dir", out), ("dev_docs", dev_docs), ("tokenizer", tokenizer), ("init_from", init_from),
                        ("vocab_size", vocab_size), ("batch_size", batch_size), ("lr", lr), ("epochs", epochs),
                        ("max_steps", max_steps), ("max_time", max_time), ("teacher", teacher), ("device", device),
                        ("seed", seed), ("threads", threads)]:
        if value is not None:
            setattr(cfg, name, str(value) if isinstance(value, Path) else value)
    for item in set_:
        if "=" not in item:
            raise LwxError(f"--set expects key=value, got {item!r}")
        cfg.set(*item.split("=", 1))
    result = run(cfg, resume=resume)
    typer.echo(json.dumps(result, indent=2))
