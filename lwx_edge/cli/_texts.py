"""Texts from command-line arguments or a file (one per line), shared by embed, predict and search.

Each text keeps where it came from ("notes.txt line 5", counting every line from 1, blank ones included;
"argument 2"), so that an error or a note about a text names that place rather than its position in the batch.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from ..errors import InputError

_TEXT_N = re.compile(r"^text (\d+) (?:is |has )?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _decode(data: bytes, name: str) -> str:
    """UTF-8 (a leading byte-order mark dropped), or an InputError naming the line of the first bad byte."""
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        start = skip + e.start
        line = data[:start].count(b"\n") + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(f"{name} line {line}: not valid UTF-8 (byte 0x{data[start]:02x}, byte {column} of the "
                         "line); save the file as UTF-8") from None


def read_located(path: Path) -> list[tuple[str, str]]:
    """(where, text) for each non-blank line of a UTF-8 text file ('-' reads standard input); ``where`` is
    "FILE line N", N counting every line from 1 (blank ones included)."""
    import sys

    name = "stdin" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            stream = getattr(sys.stdin, "buffer", None)
            text = _decode(stream.read(), name) if stream is not None else sys.stdin.read()
        else:
            text = _decode(path.read_bytes(), name)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read the input file ({e.strerror or e})") from None
    lines = _LINE_BREAK.split(text)  # what an editor counts as lines: \n, \r\n or \r ends one
    return [(f"{name} line {n}", line.strip()) for n, line in enumerate(lines, 1) if line.strip()]


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
        raise InputError(f"no {what}: give them as arguments or with --input FILE")
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
