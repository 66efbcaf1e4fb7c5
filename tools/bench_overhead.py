"""Which per-call overhead the batch planner should assume (issue 14): ``Encoder.embed`` on the app workload
with several values of ``backend.call_overhead``, one process, the values in alternating order every round.

    python tools/bench_overhead.py onnx --values 16,6,4,3 --rounds 9 --out benchmarks/bench_overhead_onnx.json

The planner (``lwx_edge.sub_batches.plan_batches``) splits a batch where padding would cost more than another call;
too high an overhead merges texts of different lengths and pays for padding, too low one pays for calls. Reported
per value: sentences/s (CPU time, median over rounds) and the median over rounds of the speed ratio to the first
value in the same round. The JSON records the CPU, as ``tools/bench_app.py`` does.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from bench_app import app_texts, command_line, cpu_info, runtime_versions  # noqa: E402

from lwx_edge import Encoder  # noqa: E402
from lwx_edge.atomic import write_json_atomic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("backend", choices=["onnx", "executorch"])
    ap.add_argument("bundle", nargs="?", default=None, help="bundle path (default: the shipped model)")
    ap.add_argument("--values", default="16,8,4,2", help="overheads in token-steps, the first is the reference")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--texts-file", type=Path)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    try:
        values = [float(v) for v in a.values.split(",")]
    except ValueError:
        sys.exit(f"error: --values takes numbers separated by commas, got {a.values!r}")
    if len(values) < 2 or min(values) < 0:
        sys.exit("error: --values needs two or more overheads >= 0")
    machine = cpu_info(times_onnx=a.backend == "onnx")
    texts = app_texts(a.texts, path=a.texts_file)
    batches = [texts[i:i + a.batch] for i in range(0, len(texts), a.batch)]
    enc = Encoder.load(a.bundle, backend=a.backend, threads=1)
    for b in batches[:5]:
        enc.embed(b)  # warm-up
    seconds = {v: [] for v in values}
    for r in range(a.rounds):
        for v in values if r % 2 == 0 else values[::-1]:
            enc.backend.call_overhead = v
            t0 = time.process_time()
            for b in batches:
                enc.embed(b)
            seconds[v].append(time.process_time() - t0)
            print(f"round {r + 1}/{a.rounds}: overhead {v:g}: {seconds[v][-1]:.3f} s", file=sys.stderr)
    ref = np.array(seconds[values[0]])
    rows = {f"{v:g}": {"sentences_per_s_median": round(len(texts) / float(np.median(seconds[v])), 1),
                       "speed_vs_first_median": round(float(np.median(ref / np.array(seconds[v]))), 4),
                       "cpu_s_per_round": [round(x, 4) for x in seconds[v]]} for v in values}
    res = {"command": command_line(__file__), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine, "versions": runtime_versions(), "threads": 1, "backend": a.backend,
           "bundle": a.bundle or "default", "texts": len(texts), "batch": a.batch, "overheads": rows}
    for v, row in rows.items():
        print(f"{a.backend} overhead {v}: {row['sentences_per_s_median']:.0f} sent/s, "
              f"{row['speed_vs_first_median']:.3f}x the speed at {values[0]:g}")
    if a.out:
        write_json_atomic(a.out, res)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
