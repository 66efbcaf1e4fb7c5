"""Bring a trained bundle back from the GPU machine, whose returned files are limited in size: its weights as
float16 in pieces, widened to float32 again here.

    python tools/gpu_run/fp16.py pack runs/gpu-24k-lex/best $OUT/gpu-24k-lex    # on the GPU machine
    python tools/gpu_run/fp16.py unpack <files_at>/gpu-24k-lex runs/gpu-24k-lex/best   # here

``pack`` writes the bundle's small files (config.json, manifest.json, tokenizer.model) and
``model.fp16.safetensors.part-000..`` (at most ``--piece-mb`` each); ``unpack`` joins the pieces, widens every
float16 tensor to float32, writes a whole bundle (atomically) and records the round trip in its manifest.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load, save, save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lwx_edge.atomic import atomic_dir  # noqa: E402
from lwx_edge.bundle import update_manifest  # noqa: E402

SMALL = ("config.json", "manifest.json", "tokenizer.model")
PIECES = "model.fp16.safetensors.part-"
NOTE = "the float32 weights travelled back from the GPU machine as float16 and were widened here"


def pack(bundle: Path, out: Path, piece_mb: float = 15.0) -> list[Path]:
    """The bundle's small files and its weights as float16 pieces in ``out``; returns the files written."""
    weights = load((bundle / "model.safetensors").read_bytes())
    half = {k: v.half() if v.is_floating_point() else v for k, v in weights.items()}
    blob = save(half)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(PIECES + "*"):                 # pieces of an earlier pack would join onto these
        stale.unlink()
    written = [Path(shutil.copy(bundle / name, out / name)) for name in SMALL]
    size = int(piece_mb * 2**20)
    for i in range(0, len(blob), size):
        piece = out / f"{PIECES}{i // size:03d}"
        piece.write_bytes(blob[i:i + size])
        written.append(piece)
    return written


def unpack(packed: Path, bundle: Path) -> Path:
    """A whole float32 bundle at ``bundle`` from what :func:`pack` wrote."""
    pieces = sorted(packed.glob(PIECES + "*"))
    missing = [n for n in SMALL if not (packed / n).is_file()]
    if not pieces or missing:
        raise SystemExit(f"{packed}: not a packed bundle (missing {', '.join(missing) or 'the weight pieces'})")
    try:
        half = load(b"".join(p.read_bytes() for p in pieces))
    except Exception as e:  # a truncated or missing piece: safetensors cannot parse the joined bytes
        raise SystemExit(f"{packed}: the weight pieces do not join into a safetensors file ({e})") from None
    weights = {k: v.float() if v.dtype == torch.float16 else v for k, v in half.items()}
    with atomic_dir(bundle) as tmp:
        for name in SMALL:
            shutil.copy(packed / name, tmp / name)
        save_file(weights, str(tmp / "model.safetensors"))
        update_manifest(tmp, weights_note=NOTE)
    return bundle


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pack")
    a.add_argument("bundle", type=Path)
    a.add_argument("out", type=Path)
    a.add_argument("--piece-mb", type=float, default=15.0)
    b = sub.add_parser("unpack")
    b.add_argument("packed", type=Path)
    b.add_argument("bundle", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "pack":
        for f in pack(args.bundle, args.out, args.piece_mb):
            print(f)
    else:
        print(unpack(args.packed, args.bundle))


if __name__ == "__main__":
    main()
