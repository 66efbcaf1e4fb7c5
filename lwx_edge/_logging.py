"""The package's one logging channel: standard :mod:`logging`, one logger per module.

Library code logs with ``log = logging.getLogger(__name__)``; the ``lwx_edge`` logger carries a
``NullHandler`` (set in ``lwx_edge/__init__.py``), so an application that does not configure logging sees
nothing. The command line (and the tools) call :func:`configure_cli_logging`: INFO and above to stderr,
written through ``tqdm.write`` so progress bars stay intact.
"""
from __future__ import annotations

import logging
import sys
from typing import Callable

PACKAGE = "lwx_edge"


class TqdmHandler(logging.Handler):
    """Write each record to stderr with ``tqdm.write`` (above any progress bar, which is redrawn below it)."""

    def emit(self, record: logging.LogRecord) -> None:
        """Format the record and write it through tqdm."""
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)  # sys.stderr looked up now: capture still works
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


class _Formatter(logging.Formatter):
    """The message alone; warnings and errors prefixed ``warning: `` / ``error: `` as the CLI always wrote them."""

    def format(self, record: logging.LogRecord) -> str:
        msg = super().format(record)
        return f"{record.levelname.lower()}: {msg}" if record.levelno >= logging.WARNING else msg


def configure_cli_logging(level: int = logging.INFO) -> logging.Logger:
    """Send the package's records at ``level`` and above to stderr through tqdm, and nowhere else (no
    propagation to the root logger); calling it again changes nothing but the level. Returns the ``lwx_edge``
    logger."""
    logger = logging.getLogger(PACKAGE)
    if not any(isinstance(h, TqdmHandler) for h in logger.handlers):
        handler = TqdmHandler()
        handler.setFormatter(_Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    # not also to the root logger: a library that configures root logging at import (ExecuTorch's export
    # stack does) would otherwise print every line a second time
    logger.propagate = False
    return logger


def reporter(name: str, callback: Callable[[str], None] | None = None) -> Callable[[str], None]:
    """A progress function for APIs that keep their ``log=`` callback: each message goes to the logger ``name``
    at INFO and, when given, to ``callback`` too."""
    logger = logging.getLogger(name)

    def say(msg: str) -> None:
        logger.info(msg)
        if callback is not None:
            callback(msg)

    return say
