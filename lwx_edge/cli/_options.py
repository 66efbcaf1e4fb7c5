"""Options shared by several subcommands."""
from __future__ import annotations

import typer


def threads_option():
    """``--threads N``: CPU threads for every runtime the command uses (torch, onnxruntime, ExecuTorch, the
    teacher); default: each runtime's own."""
    return typer.Option(None, "--threads", callback=_positive,
                        help="CPU threads for torch, onnxruntime, ExecuTorch and the teacher (default: theirs).")


def _positive(value):
    if value is not None and value < 1:
        from ..errors import InputError

        raise InputError(f"--threads must be >= 1, got {value}")
    return value
