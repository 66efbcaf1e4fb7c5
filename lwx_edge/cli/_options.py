"""Options shared by several subcommands."""
from __future__ import annotations

import typer


def threads_option():
    """``--threads N``: CPU threads for every runtime the command uses (torch, onnxruntime, ExecuTorch, the
    teacher); default: each runtime's own."""
    return typer.Option(None, "--threads", min=1,
                        help="CPU threads for torch, onnxruntime, ExecuTorch and the teacher (default: theirs).")
