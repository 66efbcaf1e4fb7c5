"""Fault injection for tests: run a write in a subprocess and SIGKILL it at a named step.

The steps are those of the atomic writers in ``lwx_edge/atomic.py``, selected with ``LWX_EDGE_FAULT=STEP[@NAME][#N]``
(``NAME``: the file or directory being written; ``N``: the N-th time that step is reached, default the first):

    file:written   the temporary file is complete          dir:written    the temporary directory is complete
    file:synced    flushed to disk, not yet renamed          dir:synced     flushed, not yet swapped in
    file:renamed   in place, directory not yet flushed       dir:old-moved  between the two renames: the old
                                                                            version aside, the new not in place
                                                           dir:renamed    new in place, old copy not removed

    r = run_python("from lwx_edge.bundle import write_text_atomic; write_text_atomic('x.txt', 'new')",
                   fault="file:synced@x.txt")
    assert_killed(r)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

FAULT_ENV = "LWX_EDGE_FAULT"
FILE_STEPS = ("file:written", "file:synced", "file:renamed")
DIR_STEPS = ("dir:written", "dir:synced", "dir:old-moved", "dir:renamed")
# the steps after which the new version is in place (before them a reader still sees the old one)
NEW_AFTER = ("file:renamed", "dir:renamed")
TESTS = Path(__file__).resolve().parent


def _env(fault: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if fault:
        env[FAULT_ENV] = fault
    return env


def run_python(code: str, fault: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (cwd ``tests/``, so ``import conftest`` works) with ``fault`` set."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=_env(fault), cwd=TESTS)


def run_cli(args: list[str], fault: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``python -m lwx_edge ARGS`` with ``fault`` set."""
    return subprocess.run([sys.executable, "-m", "lwx_edge", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=_env(fault), cwd=TESTS)


def assert_killed(r: subprocess.CompletedProcess) -> None:
    """The process died of SIGKILL (the fault fired), not of an error or a normal exit."""
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr[-3000:])


def hidden(directory: str | os.PathLike) -> list[str]:
    """Names of the hidden entries (temporaries, ``.old-*`` copies) left in ``directory``."""
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith("."))
