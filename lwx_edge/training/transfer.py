"""Warm start: the encoder weights of an existing bundle, to continue training from a shipped model.

A training bundle carries its fp32 weights (``model.safetensors``). An exported bundle such as the shipped
default carries only int8 artefacts; its ONNX program is read back here: every ``MatMulIntegerToFloat`` (older
exports: ``MatMulInteger``) weight is dequantized (``(q - zero_point) · scale`` per output channel) and named by
the ``*.bias`` initializer its output is added to, the 8-bit embedding tables likewise, LayerNorms and biases as
stored. The result is the
int8 model in fp32 (cosine to the program's own output ≈ 0.9999), which training then moves on from; the
warm-start test checks that parity, so a change of the ONNX graph cannot silently scramble the weights.
"""
from __future__ import annotations

import logging
import os
from collections import deque

import numpy as np

from .. import bundle as B
from ..errors import BundleError
from .model import ModelConfig

log = logging.getLogger(__name__)

ONNX_INT8 = "model.int8.onnx"


def encoder_weights(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], ModelConfig, B.Bundle]:
    """(encoder state as fp32 arrays, model config, bundle) of the bundle at ``path`` (``"default"``: the
    shipped default): its fp32 weights when it has them, else its int8 ONNX program dequantized."""
    if str(path) == "default":
        from ..encoder import default_model_path

        path = default_model_path()
    bundle = B.Bundle.load(path)
    try:
        config = ModelConfig.from_dict(bundle.config["model"])
    except (KeyError, TypeError, ValueError) as e:
        raise BundleError(f"{bundle.path}: config.json has no valid model section ({e})") from None
    if bundle.has(B.WEIGHTS):
        from safetensors.numpy import load_file

        state = load_file(str(bundle.file(B.WEIGHTS)))
    elif bundle.has(ONNX_INT8):
        state = dequantize_onnx(bundle.file(ONNX_INT8))
    else:
        raise BundleError(f"{bundle.path}: no weights to start from (neither {B.WEIGHTS} nor {ONNX_INT8})")
    return state, config, bundle


def dequantize_onnx(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The encoder state dict (torch names and layouts) of an int8 ONNX program written by ``export``."""
    import onnx
    from onnx import numpy_helper

    try:
        graph = onnx.load(str(path)).graph
    except Exception as e:  # protobuf raises several types for a corrupt file
        raise BundleError(f"{path}: not a readable ONNX model ({e})") from None
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def dequant(prefix: str, axis: int | None) -> np.ndarray:
        q = init[f"{prefix}_quantized"].astype(np.float32)
        zp = init[f"{prefix}_zero_point"].astype(np.float32)
        scale = init[f"{prefix}_scale"].astype(np.float32)
        if axis is not None and scale.ndim:  # per output channel of an [in, out] matrix
            return (q - zp[None, :]) * scale[None, :]
        return (q - zp) * scale

    state = {name: value.astype(np.float32) for name, value in init.items()
             if name.endswith((".bias", ".weight")) and value.dtype == np.float32}
    for table in ("tok", "pos"):
        if f"{table}.weight_quantized" in init:
            state[f"{table}.weight"] = dequant(f"{table}.weight", axis=None)
        elif table == "tok":
            state["tok.weight"] = _int4_table(init, path)
        else:
            raise BundleError(f"{path}: no 8-bit {table} embedding table; not an lwx-edge int8 export")
    for node in graph.node:
        weight = node.input[1] if len(node.input) > 1 else ""
        if node.op_type == "MatMul" and weight in init and init[weight].ndim == 2:
            matrix = init[weight]  # a weight the export kept fp32 (a factorised table's map), [in, out]
        elif node.op_type in ("MatMulInteger", "MatMulIntegerToFloat"):  # per-tensor / per-row activations
            if not weight.endswith("_quantized"):
                raise BundleError(f"{path}: unexpected int8 weight {weight!r}")
            matrix = dequant(weight[: -len("_quantized")], axis=1)
        else:
            continue
        layer = _bias_after(node, init, consumers, path)[: -len(".bias")]
        state[f"{layer}.weight"] = np.ascontiguousarray(matrix.T)
    return state


def _bias_after(node, init: dict, consumers: dict, path) -> str:
    """Name of the ``*.bias`` initializer added to ``node``'s output (searched a few nodes down): which layer a
    weight of the program belongs to."""
    queue, seen = deque([(node, 0)]), set()
    while queue:
        n, depth = queue.popleft()
        for name in n.input:
            if n.op_type == "Add" and name.endswith(".bias") and name in init:
                return name
        if depth < 6:
            for out in n.output:
                for nxt in consumers.get(out, []):
                    if id(nxt) not in seen:
                        seen.add(id(nxt))
                        queue.append((nxt, depth + 1))
    raise BundleError(f"{path}: cannot tell which layer an int8 weight belongs to")


def _int4_table(init: dict[str, np.ndarray], path) -> np.ndarray:
    """The token table of a ``table_bits=4`` export (:class:`lwx_edge.export.graph.Int4Embedding`): its one
    uint8 [V, d/2] and one float16 [V, d/32] initializer, unpacked."""
    mine = [a for name, a in init.items() if a.ndim == 2 and not name.endswith("_quantized")]  # not ORT's int8
    packed = [a for a in mine if a.dtype == np.uint8]
    scales = [a for a in mine if a.dtype == np.float16]
    if len(packed) != 1 or len(scales) != 1 or len(packed[0]) != len(scales[0]):
        raise BundleError(f"{path}: no 8-bit and no 4-bit token table; not an lwx-edge int8 export")
    p, s = packed[0].astype(np.float32), scales[0].astype(np.float32)
    q = np.concatenate([np.floor(p / 16), p % 16], axis=1) - 8
    rows, d = q.shape
    return (q.reshape(rows, s.shape[1], -1) * s[:, :, None]).reshape(rows, d)


def transfer_vocabulary(table: np.ndarray, old, new, piece_vectors: np.ndarray | None = None
                        ) -> tuple[np.ndarray, int]:
    """Fast vocabulary transfer (Gee et al. 2022): the token table for tokenizer ``new`` from ``table``, the
    table of tokenizer ``old``. A piece both vocabularies share keeps its row; any other piece gets the mean
    of the rows of its segmentation by ``old``, word-initial pieces ("▁dent") as the start of a word,
    word-internal ones ("ist") inside one. Returns (table [new vocab, d], number of rows copied unchanged).

    With ``piece_vectors`` (the teacher's vector of every piece of ``new`` read as a text, [new vocab, d_T]:
    :func:`lwx_edge.data.teacher.token_vectors`) a new piece instead gets :func:`teacher_rows`: the row a
    linear map fitted on the shared pieces gives its teacher vector, so a word the old vocabulary split
    ("▁appointment") starts with what the teacher knows of it rather than the mean of its fragments."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(old.sp.serialized_model_proto())
    proto.normalizer_spec.add_dummy_prefix = False  # so that "ist" is not read as the word "▁ist"
    inside = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    out = np.empty((new.vocab_size, table.shape[1]), dtype=np.float32)
    copied = 0
    for i in range(new.vocab_size):
        piece = new.id_to_piece(i)
        j = old.piece_to_id(piece)
        if j != old.sp.unk_id() or i == new.sp.unk_id():
            out[i] = table[j]
            copied += 1
            continue
        word_initial = piece.startswith("\u2581")
        ids = old.sp.encode(piece[1:]) if word_initial else inside.encode(piece)
        out[i] = table[ids].mean(axis=0) if ids else table[old.sp.unk_id()]
    if piece_vectors is not None:
        if len(piece_vectors) != new.vocab_size:
            raise ValueError(f"piece_vectors must have one row per piece of the new vocabulary ({new.vocab_size}),"
                             f" got {len(piece_vectors)}")
        old_ids = np.array([old.piece_to_id(new.id_to_piece(i)) for i in range(new.vocab_size)])
        shared = (old_ids != old.sp.unk_id()) | (np.arange(new.vocab_size) == new.sp.unk_id())
        if shared.all():
            return out, copied
        out[~shared], r2 = teacher_rows(piece_vectors[shared], table[old_ids[shared]], piece_vectors[~shared])
        log.info("vocabulary transfer: %d new rows from the teacher's vectors (map fitted on %d shared pieces, "
                 "R² %.3f)", int((~shared).sum()), int(shared.sum()), r2)
    return out, copied


def teacher_rows(known_vectors: np.ndarray, known_rows: np.ndarray, new_vectors: np.ndarray
                 ) -> tuple[np.ndarray, float]:
    """Rows for new pieces from their teacher vectors: the affine map ``row ≈ [t, 1]·W`` fitted by least
    squares on the pieces whose trained row is known, applied to ``new_vectors``. Returns (rows [n, d],
    R² of the fit on the known pieces: how much of the trained table the teacher's vectors explain)."""
    x = np.c_[known_vectors.astype(np.float64), np.ones(len(known_vectors))]
    y = known_rows.astype(np.float64)
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = ((y - x @ w) ** 2).sum()
    r2 = 1.0 - resid / max(((y - y.mean(0)) ** 2).sum(), 1e-30)
    rows = np.c_[new_vectors.astype(np.float64), np.ones(len(new_vectors))] @ w
    return rows.astype(np.float32), float(r2)


def full_table(state: dict[str, np.ndarray]) -> np.ndarray:
    """The token vectors [vocab, d] an encoder state gives its pieces: its table, or for a factorised table
    (``table_rank``) its rows through ``tok_proj``."""
    rows = np.asarray(state["tok.weight"], np.float32)
    if "tok_proj.weight" not in state:
        return rows
    return rows @ np.asarray(state["tok_proj.weight"], np.float32).T + np.asarray(state["tok_proj.bias"], np.float32)


def piece_weights(tokenizer, counts: np.ndarray | None = None) -> np.ndarray:
    """How much each piece's row matters when a table is factorised (``table_rank``): the square root of how
    often it occurs (``counts``, e.g. :func:`piece_counts` of the training text; measured better than plain
    counts or none), or without counts of its expected frequency read from the BPE merge order (Zipf: the
    k-th merge about k times rarer than the first; 0.3 point of everyday P@1 behind real counts at 96k pieces,
    rank 224). Control pieces weigh nothing."""
    n = tokenizer.vocab_size
    if counts is not None:
        if len(counts) != n:
            raise ValueError(f"counts must have one entry per piece ({n}), got {len(counts)}")
        weights = np.sqrt(np.asarray(counts, np.float64) + 1.0)
    else:
        order = np.array([-tokenizer.sp.get_score(i) for i in range(n)], np.float64)
        weights = 1.0 / np.sqrt(1.0 + order - order.min())
    weights[[i for i in range(n) if tokenizer.sp.is_control(i)]] = 0.0
    return weights


def piece_counts(tokenizer, texts, chunk: int = 20_000) -> np.ndarray:
    """How often each piece of ``tokenizer`` occurs in ``texts``: int64 [vocab]."""
    counts = np.zeros(tokenizer.vocab_size, np.int64)
    for s in range(0, len(texts), chunk):
        ids = [i for row in tokenizer.encode(texts[s:s + chunk]).ids for i in row]
        counts += np.bincount(np.asarray(ids, np.int64), minlength=tokenizer.vocab_size)
    return counts


def transfer_bundle(source: str | os.PathLike, tokenizer: str | os.PathLike, out_dir: str | os.PathLike,
                    teacher=None, table_bits: int | None = None, table_rank: int | None = None,
                    count_texts: list[str] | None = None) -> dict:
    """Write a training bundle at ``out_dir``: the encoder of ``source`` (``"default"``: the shipped model)
    with its token table moved to ``tokenizer`` by :func:`transfer_vocabulary`; with a ``teacher``, new
    pieces start from the teacher's vectors of them. No training: what a run with ``init_from`` and
    ``--tokenizer`` starts from, as a bundle to evaluate, export or train on. ``table_bits`` (default: the
    source's) 4: the encoder reads its table on the 4-bit grid its artefacts then store (a large vocabulary
    at half the size). ``table_rank`` (default: the source's; 0: full width) r: the table is stored as its
    best rank-r form (rows [vocab, r] and an r -> d map, rows weighted by :func:`piece_weights` of the pieces'
    counts in ``count_texts`` when given), so about d / r times the pieces fit in the same size. Returns a
    summary."""
    import torch

    from ..bundle import check_new_bundle_dir
    from ..tokenizer import Tokenizer
    from .checkpoint import save_bundle
    from .model import SentenceEncoder

    check_new_bundle_dir(out_dir)
    state, config, bundle = encoder_weights(source)
    old, new = Tokenizer(bundle.file(B.TOKENIZER)), Tokenizer(tokenizer)
    vectors = None
    if teacher is not None:
        from ..data.teacher import token_vectors

        vectors = token_vectors(new, teacher)
    table, copied = transfer_vocabulary(full_table(state), old, new, vectors)
    summary = {"from": str(source), "from_tokenizer_sha256": bundle.sha256(B.TOKENIZER), "tokenizer": str(tokenizer),
               "vocab_size": new.vocab_size, "rows_kept": copied, "new_rows": new.vocab_size - copied,
               "new_rows_from": "teacher" if vectors is not None else "mean of old pieces"}
    bits = config.table_bits if table_bits is None else table_bits
    rank = config.table_rank if table_rank is None else table_rank
    try:
        encoder = SentenceEncoder(ModelConfig(**{**config.to_dict(), "vocab_size": new.vocab_size,
                                                 "table_bits": bits, "table_rank": rank}))
    except ValueError as e:
        raise BundleError(f"cannot store the table so: {e}") from None
    state = {k: v for k, v in state.items() if not k.startswith("tok_proj.")}
    counts = piece_counts(new, count_texts) if rank and count_texts else None
    kept = encoder.load_weights({**state, "tok.weight": table}, torch.from_numpy(piece_weights(new, counts)))
    summary.update(table_bits=bits, table_rank=rank)
    if rank:
        summary["table_energy_kept"] = round(kept, 4)
        summary["rows_weighted_by"] = (f"counts in {len(count_texts):,} texts" if counts is not None
                                       else "BPE merge order")
        log.info("token table stored at rank %d: %.1f%% of its weighted energy kept", rank, 100 * kept)
    record = {**bundle.manifest.get("training", {}), "vocabulary_transfer": summary}  # how the source was trained
    save_bundle(encoder, tokenizer, out_dir, record)
    return {**summary, "out": str(out_dir)}
