"""``lwx_edge.export``: turn a model bundle into edge artefacts and prove they match (issue #4).

    from lwx_edge.export import export_bundle
    report = export_bundle("runs/bundle", formats=("pte", "onnx"), int8=True)

writes, atomically and into the bundle (or ``out``, a copy of it):

    model.pte / model.int8.pte      ExecuTorch program lowered to XNNPACK, dynamic batch 1..max_batch and
                                    sequence 1..max_len (int8: dynamic per-channel int8 linears + 8-bit
                                    per-row embedding tables)
    model.onnx / model.int8.onnx    ONNX (dynamo exporter, opset 18, dynamic axes; int8: ORT dynamic
                                    quantization, QInt8 per-channel weights with reduce_range)
    parity.json                     the parity report (see ``parity.py``)

and rewrites ``manifest.json`` (sha256 of every file, the "training" section kept, an "artifacts" section added).
Inputs ``input_ids`` / ``attention_mask`` (int64 [batch, seq], 1 = token); output ``sentence_embedding``
(float32 [batch, d], the raw mean-pooled vector, not L2-normalised). The tokenizer is the bundle's
``tokenizer.model`` applied to ``lwx_edge.text.normalize(text)``.

Each format is a backend of the registry (:mod:`lwx_edge.runtime`) whose export twin sits here
(``onnx.py``, ``executorch.py``): the twin writes the file, the backend runs it for the parity checks.
Nothing is written unless every artefact passes its parity checks; a failed export leaves the bundle as it
was. This package imports torch, ExecuTorch and ONNX lazily; the artefacts themselves need only
onnxruntime or the ExecuTorch runtime.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from .._logging import reporter
from ..bundle import PARITY, TOKENIZER, WEIGHTS, Bundle
from ..errors import BundleError, InputError, LwxError
from .job import ExportError, ExportJob, ParityError, exportable
from .parity import Thresholds
from .pipeline import _remove_stale_work_dirs  # noqa: F401  (killed exports' leftovers)

__all__ = ["export_bundle", "ExportError", "ParityError", "Thresholds", "FORMATS", "artifact_name",
           "PARITY_FILE"]

PARITY_FILE = PARITY


def __getattr__(name: str):
    if name == "FORMATS":  # the registry's export formats, as it is now
        return tuple(exportable())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def artifact_name(fmt: str, int8: bool) -> str:
    """File name of the artefact of format ``fmt`` (int8 or fp32)."""
    return exportable()[fmt].artifacts["int8" if int8 else "fp32"]


def _parse_formats(formats) -> tuple[str, ...]:
    known = tuple(exportable())
    if formats is None:
        return known
    if isinstance(formats, str):
        formats = [f for f in formats.split(",")]
    try:
        items = [str(f).strip().lower() for f in formats]
    except TypeError:
        raise InputError(f"formats must be a list like ['pte', 'onnx'], got {formats!r}") from None
    items = [f for f in items if f]
    bad = [f for f in items if f not in known]
    if bad or not items:
        raise InputError(f"unknown export format(s) {bad or formats!r}; choose from {', '.join(known)}")
    return tuple(dict.fromkeys(items))


def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    return value


def _check_writable(d: Path) -> None:
    """Fail early (before minutes of export) if ``d`` cannot be created or written."""
    p = d
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    if p.exists() and not p.is_dir():
        raise ExportError(f"cannot write to output directory {d}: {p} is a file, not a directory")
    try:
        fd, t = tempfile.mkstemp(prefix=".lwx-write-test-", dir=p)
        os.close(fd)
        os.unlink(t)
    except OSError as e:
        raise ExportError(f"cannot write to output directory {d}: {e.strerror or e}") from None


def _resolve_target(bundle, out) -> tuple[Path, bool]:
    """(directory to write into, is_new_copy). A new copy is assembled atomically at commit time."""
    src = bundle.path
    if out is None:
        _check_writable(src)
        return src, False
    out = Path(out)
    if out.exists() and out.resolve() == src.resolve():
        _check_writable(src)
        return src, False
    if out.exists() and not out.is_dir():
        raise ExportError(f"cannot write to output directory {out}: it is a file")
    if out.exists() and any(out.iterdir()):
        try:
            other = Bundle.load(out)
            same = (other.has(WEIGHTS) and other.sha256(WEIGHTS) == bundle.sha256(WEIGHTS)
                    and other.config.get("model") == bundle.config.get("model")
                    and other.sha256(TOKENIZER) == bundle.sha256(TOKENIZER))
        except LwxError:
            same = False
        if not same:
            raise ExportError(f"--out {out} is not empty and is not a copy of {src}; "
                              "give a new or empty directory (or the bundle itself)")
        _check_writable(out)
        return out, False
    _check_writable(out)
    return out, True


def _install_hint(what: str, extra: str = "export") -> str:
    return (f"{what}; install the {extra} extra: pip install 'lwx-edge[{extra}]' "
            f"(on CPU-only machines pin the CPU torch wheel, e.g. pip install torch==2.13.0 'lwx-edge[{extra}]')")


def export_bundle(bundle_dir: str | os.PathLike, formats: Iterable[str] | str | None = None, int8: bool = False,
                  max_batch: int = 16, max_len: int | None = None, out: str | os.PathLike | None = None,
                  *, min_cos_mean: float | None = None, min_cos_min: float | None = None,
                  thresholds: Thresholds | None = None, log: Callable[[str], None] | None = None,
                  quiet: bool = True, allow_collapsed: bool = False) -> dict:
    """Export a bundle to ExecuTorch and/or ONNX (fp32, or int8 with ``int8=True``) and check parity.
    ``formats``: names from :data:`FORMATS` (default: all of them).

    Returns the parity report of this run (``report["artifacts"][name]`` per artefact, plus
    ``report["output_dir"]`` and ``report["paths"]``). Raises ``BundleError`` for a missing/corrupt/mismatched
    bundle or one without weights, ``InputError`` for bad arguments, ``ExportError`` for an unwritable output
    directory or a missing dependency, ``ParityError`` if an artefact fails its checks (int8: cosine mean
    >= ``min_cos_mean`` (0.999) and min >= ``min_cos_min`` (0.99) against fp32 eager; fp32: near-identical
    and batch-invariant within 1e-5), and ``CollapsedModelError`` for a model that gives unrelated texts nearly
    the same vector (:mod:`lwx_edge.collapse`; ``allow_collapsed`` exports it anyway). On any error nothing is
    left behind. Progress messages go to the
    ``lwx_edge.export`` logger (INFO); ``log``, if given, receives each of them too.
    """
    from .. import _quiet
    from . import pipeline

    say = reporter(__name__, log)  # progress: logging (INFO), and ``log`` too when given
    fmts = _parse_formats(formats)
    max_batch = _positive_int(max_batch, "max_batch")
    if max_len is not None:
        max_len = _positive_int(max_len, "max_len")
    th = _thresholds(thresholds, min_cos_mean, min_cos_min)
    bundle = Bundle.load(bundle_dir)  # BundleError: missing, corrupt, truncated, wrong format
    _check_exportable(bundle, fmts, bool(int8), quiet)
    encoder, tokenizer, max_len = _encoder_and_tokenizer(bundle, max_len)
    if not allow_collapsed:
        _refuse_collapsed(encoder, tokenizer, bundle.path)
    target, new_copy = _resolve_target(bundle, out)
    job = ExportJob(bundle, encoder, tokenizer, fmts, bool(int8), max_batch, max_len, th, target, new_copy, say,
                    quiet)
    with _quiet.quiet(quiet):
        return pipeline.run(job)


def _thresholds(thresholds: Thresholds | None, min_cos_mean: float | None, min_cos_min: float | None) -> Thresholds:
    """The parity thresholds: ``thresholds`` (or the defaults) with the int8 cosine bounds given apart."""
    th = dataclasses.replace(thresholds) if thresholds is not None else Thresholds()
    if min_cos_mean is not None:
        th.int8_min_cos_mean = float(min_cos_mean)
    if min_cos_min is not None:
        th.int8_min_cos_min = float(min_cos_min)
    for name, value in (("min_cos_mean", th.int8_min_cos_mean), ("min_cos_min", th.int8_min_cos_min)):
        if not -1.0 <= value <= 1.0:  # nan too: a nan bound would pass every export
            raise InputError(f"{name} must be a cosine between -1 and 1, got {value}")
    return th


def _check_exportable(bundle: Bundle, fmts: tuple[str, ...], int8: bool, quiet: bool) -> None:
    """Refuse, before any work, a bundle without weights, a missing torch or exporter, a precision a format lacks."""
    from .. import _quiet

    if not bundle.has(WEIGHTS):
        raise BundleError(f"{bundle.path}: bundle has no {WEIGHTS}; export needs a bundle with trained weights")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ExportError(_install_hint("torch is not installed")) from None
    for fmt in fmts:
        if ("int8" if int8 else "fp32") not in exportable()[fmt].artifacts:
            raise InputError(f"the {fmt} format has no {'int8' if int8 else 'fp32'} model")
        with _quiet.quiet(quiet):
            ok, why = importlib.import_module(exportable()[fmt].exporter).available()
        if not ok:
            extra = "executorch" if fmt == "pte" else "export"
            raise ExportError(_install_hint(f"cannot export {fmt}: {why}", extra))


def _encoder_and_tokenizer(bundle: Bundle, max_len: int | None):
    """The bundle's fp32 encoder, its tokenizer cut at ``max_len`` (default: the model's), and that max_len."""
    from ..training.checkpoint import load_encoder

    encoder = load_encoder(bundle)  # BundleError: unreadable or mismatched weights
    cfg = encoder.config
    if max_len is None:
        max_len = int(cfg.max_len)
    if max_len > cfg.max_len:
        raise InputError(f"max_len {max_len} exceeds the model's max_len {cfg.max_len} (its position table)")
    tokenizer = bundle.tokenizer(max_len=max_len)  # BundleError: a text contract we do not apply, wrong vocab
    return encoder, tokenizer, max_len


def _refuse_collapsed(encoder, tokenizer, path) -> None:
    """CollapsedModelError when the fp32 encoder gives the probe set's unrelated texts nearly one vector."""
    import torch

    from ..collapse import check
    from ..tokenizer import Tokenizer

    def embed(texts):
        ids, mask = Tokenizer.pad(tokenizer.encode(list(texts)).ids)
        with torch.no_grad():
            return encoder(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()

    check(embed, str(path))


