"""Build the default model shipped in the package (``lwx_edge/default_model``) from a trained bundle.

    python tools/make_default_model.py runs/default/best
    lwx-edge eval default --split test -o /tmp/eval_test.json      # also writes /tmp/eval_test.md
    python tools/make_default_model.py --attach /tmp/eval_test.json   # the model's eval_test.json, the one copy
    cp /tmp/eval_test.md benchmarks/eval_test.md                      # its tables, readable (docs/EVALUATION.md)

Exports the bundle ``--int8`` to ONNX (with the parity checks of ``lwx-edge export``) into a temporary copy,
keeps only what the torch-free base install runs -- ``config.json``, ``tokenizer.model``, ``parity.json`` and
``model.int8.onnx`` -- writes a manifest for exactly those files (with the sha256 of the fp32 weights they came
from, and the training record), and replaces ``lwx_edge/default_model`` atomically. The fp32 weights stay in the
run directory: ~50 MB the package does not need. So does the ExecuTorch program: ``lwx-edge export default``
rebuilds it from the ONNX program where ExecuTorch is installed (``lwx_edge/export/rebuild.py``). ``--attach``
adds result files (the evaluation of the model just shipped) to the existing default model without exporting
again, and rewrites its manifest (the previous record is kept). Both write the model card (``README.md``, see
``lwx_edge.modelcard``) from what the model then holds.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from lwx_edge._logging import configure_cli_logging
from lwx_edge.bundle import CONFIG, FORMAT_VERSION, LAYOUT_KEYS, PARITY, TOKENIZER

ROOT = Path(__file__).resolve().parents[1]
# what the base install runs (onnxruntime): the int8 ONNX program, and what it reads
FORMATS = ("onnx",)
KEEP = (CONFIG, TOKENIZER, "model.int8.onnx", PARITY)


def main() -> None:
    configure_cli_logging()  # the exporter's progress: INFO to stderr
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path, nargs="?", help="trained bundle (e.g. runs/default/best)")
    ap.add_argument("--attach", type=Path, nargs="+", metavar="JSON",
                    help="add these JSON result files to the existing default model (no export)")
    ap.add_argument("--out", type=Path, default=ROOT / "lwx_edge" / "default_model")
    a = ap.parse_args()
    if a.attach:
        if a.bundle:
            ap.error("--attach takes no bundle")
        attach(a.out, a.attach)
        return
    if a.bundle is None:
        ap.error("a bundle is required (or --attach)")

    from lwx_edge.atomic import atomic_dir
    from lwx_edge.bundle import WEIGHTS, Bundle
    from lwx_edge.export import export_bundle

    src = Bundle.load(a.bundle)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "bundle"
        report = export_bundle(src.path, formats=FORMATS, int8=True, out=copy)
        exported = json.loads((copy / "manifest.json").read_text())
        with atomic_dir(a.out) as d:
            for name in KEEP:
                shutil.copy2(copy / name, d / name)
            info = record(exported)
            info["artifacts"] = {k: v for k, v in (info.get("artifacts") or {}).items() if k in KEEP}
            info["source"] = {"bundle": str(a.bundle), "weights_sha256": src.sha256(WEIGHTS),
                              "command": "python tools/make_default_model.py " + " ".join(sys.argv[1:])}
            write_with_card(d, info)
    sizes = {p.name: p.stat().st_size for p in a.out.rglob("*") if p.is_file()}
    print(json.dumps({"out": str(a.out), "bytes": sizes, "total_mb": round(sum(sizes.values()) / 2**20, 2),
                      "int8_cosine": {k: {"mean": v["cos_mean"], "min": v["cos_min"]} for k, v in report["artifacts"].items()}}, indent=2))


def record(manifest: dict) -> dict:
    """The part of a manifest that describes the model (training, artefacts, source, results); the rest
    (format, version, date, file list) ``write_manifest`` writes anew."""
    return {k: v for k, v in manifest.items() if k not in LAYOUT_KEYS}


def write_with_card(d: Path, info: dict) -> None:
    """Write the manifest, then the model card built from the finished bundle, then the manifest again."""
    from lwx_edge.bundle import write_manifest
    from lwx_edge.modelcard import CARD_FILE, model_card

    (d / CARD_FILE).unlink(missing_ok=True)
    write_manifest(d, info)
    (d / CARD_FILE).write_text(model_card(d, name="the lwx-edge default model"), encoding="utf-8")
    write_manifest(d, info)


def attach(model_dir: Path, files: list[Path]) -> None:
    """Copy result files into ``model_dir`` and rewrite its manifest, all in one atomic swap."""
    from lwx_edge.atomic import atomic_dir, write_json_atomic
    from lwx_edge.bundle import Bundle
    from lwx_edge.errors import BundleError

    try:
        bundle = Bundle.load(model_dir)  # the model must be intact before anything is added to it
    except BundleError as e:
        sys.exit(f"error: {e}")
    for f in files:
        try:
            json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            sys.exit(f"error: {f}: not a readable JSON file ({e})")
    info = record(bundle.manifest)
    info["results"] = sorted(set(info.get("results", [])) | {f.name for f in files})
    with atomic_dir(model_dir) as d:
        for rel in bundle.manifest["files"]:
            if rel == "README.md":
                continue  # the card is rebuilt below
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(bundle.path / rel, d / rel)
        for f in files:
            shutil.copy2(f, d / f.name)
        if bundle.format_version != FORMAT_VERSION:  # the manifest is written anew: the config goes with it
            write_json_atomic(d / CONFIG, bundle.config)
        write_with_card(d, info)
    print(f"attached {', '.join(f.name for f in files)} to {model_dir}")


if __name__ == "__main__":
    main()
