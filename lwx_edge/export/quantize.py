"""int8 recipes (docs/EXPORT.md §2, §3, §8).

ExecuTorch: 8-bit per-row embedding tables (torchao ``IntxWeightOnlyConfig(int8, PerAxis(0))`` on every
``nn.Embedding``; lowered to ``quantized_decomposed::embedding_byte``) + dynamic per-channel int8 linears
(PT2E with ``XNNPACKQuantizer`` + ``get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)``).
LayerNorm stays fp32.

ONNX: ORT ``quantize_dynamic`` with QInt8 per-channel weights and ``reduce_range=True`` on MatMul, Gemm and
Gather. Without ``reduce_range`` the U8S8 kernels saturate on x86 CPUs without VNNI (docs/EXPORT.md §8, pitfall 11).
``quantize_dynamic`` quantizes activations with one scale per tensor, i.e. per batch, so a text's vector would
depend on the other texts of its batch; :func:`per_row_activations` rewrites that to one scale per token (row),
as XNNPACK does, so a text gets the same vector alone or in any batch.
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
                    "ops MatMul+Gemm+Gather; activations quantized dynamically per token (symmetric, uint8 with "
                    "zero point 128; MatMulIntegerToFloat), batch-invariant")
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
    quantized = Path(workdir) / "model.per_tensor.onnx"
    quantize_dynamic(str(pre), str(quantized), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                     op_types_to_quantize=["MatMul", "Gemm", "Gather"], nodes_to_exclude=exclude)
    pre.unlink(missing_ok=True)
    onnx.save(per_row_activations(onnx.load(str(quantized))), str(dst))
    quantized.unlink()


def per_row_activations(model):
    """Rewrite ``quantize_dynamic``'s per-tensor activation quantization to per-row (per-token) quantization, in
    place; returns ``model``.

    Each ``DynamicQuantizeLinear(x)`` and the ``MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add(bias)``
    chains it feeds become: ``m = max(|x|)`` over the last axis (one value per token), ``q = uint8(x * 127/m +
    128.5)`` (symmetric, zero point 128; the cast truncates, i.e. rounds half up), and per chain
    ``MatMulIntegerToFloat(q, W, 1/127, w_scale, 128, w_zero_point) * m + bias`` (ONNX Runtime's contrib op, as
    its own graph optimiser fuses the same chain). Each token's quantization then sees that token alone, so a text
    gets the same vector in any batch, and a token's scale fits it (cosine to fp32 0.99975 against 0.99970
    per tensor on the default). The weight initializers keep their names (``lwx_edge.training.transfer`` reads them
    back). Raises ValueError when the graph is not the pattern ``quantize_dynamic`` writes."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    init = {t.name for t in graph.initializer}
    consumers: dict[str, list] = {}
    producer = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producer[name] = node
    replace: dict[int, list] = {}
    drop: set[int] = set()
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            continue
        x, (q, x_scale, _) = node.input[0], node.output
        replace[id(node)] = _per_row_quantize(x, q)
        for matmul in consumers[q]:
            if matmul.op_type != "MatMulInteger" or matmul.input[1] not in init:
                raise ValueError(f"{q!r} feeds a {matmul.op_type} without a constant weight: not the graph "
                                 "onnxruntime's quantize_dynamic writes")
            replace[id(matmul)], chain = _matmul_to_float(matmul, q, f"{x}.per_row", x_scale, consumers, producer)
            drop.update(id(n) for n in chain)
    if not replace:
        return model
    nodes = [new for node in graph.node if id(node) not in drop for new in replace.get(id(node), [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in _PER_ROW_CONSTS.items())
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    return model


# the constants of the per-row rewrite (initializers added to the graph once)
_PER_ROW_CONSTS = {"pr.axes": np.array([-1], np.int64), "pr.127": np.array(127, np.float32),
                   "pr.inv127": np.array(1 / 127, np.float32), "pr.offset": np.array(128.5, np.float32),
                   "pr.tiny": np.array(1e-30, np.float32), "pr.zero_point": np.array(128, np.uint8)}


def _per_row_quantize(x: str, q: str) -> list:
    """The nodes that replace ``DynamicQuantizeLinear(x) -> q``: ``q = uint8(x * 127/m + 128.5)`` with ``m =
    max(|x|)`` per row (``{x}.per_row.max``, also read by the rewritten MatMuls)."""
    from onnx import TensorProto, helper

    p = f"{x}.per_row"
    return [
        helper.make_node("Abs", [x], [f"{p}.abs"]),
        helper.make_node("ReduceMax", [f"{p}.abs", "pr.axes"], [f"{p}.max0"], keepdims=1),
        helper.make_node("Max", [f"{p}.max0", "pr.tiny"], [f"{p}.max"]),  # an all-zero row
        helper.make_node("Div", ["pr.127", f"{p}.max"], [f"{p}.inv"]),
        helper.make_node("Mul", [x, f"{p}.inv"], [f"{p}.scaled"]),
        helper.make_node("Add", [f"{p}.scaled", "pr.offset"], [f"{p}.offset"]),
        helper.make_node("Cast", [f"{p}.offset"], [q], to=TensorProto.UINT8),
    ]


def _matmul_to_float(matmul, q: str, p: str, x_scale: str, consumers: dict[str, list],
                     producer: dict) -> tuple[list, list]:
    """The nodes that replace a ``MatMulInteger(q, W) -> Cast -> Mul(x_scale * w_scale) -> Add(bias)`` chain:
    ``MatMulIntegerToFloat(q, W, 1/127, w_scale, 128, w_zero_point) * m + bias`` (``m``: ``{p}.max``); and the
    chain's other nodes (Cast, Mul, the scales' Mul, Add), to drop."""
    from onnx import helper

    cast = _only(consumers, matmul.output[0], "Cast")
    mul = _only(consumers, cast.output[0], "Mul")
    scales = producer[next(i for i in mul.input if i != cast.output[0])]
    w_scale = next(i for i in scales.input if i != x_scale)
    add = _only(consumers, mul.output[0], "Add")
    bias = next(i for i in add.input if i != mul.output[0])
    y = add.output[0]
    return [
        helper.make_node("MatMulIntegerToFloat",
                         [q, matmul.input[1], "pr.inv127", w_scale, "pr.zero_point", matmul.input[3]],
                         [f"{y}.unscaled"], domain="com.microsoft"),
        helper.make_node("Mul", [f"{y}.unscaled", f"{p}.max"], [f"{y}.scaled"]),
        helper.make_node("Add", [f"{y}.scaled", bias], [y]),
    ], [cast, mul, scales, add]


def _only(consumers: dict[str, list], name: str, op: str):
    """The one node that reads ``name``; ValueError unless there is exactly one and it is an ``op``."""
    found = consumers.get(name, [])
    if len(found) != 1 or found[0].op_type != op:
        raise ValueError(f"{name!r} feeds {[n.op_type for n in found]}, expected one {op}: not the graph "
                         "onnxruntime's quantize_dynamic writes")
    return found[0]
