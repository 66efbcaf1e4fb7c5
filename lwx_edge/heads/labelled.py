"""Read labelled text files for fitting and evaluating heads: CSV, TSV (by extension) or JSON lines.

    texts, labels = read_labelled("train.csv", text_col="text", label_col="label")

A CSV/TSV file needs a header row naming its columns; a JSONL file one object per line. Rows with an empty
text or label are skipped and counted (``LabelledFile.skipped``), never fatal; a missing column, an unreadable
file or a file with no usable row is an ``InputError`` naming the file.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, open_input


@dataclass
class LabelledFile:
    """Texts and labels read from a labelled file, and how many rows were skipped; unpacks as (texts, labels)."""
    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    skipped: int = 0

    def __iter__(self):  # texts, labels = read_labelled(...)
        return iter((self.texts, self.labels))


def _rows(path: Path):
    suffix = path.suffix.lower()
    with open_input(path, "labelled file", encoding="utf-8-sig", newline="") as f:
        try:
            if suffix in (".jsonl", ".json"):
                for i, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            row = json.loads(line)
                        except json.JSONDecodeError as e:
                            raise InputError(f"{path}:{i}: not valid JSON ({e.msg})") from None
                        if not isinstance(row, dict):
                            raise InputError(f"{path}:{i}: expected a JSON object per line")
                        yield i, row
            else:
                reader = csv.DictReader(f, delimiter="\t" if suffix in (".tsv", ".tab") else ",")
                if reader.fieldnames is None:
                    raise InputError(f"{path}: empty file (expected a header row)")
                for row in reader:
                    yield reader.line_num, row
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text") from None
        except csv.Error as e:
            raise InputError(f"{path}: malformed CSV ({e})") from None


def read_labelled(path: str | os.PathLike, text_col: str = "text", label_col: str = "label") -> LabelledFile:
    """Texts and labels (as strings) of a CSV/TSV/JSONL file."""
    path = Path(path)
    out = LabelledFile()
    for i, row in _rows(path):
        for col in (text_col, label_col):
            if col not in row:
                have = ", ".join(map(str, row)) or "none"
                raise InputError(f"{path}:{i}: no column {col!r} (columns: {have}); "
                                 "choose them with --text-col / --label-col")
        text, label = row[text_col], row[label_col]
        text = "" if text is None else str(text).strip()
        label = "" if label is None else str(label).strip()
        if not text or not label:
            out.skipped += 1
            continue
        out.texts.append(text)
        out.labels.append(label)
    if not out.texts:
        raise InputError(f"{path}: no labelled rows (columns {text_col!r}, {label_col!r})")
    return out
