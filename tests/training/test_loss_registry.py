"""The loss registry: one entry per LossWeights field; it alone decides which terms run, which see the global
batch under DDP (all-gathered) and whether DDP must look for unused parameters."""
from __future__ import annotations

from dataclasses import fields

import pytest
import torch

from lwx_edge.training.config import LossWeights, TrainConfig
from lwx_edge.training.losses import LOSSES
from lwx_edge.training.losses.registry import active, gathered
from lwx_edge.training.model import DualEncoderModel, ModelConfig
from lwx_edge.training.objective import compute_losses, loss_inputs


def test_every_weight_has_exactly_one_loss():
    assert sorted(loss.name for loss in LOSSES) == sorted(f.name for f in fields(LossWeights))


def test_the_batch_level_losses_and_what_they_gather():
    assert {loss.name for loss in LOSSES if loss.batch_level} == {"align", "sim", "distance", "ranking", "rel"}
    assert gathered(LOSSES) == ["u", "v", "teacher"]
    assert gathered(active(LossWeights(rel=0.0), {"u": 0, "v": 0, "teacher": 0})) == ["u", "v"]
    assert gathered(active(LossWeights(align=0, sim=0), {"u": 0, "v": 0})) == []


def step_inputs(n=6, vocab=30, teacher_dim=8, mono=4):
    """A forward pass of a tiny model on a synthetic batch with teacher vectors and a monolingual batch."""
    torch.manual_seed(0)
    model = DualEncoderModel(ModelConfig(vocab_size=vocab, d_model=16, n_heads=2, d_ff=32, max_len=16, dropout=0.0),
                             teacher_dim)
    ids = lambda k: torch.randint(3, vocab, (k, 5))  # noqa: E731
    batch = {"ids_a": ids(n), "ids_b": ids(n), "mask_a": torch.ones(n, 5, dtype=torch.long),
             "mask_b": torch.ones(n, 5, dtype=torch.long), "masked_side": torch.randint(0, 2, (n,)),
             "masked_token": torch.randint(3, vocab, (n,)), "teacher": torch.randn(n, teacher_dim),
             "mono_ids": ids(mono), "mono_mask": torch.ones(mono, 5, dtype=torch.long),
             "mono_teacher": torch.randn(mono, teacher_dim)}
    out = model(batch["ids_a"], batch["mask_a"], batch["ids_b"], batch["mask_b"], batch["mono_ids"],
                batch["mono_mask"])
    return out, batch


def every_weight(**kw) -> TrainConfig:
    return TrainConfig(weights=LossWeights(**{f.name: 1.0 for f in fields(LossWeights)} | kw))


def test_a_term_runs_when_weighted_and_its_inputs_are_there():
    out, batch = step_inputs()
    assert list(compute_losses(out, batch, every_weight(), 1)) == [loss.name for loss in LOSSES]
    del batch["teacher"], batch["mono_teacher"]
    assert list(compute_losses(out, batch, every_weight(sim=0.0), 1)) == ["gen", "align", "distance", "ranking"]


def test_under_ddp_batch_level_terms_see_the_global_batch(monkeypatch):
    """With a fake all-gather that returns this rank's slice twice (two ranks holding the same rows), batch-level
    terms equal their value on the doubled batch, per-pair terms their value on the local one."""
    import torch.distributed.nn.functional as dist_fn

    calls = []
    monkeypatch.setattr(dist_fn, "all_gather", lambda t: calls.append(t) or [t, t])
    out, batch = step_inputs()
    cfg = every_weight()
    ddp = compute_losses(out, batch, cfg, 2)
    x = loss_inputs(out, batch, cfg)
    doubled = {**x, **{k: torch.cat([x[k], x[k]]) for k in ("u", "v", "teacher")}}
    assert len(calls) == 3  # u, v, teacher
    for loss in LOSSES:
        want = loss(doubled if loss.batch_level else x, cfg)
        assert ddp[loss.name].item() == pytest.approx(want.item(), rel=1e-6), loss.name
    assert ddp["align"].item() != pytest.approx(compute_losses(out, batch, cfg, 1)["align"].item())


@pytest.mark.parametrize("weights, unused", [({}, False), ({"gen": 0.0}, True), ({"align": 0.0, "sim": 0.0}, False)])
def test_ddp_looks_for_unused_parameters_exactly_when_a_part_gets_no_gradient(tiny_corpus, tmp_path, weights, unused):
    from test_train import tiny_config

    from lwx_edge.training.trainer import Trainer

    cfg = tiny_config(tiny_corpus, tmp_path / "run")
    for k, v in weights.items():
        setattr(cfg.weights, k, v)
    assert Trainer(cfg)._has_unused_parameters() is unused
