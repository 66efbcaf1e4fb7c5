"""Where an ONNX model's time goes on this CPU, and how fast its int8 GEMM kernel is here (issue 14).

    python tools/profile_onnx.py --out benchmarks/profile_onnx.json                  # the shipped default
    python tools/cpuid_mask.py --hide avx512 python tools/profile_onnx.py --out benchmarks/profile_onnx_avx2.json

Two measurements, 1 thread:

- **by operator**: onnxruntime's own profiler over the app workload of ``tools/bench_app.py`` (unsorted
  batches of 32 mixed-length texts in five languages) run through ``Encoder.embed``, summed per op type;
- **kernel speed**: one ``[M, 512] x [512, 1024]`` MatMul, int8 (the shipped recipe: dynamic u8 activations,
  s8 per-channel weights, reduce_range) and fp32, in GMAC/s for several M: the ceiling the model's own GEMMs
  can reach on this code path.

Together they bound the speed-up left: if the int8 GEMMs run at the kernel's speed and take most of the time,
nothing but fewer multiply-adds makes the model faster.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
GEMM_OPS = ("DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulInteger", "QLinearMatMul")


def profile_ops(path: Path, texts: list[str], batch: int) -> dict:
    """Microseconds per op type (onnxruntime's profiler) for ``texts`` embedded in unsorted batches."""
    import onnxruntime as ort

    from lwx_edge import Encoder
    from lwx_edge.runtime.onnx_backend import DISABLED_OPTIMIZERS, OnnxBackend
    from lwx_edge.tokenizer import Tokenizer

    backend = OnnxBackend(path, threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        so.enable_profiling, so.profile_file_prefix = True, str(Path(tmp) / "profile")
        backend.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"],
                                               disabled_optimizers=DISABLED_OPTIMIZERS)
        beside = path.parent / "tokenizer.model"  # the model's own tokenizer, else the shipped default's
        tokenizer = Tokenizer(beside) if beside.exists() else Encoder.load("default").tokenizer
        encoder = Encoder(tokenizer, backend)
        start = time.perf_counter()
        for s in range(0, len(texts), batch):
            encoder.embed(texts[s:s + batch], batch_size=batch)
        wall = time.perf_counter() - start
        events = json.loads(Path(backend.session.end_profiling()).read_text())
    per_op = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_op[e["args"]["op_name"]] += e["dur"]
    total = sum(per_op.values())
    return {"wall_ms": round(wall * 1e3, 1), "kernel_ms": round(total / 1e3, 1),
            "int8_gemm_share": round(sum(per_op[k] for k in GEMM_OPS) / total, 3),
            "ops_ms": {k: round(v / 1e3, 1) for k, v in per_op.most_common()}}


def gemm_speed(ms: list[int], k: int = 512, n: int = 1024) -> dict:
    """GMAC/s of one [M, k] x [k, n] MatMul in int8 (the shipped recipe) and fp32, per M."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", k])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])],
                                  [numpy_helper.from_array(weight, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, fp32)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        for name, path in (("int8", int8), ("fp32", fp32)):
            session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            out[name] = {}
            for m in ms:
                x = rng.standard_normal((m, k)).astype(np.float32)
                session.run(None, {"x": x})
                reps = max(5, 40_000 // m)
                start = time.perf_counter()
                for _ in range(reps):
                    session.run(None, {"x": x})
                out[name][m] = round(m * k * n / ((time.perf_counter() - start) / reps) / 1e9, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(ROOT / "lwx_edge/default_model/model.int8.onnx"),
                    help="an ONNX model; its folder's tokenizer.model is used (else the shipped default's)")
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "profile_onnx.json")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    from bench_app import app_texts, command_line, cpu_info, simd_text

    from lwx_edge.atomic import write_json_atomic, write_text_atomic

    model = Path(args.model)
    ops = profile_ops(model, app_texts(args.texts), args.batch)
    gemm = gemm_speed([8, 32, 128, 512, 2048])
    res = {"command": command_line(__file__), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": cpu_info(), "threads": 1, "model": os.path.relpath(model, ROOT), "texts": args.texts,
           "batch": args.batch, "by_operator": ops, "gemm_gmac_per_s": gemm}
    write_json_atomic(args.out, res)
    m = res["machine"]
    top = ", ".join(f"{k} {v:.0f}" for k, v in list(ops["ops_ms"].items())[:8])
    lines = [f"Command: `{res['command']}`", "", f"Machine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; "
             "1 thread.", "",
             f"By operator ({args.texts} texts in unsorted batches of {args.batch}, Encoder.embed): kernels "
             f"{ops['kernel_ms']:.0f} ms of {ops['wall_ms']:.0f} ms wall; int8 GEMMs "
             f"{100 * ops['int8_gemm_share']:.0f}% of kernel time. Largest (ms): {top}.", "",
             "| [M, 512] x [512, 1024] GMAC/s | " + " | ".join(f"M = {k}" for k in gemm["int8"]) + " |",
             "|---|" + "---:|" * len(gemm["int8"])]
    for name, row in gemm.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in row.values()) + " |")
    write_text_atomic(args.out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
