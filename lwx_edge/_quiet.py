"""Silence the harmless noise of torch.export / torchao / ExecuTorch / the ONNX exporter.

Two layers:
* Python warnings and log records matching known-harmless messages are dropped;
* native (C++) lines written straight to file descriptor 2 (ExecuTorch's cpuinfo/threadpool logs,
  pytorch_tokenizers' regex log) are captured and replayed afterwards, minus the known-noise lines.

Set ``LWX_EXPORT_VERBOSE=1`` to see everything.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import warnings
from typing import Iterator

# Python warnings (message regexes) seen during export and known to be harmless.
_WARNING_MESSAGES = [
    r".*isinstance\(treespec, LeafSpec\)",
    r"This API is experimental and subject to change",
    r"(read_binary|read_text|open_text|open_binary) is deprecated",
    r".*torch\.jit\.script_method. is deprecated",
    r".*The axis name: .* will not be used",
    r".*is an Enum subclass and is now natively supported",
    r".*register_constant\(\)",
    r".*torch\.ao\.quantization is deprecated",
    r".*TypedStorage is deprecated",
    r".*Please use `quant_min` and `quant_max`",
]

# Log records (message regexes) and the loggers they come from.
_LOG_MESSAGES = re.compile(
    r"Failed to load .*torchao/_C|Skipping import of cpp extensions|torchvision is not installed|"
    r"is an Enum subclass and is now natively supported|register_constant\(\)")
_LOGGERS = ("torchao", "torch.utils._pytree", "torch.onnx", "torch.onnx._internal.exporter._registration",
            "torch._export", "torch.export", "executorch", "root", "onnxscript", "onnx_ir")

# Native stderr lines.
_NATIVE_NOISE = re.compile(
    r"cpuinfo_utils\.cpp|Failed to open midr file|CPU info and manual query on # of cpus|"
    r"threadpool\.cpp:\d+\] Resetting threadpool|Registering override fallback regex|"
    r"torchvision is not installed|Failed to load .*torchao/_C|isinstance\(treespec, LeafSpec\)|"
    r"^\s*return cls\.__new__\(cls, \*args\)\s*$|is an Enum subclass and is now natively supported")


class _DropNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return not _LOG_MESSAGES.search(record.getMessage())
        except Exception:
            return True


def verbose() -> bool:
    return os.environ.get("LWX_EXPORT_VERBOSE", "") not in ("", "0")


@contextlib.contextmanager
def python_quiet() -> Iterator[None]:
    """Drop the known-harmless Python warnings and log records inside the block."""
    if verbose():
        yield
        return
    flt = _DropNoise()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    handlers = [h for h in logging.getLogger().handlers]
    with warnings.catch_warnings():
        for msg in _WARNING_MESSAGES:
            warnings.filterwarnings("ignore", message=msg)
        for lg in loggers:
            lg.addFilter(flt)
        for h in handlers:
            h.addFilter(flt)
        last = logging.lastResort
        if last is not None:
            last.addFilter(flt)
        try:
            yield
        finally:
            for lg in loggers:
                lg.removeFilter(flt)
            for h in handlers:
                h.removeFilter(flt)
            if last is not None:
                last.removeFilter(flt)


@contextlib.contextmanager
def native_quiet() -> Iterator[None]:
    """Capture file descriptor 2 inside the block and replay it without the known-noise lines."""
    if verbose():
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    cap = tempfile.TemporaryFile(mode="w+b")
    try:
        os.dup2(cap.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except Exception:
                pass
            os.dup2(saved, 2)
            os.close(saved)
            cap.seek(0)
            text = cap.read().decode("utf-8", "replace")
            keep = [line for line in text.splitlines() if line.strip() and not _NATIVE_NOISE.search(line)]
            if keep:
                sys.stderr.write("\n".join(keep) + "\n")
                sys.stderr.flush()
    finally:
        cap.close()


@contextlib.contextmanager
def quiet(enabled: bool = True) -> Iterator[None]:
    if not enabled:
        yield
        return
    with native_quiet(), python_quiet():
        yield
