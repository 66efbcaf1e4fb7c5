"""Write ``lwx_edge/index/int8_scan.onnx``: the integer GEMM of the Index's exact-search first pass.

    python tools/make_int8_scan.py          # needs the [export] extra (onnx); the runtime does not

One MatMulInteger node: queries A (uint8 [m, 512], zero point 128, i.e. int8 + 128) times one block of stored
rows B (int8 [512, BLOCK_ROWS], transposed) -> int32 [m, BLOCK_ROWS]. B is declared as external data: the
runtime (``lwx_edge.index.scan``) hands each block's rows to onnxruntime with ``add_external_initializers``, so the
block is a constant that onnxruntime packs once, and the file stays a few hundred bytes.
``tests/index/test_index_scan.py`` checks that the shipped file is what this script writes.
"""
from __future__ import annotations

import argparse
from pathlib import Path

DIM, BLOCK_ROWS = 512, 16384
OUT = Path(__file__).resolve().parents[1] / "lwx_edge" / "index" / "int8_scan.onnx"


def build(dim: int = DIM, block_rows: int = BLOCK_ROWS) -> bytes:
    from onnx import TensorProto, helper

    rows = TensorProto(name="B", data_type=TensorProto.INT8, dims=[dim, block_rows],
                       data_location=TensorProto.EXTERNAL)
    rows.external_data.add(key="location", value="rows")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "a_zero_point"], ["Y"])], "int8_scan",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, ["m", dim])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, ["m", block_rows])],
        initializer=[helper.make_tensor("a_zero_point", TensorProto.UINT8, [], [128]), rows])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8,
                              producer_name="lwx-edge")
    return model.SerializeToString()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.write_bytes(build())
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
