"""One export as a job: what to export, from which encoder, with which checks, into which directory, and what
each stage of :mod:`lwx_edge.export.pipeline` adds to it (the staged files, their facts, the report)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import runtime
from ..bundle import Bundle
from ..errors import LwxError
from ..tokenizer import Tokenizer
from .parity import Thresholds

INPUTS = {"input_ids": "int64 [batch, seq]", "attention_mask": "int64 [batch, seq], 1 = token"}
TOKENIZER_RUNTIME = "sentencepiece / pytorch_tokenizers CppSPTokenizer"
TEXT_NORMALIZATION = ("lwx_edge.text.normalize before SentencePiece: NFKC, typographic quotes/dashes to ASCII, "
                      "whitespace collapsed, lowercase; texts longer than max_len keep their first max_len tokens")


class ExportError(LwxError):
    """Export could not be done (missing dependency, unwritable output, exporter failure)."""


class ParityError(ExportError):
    """An artefact failed its parity checks; nothing was written. ``report`` holds the numbers."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


def exportable() -> dict[str, runtime.BackendSpec]:
    """The backends export can make, by ``--format`` name."""
    return {spec.format: spec for spec in runtime.backends() if spec.format and spec.exporter}



@dataclass
class ExportJob:
    """One export (built and checked by :func:`lwx_edge.export.export_bundle`, run by
    :func:`lwx_edge.export.pipeline.run`). ``encoder`` is the bundle's fp32 ``SentenceEncoder``; ``target`` the
    directory written at commit (``new_copy``: a new copy of the bundle)."""

    bundle: Bundle
    encoder: Any
    tokenizer: Tokenizer
    formats: tuple[str, ...]
    int8: bool
    max_batch: int
    max_len: int
    thresholds: Thresholds
    target: Path
    new_copy: bool
    say: Callable[[str], None]
    quiet: bool = True
    work: Path = Path()                                                     # the stages' scratch directory
    staged: dict[str, Path] = field(default_factory=dict)                   # artefact name -> its file in work
    facts: dict[str, dict] = field(default_factory=dict)                    # what each exporter reported
    specs: dict[str, runtime.BackendSpec] = field(default_factory=dict)     # artefact name -> its backend
    manifest_entries: dict[str, dict] = field(default_factory=dict)         # artefact name -> manifest entry
    report: dict = field(default_factory=dict)                              # the parity report

    @property
    def precision(self) -> str:
        return "int8" if self.int8 else "fp32"
