"""int8 recipes (docs/EXPORT.md §2, §3, §8).

ExecuTorch: 8-bit per-row embedding tables (torchao ``IntxWeightOnlyConfig(int8, PerAxis(0))`` on every
``nn.Embedding``; lowered to ``quantized_decomposed::embedding_byte``) + dynamic per-channel int8 linears
(PT2E with ``XNNPACKQuantizer`` + ``get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)``).
LayerNorm stays fp32.

ONNX: ORT ``quantize_dynamic`` with QInt8 per-channel weights and ``reduce_range=True`` on MatMul, Gemm and
Gather. Without ``reduce_range`` the U8S8 kernels saturate on x86 CPUs without VNNI (docs/EXPORT.md §8, pitfall 11).
A factorised token table's map (``tok_proj``, [rank, d]) stays fp32: with 7-bit weights it alone cost most of the
int8 error (the FFN-512 default: cosine mean 0.99905 -> 0.99970 without it), for 0.08 M of a token's 3.2 M
multiply-adds.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ET_INT8_RECIPE = ("PT2E XNNPACKQuantizer dynamic per-channel int8 linears (symmetric) + 8-bit per-row "
                  "embedding tables (embedding_byte); LayerNorm fp32")
ONNX_INT8_RECIPE = ("onnxruntime quantize_dynamic: QInt8 per-channel weights, reduce_range=True, "
                    "ops MatMul+Gemm+Gather; activations quantized dynamically (uint8)")
ONNX_FP32_NOTE = "; the token table's map (tok_proj) kept fp32"


def quantize_for_executorch(model, example: tuple, dynamic_shapes):
    """Return a quantized ``torch.fx.GraphModule`` ready for ``torch.export`` (model is modified in place)."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torch.export import export
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerAxis
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model.eval()
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
              filter_fn=lambda mod, fqn: isinstance(mod, torch.nn.Embedding))
    with torch.no_grad():
        captured = export(model, example, dynamic_shapes=dynamic_shapes).module()
        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
        prepared = prepare_pt2e(captured, quantizer)
        prepared(*example)  # dynamic quantization needs no calibration; one pass initialises observers
        return convert_pt2e(prepared)


def quantize_onnx(src: str | os.PathLike, dst: str | os.PathLike, workdir: str | os.PathLike,
                  keep_fp32: Sequence[np.ndarray] = ()) -> None:
    """Dynamic int8 quantization of an fp32 ONNX model (per-channel QInt8 weights, reduce_range). The MatMul
    nodes whose constant weight equals one of ``keep_fp32`` (as the graph stores it, [in, out]) stay fp32."""
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = Path(workdir) / "model.pre.onnx"
    # ORT's symbolic shape inference cannot finish on the dynamo graph (dynamic Range/Reshape); the
    # ONNX shape inference and the graph optimisation of the pre-processing still run.
    quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
    exclude = []
    if len(keep_fp32):
        graph = onnx.load(str(pre)).graph
        init = {t.name: t for t in graph.initializer}
        for w in keep_fp32:
            found = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in init
                     and tuple(init[n.input[1]].dims) == w.shape
                     and np.array_equal(numpy_helper.to_array(init[n.input[1]]), w)]
            if len(found) != 1:
                raise ValueError(f"expected one MatMul with a {list(w.shape)} weight to keep in fp32, "
                                 f"found {len(found)}")
            exclude += found
    quantize_dynamic(str(pre), str(dst), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                     op_types_to_quantize=["MatMul", "Gemm", "Gather"], nodes_to_exclude=exclude)
    pre.unlink(missing_ok=True)
