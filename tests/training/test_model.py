import pytest
import torch

from lwx_edge.training.model import DualEncoderModel, ModelConfig, SentenceEncoder

TINY = ModelConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=16, dropout=0.0)


def test_shapes_and_parameter_count_of_the_paper_model():
    model = DualEncoderModel(ModelConfig(vocab_size=50_000))
    enc = sum(p.numel() for p in model.encoder.parameters())
    total = sum(p.numel() for p in model.parameters())
    # docs/METHOD.md §1: 29.91M exported (tok 25.6M + 200 pos rows + 2 layers 4.21M + emb LN), 30.22M in training
    assert abs(enc / 1e6 - 29.91) < 0.02
    assert abs(total / 1e6 - 30.22) < 0.02
    u = model.encoder(torch.randint(3, 50_000, (3, 7)), torch.ones(3, 7, dtype=torch.long))
    assert u.shape == (3, 512) and u.dtype == torch.float32


def test_padding_does_not_change_the_sentence_vector():
    torch.manual_seed(0)
    enc = SentenceEncoder(TINY).eval()
    ids = torch.tensor([[5, 6, 7, 8]])
    alone = enc(ids, torch.ones_like(ids))
    padded = torch.tensor([[5, 6, 7, 8, 0, 0, 0], [9, 10, 11, 12, 13, 14, 15]])
    mask = (padded != 0).long()
    batch = enc(padded, mask)
    assert torch.allclose(alone[0], batch[0], atol=1e-5)
    # a different sentence gives a different vector
    assert not torch.allclose(batch[0], batch[1], atol=1e-3)


def test_mean_pooling_over_real_tokens_only():
    torch.manual_seed(0)
    enc = SentenceEncoder(TINY).eval()
    ids = torch.tensor([[5, 6, 7, 0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    x = enc.emb_ln(enc.tok(ids) + enc.pos.weight[:4])
    bias = ((mask.float() - 1) * 1e6).view(1, 1, 1, 4).expand(1, 4, 1, 4).reshape(-1, 1, 4)
    for b in enc.blocks:
        x = b(x, bias)
    assert torch.allclose(enc(ids, mask)[0], x[0, :3].mean(0), atol=1e-6)


def test_generative_head_is_tied_to_the_token_table():
    model = DualEncoderModel(TINY, teacher_dim=24)
    assert model.generative_head.token_table.weight is model.encoder.tok.weight
    out = model(torch.tensor([[5, 6]]), torch.ones(1, 2, dtype=torch.long),
                torch.tensor([[7, 8, 9]]), torch.ones(1, 3, dtype=torch.long))
    assert out["logits_a"].shape == (1, 50) and out["proj_b"].shape == (1, 24)


def test_a_generative_head_training_alone_sends_no_gradient_to_the_encoder():
    torch.manual_seed(0)
    model = DualEncoderModel(TINY)
    ids = torch.randint(3, 50, (4, 6))
    mask = torch.ones_like(ids)

    def grads(alone: bool):
        model.zero_grad()
        model.generative_head.alone = alone
        out = model(ids, mask, ids, mask)
        (out["logits_a"].logsumexp(-1).sum() + out["logits_b"].logsumexp(-1).sum()).backward()
        return model.encoder.tok.weight.grad, model.encoder.blocks[0].fc1.weight.grad, model.generative_head.dense.weight.grad

    table, block, head = grads(alone=False)
    assert table.abs().sum() > 0 and block.abs().sum() > 0 and head.abs().sum() > 0
    table, block, head = grads(alone=True)
    assert table is None and block is None and head.abs().sum() > 0


def test_teacher_token_init_starts_as_the_mean_of_the_token_vectors():
    torch.manual_seed(0)
    model = DualEncoderModel(TINY, teacher_dim=TINY.d_model)
    vectors = torch.randn(TINY.vocab_size, TINY.d_model) * 0.1 + 0.3
    model.init_from_token_vectors(vectors, output_scale=0.5)
    enc = model.encoder.eval()
    rows = vectors / vectors.pow(2).mean(1, keepdim=True).sqrt()
    assert torch.allclose(enc.tok.weight, rows) and not enc.pos.weight.any()
    ids, mask = torch.tensor([[5, 6, 7, 0], [9, 9, 0, 0]]), torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    ln = torch.nn.functional.layer_norm(rows, (TINY.d_model,), eps=TINY.layer_norm_eps)
    assert torch.allclose(enc(ids, mask), 0.5 * torch.stack([ln[[5, 6, 7]].mean(0), ln[9]]), atol=1e-4)
    assert torch.equal(model.distill_proj.weight, torch.eye(TINY.d_model) * 2)
    # every part still trains from there: the zeroed residual branches get gradients
    model.train()
    model.encoder(ids, mask).pow(2).sum().backward()
    assert all(b.out.weight.grad.abs().sum() > 0 and b.fc2.weight.grad.abs().sum() > 0 for b in enc.blocks)


def test_teacher_token_init_refuses_a_table_of_the_wrong_shape():
    import pytest

    with pytest.raises(ValueError, match=r"token vectors must be \[vocab, d_model\] = \[50, 32\]; got \[50, 16\]"):
        SentenceEncoder(TINY).init_from_token_vectors(torch.zeros(50, 16))


def test_center_output_removes_the_mean_and_keeps_the_distillation_projection():
    torch.manual_seed(0)
    model = DualEncoderModel(TINY, teacher_dim=TINY.d_model)
    model.init_from_token_vectors(torch.randn(TINY.vocab_size, TINY.d_model) + 2.0)
    ids = torch.randint(3, TINY.vocab_size, (64, 6))
    mask = torch.ones_like(ids)
    model.eval()
    before_u, before_g = model.encoder(ids, mask), model.distill_proj(model.encoder(ids, mask))
    c = model.center_output(ids, mask)
    after_u = model.encoder(ids, mask)
    assert torch.allclose(after_u, before_u - c, atol=1e-4) and after_u.mean(0).abs().max() < 1e-4
    assert torch.allclose(model.distill_proj(after_u), before_g, atol=1e-3)


def test_the_4bit_table_grid_is_idempotent_and_close():
    from lwx_edge.training.model import int4_grid, snap_to_int4

    table = torch.randn(50, 64)
    snapped = snap_to_int4(table)
    assert torch.equal(snap_to_int4(snapped), snapped)  # on the grid: back bit for bit
    q, scales = int4_grid(table)
    assert q.dtype == torch.int8 and int(q.abs().max()) == 7 and scales.shape == (50, 2)
    assert scales.dtype == torch.float16
    cos = torch.nn.functional.cosine_similarity(snapped, table, dim=1)
    assert cos.min() > 0.97  # 15 levels per group of 32
    with pytest.raises(ValueError, match="not a multiple of the 4-bit group 32"):
        int4_grid(torch.randn(3, 48))
    with pytest.raises(ValueError, match="table_bits must be 4 or 8"):
        ModelConfig(table_bits=2)
    cfg = ModelConfig(vocab_size=50, d_model=64, n_heads=4, d_ff=64, table_bits=4, dropout=0.0)
    enc4 = SentenceEncoder(cfg)
    enc8 = SentenceEncoder(ModelConfig(**{**cfg.to_dict(), "table_bits": 8}))
    enc8.load_state_dict(enc4.state_dict())
    ids, mask = torch.randint(3, 50, (4, 6)), torch.ones(4, 6, dtype=torch.long)
    with torch.no_grad():
        enc8.tok.weight.copy_(snap_to_int4(enc8.tok.weight))
    assert torch.allclose(enc4(ids, mask), enc8(ids, mask), atol=1e-6)  # it reads the table on the grid
    enc4(ids, mask).sum().backward()
    assert enc4.tok.weight.grad[ids.flatten()].abs().sum() > 0  # and still learns it (straight through)


def test_factorize_table_recovers_a_low_rank_table_and_spends_the_rank_on_heavy_rows():
    from lwx_edge.training.model import factorize_table

    g = torch.Generator().manual_seed(0)
    exact = torch.randn(60, 6, generator=g) @ torch.randn(6, 32, generator=g) + torch.randn(32, generator=g)
    rows, proj, mean, kept = factorize_table(exact, 6)
    assert rows.shape == (60, 6) and proj.shape == (6, 32) and kept > 0.9999
    assert torch.allclose(rows @ proj + mean, exact, atol=1e-4)
    assert torch.allclose(proj @ proj.T, torch.eye(6), atol=1e-5)  # orthonormal directions
    table = torch.randn(60, 32, generator=g)
    heavy = torch.ones(60)
    heavy[:10] = 100.0

    def error(weights):
        r, p, m, _ = factorize_table(table, 4, weights)
        return ((r @ p + m - table)[:10] ** 2).sum()

    assert error(heavy) < 0.5 * error(None)  # the rank goes to the rows that weigh
    with pytest.raises(ValueError, match="weights must be 60 non-negative numbers"):
        factorize_table(table, 4, torch.zeros(60))


def test_a_factorised_table_reads_its_rows_through_one_map_and_the_head_stays_tied():
    cfg = ModelConfig(vocab_size=50, d_model=64, n_heads=4, d_ff=64, table_bits=4, table_rank=32, dropout=0.0)
    model = DualEncoderModel(cfg).eval()
    enc = model.encoder
    assert enc.tok.weight.shape == (50, 32) and enc.tok_proj.weight.shape == (64, 32)
    assert model.generative_head.table_proj is enc.tok_proj and model.generative_head.token_table is enc.tok
    ids, mask = torch.randint(3, 50, (4, 6)), torch.ones(4, 6, dtype=torch.long)
    from lwx_edge.training.model import snap_to_int4

    with torch.no_grad():
        want = enc.tok_proj(snap_to_int4(enc.tok.weight))[ids]
        assert torch.allclose(enc.token_vectors(ids), want, atol=1e-6)
        # the head scores every piece against the table the encoder reads: z·Eᵀ, up to one shift per row
        u = enc(ids, mask)
        full = enc.tok_proj(enc.tok.weight)
        z = model.generative_head.ln(torch.nn.functional.silu(model.generative_head.dense(u)))
        assert torch.allclose(torch.log_softmax(model.generative_head(u), -1),
                              torch.log_softmax(z @ full.T + model.generative_head.bias, -1), atol=1e-4)
    for bad, message in (({"table_rank": 64}, "table_rank must be 0"), ({"table_rank": -1}, "table_rank must be 0"),
                         ({"table_rank": 48}, "width divisible by 32")):
        with pytest.raises(ValueError, match=message):
            ModelConfig(**{**cfg.to_dict(), **bad})


def test_load_weights_moves_a_table_between_full_width_and_a_rank():
    full_cfg = ModelConfig(vocab_size=50, d_model=64, n_heads=4, d_ff=64, dropout=0.0)
    full = SentenceEncoder(full_cfg).eval()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():  # a table of rank 16: a rank-16 encoder holds it exactly
        full.tok.weight.copy_(torch.randn(50, 16, generator=g) @ torch.randn(16, 64, generator=g))
    ranked = SentenceEncoder(ModelConfig(**{**full_cfg.to_dict(), "table_rank": 16})).eval()
    assert ranked.load_weights(full.state_dict()) > 0.9999
    ids, mask = torch.randint(3, 50, (3, 5)), torch.ones(3, 5, dtype=torch.long)
    with torch.no_grad():
        assert torch.allclose(ranked(ids, mask), full(ids, mask), atol=1e-4)
        back = SentenceEncoder(full_cfg).eval()
        assert back.load_weights(ranked.state_dict()) == 1.0  # full width keeps every row
        assert torch.allclose(back(ids, mask), full(ids, mask), atol=1e-4)
    smaller = SentenceEncoder(ModelConfig(**{**full_cfg.to_dict(), "table_rank": 8}))
    assert 0.3 < smaller.load_weights(full.state_dict()) < 0.95
    with pytest.raises(RuntimeError, match="do not fit"):
        smaller.load_weights({k: v for k, v in full.state_dict().items() if k != "emb_ln.weight"})


def test_a_checkpoint_of_a_factorised_table_stores_the_tied_head_once_and_restores_it(tmp_path):
    from safetensors.numpy import load_file

    from lwx_edge.training.checkpoint import load_checkpoint, save_checkpoint

    cfg = ModelConfig(vocab_size=50, d_model=64, n_heads=4, d_ff=64, table_bits=4, table_rank=32, dropout=0.0)
    model = DualEncoderModel(cfg)
    opt = torch.optim.Adam(model.parameters())
    model(*(torch.randint(3, 50, (2, 5)), torch.ones(2, 5, dtype=torch.long)) * 2)["logits_a"].sum().backward()
    opt.step()
    save_checkpoint(tmp_path / "ck", model, opt, {"step": 1, "elapsed": 0.0, "best": 0.0})
    stored = load_file(str(tmp_path / "ck" / "state.safetensors"))
    assert "model/encoder.tok_proj.weight" in stored
    assert not any(k.startswith("model/generative_head.t") for k in stored)  # token_table / table_proj: tied
    again = DualEncoderModel(cfg)
    load_checkpoint(tmp_path / "ck", again, torch.optim.Adam(again.parameters()))
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name  # the head's tied table and map come back from the encoder's
