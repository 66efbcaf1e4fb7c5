"""The export form of the encoder.

``ExportEncoder`` runs the same computation as :class:`lwx_edge.training.model.SentenceEncoder` on the same weights,
with one change: positions are looked up with ``pos(arange(T))`` (an embedding gather) instead of slicing
``pos.weight[:T]``. A gather is what the 8-bit embedding quantizers (ExecuTorch ``embedding_byte``, ORT
``Gather`` quantization) act on, so the int8 artefacts store the position table in 8 bits as well
(-0.3 MB at d=512, 200 positions). The position table is cut to the exported ``max_len``.
A ``table_bits=4`` token table is exported as the rows the encoder reads: 4-bit packed
(:class:`Int4Embedding`, ``packed_table=True``: the int8 artefacts) or as floats (the fp32 artefacts).
A factorised table (``table_rank``) is exported as its rows and its ``tok_proj`` linear map, which the int8
artefacts quantize like every other linear layer.
The parity report compares every artefact against the unmodified eager ``SentenceEncoder``.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..training.model import TABLE_GROUP, int4_grid, snap_to_int4


class ExportEncoder(nn.Module):
    """input_ids int64 [B, T], attention_mask int64 [B, T] (1 = token) -> sentence_embedding float32 [B, d]."""

    def __init__(self, encoder: nn.Module, max_len: int, packed_table: bool = False):
        super().__init__()
        enc = copy.deepcopy(encoder).eval()
        cfg = enc.config
        if not 1 <= max_len <= cfg.max_len:
            raise ValueError(f"max_len must be in [1, {cfg.max_len}], got {max_len}")
        self.n_heads = cfg.n_heads
        self.max_len = max_len
        if cfg.table_bits == 4:  # the rows the encoder reads: 4-bit packed (int8 artefacts) or as floats (fp32)
            if packed_table:
                self.tok = Int4Embedding(enc.tok.weight)
            else:
                self.tok = nn.Embedding.from_pretrained(snap_to_int4(enc.tok.weight), freeze=True)
        else:
            self.tok = enc.tok
            self.tok.padding_idx = None  # docs/EXPORT.md §8, pitfall 5: a padding_idx breaks the embedding_byte fusion
        self.pos = nn.Embedding(max_len, cfg.d_model)
        with torch.no_grad():
            self.pos.weight.copy_(enc.pos.weight[:max_len])
        self.tok_proj = enc.tok_proj  # a factorised table's r -> d map (None at full width)
        self.emb_ln = enc.emb_ln
        self.blocks = enc.blocks
        self.eval()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        batch, length = input_ids.shape
        mask = attention_mask.to(torch.float32)
        positions = self.pos(torch.arange(length, dtype=torch.int64, device=input_ids.device))
        tokens = self.tok(input_ids)
        if self.tok_proj is not None:
            tokens = self.tok_proj(tokens)
        x = self.emb_ln(tokens + positions)
        bias = ((mask - 1.0) * 1e6).view(batch, 1, 1, length)
        bias = bias.expand(batch, self.n_heads, 1, length).reshape(-1, 1, length)
        for block in self.blocks:
            x = block(x, bias)
        summed = torch.bmm(mask.view(batch, 1, length), x).view(batch, -1)
        return summed / mask.sum(1, keepdim=True).clamp(min=1.0)


class Int4Embedding(nn.Module):
    """A token table stored in 4 bits (``table_bits=4``): one byte holds value j of a row in its high nibble
    and value j + d/2 in its low one (``packed`` uint8 [V, d/2], each nibble q + 8 with q in [-7, 7]), and one
    fp16 scale covers 32 values (``scales`` [V, d/32]). Looked up with a gather and unpacked with float
    arithmetic on [B·T, ...] views (one dynamic dimension: what XNNPACK's reshapes accept), so ONNX and
    ExecuTorch run it as it is and the int8 quantizers leave it alone (no fp32 table to quantize). For a table
    on its grid (:func:`lwx_edge.training.model.snap_to_int4`) the rows come back exactly."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        q, scales = int4_grid(table)
        nibbles = (q.to(torch.int16) + 8).to(torch.uint8)
        half = nibbles.shape[1] // 2
        self.register_buffer("packed", nibbles[:, :half] * 16 + nibbles[:, half:])
        self.register_buffer("scales", scales)
        self.group, self.dim = TABLE_GROUP, int(table.shape[1])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        p = self.packed[flat].to(torch.float32)                          # [N, d/2]
        high = torch.floor(p / 16.0)
        q = torch.cat((high, p - 16.0 * high), dim=1) - 8.0             # [N, d]
        s = self.scales[flat].to(torch.float32).view(-1, self.dim // self.group, 1)
        x = q.view(-1, self.dim // self.group, self.group) * s           # [N, d/32, 32]
        return x.view(ids.shape[0], -1, self.dim)


def example_inputs(vocab_size: int, max_batch: int, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Example inputs for torch.export: batch and seq >= 2 where the bounds allow (docs/EXPORT.md §8, pitfall 4)."""
    b = 2 if max_batch >= 2 else 1
    t = min(16, max_len) if max_len >= 2 else 1
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, max(4, vocab_size), (b, t), generator=g, dtype=torch.int64)
    mask = torch.ones(b, t, dtype=torch.int64)
    if b > 1 and t > 1:
        mask[1, t // 2:] = 0
    return ids, mask


def dynamic_shapes(max_batch: int | None, max_len: int):
    """Shared Dim objects for ids and mask; a bound of 1 gives a static dim (Dim(max=1) is rejected)."""
    from torch.export import Dim

    if max_batch is None:
        b = Dim("batch", min=1)
    elif max_batch >= 2:
        b = Dim("batch", min=1, max=max_batch)
    else:
        b = None
    t = Dim("seq", min=1, max=max_len) if max_len >= 2 else None
    spec = {}
    if b is not None:
        spec[0] = b
    if t is not None:
        spec[1] = t
    return (spec, dict(spec))
