"""The paper's ablations at our scale (issue 6): train every variant on the same data for the same number of
steps, keep each run's best dev checkpoint, and score them all on the test split in one ``lwx-edge eval`` run.

    python tools/ablations.py --steps 600 --jobs 2 --out runs/ablations \
        --results benchmarks/ablations_test.json

Every variant trains ``recipes/ablations/base.json`` (the README's recipe of issue 6: corpora, lr 3e-4, warm-up
100, batch 128, train_max_len 64) overlaid with its own ``recipes/ablations/VARIANT.json``, which changes only
the loss weights and the teacher: ``lwx-edge train --config base.json --config VARIANT.json``. "KD" means the
teacher is used: the student starts from the teacher's token vectors (``token_init=teacher``) and the kd + mono
distillation terms are on; without KD the student starts from PyTorch's default initialisation, as in the
paper. Dev P@1 (short DDTP descriptions) picks each run's checkpoint (``OUT/best``); the test split is scored
once, at the end. The first run trains the SentencePiece model and the others reuse it, so every row shares one
vocabulary. With ``--jobs 2`` two runs share the CPU, one thread each.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RECIPES = Path(__file__).resolve().parents[1] / "recipes" / "ablations"
BASE = RECIPES / "base.json"

# name (its overlay RECIPES/name.json) -> the table's row label; the first one trains the tokenizer.
VARIANTS = {
    "ugt+align+sim+kd": "UGT + align + sim + KD (the previous default's recipe)",
    "ugt": "UGT only",
    "ugt+align": "UGT + align",
    "ugt+align+sim": "UGT + align + sim (the paper)",
    "ugt+kd": "UGT + KD",
    "ugt+align+kd": "UGT + align + KD (the shipped recipe)",
    "kd": "KD only",
    "ugt+align+sim+kd+ranking": "UGT + align + sim + KD + ranking (hard negatives)",
}


def configs(name: str) -> list[str]:
    """The ``--config`` arguments of a variant: the shared recipe, then its overlay."""
    return ["--config", str(BASE), "--config", str(RECIPES / f"{name}.json")]


def train(name: str, a, tokenizer: Path | None, threads: int) -> float:
    out = a.out / name
    cmd = ["lwx-edge", "train", *configs(name), "--out", str(out), "--max-steps", str(a.steps),
           "--set", f"eval_every={a.eval_every}", "--set", f"save_every={a.eval_every}",
           "--set", f"threads={threads}"]
    if tokenizer is not None:
        cmd += ["--tokenizer", str(tokenizer)]
    if (out / "checkpoint").exists():
        cmd += ["--resume"]
    print(f"[{name}] {' '.join(cmd)}", flush=True)
    start = time.time()
    with open(a.out / f"{name}.log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc:
        sys.exit(f"[{name}] training failed (exit {rc}); see {a.out / f'{name}.log'}")
    took = time.time() - start
    print(f"[{name}] done in {took / 60:.1f} min", flush=True)
    return took


def best_dev(run: Path) -> tuple[int, float]:
    """(step, dev P@1) of the best validation in a run's metrics.jsonl."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "dev/p@1/avg" in r][:-1]  # the last is the final whole-pool validation
    best = max(rows, key=lambda r: r["dev/p@1/avg"])
    return best["step"], best["dev/p@1/avg"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=600, help="training steps per variant (batch 128)")
    ap.add_argument("--eval-every", type=int, default=200, help="dev validation (and checkpoint) interval")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run")
    ap.add_argument("--only", nargs="*", default=list(VARIANTS), choices=list(VARIANTS), metavar="VARIANT")
    ap.add_argument("--out", type=Path, default=Path("runs/ablations"))
    ap.add_argument("--results", type=Path, default=Path("benchmarks/ablations_test.json"))
    ap.add_argument("--split", default="test")
    a = ap.parse_args()
    from lwx_edge.atomic import write_json_atomic

    a.out.mkdir(parents=True, exist_ok=True)

    names = a.only
    first = names[0]
    tokenizer = a.out / first / "tokenizer.model"
    took = {}
    if not tokenizer.exists():
        took[first] = train(first, a, None, a.threads * a.jobs)  # alone: all threads
        names = names[1:]
    with ThreadPoolExecutor(a.jobs) as pool:
        for name, t in zip(names, pool.map(lambda n: train(n, a, tokenizer, a.threads), names)):
            took[name] = t

    bundles = [str(a.out / n / "best") for n in a.only]
    subprocess.run(["lwx-edge", "eval", *bundles, "--split", a.split, "--refs", "", "-o", str(a.results)],
                   check=True)
    results = json.loads(a.results.read_text())
    rows = []
    for n in a.only:
        step, dev = best_dev(a.out / n)
        r = results["results"][f"lwx-edge {a.out / n / 'best'}"]
        rows.append({"variant": n, "label": VARIANTS[n], "best_step": step, "dev_p@1": dev,
                     "train_minutes": round(took.get(n, 0) / 60, 1), **{k: v.get("avg", v.get("avg_en_x")) for k, v in r.items()}})
    results["ablations"] = {"steps": a.steps, "batch": 128, "threads_per_run": a.threads, "jobs": a.jobs,
                            "rows": rows}
    write_json_atomic(a.results, results)
    keys = [k for k in rows[0] if k.startswith(("xsr", "cls"))]
    print("| variant | best step | dev P@1 | " + " | ".join(keys) + " |")
    print("|---|---|---|" + "---|" * len(keys))
    for r in rows:
        print(f"| {r['label']} | {r['best_step']} | {r['dev_p@1']:.3f} | "
              + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
