"""Training runs' dev curves as one benchmark record: dev P@1, the probe cosine and L_align by evaluation step,
guard events, the last step and its time, read from each run's ``metrics.jsonl``.

    python tools/run_curves.py --out benchmarks/teacher_free_cpu_standin.json --what "..."
        "paper schedule=/work/tf/runs/cosine-bf16" "linear=/work/tf/runs/linear-bf16"
        --command "paper schedule=lwx-edge train --config recipes/teacher-free.json ..."  (one line)

Each run is ``label=run directory``; ``--command label=...`` records how it was started. The CPU model and its
SIMD flags are recorded with the runs (they decide the step time).
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from lwx_edge.atomic import write_json_atomic  # noqa: E402


def curve(run_dir: Path) -> dict:
    """The dev evaluations, the guard events and the last training step of one run."""
    path = run_dir / "metrics.jsonl"
    try:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: cannot read the run's metrics ({e})")
    evals = {}
    for r in records:  # a resumed run repeats its last evaluation: the latest record of a step wins
        if "dev/xsr@1/avg" in r:
            evals[r["step"]] = r
    steps = [r for r in records if "align" in r and "elapsed_s" in r]
    if not evals or not steps:
        sys.exit(f"{path}: no dev evaluation or no training step recorded")
    by_step = {s: evals[s] for s in sorted(evals)}
    align = {r["step"]: round(r["align"], 3) for r in steps if r["step"] in by_step}
    return {
        "dev_p1_by_step": {str(s): round(r["dev/xsr@1/avg"], 4) for s, r in by_step.items()},
        "unrelated_cos_by_step": {str(s): round(r["dev/unrelated_cos"], 3) for s, r in by_step.items()
                                  if "dev/unrelated_cos" in r},
        "align_by_step": {str(s): v for s, v in align.items()},
        "last_step": steps[-1]["step"],
        "elapsed_s": steps[-1]["elapsed_s"],
        "guard_events": [r for r in records if "event" in r],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="label=run directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--what", required=True, help="what the runs are (the record's first line)")
    ap.add_argument("--command", action="append", default=[], help="label=the command that started the run")
    ap.add_argument("--precision", default="", help="the runs' precision, as words")
    args = ap.parse_args()
    pairs = [x.split("=", 1) for x in args.runs]
    if any(len(p) != 2 for p in pairs):
        sys.exit("each run is label=run directory")
    if any("=" not in c for c in args.command):
        sys.exit("each --command is label=the command that started the run")
    commands = dict(c.split("=", 1) for c in args.command)
    from bench_app import cpu_info

    record = {"what": args.what, "machine": cpu_info(times_onnx=False), "precision": args.precision,
              "date": date.today().isoformat(),
              "runs": {label: {"command": commands.get(label, ""), **curve(Path(d))} for label, d in pairs}}
    write_json_atomic(args.out, record)
    for label, run in record["runs"].items():
        print(f"{label}: " + ", ".join(f"{s}: {p:.3f}" for s, p in run["dev_p1_by_step"].items())
              + f"; guard events {len(run['guard_events'])}")


if __name__ == "__main__":
    main()
