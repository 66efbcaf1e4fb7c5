"""Read labelled text files for fitting and evaluating heads (CSV, TSV by extension, or JSON lines).

    texts, labels = read_labelled("train.csv", text_col="text", label_col="label")

The reader is :func:`lwx_edge.textfiles.read_labelled`, strict (its module docstring lists the rules): a
malformed row, an empty text or label is one ``InputError`` naming the file and the 1-based line.
"""
from __future__ import annotations

from ..textfiles import LabelledFile, read_labelled

__all__ = ["LabelledFile", "read_labelled"]
