"""recipes/: the README's training command is recipes/default.json, the recipe the shipped default was trained
with; --config files overlay in order, flags and --set last."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from doc_blocks import blocks, commands, section
from lwx_edge.training.config import TrainConfig

REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO / "recipes" / "default.json"


def configured(args, monkeypatch) -> TrainConfig:
    """The TrainConfig that ``lwx-edge train ARGS`` builds, run from the repository root (training stubbed out)."""
    import lwx_edge.training.trainer
    from lwx_edge.cli import app

    seen = []
    monkeypatch.setattr(lwx_edge.training.trainer, "train", lambda cfg, resume=False: seen.append(cfg) or {})
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(app, ["train", *args])
    assert result.exit_code == 0, result.output
    return seen[0]


def test_the_readme_trains_the_default_recipe(monkeypatch):
    first = blocks(section("Train a model"), "bash")[0]
    (train,) = [c for c in commands(first) if c[:2] == ["lwx-edge", "train"]]
    assert train[2:] == ["--config", "recipes/default.json"]
    cfg = configured(train[2:], monkeypatch)
    assert cfg.to_dict() == TrainConfig.from_files([DEFAULT]).to_dict()
    assert set(json.loads(DEFAULT.read_text())) <= set(cfg.to_dict())


STAGES = [REPO / "recipes" / "history" / "continue-1.json", REPO / "recipes" / "history" / "continue-2.json"]
GPU = REPO / "recipes" / "history" / "gpu-24k.json"


def _same_run(shipped: dict, recipe: dict, ignore=("out_dir", "teacher_workers")) -> None:
    """A run's recorded config is the recipe's: every key it records has the recipe's value, and every key
    added to TrainConfig since then (the model section too) has its default."""
    shipped, recipe = dict(shipped), dict(recipe)
    for key in ignore:  # where it wrote, and how the teacher cache was filled
        shipped.pop(key, None), recipe.pop(key, None)
    defaults = TrainConfig().to_dict()
    for have, want, default in ((recipe.pop("model"), shipped.pop("model"), defaults.pop("model")), (recipe, shipped, defaults)):
        assert {k: have[k] for k in want} == want
        assert {k: have[k] for k in set(have) - set(want)} == {k: default[k] for k in set(have) - set(want)}


def test_the_default_recipe_and_its_gpu_overlays_are_the_ones_the_shipped_model_was_trained_with():
    """The shipped default, read back through its manifest's chain (``started_from``): one run of the README
    recipe with recipes/history/gpu-24k.json over it (an H100, the everyday 24k tokenizer, batch 512, 600 s), moved to
    the 128k vocabulary with a rank-160 4-bit table (``lwx-edge transfer``), 300 s of the README recipe with
    recipes/history/gpu-24k-words.json over it on an H200, its FFN cut from 1,024 to 512 neurons (tools/prune_ffn.py),
    then 320 s of recipes/history/gpu-words-ffn512.json from that cut model (its best checkpoint, step 7,000), then 290 s
    of recipes/history/gpu-ffn512-more.json from that model as shipped (its final bundle, step 8,390), then recipes/
    gpu-conversation.json with recipes/conversation/lang-align6.json over it from that model as shipped (its best
    checkpoint, step 4,000), blended half and half with its start (tools/interpolate.py), then that recipe with
    recipes/conversation/{docs,phrasebook,lr-half,rel-softmax}.json over it from that model as shipped (its best
    checkpoint, step 1,000)."""
    sixth = json.loads((REPO / "lwx_edge" / "default_model" / "manifest.json").read_text())["training"]
    rel = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "gpu-conversation.json",
                                  *(REPO / "recipes" / "conversation" / f"{name}.json"
                                    for name in ("lang-align6", "docs", "phrasebook", "lr-half", "rel-softmax"))]).to_dict()
    rel.update(tokenizer="runs/conv-rel-softmax/tokenizer.model")
    rel["model"]["vocab_size"] = 128000
    _same_run(sixth["config"], rel)
    assert sixth["device"] == "cuda:0" and sixth["step"] == 1000 and "interpolated" not in sixth
    assert sixth["started_from"]["bundle"] == rel["init_from"] == "lwx_edge/default_model"
    fifth = sixth["started_from"]["training"]
    conv = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "gpu-conversation.json",
                                   REPO / "recipes" / "conversation" / "lang-align6.json"]).to_dict()
    conv.update(tokenizer="runs/conv-lang-align6/tokenizer.model")
    conv["model"]["vocab_size"] = 128000
    _same_run(fifth["config"], conv)
    assert fifth["device"] == "cuda:0" and fifth["step"] == 4000
    assert fifth["interpolated"] == {"start": "default", "tuned": "runs/conv-lang-align6/best", "alpha": 0.5}
    assert fifth["started_from"]["bundle"] == conv["init_from"] == "lwx_edge/default_model"
    fourth = fifth["started_from"]["training"]
    more = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-ffn512-more.json"]).to_dict()
    more.update(max_time=290.0, tokenizer="runs/gpu-ffn512-more/tokenizer.model")
    more["model"]["vocab_size"] = 128000
    _same_run(fourth["config"], more)
    assert fourth["device"] == "cuda:0" and fourth["step"] == 8390
    assert fourth["started_from"]["bundle"] == more["init_from"] == "lwx_edge/default_model"
    training = fourth["started_from"]["training"]
    last = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-words-ffn512.json"]).to_dict()
    last.update(max_time=320.0, tokenizer="runs/gpu-words-ffn512/tokenizer.model")  # --set max_time=320; the
    last["model"]["vocab_size"] = 128000                                              # start's tokenizer, copied
    _same_run(training["config"], last)
    assert training["device"] == "cuda:0" and training["step"] == 7000
    cut = training["started_from"]
    assert cut["bundle"] == last["init_from"] == "runs/d512"
    assert cut["training"]["ffn_pruned"] == {"from": "default", "d_ff": 512, "of": 1024, "scored_on_texts": 4000}
    words = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-24k-words.json"]).to_dict()
    words.update(max_time=300.0, tokenizer="runs/gpu-24k-words/tokenizer.model")
    words["model"]["vocab_size"] = 128000
    _same_run(cut["training"]["config"], words)
    assert cut["training"]["step"] == 7757
    start = cut["training"]["started_from"]
    assert start["bundle"] == words["init_from"] == "lwx_edge/default_model"
    moved = start["training"]["vocabulary_transfer"]
    assert (moved["vocab_size"], moved["table_bits"], moved["table_rank"]) == (128000, 4, 160)
    assert moved["rows_kept"] == 24000 and moved["rows_weighted_by"].startswith("counts in ")
    first = TrainConfig.from_files([DEFAULT, GPU]).to_dict()
    _same_run(start["training"]["config"], first)
    assert first["init_from"] is None and first["device"] == "cuda"
    shipped = json.loads((REPO / "lwx_edge" / "default_model" / "config.json").read_text())["model"]
    assert (shipped["d_ff"], TrainConfig().model.d_ff) == (512, 1024)  # the paper's 1,024 stays the trainer's default


def test_the_cpu_continuations_start_from_the_previous_run():
    """The CPU history the README records: the README recipe, then continue-1 and continue-2 over it, each
    started from the previous run's best checkpoint."""
    first = TrainConfig.from_files([DEFAULT, STAGES[0]])
    assert (first.init_from, first.out_dir) == (TrainConfig.from_files([DEFAULT]).out_dir + "/best", "runs/everyday2")
    assert TrainConfig.from_files([DEFAULT, STAGES[1]]).init_from == first.out_dir + "/best"


def test_configs_overlay_in_order_then_flags_and_set(tmp_path, monkeypatch):
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"lr": 1e-3, "weights": {"sim": 2}, "corpus": ["a.en-fr.tsv"]}))
    cfg = configured(["--config", str(DEFAULT), "--config", str(overlay), "--out", str(tmp_path / "run"),
                      "--set", "weights.gen=1", "--max-steps", "7"], monkeypatch)
    assert (cfg.lr, cfg.weights.sim, cfg.weights.gen, cfg.weights.kd) == (1e-3, 2.0, 1.0, 10.0)  # kd: the recipe's
    assert cfg.corpus == ["a.en-fr.tsv"] and cfg.out_dir == str(tmp_path / "run") and cfg.max_steps == 7
    assert (cfg.kd_space, cfg.max_time) == ("output", 5400.0)
    assert configured(["--config", str(DEFAULT), "--corpus", "b.en-de.tsv"], monkeypatch).corpus == ["b.en-de.tsv"]


@pytest.mark.parametrize("content, message", [
    ('{"weights": {"sim": "none"}}', "config key 'weights.sim' expects float"),
    ('{"max_time": "1h"}', "config key 'max_time' expects float (or null)"),
    ("{", "cannot read the config file"),
])
def test_overlays_are_type_checked(tmp_path, content, message):
    from lwx_edge.errors import LwxError

    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(LwxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrainConfig.from_files([DEFAULT, tmp_path / "bad.json"])


SMOKE = REPO / "recipes" / "smoke.json"


def test_the_smoke_recipe_is_a_valid_five_minute_run(monkeypatch):
    """issues 18 and 38: recipes/smoke.json is a short run on the shipped sample corpus (no data build), teacher
    included, bounded by --max-time; the docs' command for it builds exactly that config."""
    raw = json.loads(SMOKE.read_text(encoding="utf-8"))
    cfg = TrainConfig.from_files([SMOKE])
    cfg.validate()
    assert set(raw) <= set(cfg.to_dict())
    assert cfg.max_time is not None and 0 < cfg.max_time <= 300
    assert cfg.teacher == "use" and cfg.weights.kd > 0 and cfg.weights.mono > 0  # distillation on
    assert cfg.mono_max_per_lang is not None and cfg.mono_max_per_lang <= 2000  # bounds the teacher caching
    assert not cfg.final_full_eval and cfg.dev_max_pairs <= 500 and 0 < cfg.eval_every <= 100
    assert cfg.corpus and all(not Path(c).is_absolute() for c in cfg.corpus + cfg.mono)  # run from the repo root
    shipped = [cfg.corpus, cfg.mono, cfg.dev_xsr, [cfg.dev_docs] if cfg.dev_docs else []]
    assert all(p.startswith("examples/corpus") and (REPO / p).is_dir() for paths in shipped for p in paths)
    (smoke,) = [c for b in blocks(section("A five-minute smoke run"), "bash") for c in commands(b)
                if c[:2] == ["lwx-edge", "train"] and "recipes/smoke.json" in c]
    got = configured(smoke[2:], monkeypatch).to_dict()
    assert got == {**cfg.to_dict(), "out_dir": got["out_dir"]}


@pytest.mark.slow
def test_the_smoke_recipe_trains_exports_and_loads_on_the_shipped_sample(tmp_path, monkeypatch):
    """The smoke recipe's pipeline right after install: train on examples/corpus (a few steps, no teacher here:
    the teacher's share is timed in docs/TRAINING.md), export the int8 ONNX program, load it and embed."""
    import subprocess
    import sys

    import numpy as np

    from lwx_edge import Encoder

    monkeypatch.chdir(REPO)
    out = tmp_path / "smoke"
    run = [sys.executable, "-m", "lwx_edge"]
    r = subprocess.run([*run, "train", "--config", "recipes/smoke.json", "--teacher", "none", "--out", str(out),
                        "--max-steps", "4", "--set", "vocab_size=2000", "--set", "eval_every=2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("dev" in json.dumps(m) for m in metrics)  # validated on the sample's dev split
    r = subprocess.run([*run, "export", str(out / "bundle"), "--int8", "--format", "onnx"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    v = Encoder.load(out / "bundle").embed(["Where is the station?", "Où est la gare ?"])
    assert v.shape == (2, 512) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)


def test_the_next_gpu_recipes_continue_the_default_with_the_new_data():
    """tools/gpu_run/README.md's plan: both recipes start from the shipped default, add the lexicon and the games
    corpora (Cataclysm, then the other games' train pairs) to the README recipe's corpora, and differ only in the frequent words as monolingual text."""
    base = TrainConfig.from_files([DEFAULT])
    lex = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-24k-lex.json"])
    words = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-24k-words.json"])
    for cfg in (lex, words):
        cfg.validate()
        assert cfg.init_from == "lwx_edge/default_model" and cfg.device == "cuda" and cfg.max_time == 1200
        # the default's table keeps its form (4 bits, its rank): a full-width or 8-bit table would be over 20 MB
        shipped = json.loads((REPO / "lwx_edge" / "default_model" / "config.json").read_text())["model"]
        assert (cfg.model.table_bits, cfg.model.table_rank) == (shipped["table_bits"], shipped["table_rank"]) == (4, 160)
        assert cfg.corpus == base.corpus + ["data/corpus/lexicon", "data/corpus/games", "data/corpus/games-extra"]
    assert lex.mono == base.mono and words.mono == base.mono + ["data/corpus/words"]
    diff = {k for k, v in words.to_dict().items() if lex.to_dict()[k] != v}
    assert diff == {"mono", "out_dir"}


def test_the_slower_words_recipe_differs_from_the_words_recipe_in_its_learning_rate_only():
    """The next GPU session's pair (tools/gpu_run/README.md): the words recipe at lr 3e-4 and at 1e-4."""
    words = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-24k-words.json"]).to_dict()
    slow = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-words-lr1e-4.json"]).to_dict()
    assert {k for k, v in slow.items() if words[k] != v} == {"lr", "out_dir"}
    assert (words["lr"], slow["lr"]) == (3e-4, 1e-4)


def test_the_ffn512_recipe_differs_from_the_words_recipe_in_its_start_and_ffn_width_only():
    """Issue 14's AVX2 lever trained (tools/gpu_run/README.md): the words recipe from the default cut to an FFN of
    512 by tools/prune_ffn.py (written to runs/d512 on the GPU machine before the run starts)."""
    words = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-24k-words.json"]).to_dict()
    small = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-words-ffn512.json"])
    small.validate()
    small = small.to_dict()
    assert {k for k, v in small.items() if words[k] != v} == {"init_from", "model", "out_dir"}
    assert {k for k, v in small["model"].items() if words["model"][k] != v} == {"d_ff"}
    assert (words["model"]["d_ff"], small["model"]["d_ff"], small["init_from"]) == (1024, 512, "runs/d512")


def test_the_next_gpu_recipe_continues_the_shipped_512_ffn_default():
    """tools/gpu_run/README.md's next plan: the third run's recipe again, from the shipped default itself."""
    ran = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-words-ffn512.json"]).to_dict()
    more = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-ffn512-more.json"]).to_dict()
    assert {k for k, v in more.items() if ran[k] != v} == {"init_from", "out_dir"}
    assert more["init_from"] == "lwx_edge/default_model"
    shipped = json.loads((REPO / "lwx_edge" / "default_model" / "config.json").read_text())["model"]
    assert {k: more["model"][k] for k in ("d_ff", "table_bits", "table_rank")} == \
        {k: shipped[k] for k in ("d_ff", "table_bits", "table_rank")} == {"d_ff": 512, "table_bits": 4, "table_rank": 160}


def test_the_conversation_recipes_compare_objectives_on_the_same_data_and_budget():
    """recipes/gpu-conversation.json is the shipped default's continuation with games-more added, the
    conversation dev split in the selection and a capped final evaluation; each overlay of
    recipes/conversation/ changes the objective or the batches only (and where it writes)."""
    more = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "history" / "gpu-ffn512-more.json"]).to_dict()
    conv = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "gpu-conversation.json"]).to_dict()
    changed = {k for k in conv if conv[k] != more[k]}
    assert changed == {"corpus", "out_dir", "max_time", "eval_every", "save_every", "dev_xsr"}
    assert conv["corpus"] == more["corpus"] + ["data/corpus/games-more"]
    assert conv["dev_xsr"] == ["data/corpus/everyday", "data/corpus/conversation"] and not conv["final_full_eval"]
    outs = {conv["out_dir"]}
    for name, want in (("lang", {"batch_group": "lang"}), ("kd", {"weights": {**conv["weights"], "gen": 0.0, "align": 0.0}}),
                       ("lang-align6", {"batch_group": "lang", "weights": {**conv["weights"], "align": 6.0}})):
        variant = TrainConfig.from_files([DEFAULT, REPO / "recipes" / "gpu-conversation.json",
                                          REPO / "recipes" / "conversation" / f"{name}.json"]).to_dict()
        outs.add(variant.pop("out_dir"))
        assert {k: v for k, v in variant.items() if v != conv[k] and k != "out_dir"} == want, name
    assert len(outs) == 4  # four runs side by side write to four directories


def test_the_phrasebook_overlay_adds_the_phrasebook_and_changes_nothing_else():
    """recipes/conversation/phrasebook.json lays the phrasebook (lwx-edge data phrasebook) over any conversation
    recipe: the same corpora plus data/corpus/phrasebook, written elsewhere."""
    base = [DEFAULT, REPO / "recipes" / "gpu-conversation.json", REPO / "recipes" / "conversation" / "lang-align6.json"]
    conv = TrainConfig.from_files(base).to_dict()
    with_pb = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "phrasebook.json"]).to_dict()
    assert {k for k in conv if conv[k] != with_pb[k]} == {"corpus", "out_dir"}
    assert with_pb["corpus"] == conv["corpus"] + ["data/corpus/phrasebook"]


def test_the_ding_overlay_adds_dings_sentences_to_the_phrasebook_and_changes_nothing_else():
    """recipes/conversation/ding.json: the phrasebook's corpora plus Ding's sentences in French, Spanish and Italian
    (lwx-edge data ding-sentences), written elsewhere; laid over phrasebook.json it changes only the corpora."""
    base = [DEFAULT, REPO / "recipes" / "gpu-conversation.json", REPO / "recipes" / "conversation" / "lang-align6.json",
            REPO / "recipes" / "conversation" / "phrasebook.json"]
    with_pb = TrainConfig.from_files(base).to_dict()
    with_ding = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "ding.json"]).to_dict()
    assert {k for k in with_pb if with_pb[k] != with_ding[k]} == {"corpus", "out_dir"}
    assert with_ding["corpus"] == with_pb["corpus"] + ["data/corpus/ding-sentences"]
    assert with_ding["out_dir"] not in {with_pb["out_dir"], "runs/conv-phrasebook"}


def test_the_relational_overlay_adds_the_relational_term_and_changes_nothing_else():
    """recipes/conversation/rel.json adds relational distillation (the teacher's in-batch cosines, weight 100) to any
    conversation recipe and keeps every other weight; it validates (the term reads the teacher's vectors)."""
    base = [DEFAULT, REPO / "recipes" / "gpu-conversation.json", REPO / "recipes" / "conversation" / "lang-align6.json",
            REPO / "recipes" / "conversation" / "phrasebook.json"]
    conv = TrainConfig.from_files(base).to_dict()
    rel = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "rel.json"])
    rel.validate()
    changed = {k: v for k, v in rel.to_dict().items() if v != conv[k]}
    assert changed == {"weights": {**conv["weights"], "rel": 100.0}, "out_dir": "runs/conv-rel"}
    assert conv["weights"]["rel"] == 0.0 and conv["weights"]["kd"] > 0


def test_the_cluster_overlay_changes_the_batches_only():
    """recipes/conversation/cluster.json: one language pair and one k-means cluster of the teacher's English
    vectors a batch (mined hard negatives), over any conversation recipe; it validates (the recipes keep a teacher)."""
    base = [DEFAULT, REPO / "recipes" / "gpu-conversation.json", REPO / "recipes" / "conversation" / "lang-align6.json",
            REPO / "recipes" / "conversation" / "phrasebook.json"]
    conv = TrainConfig.from_files(base)
    clustered = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "cluster.json"])
    clustered.validate()
    changed = {k: v for k, v in clustered.to_dict().items() if v != conv.to_dict()[k]}
    assert changed == {"batch_group": "lang+cluster", "out_dir": "runs/conv-cluster"}



def test_the_half_rate_and_softmax_relational_overlays_change_one_thing_each():
    """recipes/conversation/lr-half.json halves the learning rate (1.5e-4: the CPU arm's drift went with it) and
    rel-softmax.json adds the relational term in its softmax form (weight 1); laid together over the phrasebook
    recipe they validate and write to their own directory."""
    base = [DEFAULT, REPO / "recipes" / "gpu-conversation.json", REPO / "recipes" / "conversation" / "lang-align6.json",
            REPO / "recipes" / "conversation" / "phrasebook.json"]
    conv = TrainConfig.from_files(base).to_dict()
    half = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "lr-half.json"]).to_dict()
    assert {k: v for k, v in half.items() if v != conv[k]} == {"lr": 0.00015, "out_dir": "runs/conv-lr-half"}
    both = TrainConfig.from_files([*base, REPO / "recipes" / "conversation" / "lr-half.json",
                                   REPO / "recipes" / "conversation" / "rel-softmax.json"])
    both.validate()
    assert {k: v for k, v in both.to_dict().items() if v != conv[k]} == {
        "lr": 0.00015, "weights": {**conv["weights"], "rel": 1.0}, "rel_form": "softmax",
        "out_dir": "runs/conv-rel-softmax"}
