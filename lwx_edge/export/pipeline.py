"""Export as a pipeline of named stages over one :class:`~lwx_edge.export.job.ExportJob`: each format's model
is written into a scratch directory (``export_models``), every artefact is run by the SDK's own runtime and
compared with the fp32 PyTorch encoder (``check_parity``; nothing is written if one fails), then the bundle is
rewritten at once with the artefacts, parity.json and the manifest (``commit``)."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from .. import _quiet
from .._version import __version__
from ..atomic import atomic_dir, sha256_file, write_json_atomic
from ..bundle import MANIFEST, PARITY, TOKENIZER, WEIGHTS, Bundle, inside, update_manifest
from ..errors import LwxError
from . import parity as P
from .job import INPUTS, TEXT_NORMALIZATION, TOKENIZER_RUNTIME, ExportError, ExportJob, ParityError, exportable


def run(job: ExportJob) -> dict:
    """Run the stages in order in a fresh scratch directory (removed afterwards); the report of the export."""
    _remove_stale_work_dirs()
    job.work = Path(tempfile.mkdtemp(prefix=f"lwx-export-{os.getpid()}-"))
    try:
        for stage in STAGES:
            stage(job)
        return job.report
    except OSError as e:
        raise ExportError(f"export failed: {e}") from None
    finally:
        shutil.rmtree(job.work, ignore_errors=True)


def export_models(job: ExportJob) -> None:
    """Each format's model file, written by its export twin into the scratch directory."""
    metadata = {"lwx_edge.max_len": job.max_len, "lwx_edge.tokenizer": TOKENIZER,
                "lwx_edge.precision": job.precision, "lwx_edge.output": "sentence_embedding",
                "lwx_edge.text_normalization": TEXT_NORMALIZATION, "lwx_edge.version": __version__}
    for fmt in job.formats:
        spec = exportable()[fmt]
        name = spec.artifacts[job.precision]
        path = job.work / name
        try:
            job.facts[name] = importlib.import_module(spec.exporter).export(
                job.encoder, path, int8=job.int8, max_batch=job.max_batch, max_len=job.max_len, work=job.work,
                metadata=metadata, say=job.say)
        except LwxError:
            raise
        except Exception as e:
            raise ExportError(f"exporting {name} failed: {type(e).__name__}: {e}") from e
        job.staged[name] = path
        job.specs[name] = spec


def check_parity(job: ExportJob) -> None:
    """The parity report: every artefact, run by the SDK's runtime on the probe set at several batch sizes,
    against the fp32 PyTorch encoder; ParityError (nothing written) when one fails its thresholds."""
    import torch

    job.say("checking parity against the fp32 PyTorch encoder")
    probe = P.build_probe(job.tokenizer)
    sizes = P.batch_sizes(job.max_batch)

    def eager(x, m):
        with torch.no_grad():
            return job.encoder(torch.from_numpy(x), torch.from_numpy(m)).numpy()

    ref, ref_shapes = P.run_modes(eager, probe.ids, sizes)
    entries: dict[str, dict] = {}
    failures: list[str] = []
    for name in job.staged:
        entries[name] = _artifact_parity(job, name, probe, sizes, ref)
        failures += [f"{name}: {x}" for x in entries[name]["failures"]]
        job.manifest_entries[name] = _manifest_entry(job, name, entries[name])
    with _quiet.native_quiet() if job.quiet else _nullcontext():
        tok_parity = P.tokenizer_parity(job.tokenizer, [r["text"] for r in probe.records])
    th = job.thresholds
    job.report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lwx_edge_version": __version__,
        "bundle": {"weights_sha256": job.bundle.sha256(WEIGHTS), "model": job.bundle.config["model"]},
        "reference": {"runtime": f"torch {torch.__version__} eager fp32 (lwx_edge.model.SentenceEncoder)",
                      "batch_invariance": P.batch_invariance(ref),
                      "batch_invariance_cos": P.batch_invariance_cos(ref), "shapes": ref_shapes},
        "batch_sizes": sizes,
        "probe": probe.summary(),
        "retrieval_set": "each probe text queries all other probe texts by cosine",
        "tokenizer_parity": tok_parity,
        "thresholds": th.to_dict(),
        "artifacts": entries,
    }
    if failures:
        raise ParityError("parity check failed, nothing was written: " + "; ".join(failures) +
                          " (thresholds: int8 cosine mean >= "
                          f"{th.int8_min_cos_mean}, min >= {th.int8_min_cos_min})", job.report)


def _artifact_parity(job: ExportJob, name: str, probe, sizes, ref) -> dict:
    """One artefact's parity entry: its numbers against ``ref``, its checks and whether it passed."""
    path, th, f = job.staged[name], job.thresholds, job.facts[name]
    twin = importlib.import_module(job.specs[name].exporter)
    with _quiet.native_quiet() if job.quiet else _nullcontext():
        # the SDK's runtimes: parity is measured on what apps run
        runner = job.specs[name].open(path, None, max_batch=job.max_batch)
        art, shapes = P.run_modes(runner.run, probe.ids, sizes)
    del runner
    entry = {"format": f["format"], "precision": job.precision, "bytes": path.stat().st_size,
             "sha256": sha256_file(path), "max_len": job.max_len,
             **{k: f[k] for k in twin.PARITY_FIELDS if k in f},
             **P.compare(ref, art), "shapes": shapes, "batch_sizes": sizes}
    fails = P.check(entry, th)
    entry["passed"] = not fails
    entry["failures"] = fails
    entry["checks"] = {
        **({"cos_mean_min": th.int8_min_cos_mean, "cos_min_min": th.int8_min_cos_min} if job.int8 else
           {"cos_min_min": th.fp32_min_cos, "max_abs_diff_max": th.fp32_max_abs,
            "batch_invariance_max": th.fp32_batch_invariance}),
        "batch_invariance_cos_max": th.max_batch_invariance_cos}
    return entry


def _manifest_entry(job: ExportJob, name: str, entry: dict) -> dict:
    """What the manifest says of one artefact."""
    f = job.facts[name]
    twin = importlib.import_module(job.specs[name].exporter)
    return {
        "format": f["format"], "precision": job.precision, "quantization": f["quantization"],
        "max_len": job.max_len, "inputs": dict(INPUTS),
        "output": {"sentence_embedding": f"float32 [batch, {job.encoder.config.d_model}]"},
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


def commit(job: ExportJob) -> None:
    """The target bundle rewritten at once: its files, the new artefacts, parity.json and the manifest."""
    job.say(f"writing {', '.join(job.staged)} into {job.target}")
    base = job.bundle if job.new_copy else Bundle.load(job.target, verify=False)
    with atomic_dir(job.target) as tmp:  # the whole bundle swaps at once: a kill leaves the old or the new one
        for rel in [*base.manifest["files"], MANIFEST]:
            if rel not in job.staged and inside(base.path, rel).is_file():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(base.path / rel, tmp / rel)
        for name, path in job.staged.items():
            shutil.move(str(path), str(tmp / name))
        parity, manifest = _merge_and_write_metadata(tmp, job.manifest_entries, job.report)
    job.report["output_dir"] = str(job.target)
    job.report["paths"] = {name: str(job.target / name) for name in job.staged}
    job.report["manifest_artifacts"] = {n: manifest["artifacts"][n] for n in job.staged}


STAGES = (export_models, check_parity, commit)


def _read_json(path: Path) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def _merge_and_write_metadata(target: Path, new_entries: dict, new_report: dict) -> tuple[dict, dict]:
    """Rewrite parity.json (merged with still-valid older entries) and manifest.json (hashes + artifacts)."""
    old_parity = _read_json(target / PARITY)
    kept = {}
    for name, e in (old_parity.get("artifacts") or {}).items():
        p = target / name
        if name not in new_entries and p.is_file() and isinstance(e, dict) and e.get("sha256") == sha256_file(p):
            kept[name] = e
    parity = {**new_report, "artifacts": {**kept, **new_report["artifacts"]}}
    write_json_atomic(target / PARITY, parity)
    return parity, update_manifest(target, new_entries)


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


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False
