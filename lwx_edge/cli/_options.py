"""Options shared by several subcommands."""
from __future__ import annotations

from typing import Any, Optional

import typer


def threads_option() -> Any:
    """``--threads N``: CPU threads for every runtime the command uses (torch, onnxruntime, ExecuTorch, the
    teacher); default: each runtime's own."""
    return typer.Option(None, "--threads", metavar="N", callback=_positive,
                        help="CPU threads to run on (default: each runtime's own choice, usually every core).")


def _positive(value: Optional[int]) -> Optional[int]:
    """Refuse 0 and negatives; more than the machine's CPUs is capped with a warning (in no time: a pool of
    100,000 threads took minutes to start)."""
    if value is not None and value < 1:
        from ..errors import InputError

        raise InputError(f"--threads must be >= 1, got {value}")
    import warnings

    from ..runtime.base import usable_threads

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = usable_threads(value, "--threads")
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    return value
