"""Texts from command-line arguments or a file (one per line), shared by embed, predict and search."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import InputError


def read_lines(path: Path) -> list[str]:
    """Non-blank lines of a UTF-8 text file ('-' reads standard input)."""
    import sys

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the input file ({e})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def gather(texts: Optional[list[str]], input: Optional[Path], what: str = "texts") -> list[str]:
    """Arguments, or the lines of ``input``; an error when there is nothing."""
    out = list(texts or [])
    if input is not None:
        out += read_lines(input)
    if not out:
        raise InputError(f"no {what}: give them as arguments or with --input FILE")
    return out
