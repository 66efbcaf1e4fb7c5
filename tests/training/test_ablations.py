"""tools/ablations.py and recipes/ablations/: every row of the ablation table trains with exactly the losses its
name says."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ablations", ROOT / "tools" / "ablations.py")
ablations = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ablations)


def configured(name: str, tmp_path, monkeypatch):
    """The TrainConfig that ``lwx-edge train`` builds from a variant's command line (training stubbed out)."""
    import lwx_edge.training.trainer
    from lwx_edge.cli import app

    seen = []
    monkeypatch.setattr(lwx_edge.training.trainer, "train", lambda cfg, resume=False: seen.append(cfg) or {})
    args = ["train", *ablations.configs(name), "--out", str(tmp_path), "--max-steps", "600"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return seen[0]


@pytest.mark.parametrize("name", list(ablations.VARIANTS))
def test_each_variant_trains_the_losses_its_name_says(name, tmp_path, monkeypatch):
    cfg = configured(name, tmp_path, monkeypatch)
    w = cfg.weights
    on = {k for k in ("gen", "align", "sim", "ranking") if getattr(w, k) > 0}
    if cfg.teacher != "none":
        assert w.kd > 0 and w.mono > 0 and cfg.token_init == "teacher"
        on.add("kd")
    assert on == {"gen" if part == "ugt" else part for part in name.split("+")}
    # everything else is the shared recipe
    assert (cfg.lr, cfg.warmup_steps, cfg.train_max_len, cfg.batch_size, cfg.max_steps) == (3e-4, 100, 64, 128, 600)
    assert len(cfg.corpus) == 3 and cfg.mono_max_per_lang == 30000


def test_the_table_has_the_papers_rows_and_an_optional_loss():
    names = set(ablations.VARIANTS)
    assert {"ugt", "ugt+align", "ugt+align+sim", "ugt+kd", "ugt+align+kd", "ugt+align+sim+kd", "kd"} <= names
    assert any("ranking" in n or "distance" in n for n in names)


def test_every_overlay_file_is_a_row_of_the_table():
    files = {p.stem for p in ablations.RECIPES.glob("*.json")} - {ablations.BASE.stem}
    assert files == set(ablations.VARIANTS)
