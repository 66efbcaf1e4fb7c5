"""ExecuTorch ``.pte`` export, lowered to XNNPACK, with dynamic batch and sequence length (docs/EXPORT.md §2, §8): the
export twin of :mod:`lwx_edge.runtime.executorch_backend`.

The program has one method ``forward(input_ids int64 [B, T], attention_mask int64 [B, T]) ->
sentence_embedding float32 [B, d]`` with 1 <= B <= max_batch and 1 <= T <= max_len, plus constant methods
``get_max_batch``, ``get_max_seq_len`` and ``get_embedding_dim``. Activation memory is planned for the upper
bounds (the arena grows with max_batch x max_len), so keep max_batch small and chunk in the app.

Runtime notes (Python): ``import executorch.kernels.quantized`` before loading an int8 program
(``embedding_byte``); set the thread count with
``executorch.extension.pybindings.portable_lib._unsafe_reset_threadpool(n)`` **before** ``load_method``.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .versions import package_version

# the facts of an export that its manifest entry and its parity entry record
MANIFEST_FIELDS = ("max_batch", "backend", "arena_bytes", "delegation", "executorch_version", "runtime_notes")
PARITY_FIELDS = ("max_batch", "arena_bytes")


def available() -> tuple[bool, str]:
    """Whether ExecuTorch export can run here: (ok, why not)."""
    try:
        import executorch  # noqa: F401
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner  # noqa: F401
        from executorch.runtime import Runtime  # noqa: F401
    except Exception as e:  # ImportError, or a broken native extension
        return False, f"executorch is not importable ({type(e).__name__}: {e})"
    return True, ""


def export(encoder, path: Path, *, int8: bool, max_batch: int, max_len: int, work: Path, metadata: dict,
           say) -> dict:
    """Write ``path``; ``metadata`` is for formats that store it (a program has its constant methods)."""
    say(f"exporting {path.name}: ExecuTorch/XNNPACK {'int8' if int8 else 'fp32'}, batch 1..{max_batch}, "
        f"seq 1..{max_len}")
    return export_pte(encoder, path, int8=int8, max_batch=max_batch, max_len=max_len)


def export_pte(encoder, path: str | os.PathLike, *, int8: bool, max_batch: int, max_len: int) -> dict:
    """Export ``encoder`` (a SentenceEncoder) to ``path``; returns facts for the manifest/parity report."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from torch.export import export

    from .graph import ExportEncoder, dynamic_shapes, example_inputs
    from .quantize import ET_INT8_RECIPE, quantize_for_executorch

    t0 = time.perf_counter()
    cfg = encoder.config
    model = ExportEncoder(encoder, max_len, packed_table=int8)
    example = example_inputs(cfg.vocab_size, max_batch, max_len)
    shapes = dynamic_shapes(max_batch, max_len)
    with torch.no_grad():
        if int8:
            model = quantize_for_executorch(model, example, shapes)
        ep = export(model, example, dynamic_shapes=shapes)
    t_export = time.perf_counter() - t0
    edge = to_edge_transform_and_lower(
        ep, partitioner=[XnnpackPartitioner()],
        constant_methods={"get_max_batch": int(max_batch), "get_max_seq_len": int(max_len),
                          "get_embedding_dim": int(cfg.d_model)})
    delegation = _delegation(edge)
    prog = edge.to_executorch(ExecutorchBackendConfig(do_quant_fusion_and_const_prop=True))
    plan = [p for p in prog.executorch_program.execution_plan if p.name == "forward"][0]
    arena = int(sum(plan.non_const_buffer_sizes))
    path = Path(path)
    with open(path, "wb") as f:
        prog.write_to_file(f)
    return {
        "format": "executorch",
        "precision": "int8" if int8 else "fp32",
        "quantization": ET_INT8_RECIPE if int8 else "none (fp32)",
        "backend": "XNNPACK",
        "max_batch": int(max_batch),
        "max_len": int(max_len),
        "arena_bytes": arena,
        "delegation": delegation,
        "export_seconds": round(time.perf_counter() - t0, 1),
        "torch_export_seconds": round(t_export, 1),
        "executorch_version": package_version("executorch"),
        "runtime_notes": ("XNNPACK delegate; int8 also needs the quantized kernels (embedding_byte): in Python "
                          "`import executorch.kernels.quantized` before loading" if int8 else "XNNPACK delegate"),
    }


def _delegation(edge) -> dict:
    try:
        from executorch.devtools.backend_debug import get_delegation_info

        info = get_delegation_info(edge.exported_program().graph_module)
        return {"delegated_subgraphs": int(info.num_delegated_subgraphs),
                "delegated_nodes": int(info.num_delegated_nodes),
                "non_delegated_nodes": int(info.num_non_delegated_nodes)}
    except Exception as e:  # informational only
        return {"error": f"{type(e).__name__}: {e}"}
