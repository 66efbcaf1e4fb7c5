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
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from .. import runtime
from .._logging import reporter
from ..atomic import sha256_file
from ..bundle import MANIFEST, PARITY, TOKENIZER, WEIGHTS, Bundle
from ..errors import BundleError, InputError, LwxError
from .parity import Thresholds

__all__ = ["export_bundle", "ExportError", "ParityError", "Thresholds", "FORMATS", "artifact_name",
           "PARITY_FILE"]

PARITY_FILE = PARITY
INPUTS = {"input_ids": "int64 [batch, seq]", "attention_mask": "int64 [batch, seq], 1 = token"}
TOKENIZER_RUNTIME = "sentencepiece / pytorch_tokenizers CppSPTokenizer"
TEXT_NORMALIZATION = ("lwx_edge.text.normalize before SentencePiece: NFKC, typographic quotes/dashes to ASCII, "
                      "whitespace collapsed, lowercase; texts longer than max_len keep their first max_len tokens")


class ExportError(LwxError):
    """Export could not be done (missing dependency, unwritable output, exporter failure)."""


class ParityError(ExportError):
    """An artefact failed its parity checks; nothing was written. ``report`` holds the numbers."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


def _exportable() -> dict[str, runtime.BackendSpec]:
    """The backends export can make, by ``--format`` name."""
    return {spec.format: spec for spec in runtime.backends() if spec.format and spec.exporter}


def __getattr__(name: str):
    if name == "FORMATS":  # the registry's export formats, as it is now
        return tuple(_exportable())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def artifact_name(fmt: str, int8: bool) -> str:
    """File name of the artefact of format ``fmt`` (int8 or fp32)."""
    return _exportable()[fmt].artifacts["int8" if int8 else "fp32"]


def _parse_formats(formats) -> tuple[str, ...]:
    known = tuple(_exportable())
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


def _read_json(path: Path) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def _merge_and_write_metadata(target: Path, new_entries: dict, new_report: dict) -> tuple[dict, dict]:
    """Rewrite parity.json (merged with still-valid older entries) and manifest.json (hashes + artifacts)."""
    from ..atomic import write_json_atomic
    from ..bundle import update_manifest

    old_parity = _read_json(target / PARITY)
    kept = {}
    for name, e in (old_parity.get("artifacts") or {}).items():
        p = target / name
        if name not in new_entries and p.is_file() and isinstance(e, dict) and e.get("sha256") == sha256_file(p):
            kept[name] = e
    parity = {**new_report, "artifacts": {**kept, **new_report["artifacts"]}}
    write_json_atomic(target / PARITY, parity)
    return parity, update_manifest(target, new_entries)


def _install_hint(what: str) -> str:
    return (f"{what}; install the export extra: pip install 'lwx-edge[export]' "
            "(on CPU-only machines pin the CPU torch wheel, e.g. pip install torch==2.13.0 'lwx-edge[export]')")


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

    say = reporter(__name__, log)  # progress: logging (INFO), and ``log`` too when given
    fmts = _parse_formats(formats)
    max_batch = _positive_int(max_batch, "max_batch")
    if max_len is not None:
        max_len = _positive_int(max_len, "max_len")
    th = dataclasses.replace(thresholds) if thresholds is not None else Thresholds()
    if min_cos_mean is not None:
        th.int8_min_cos_mean = float(min_cos_mean)
    if min_cos_min is not None:
        th.int8_min_cos_min = float(min_cos_min)

    bundle = Bundle.load(bundle_dir)  # BundleError: missing, corrupt, truncated, wrong format
    if not bundle.has(WEIGHTS):
        raise BundleError(f"{bundle.path}: bundle has no {WEIGHTS}; export needs a bundle with trained weights")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ExportError(_install_hint("torch is not installed")) from None
    for fmt in fmts:
        if ("int8" if int8 else "fp32") not in _exportable()[fmt].artifacts:
            raise InputError(f"the {fmt} format has no {'int8' if int8 else 'fp32'} model")
        with _quiet.quiet(quiet):
            ok, why = importlib.import_module(_exportable()[fmt].exporter).available()
        if not ok:
            raise ExportError(_install_hint(f"cannot export {fmt}: {why}"))

    from ..training.checkpoint import load_encoder

    encoder = load_encoder(bundle)  # BundleError: unreadable or mismatched weights
    cfg = encoder.config
    if max_len is None:
        max_len = int(cfg.max_len)
    if max_len > cfg.max_len:
        raise InputError(f"max_len {max_len} exceeds the model's max_len {cfg.max_len} (its position table)")
    tokenizer = bundle.tokenizer(max_len=max_len)  # BundleError: a text contract we do not apply, wrong vocab
    if not allow_collapsed:
        _refuse_collapsed(encoder, tokenizer, bundle.path)
    target, new_copy = _resolve_target(bundle, out)

    with _quiet.quiet(quiet):
        return _export(bundle, encoder, tokenizer, fmts, bool(int8), max_batch, max_len, th, target, new_copy,
                       say, quiet)


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


def _remove_stale_work_dirs() -> None:
    """Work directories of exports that were killed (their process is gone): ``lwx-export-PID-*``."""
    for d in Path(tempfile.gettempdir()).glob("lwx-export-*-*"):
        pid = d.name.split("-")[2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass  # alive (or not ours to signal): leave it


def _export(bundle, encoder, tokenizer, fmts, int8, max_batch, max_len, th, target, new_copy, say, quiet) -> dict:
    import torch

    from .. import _quiet
    from .._version import __version__
    from ..atomic import atomic_dir
    from ..bundle import inside
    from . import parity as P

    _remove_stale_work_dirs()
    work = Path(tempfile.mkdtemp(prefix=f"lwx-export-{os.getpid()}-"))
    try:
        staged: dict[str, Path] = {}
        facts: dict[str, dict] = {}
        precision = "int8" if int8 else "fp32"
        metadata = {"lwx_edge.max_len": max_len, "lwx_edge.tokenizer": TOKENIZER, "lwx_edge.precision": precision,
                    "lwx_edge.output": "sentence_embedding", "lwx_edge.text_normalization": TEXT_NORMALIZATION,
                    "lwx_edge.version": __version__}
        specs = {}
        for fmt in fmts:
            spec = _exportable()[fmt]
            name = spec.artifacts[precision]
            path = work / name
            try:
                facts[name] = importlib.import_module(spec.exporter).export(
                    encoder, path, int8=int8, max_batch=max_batch, max_len=max_len, work=work, metadata=metadata,
                    say=say)
            except LwxError:
                raise
            except Exception as e:
                raise ExportError(f"exporting {name} failed: {type(e).__name__}: {e}") from e
            staged[name] = path
            specs[name] = spec

        # ------------------------------------------------------------------ parity
        say("checking parity against the fp32 PyTorch encoder")
        probe = P.build_probe(tokenizer)
        sizes = P.batch_sizes(max_batch)

        def eager(x, m):
            with torch.no_grad():
                return encoder(torch.from_numpy(x), torch.from_numpy(m)).numpy()

        ref, ref_shapes = P.run_modes(eager, probe.ids, sizes)
        entries_parity: dict[str, dict] = {}
        manifest_entries: dict[str, dict] = {}
        failures: list[str] = []
        for name, path in staged.items():
            f, twin = facts[name], importlib.import_module(specs[name].exporter)
            with _quiet.native_quiet() if quiet else _nullcontext():
                # the SDK's runtimes: parity is measured on what apps run
                runner = specs[name].open(path, None, max_batch=max_batch)
                art, shapes = P.run_modes(runner.run, probe.ids, sizes)
            del runner
            entry = {"format": f["format"], "precision": precision, "bytes": path.stat().st_size,
                     "sha256": sha256_file(path), "max_len": max_len,
                     **{k: f[k] for k in twin.PARITY_FIELDS if k in f},
                     **P.compare(ref, art), "shapes": shapes, "batch_sizes": sizes}
            fails = P.check(entry, th)
            entry["passed"] = not fails
            entry["failures"] = fails
            entry["checks"] = {
                **({"cos_mean_min": th.int8_min_cos_mean, "cos_min_min": th.int8_min_cos_min} if int8 else
                   {"cos_min_min": th.fp32_min_cos, "max_abs_diff_max": th.fp32_max_abs,
                    "batch_invariance_max": th.fp32_batch_invariance}),
                "batch_invariance_cos_max": th.max_batch_invariance_cos}
            entries_parity[name] = entry
            failures += [f"{name}: {x}" for x in fails]
            manifest_entries[name] = {
                "format": f["format"], "precision": precision, "quantization": f["quantization"],
                "max_len": max_len, "inputs": dict(INPUTS),
                "output": {"sentence_embedding": f"float32 [batch, {encoder.config.d_model}]"},
                "output_note": "raw mean-pooled vector u (not L2-normalised)",
                "tokenizer": TOKENIZER, "tokenizer_runtime": TOKENIZER_RUNTIME,
                "text_normalization": TEXT_NORMALIZATION,
                **{k: f[k] for k in twin.MANIFEST_FIELDS if k in f},
                "parity": {"cos_mean": round(entry["cos_mean"], 7), "cos_min": round(entry["cos_min"], 7),
                           "max_abs_diff": entry["max_abs_diff"],
                           "batch_invariance_cos": entry["batch_invariance_cos"], "passed": entry["passed"]},
                "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "lwx_edge_version": __version__,
            }
        with _quiet.native_quiet() if quiet else _nullcontext():
            tok_parity = P.tokenizer_parity(tokenizer, [r["text"] for r in probe.records])
        report = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "lwx_edge_version": __version__,
            "bundle": {"weights_sha256": bundle.sha256(WEIGHTS), "model": bundle.config["model"]},
            "reference": {"runtime": f"torch {torch.__version__} eager fp32 (lwx_edge.model.SentenceEncoder)",
                          "batch_invariance": P.batch_invariance(ref),
                          "batch_invariance_cos": P.batch_invariance_cos(ref), "shapes": ref_shapes},
            "batch_sizes": sizes,
            "probe": probe.summary(),
            "retrieval_set": "each probe text queries all other probe texts by cosine",
            "tokenizer_parity": tok_parity,
            "thresholds": th.to_dict(),
            "artifacts": entries_parity,
        }
        if failures:
            raise ParityError("parity check failed, nothing was written: " + "; ".join(failures) +
                              " (thresholds: int8 cosine mean >= "
                              f"{th.int8_min_cos_mean}, min >= {th.int8_min_cos_min})", report)

        # ------------------------------------------------------------------ commit
        say(f"writing {', '.join(staged)} into {target}")
        base = bundle if new_copy else Bundle.load(target, verify=False)
        with atomic_dir(target) as tmp:  # the whole bundle swaps at once: a kill leaves the old or the new one
            for rel in [*base.manifest["files"], MANIFEST]:
                if rel not in staged and inside(base.path, rel).is_file():
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(base.path / rel, tmp / rel)
            for name, path in staged.items():
                shutil.move(str(path), str(tmp / name))
            parity, manifest = _merge_and_write_metadata(tmp, manifest_entries, report)
        report["output_dir"] = str(target)
        report["paths"] = {name: str(target / name) for name in staged}
        report["manifest_artifacts"] = {n: manifest["artifacts"][n] for n in staged}
        return report
    except OSError as e:
        raise ExportError(f"export failed: {e}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False
