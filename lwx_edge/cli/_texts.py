"""Texts from command-line arguments or a file (one per line), shared by embed, predict and search.

Each text keeps where it came from ("notes.txt line 5", counting every line from 1, blank ones included;
"argument 2"), so that an error or a note about a text names that place rather than its position in the batch.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from ..errors import InputError
from ..textfiles import read_lines as read_file_lines

_TEXT_N = re.compile(r"^text (\d+) (?:is |has )?")


def read_located(path: Path) -> list[tuple[str, str]]:
    """(where, text) for each non-blank line of a UTF-8 text file ('-' reads standard input); ``where`` is
    "FILE line N", N counting every line from 1 (blank ones included). Read by :mod:`lwx_edge.textfiles`."""
    name = "stdin" if str(path) == "-" else str(path)
    return [(f"{name} line {n}", line) for n, line in read_file_lines(path)]


def read_lines(path: Path) -> list[str]:
    """Non-blank lines of a UTF-8 text file ('-' reads standard input)."""
    return [t for _, t in read_located(path)]


def _check_unicode(where: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"{where}: not valid Unicode (a lone surrogate at character {e.start}: bytes that are "
                         "not UTF-8)") from None


def gather_located(texts: Optional[list[str]], input: Optional[Path],
                   what: str = "texts") -> tuple[list[str], list[str]]:
    """(texts, where each came from): the arguments ("argument N"), then the lines of ``input`` ("FILE line
    N"); an error when there is nothing, or naming the text that is not valid Unicode."""
    pairs = [(f"argument {n}", t) for n, t in enumerate(texts or [], 1)]
    if input is not None:
        pairs += read_located(input)
    if not pairs:
        raise InputError(f"no {what}: give them as arguments or with --input FILE" if input is None else
                         f"no {what} in {'standard input' if str(input) == '-' else input} (it holds no non-blank line)")
    for where, t in pairs:
        _check_unicode(where, t)
    return [t for _, t in pairs], [w for w, _ in pairs]


def gather(texts: Optional[list[str]], input: Optional[Path], what: str = "texts") -> list[str]:
    """Arguments, or the lines of ``input``; an error when there is nothing."""
    return gather_located(texts, input, what)[0]


def located(error: InputError, where: list[str]) -> InputError:
    """``error`` with its leading "text N ..." (N: the position in the batch) replaced by where text N came
    from: "notes.txt line 5: ..."; other errors unchanged."""
    m = _TEXT_N.match(str(error))
    if not m or int(m.group(1)) >= len(where):
        return error
    return InputError(f"{where[int(m.group(1))]}: {str(error)[m.end():]}")


def places(indices: list[int], where: list[str], limit: int = 10) -> str:
    """"notes.txt line 5, notes.txt line 9, ... and 3 more" for texts by their position in the batch."""
    shown = ", ".join(where[i] for i in indices[:limit])
    return shown + (f" and {len(indices) - limit} more" if len(indices) > limit else "")
