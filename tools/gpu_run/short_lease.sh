#!/bin/bash
# A whole GPU session in one call, for a 15-minute lease (README.md beside this file, "second GPU session"): run it as
# the second call, carrying .gpu/pack.part-ab and .gpu/app_texts.txt, right after a first call copied .gpu/pack.part-aa to /tmp/w.
# It takes the pack's second piece, the AVX2 app benchmark beside the teacher (unless APP_BENCH=0; if CPUID faulting
# works there), the recipes in RUNS for MAX_TIME s, then the best checkpoint of the best run (or BRING's final
# bundle, a run's out_dir) as float16 pieces into $OUT/sel. PREP, a command run before the teacher and the runs (cores 0-1), makes
# what a recipe starts from, e.g. PREP="python3 tools/prune_ffn.py default 512 runs/d512" for gpu-words-ffn512.
set -x
T0=$SECONDS; REPO=$PWD; DEADLINE=${DEADLINE:-540}
cp .gpu/pack.part-ab /tmp/w/ && mkdir -p /tmp/w/out
B="python3 tools/bench_app.py --backends onnx --rounds 7 --texts-file $REPO/.gpu/app_texts.txt"
if [ "${APP_BENCH:-1}" = 0 ]; then
  SIDE="true"
elif grep -q -w cpuid_fault /proc/cpuinfo; then
  SIDE="python3 tools/cpuid_mask.py --hide avx512 $B --out /tmp/w/out/bench_app_avx2_host.json; $B --out /tmp/w/out/bench_app_host.json"
else
  SIDE="$B --out /tmp/w/out/bench_app_host.json"
fi
[ -n "${PREP:-}" ] && SIDE="$PREP; $SIDE"
RUNS=${RUNS:-"history/gpu-24k-lex history/gpu-24k-words"}
RUNS="$RUNS" MAX_TIME=${MAX_TIME:-300} SIDE="$SIDE" bash tools/gpu_run/setup.sh
cd /tmp/w
while pgrep -f "lwx_edge train" > /dev/null && [ $((SECONDS - T0)) -lt $DEADLINE ]; do sleep 5; done
for r in $RUNS; do tail -n 4 "${r//\//_}.log"; done
SEL=$(python3 - <<'PY'
import json, pathlib
def score(rec):  # the trainer's selection score (Trainer._score; older runs: its two-set form)
    if "dev/score" in rec:
        return rec["dev/score"]
    p = [rec[k] for k in ("dev/p@1/avg", "dev/xsr@1/avg") if k in rec]
    return sum(p) / len(p) if p else -1
best = []  # best/ holds each run's highest-scoring evaluation (a capped final evaluation included)
for run in pathlib.Path("runs").iterdir():
    if (run / "best" / "model.safetensors").exists():
        recs = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines() if '"dev/' in l]
        best.append((max(map(score, recs)), f"{run}/best"))
import sys; print(sorted(best), file=sys.stderr); print(max(best)[1] if best else "")
PY
)
if [ -n "${BRING:-}" ]; then  # the run's final bundle if its final evaluation finished, else its best checkpoint
  for d in "$BRING/bundle" "$BRING/best"; do [ -f "$d/model.safetensors" ] && SEL=$d && break; done
fi
echo "selected: $SEL"
pkill -f "lwx_edge train"; sleep 1
[ -n "$SEL" ] && python3 tools/gpu_run/fp16.py pack $SEL $OUT/sel && echo "$SEL" > out/selected.txt
tar czf $OUT/logs.tgz *.log runs/*/metrics.jsonl runs/*/final_metrics.json out 2>/dev/null
ls -la $OUT $OUT/sel; echo "call took $((SECONDS - T0)) s"
