"""The shared 2-layer dual-transformer sentence encoder (Mao et al. 2021, docs/METHOD.md §1).

One encoder is applied to both sides of a pair. It is written for export: hand-written attention with
an additive mask folded into the bmm batch dimension, ``nn.LayerNorm``, and masked mean pooling via
``bmm`` (no ``unsqueeze(-1)`` on a [B, T] tensor, no data-dependent Python control flow in forward).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelConfig:
    """Architecture. Defaults are the paper's (Table 1, [R] config.py) except the vocabulary size,
    which is chosen for on-device size (one shared 16k vocabulary for five languages)."""

    vocab_size: int = 16000
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 1024
    n_layers: int = 2
    max_len: int = 200
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_id: int = 0
    table_bits: int = 8      # int8 artefacts store the token table in 8 bits; 4: on its 4-bit grid (groups of 32)
    table_rank: int = 0      # 0: token rows of width d_model; r: rows of width r, then a learned r -> d_model map

    def __post_init__(self):
        if self.table_bits not in (4, 8):
            raise ValueError(f"table_bits must be 4 or 8, got {self.table_bits}")
        if not 0 <= self.table_rank < self.d_model:
            raise ValueError(f"table_rank must be 0 (full width) or in [1, {self.d_model - 1}], got {self.table_rank}")
        if self.table_bits == 4 and self.table_width % TABLE_GROUP:
            raise ValueError(f"a 4-bit token table needs a width divisible by {TABLE_GROUP}, got {self.table_width}")

    @property
    def table_width(self) -> int:
        """Width of a stored token row: ``table_rank`` when set, else ``d_model``."""
        return self.table_rank or self.d_model

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        return cls(**d)


TABLE_GROUP = 32  # values per scale of a 4-bit token table


def int4_grid(table: torch.Tensor, group: int = TABLE_GROUP) -> tuple[torch.Tensor, torch.Tensor]:
    """The 4-bit form of a token table [V, d]: (q int8 [V, d] in [-7, 7], scales fp16 [V, d / group]),
    symmetric per group of ``group`` values of a row. Rows are independent, so snapping gathered rows
    (the encoder's forward with ``table_bits=4``) and storing the snapped table (the export) agree exactly;
    ``q · scales`` (:func:`snap_to_int4`) is idempotent."""
    rows, d = table.shape
    if d % group:
        raise ValueError(f"the table's width {d} is not a multiple of the 4-bit group {group}")
    x = table.detach().float().reshape(rows, d // group, group)
    scales = (x.abs().amax(-1) / 7).clamp(min=1e-8).half()
    q = torch.round(x / scales.float().unsqueeze(-1)).clamp(-7, 7)
    return q.to(torch.int8).reshape(rows, d), scales


def snap_to_int4(table: torch.Tensor, group: int = TABLE_GROUP) -> torch.Tensor:
    """``table`` rounded onto its 4-bit grid (fp32), see :func:`int4_grid`."""
    q, scales = int4_grid(table, group)
    rows, d = table.shape
    return (q.float().reshape(rows, -1, group) * scales.float().unsqueeze(-1)).reshape(rows, d)


def factorize_table(table: torch.Tensor, rank: int, weights: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """The best rank-``rank`` form of a token table [V, d] in weighted least squares: ``table ≈ rows · proj +
    mean`` with rows [V, r], proj [r, d] (orthonormal rows: the top right singular vectors of the centred table,
    each row scaled by its weight) and mean [d] (the weighted mean row). Weighting rows by how often their piece
    occurs (e.g. the square root of its count) spends the rank on the rows text is made of. Returns (rows,
    proj, mean, share of the weighted centred energy kept)."""
    t = table.detach().double()
    w = torch.ones(len(t), dtype=torch.float64) if weights is None else weights.detach().double().clamp(min=0)
    if w.shape != (len(t),) or not w.sum() > 0:
        raise ValueError(f"weights must be {len(t)} non-negative numbers, not all zero")
    mean = (t * w[:, None]).sum(0) / w.sum()
    _, s, vh = torch.linalg.svd((t - mean) * w[:, None], full_matrices=False)
    proj = vh[:rank]
    kept = float((s[:rank] ** 2).sum() / (s ** 2).sum().clamp(min=1e-30))
    return ((t - mean) @ proj.T).float(), proj.float(), mean.float(), kept


class EncoderBlock(nn.Module):
    """Post-LN transformer block: x -> LN(x + Attn(x)) -> LN(x + W2·silu(W1·x))."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.n_heads, self.d_head, self.d_model = c.n_heads, c.d_model // c.n_heads, c.d_model
        self.q = nn.Linear(c.d_model, c.d_model)
        self.k = nn.Linear(c.d_model, c.d_model)
        self.v = nn.Linear(c.d_model, c.d_model)
        self.out = nn.Linear(c.d_model, c.d_model)
        self.ln1 = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.fc1 = nn.Linear(c.d_model, c.d_ff)
        self.fc2 = nn.Linear(c.d_ff, c.d_model)
        self.ln2 = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.drop = nn.Dropout(c.dropout)
        self.attn_drop = nn.Dropout(c.dropout)
        self.scale = 1.0 / math.sqrt(self.d_head)

    def _split_heads(self, t: torch.Tensor, batch: int) -> torch.Tensor:
        # [B, T, D] -> [B*H, T, Dh]
        t = t.view(batch, -1, self.n_heads, self.d_head).permute(0, 2, 1, 3)
        return t.contiguous().view(batch * self.n_heads, -1, self.d_head)

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        q = self._split_heads(self.q(x) * self.scale, batch)
        k = self._split_heads(self.k(x), batch)
        v = self._split_heads(self.v(x), batch)
        probs = torch.softmax(torch.bmm(q, k.transpose(1, 2)) + attn_bias, dim=-1)
        a = torch.bmm(self.attn_drop(probs), v)
        a = a.view(batch, self.n_heads, -1, self.d_head).permute(0, 2, 1, 3).contiguous()
        x = self.ln1(x + self.drop(self.out(a.view(batch, -1, self.d_model))))
        return self.ln2(x + self.drop(self.fc2(self.drop(F.silu(self.fc1(x))))))


class SentenceEncoder(nn.Module):
    """Token ids [B, T] + attention mask [B, T] (1 = token, 0 = pad) -> sentence vectors u [B, d].

    Learned positions, LN(tok + pos) -> dropout, N post-LN blocks, masked mean pooling.
    This module is what gets exported; the generative head below is training-only.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.table_width)
        # a factorised table (table_rank r): token vector = tok_proj(row), one [r -> d] map for all pieces
        self.tok_proj = nn.Linear(config.table_rank, config.d_model) if config.table_rank else None
        self.pos = nn.Embedding(config.max_len, config.d_model)
        self.emb_ln = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.emb_drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        batch, length = input_ids.shape
        mask = attention_mask.to(torch.float32)
        x = self.emb_drop(self.emb_ln(self.token_vectors(input_ids) + self.pos.weight[:length]))
        # additive key-padding bias, one row per (batch, head): [B*H, 1, T]
        bias = ((mask - 1.0) * 1e6).view(batch, 1, 1, length)
        bias = bias.expand(batch, self.config.n_heads, 1, length).reshape(-1, 1, length)
        for block in self.blocks:
            x = block(x, bias)
        summed = torch.bmm(mask.view(batch, 1, length), x).view(batch, -1)
        return summed / mask.sum(1, keepdim=True).clamp(min=1.0)

    def token_vectors(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[B, T] ids -> [B, T, d] token vectors: the table's rows as the artefacts store them (on the 4-bit
        grid with ``table_bits=4``, gradients passing straight through), through ``tok_proj`` when factorised."""
        rows = self.tok(input_ids)
        if self.config.table_bits == 4:
            rows = rows + (snap_to_int4(rows.reshape(-1, rows.shape[-1])).view_as(rows) - rows).detach()
        return rows if self.tok_proj is None else self.tok_proj(rows)

    @torch.no_grad()
    def set_token_table(self, table: torch.Tensor, weights: torch.Tensor | None = None) -> float:
        """Store a full-width table [vocab, d]: as it is, or for ``table_rank`` r as its best rank-r form
        (:func:`factorize_table`, rows weighted by ``weights``). Returns the share of the (weighted, centred)
        table's energy kept (1.0 at full width)."""
        want = (self.config.vocab_size, self.config.d_model)
        if tuple(table.shape) != want:
            raise ValueError(f"a token table must be [vocab, d_model] = {list(want)}; got {list(table.shape)}")
        if self.tok_proj is None:
            self.tok.weight.copy_(table)
            return 1.0
        rows, proj, mean, kept = factorize_table(table, self.config.table_rank, weights)
        self.tok.weight.copy_(rows)
        self.tok_proj.weight.copy_(proj.T)
        self.tok_proj.bias.copy_(mean)
        return kept

    @torch.no_grad()
    def load_weights(self, state: dict, weights: torch.Tensor | None = None) -> float:
        """Load an encoder state dict whose token table may have another form than this config's (full width or
        another ``table_rank``): the table is then rebuilt at full width and stored by :meth:`set_token_table`
        (``weights`` per row). Returns the share of the table's energy kept (1.0 when it loads as it is)."""
        state = {k: torch.as_tensor(v) for k, v in state.items()}
        mine = {k for k in self.state_dict() if k.startswith(("tok.", "tok_proj."))}
        theirs = {k for k in state if k.startswith(("tok.", "tok_proj."))}
        if mine == theirs and state["tok.weight"].shape == self.tok.weight.shape:
            self.load_state_dict(state)
            return 1.0
        rows = state.pop("tok.weight")
        proj, mean = state.pop("tok_proj.weight", None), state.pop("tok_proj.bias", None)
        missing, unexpected = self.load_state_dict(state, strict=False)
        if unexpected or set(missing) != mine:
            raise RuntimeError(f"encoder weights do not fit: missing {sorted(set(missing) - mine)}, "
                               f"unexpected {sorted(unexpected)}")
        return self.set_token_table(rows if proj is None else rows @ proj.T + mean, weights)

    @torch.no_grad()
    def init_from_token_vectors(self, vectors: torch.Tensor, output_scale: float = 0.5) -> None:
        """Start as the static sentence model "mean of the token vectors" (Model2Vec-style distillation).

        The token table takes ``vectors`` [vocab, d] rescaled to RMS 1 per row (the scale of the default
        N(0, 1) init), positions start at zero, and every residual branch's output projection (attention
        ``out``, FFN ``fc2``) starts at zero, so each block is LN(x) at step 0 and the encoder returns
        ``output_scale`` × the masked mean of LN(vectors[id]) (the last LayerNorm's gain). The raw inner
        products of the alignment loss then start in the tens, not the hundreds, which would wreck the start
        in the first steps (see also :meth:`DualEncoderModel.center_output`). Training then moves every part
        from there.
        """
        want = (self.config.vocab_size, self.config.d_model)
        if tuple(vectors.shape) != want:
            raise ValueError(f"token vectors must be [vocab, d_model] = {list(want)}; got {list(vectors.shape)}")
        v = vectors.to(self.tok.weight.dtype)
        rms = v.pow(2).mean(1, keepdim=True).sqrt().clamp(min=1e-12)
        self.set_token_table(v / rms)
        self.pos.weight.zero_()
        for block in self.blocks:
            for layer in (block.out, block.fc2):
                layer.weight.zero_()
                layer.bias.zero_()
        self.blocks[-1].ln2.weight.fill_(output_scale)


class GenerativeHead(nn.Module):
    """Training-only head of the unified generative task: z = LN(silu(W·u + b)); logits = z·Eᵀ + b_out,
    with E the encoder's (tied) token table (docs/METHOD.md §1, [R] BertPredictionHeadTransform)."""

    def __init__(self, config: ModelConfig, token_table: nn.Embedding, table_proj: nn.Linear | None = None):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.ln = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.token_table = token_table
        self.table_proj = table_proj  # a factorised table: E = rows · Pᵀ + b, so z·Eᵀ = (z·P)·rowsᵀ + const
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.alone = False  # True: train the head alone (its loss reaches neither u nor the token table)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        table = self.token_table.weight
        proj = None if self.table_proj is None else self.table_proj.weight
        if self.alone:
            u, table = u.detach(), table.detach()
            proj = None if proj is None else proj.detach()
        z = self.ln(F.silu(self.dense(u)))
        return F.linear(z if proj is None else z @ proj, table, self.bias)


class DualEncoderModel(nn.Module):
    """Everything that trains: the shared encoder, the generative head and (optionally) the
    distillation projection g: d -> d_teacher (docs/METHOD.md §3.6). Only ``encoder`` is exported."""

    def __init__(self, config: ModelConfig, teacher_dim: int | None = None):
        super().__init__()
        self.config = config
        self.encoder = SentenceEncoder(config)
        self.generative_head = GenerativeHead(config, self.encoder.tok, self.encoder.tok_proj)
        self.distill_proj = nn.Linear(config.d_model, teacher_dim) if teacher_dim else None

    @torch.no_grad()
    def init_from_token_vectors(self, vectors: torch.Tensor, output_scale: float = 0.5) -> None:
        """:meth:`SentenceEncoder.init_from_token_vectors`, and the distillation projection g starts as
        identity / ``output_scale`` when the teacher's dimension is the model's (docs/METHOD.md §3.6), so g(u)
        starts at the teacher targets' scale (RMS 1)."""
        self.encoder.init_from_token_vectors(vectors, output_scale)
        g = self.distill_proj
        if g is not None and g.in_features == g.out_features:
            g.weight.copy_(torch.eye(g.in_features) / output_scale)
            g.bias.zero_()

    @torch.no_grad()
    def center_output(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Subtract the mean sentence vector c of a sample (ids, mask) from every sentence vector, through the
        last LayerNorm's bias (mean pooling carries a constant shift of every token exactly), and add W·c to
        the distillation projection's bias so g(u) is unchanged. Static token models share one large common
        direction (the "first principal component" of SIF); removing it makes the raw inner products of the
        alignment and similarity losses informative from step 0. Returns c."""
        was_training = self.encoder.training
        self.encoder.eval()
        c = self.encoder(ids, mask).mean(0)
        self.encoder.train(was_training)
        self.encoder.blocks[-1].ln2.bias.sub_(c)
        if self.distill_proj is not None:
            self.distill_proj.bias.add_(self.distill_proj.weight @ c)
        return c

    def forward(self, ids_a: torch.Tensor, mask_a: torch.Tensor, ids_b: torch.Tensor, mask_b: torch.Tensor,
                mono_ids: torch.Tensor | None = None, mono_mask: torch.Tensor | None = None) -> dict:
        """One training forward pass: sentence vectors of both sides (and of the monolingual batch), the
        generative logits from each pooled vector, and (with a projection) g(u), g(v) and g(mono)."""
        u, v = self.encoder(ids_a, mask_a), self.encoder(ids_b, mask_b)
        out = {"u": u, "v": v, "logits_a": self.generative_head(u), "logits_b": self.generative_head(v)}
        if mono_ids is not None:
            out["mono"] = self.encoder(mono_ids, mono_mask)
        if self.distill_proj is not None:
            out["proj_a"], out["proj_b"] = self.distill_proj(u), self.distill_proj(v)
            if mono_ids is not None:
                out["proj_mono"] = self.distill_proj(out["mono"])
        return out
