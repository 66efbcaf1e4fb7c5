"""The model card (lwx_edge.modelcard, `lwx-edge info`): built from the bundle, its numbers are the shipped ones."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

from lwx_edge.bundle import write_manifest
from lwx_edge.encoder import DEFAULT_MODEL
from lwx_edge.modelcard import _duration, _stages, model_card


def test_the_default_models_card_quotes_its_shipped_evaluation():
    card = model_card(DEFAULT_MODEL, name="default")
    results = json.loads((DEFAULT_MODEL / "eval_test.json").read_text())["results"]
    mine, teacher = results["lwx-edge default"], results["teacher USE-m v3"]
    assert card.startswith("# Model card: default")
    assert "Languages: en, fr, de, es, it." in card
    row = next(line for line in card.splitlines() if line.startswith("| short package descriptions |"))
    assert row == (f"| short package descriptions | {mine['xsr_short']['avg']:.3f} | {teacher['xsr_short']['avg']:.3f}"
                   f" | {results['TF-IDF']['xsr_short']['avg']:.3f} |")
    assert "model.int8.onnx" in card and "**Weaknesses**" in card
    # the vocabulary the model has (its tokenizer's), not the size a run would have trained a tokenizer to
    vocab = json.loads((DEFAULT_MODEL / "config.json").read_text())["model"]["vocab_size"]
    assert f"SentencePiece vocabulary of {vocab:,} pieces" in card
    stages = _stages(json.loads((DEFAULT_MODEL / "manifest.json").read_text())["training"])
    if any("vocabulary_transfer" in st for st in stages):  # trained on a smaller vocabulary, then moved to this one
        assert f"Then moved to a vocabulary of {vocab:,} pieces without training" in card
        rank = json.loads((DEFAULT_MODEL / "config.json").read_text())["model"].get("table_rank")
        assert (f"as rows of {rank} values and one map" in card) == bool(rank)
    if "vocabulary_transfer" not in stages[-1]:  # the last run trained on this vocabulary itself
        assert f"SentencePiece vocabulary {vocab:,}." in card
    if len(stages) > 1:  # a chain of runs: each stage once, in order, with its steps
        assert f"In {len(stages)} stages" in card
        at = [card.index(f"{i + 1}. {st['step']:,} steps") for i, st in enumerate(stages)]
        assert at == sorted(at)


def test_a_stages_training_time_reads_in_minutes_under_an_hour():
    """A GPU stage of 67 s said "0.0 h"; minutes under an hour, hours to one decimal above."""
    assert [_duration(s) for s in (5, 67.4, 720, 3599, 3600, 5400)] == ["1 min", "1 min", "12 min", "60 min", "1.0 h",
                                                                        "1.5 h"]
    card = model_card(DEFAULT_MODEL, name="default")
    assert "0.0 h" not in card and " min on cuda:0)" in card


def test_strengths_and_weaknesses_follow_the_gap_to_the_teacher(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps({"model": {"d_model": 8, "vocab_size": 100}}))
    (bundle / "tokenizer.model").write_bytes(b"x")
    diag = {"related_cos": 0.8, "unrelated_cos": 0.1, "never_retrieved": 0.1, "max_k_occurrence": 3}
    results = {"lwx-edge default": {"xsr_short": {"en-fr": 0.95, "fr-en": 0.93, "avg": 0.94, "diag": diag},
                                    "xsr_everyday": {"en-fr": 0.5, "fr-en": 0.4, "avg": 0.45, "diag": diag}},
               "teacher USE-m v3": {"xsr_short": {"avg": 0.95}, "xsr_everyday": {"avg": 0.9}}}
    (bundle / "eval_test.json").write_text(json.dumps({"results": results}))
    write_manifest(bundle, {})
    card = model_card(bundle)
    assert "**Strengths** (within 3 points of the teacher, or above it): short package descriptions." in card
    assert "everyday text (held-out games) (0.450 vs 0.900)" in card
    assert "Weakest direction: fr-en on everyday text (held-out games) (0.400)." in card
    assert "| short package descriptions | 0.80 | 0.10 | – | – |" in card
    assert "No training record" in card and "Languages: en, fr." in card


def test_info_cli_prints_the_card_and_refuses_a_broken_bundle(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("# Model card: the lwx-edge default model"), r.stderr
    broken = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL, broken)
    (broken / "config.json").write_text("{}")
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "info", str(broken)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "error:" in r.stderr and "config.json" in r.stderr and "Traceback" not in r.stderr


def test_every_corpus_a_recipe_trains_on_is_described_with_its_licence():
    """A shipped model trained on a corpus the card cannot name would ship without the terms of its text."""
    from pathlib import Path

    from lwx_edge.modelcard import _training

    recipes = sorted((Path(__file__).resolve().parents[2] / "recipes").rglob("*.json"))
    dirs = {d for r in recipes for key in ("corpus", "mono") for d in json.loads(r.read_text()).get(key) or []}
    assert {"data/corpus/lexicon", "data/corpus/games-extra", "data/corpus/words"} <= dirs
    lines = _training({"step": 1, "config": {"corpus": sorted(dirs)}}, {"corpus": sorted(dirs)})
    listed = [line for line in lines if line.startswith("- parallel:")]
    assert len(listed) == len(dirs)
    assert [line for line in listed if "(" not in line] == []
    training = json.loads((DEFAULT_MODEL / "manifest.json").read_text())["training"]
    shipped = [line for line in _training(training, training["config"]) if line.startswith("- ")]
    assert "- parallel: `data/corpus/phrasebook`: everyday conversational sentences written for this project" in (
        "\n".join(shipped))
    assert [line for line in shipped if "(" not in line] == []


def test_the_cards_file_sizes_are_decimal_megabytes_as_the_readme_gives_them():
    card = model_card(DEFAULT_MODEL, name="default")
    size = (DEFAULT_MODEL / "model.int8.onnx").stat().st_size
    assert f"| model.int8.onnx | {size / 1e6:.1f} MB | int8 |" in card
