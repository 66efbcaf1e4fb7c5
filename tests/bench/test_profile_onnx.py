"""tools/profile_onnx.py: time per operator from onnxruntime's profiler, and the GEMM kernel's speed."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import profile_onnx  # noqa: E402

DEFAULT_ONNX = ROOT / "lwx_edge/default_model/model.int8.onnx"


def test_profile_counts_the_int8_gemms_of_the_default():
    texts = ["a short one", "ein etwas längerer deutscher Satz mit mehr Wörtern", "hola", "ciao a tutti"] * 5
    res = profile_onnx.profile_ops(DEFAULT_ONNX, texts, batch=8)
    ops = res["ops_ms"]
    assert ops["MatMulIntegerToFloat"] > 0 and "DynamicQuantizeMatMul" not in ops  # per-token activations
    # every op and the total are rounded to 0.1 ms: up to 0.05 ms each (26 ops summed to 5.9 against 5.6 once)
    assert abs(sum(ops.values()) - res["kernel_ms"]) <= 0.05 * (len(ops) + 1) + 0.01 * res["kernel_ms"]
    assert 0.0 < res["int8_gemm_share"] < 1.0 and res["kernel_ms"] <= res["wall_ms"]


def test_gemm_speed_reports_both_precisions_per_m():
    res = profile_onnx.gemm_speed([8, 64])
    assert set(res) == {"int8", "fp32"}
    for row in res.values():
        assert list(row) == [8, 64] and all(v > 0.1 for v in row.values())
