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

Nothing is written unless every artefact passes its parity checks; a failed export leaves the bundle as it
was. This package imports torch, ExecuTorch and ONNX lazily; the artefacts themselves need only
onnxruntime or the ExecuTorch runtime.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from lwx_edge.errors import BundleError, InputError, LwxError

from .parity import Thresholds

__all__ = ["export_bundle", "ExportError", "ParityError", "Thresholds", "FORMATS", "artifact_name",
           "PARITY_FILE"]

FORMATS = ("pte", "onnx")
PARITY_FILE = "parity.json"
INPUTS = {"input_ids": "int64 [batch, seq]", "attention_mask": "int64 [batch, seq], 1 = token"}
TOKENIZER_RUNTIME = "sentencepiece / pytorch_tokenizers CppSPTokenizer"
TEXT_NORMALIZATION = ("lwx_edge.text.normalize before SentencePiece: NFKC, typographic quotes/dashes to ASCII, "
                      "whitespace collapsed, lowercase; texts longer than max_len keep their first max_len tokens")
_BASE_MANIFEST_KEYS = ("format", "format_version", "lwx_edge_version", "created", "files")


class ExportError(LwxError):
    """Export could not be done (missing dependency, unwritable output, exporter failure)."""


class ParityError(ExportError):
    """An artefact failed its parity checks; nothing was written. ``report`` holds the numbers."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


def artifact_name(fmt: str, int8: bool) -> str:
    return "model" + (".int8" if int8 else "") + {"pte": ".pte", "onnx": ".onnx"}[fmt]


def _parse_formats(formats) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = [f for f in formats.split(",")]
    try:
        items = [str(f).strip().lower() for f in formats]
    except TypeError:
        raise InputError(f"formats must be a list like ['pte', 'onnx'], got {formats!r}") from None
    items = [f for f in items if f]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise InputError(f"unknown export format(s) {bad or formats!r}; choose from {', '.join(FORMATS)}")
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
        from lwx_edge.bundle import WEIGHTS, Bundle

        try:
            other = Bundle.load(out)
            same = (other.has(WEIGHTS) and other.sha256(WEIGHTS) == bundle.sha256(WEIGHTS)
                    and other.config.get("model") == bundle.config.get("model")
                    and other.sha256("tokenizer.model") == bundle.sha256("tokenizer.model"))
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
    from lwx_edge.bundle import MANIFEST, sha256_file, write_json_atomic, write_manifest

    old_parity = _read_json(target / PARITY_FILE)
    kept = {}
    for name, e in (old_parity.get("artifacts") or {}).items():
        p = target / name
        if name not in new_entries and p.is_file() and isinstance(e, dict) and e.get("sha256") == sha256_file(p):
            kept[name] = e
    parity = {**new_report, "artifacts": {**kept, **new_report["artifacts"]}}
    write_json_atomic(target / PARITY_FILE, parity)

    old_manifest = _read_json(target / MANIFEST)
    info = {k: v for k, v in old_manifest.items() if k not in _BASE_MANIFEST_KEYS}
    info.setdefault("training", {})
    arts = {n: e for n, e in (info.get("artifacts") or {}).items()
            if n not in new_entries and (target / n).is_file()}
    arts.update(new_entries)
    info["artifacts"] = arts
    manifest = write_manifest(target, info)
    return parity, manifest


def _install_hint(what: str) -> str:
    return (f"{what}; install the export extra: pip install 'lwx-edge[export]' "
            "(on CPU-only machines pin the CPU torch wheel, e.g. pip install torch==2.13.0 'lwx-edge[export]')")


def export_bundle(bundle_dir: str | os.PathLike, formats: Iterable[str] | str = FORMATS, int8: bool = False,
                  max_batch: int = 16, max_len: int | None = None, out: str | os.PathLike | None = None,
                  *, min_cos_mean: float | None = None, min_cos_min: float | None = None,
                  thresholds: Thresholds | None = None, log: Callable[[str], None] | None = None,
                  quiet: bool = True) -> dict:
    """Export a bundle to ExecuTorch and/or ONNX (fp32, or int8 with ``int8=True``) and check parity.

    Returns the parity report of this run (``report["artifacts"][name]`` per artefact, plus
    ``report["output_dir"]`` and ``report["paths"]``). Raises ``BundleError`` for a missing/corrupt/mismatched
    bundle or one without weights, ``InputError`` for bad arguments, ``ExportError`` for an unwritable output
    directory or a missing dependency, and ``ParityError`` if an artefact fails its checks (int8: cosine mean
    >= ``min_cos_mean`` (0.999) and min >= ``min_cos_min`` (0.99) against fp32 eager; fp32: near-identical
    and batch-invariant within 1e-5). On any error nothing is left behind.
    """
    from . import _quiet

    say = log or (lambda msg: None)
    fmts = _parse_formats(formats)
    max_batch = _positive_int(max_batch, "max_batch")
    if max_len is not None:
        max_len = _positive_int(max_len, "max_len")
    th = dataclasses.replace(thresholds) if thresholds is not None else Thresholds()
    if min_cos_mean is not None:
        th.int8_min_cos_mean = float(min_cos_mean)
    if min_cos_min is not None:
        th.int8_min_cos_min = float(min_cos_min)

    from lwx_edge.bundle import TOKENIZER, WEIGHTS, Bundle

    bundle = Bundle.load(bundle_dir)  # BundleError: missing, corrupt, truncated, wrong format
    if not bundle.has(WEIGHTS):
        raise BundleError(f"{bundle.path}: bundle has no {WEIGHTS}; export needs a bundle with trained weights")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ExportError(_install_hint("torch is not installed")) from None
    for fmt in fmts:
        mod = __import__(f"{__name__}.{'executorch' if fmt == 'pte' else 'onnx'}", fromlist=["available"])
        with _quiet.quiet(quiet):
            ok, why = mod.available()
        if not ok:
            raise ExportError(_install_hint(f"cannot export {fmt}: {why}"))

    from lwx_edge.checkpoint import load_encoder
    from lwx_edge.tokenizer import Tokenizer

    encoder = load_encoder(bundle)  # BundleError: unreadable or mismatched weights
    cfg = encoder.config
    if max_len is None:
        max_len = int(cfg.max_len)
    if max_len > cfg.max_len:
        raise InputError(f"max_len {max_len} exceeds the model's max_len {cfg.max_len} (its position table)")
    try:
        tokenizer = Tokenizer(bundle.file(TOKENIZER), max_len=max_len)
    except InputError as e:
        raise BundleError(f"{bundle.path}: {e}") from None
    if tokenizer.vocab_size > cfg.vocab_size:
        raise BundleError(f"{bundle.path}: tokenizer.model has {tokenizer.vocab_size} pieces but the model's "
                          f"vocabulary is {cfg.vocab_size}: tokenizer and weights do not belong together")
    target, new_copy = _resolve_target(bundle, out)

    with _quiet.quiet(quiet):
        return _export(bundle, encoder, tokenizer, fmts, bool(int8), max_batch, max_len, th, target, new_copy,
                       say, quiet)


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

    from lwx_edge import __version__
    from lwx_edge.bundle import atomic_dir, sha256_file

    from . import _quiet
    from . import parity as P

    _remove_stale_work_dirs()
    work = Path(tempfile.mkdtemp(prefix=f"lwx-export-{os.getpid()}-"))
    try:
        staged: dict[str, Path] = {}
        facts: dict[str, dict] = {}
        precision = "int8" if int8 else "fp32"
        for fmt in fmts:
            name = artifact_name(fmt, int8)
            path = work / name
            try:
                if fmt == "pte":
                    from .executorch import export_pte

                    say(f"exporting {name}: ExecuTorch/XNNPACK {precision}, batch 1..{max_batch}, "
                        f"seq 1..{max_len}")
                    facts[name] = export_pte(encoder, path, int8=int8, max_batch=max_batch, max_len=max_len)
                else:
                    from . import onnx as O

                    say(f"exporting {name}: ONNX {precision} (dynamo, opset 18), dynamic batch, seq 1..{max_len}")
                    fp32_path = work / "model.fp32.onnx" if int8 else path
                    facts[name] = O.export_onnx(encoder, fp32_path, max_len=max_len)
                    if int8:
                        facts[name].update(O.quantize(fp32_path, path, work))
                        fp32_path.unlink()
                    O.finalize(path, {"lwx_edge.max_len": max_len, "lwx_edge.tokenizer": "tokenizer.model",
                                      "lwx_edge.precision": precision, "lwx_edge.output": "sentence_embedding",
                                      "lwx_edge.text_normalization": TEXT_NORMALIZATION,
                                      "lwx_edge.version": __version__})
            except LwxError:
                raise
            except Exception as e:
                raise ExportError(f"exporting {name} failed: {type(e).__name__}: {e}") from e
            staged[name] = path

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
            f = facts[name]
            with _quiet.native_quiet() if quiet else _nullcontext():
                if f["format"] == "executorch":  # the SDK's runtimes: parity is measured on what apps run
                    from lwx_edge.runtime.executorch_backend import ExecuTorchBackend

                    runner = ExecuTorchBackend(path, max_batch=max_batch)
                else:
                    from lwx_edge.runtime.onnx_backend import OnnxBackend

                    runner = OnnxBackend(path)
                art, shapes = P.run_modes(runner.run, probe.ids, sizes)
            del runner
            entry = {"format": f["format"], "precision": precision, "bytes": path.stat().st_size,
                     "sha256": sha256_file(path), "max_len": max_len,
                     **({"max_batch": max_batch, "arena_bytes": f["arena_bytes"]} if f["format"] == "executorch"
                        else {}),
                     **P.compare(ref, art), "shapes": shapes, "batch_sizes": sizes}
            fails = P.check(entry, th)
            entry["passed"] = not fails
            entry["failures"] = fails
            entry["checks"] = (
                {"cos_mean_min": th.int8_min_cos_mean, "cos_min_min": th.int8_min_cos_min} if int8 else
                {"cos_min_min": th.fp32_min_cos, "max_abs_diff_max": th.fp32_max_abs,
                 "batch_invariance_max": th.fp32_batch_invariance})
            entries_parity[name] = entry
            failures += [f"{name}: {x}" for x in fails]
            manifest_entries[name] = {
                "format": f["format"], "precision": precision, "quantization": f["quantization"],
                **({"max_batch": max_batch} if f["format"] == "executorch" else {}),
                "max_len": max_len, "inputs": dict(INPUTS),
                "output": {"sentence_embedding": f"float32 [batch, {encoder.config.d_model}]"},
                "output_note": "raw mean-pooled vector u (not L2-normalised)",
                "tokenizer": "tokenizer.model", "tokenizer_runtime": TOKENIZER_RUNTIME,
                "text_normalization": TEXT_NORMALIZATION,
                **({k: f[k] for k in ("backend", "arena_bytes", "delegation", "executorch_version",
                                      "runtime_notes") if k in f} if f["format"] == "executorch" else
                   {k: f[k] for k in ("opset", "exporter", "onnxruntime_version") if k in f}),
                "parity": {"cos_mean": round(entry["cos_mean"], 7), "cos_min": round(entry["cos_min"], 7),
                           "max_abs_diff": entry["max_abs_diff"], "passed": entry["passed"]},
                "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "lwx_edge_version": __version__,
            }
        with _quiet.native_quiet() if quiet else _nullcontext():
            tok_parity = P.tokenizer_parity(tokenizer, [r["text"] for r in probe.records])
        report = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "lwx_edge_version": __version__,
            "bundle": {"weights_sha256": bundle.sha256("model.safetensors"), "model": bundle.config["model"]},
            "reference": {"runtime": f"torch {torch.__version__} eager fp32 (lwx_edge.model.SentenceEncoder)",
                          "batch_invariance": P.batch_invariance(ref), "shapes": ref_shapes},
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
        from lwx_edge.bundle import Bundle, inside

        base = bundle if new_copy else Bundle.load(target, verify=False)
        with atomic_dir(target) as tmp:  # the whole bundle swaps at once: a kill leaves the old or the new one
            for rel in [*base.manifest["files"], "manifest.json"]:
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
