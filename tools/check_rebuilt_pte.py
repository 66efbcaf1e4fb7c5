"""How close the default's rebuilt ExecuTorch program (``lwx-edge export default``) is to what it replaces.

    lwx-edge export default
    python tools/check_rebuilt_pte.py runs/blend-0.5 --previous 4c50c89 -o benchmarks/rebuilt_pte.json

Embeds ``--texts`` dev sentences (both sides of the conversation and everyday dev pairs, seeded sample) with the
rebuilt program, the shipped ONNX program, the fp32 weights the default was exported from (torch backend) and,
with ``--previous REV``, the ``model.int8.pte`` the package shipped at git revision REV (exported from those fp32
weights), and prints the cosine (mean, min) between each pair.
"""
from __future__ import annotations

import argparse
import glob
import json
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lwx_edge import Encoder  # noqa: E402
from lwx_edge.shipped import PTE, built_default_dir  # noqa: E402


def dev_texts(n: int) -> list[str]:
    texts = []
    for f in sorted(glob.glob(str(ROOT / "data/corpus/conversation/dev.en-*.tsv"))) + sorted(
            glob.glob(str(ROOT / "data/corpus/everyday/dev.en-*.tsv"))):
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            texts += line.split("\t")[:2]
    return random.Random(0).sample(texts, min(n, len(texts)))


def previous_default(rev: str, into: Path) -> Path:
    """The default model directory as git revision ``rev`` shipped it."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev, "lwx_edge/default_model/"],
                           capture_output=True, text=True, check=True).stdout.split()
    into.mkdir()
    for f in files:
        blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{f}"], capture_output=True, check=True).stdout
        (into / Path(f).name).write_bytes(blob)
    return into


def cos(a: np.ndarray, b: np.ndarray) -> dict:
    c = np.sum(a * b, axis=1)
    return {"mean": round(float(c.mean()), 6), "min": round(float(c.min()), 6)}


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fp32", type=Path, help="the bundle with the fp32 weights the default was exported from")
    ap.add_argument("--previous", metavar="REV", help="git revision whose default shipped its own model.int8.pte")
    ap.add_argument("--texts", type=int, default=1500)
    ap.add_argument("-o", "--out", type=Path)
    a = ap.parse_args()
    built = built_default_dir()
    if not (built / PTE).is_file():
        sys.exit(f"error: no rebuilt program in {built}; run lwx-edge export default first")
    texts = dev_texts(a.texts)
    vec = {"rebuilt_pte": Encoder.load(built, backend="executorch").embed(texts),
           "onnx": Encoder.load(backend="onnx").embed(texts),
           "fp32": Encoder.load(a.fp32, backend="torch").embed(texts)}
    tmp = Path(tempfile.mkdtemp())
    try:
        if a.previous:
            vec["previous_pte"] = Encoder.load(previous_default(a.previous, tmp / "prev"),
                                               backend="executorch").embed(texts)
        names = list(vec)
        pairs = {f"{x} vs {y}": cos(vec[x], vec[y]) for i, x in enumerate(names) for y in names[i + 1:]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = {"command": "python tools/check_rebuilt_pte.py " + " ".join(sys.argv[1:]), "cpu": cpu(),
              "texts": len(texts), "rebuilt": str(built.name),
              "rebuilt_sha256": json.loads((built / "manifest.json").read_text())["files"][PTE]["sha256"],
              "cosine": pairs}
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if a.out:
        a.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
