"""tools/prune_ffn.py: a bundle's FFNs cut to their most used neurons (the AVX2 study of issue 14)."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from prune_ffn import neuron_scores, prune_ffn  # noqa: E402

from lwx_edge.training.model import ModelConfig, SentenceEncoder  # noqa: E402


class Ids:
    """A stand-in tokenizer: each text is its list of ids, written as space-separated numbers."""

    @staticmethod
    def encode(texts):
        return SimpleNamespace(ids=[[int(t) for t in text.split()] for text in texts])


def tiny() -> SentenceEncoder:
    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=16, n_layers=2, max_len=16))
    for p in enc.parameters():  # a trained-looking model: no layer starts at zero
        torch.nn.init.normal_(p, std=0.3)
    return enc.eval()


def test_neurons_that_feed_nothing_are_the_ones_cut_and_the_vectors_do_not_move():
    enc = tiny()
    with torch.no_grad():
        for b in enc.blocks:
            b.fc2.weight[:, 1::2] = 0  # every odd neuron's output is multiplied by zero
    texts = ["5 6 7 8 9", "10 11", "12 13 14 15 16 17 18"]
    scores = neuron_scores(enc, Ids, texts)
    assert [tuple(s.shape) for s in scores] == [(16,), (16,)] and all((s[1::2] == 0).all() for s in scores)
    small = prune_ffn(enc, scores, 8)
    assert small.blocks[0].fc1.weight.shape == (8, 32) and small.blocks[1].fc2.weight.shape == (32, 8)
    assert small.config.d_ff == 8 and enc.config.d_ff == 16
    ids = torch.tensor([[5, 6, 7, 8, 9, 0, 0], [12, 13, 14, 15, 16, 17, 18]])
    mask = (ids > 0).long()
    with torch.no_grad():
        assert torch.allclose(small(ids, mask), enc(ids, mask), atol=1e-5)
        assert not torch.allclose(prune_ffn(enc, [-s for s in scores], 8)(ids, mask), enc(ids, mask), atol=1e-2)


def test_padding_positions_do_not_count():
    enc = tiny()
    short, long = "5 6", "7 8 9 10 11 12 13"
    together = neuron_scores(enc, Ids, [short, long])  # the short text padded to 7 positions
    apart = [a + b for a, b in zip(neuron_scores(enc, Ids, [short]), neuron_scores(enc, Ids, [long]))]
    for t, a in zip(together, apart):
        assert torch.allclose(t, a, rtol=1e-4, atol=1e-5)


def test_a_width_outside_the_layer_is_refused():
    enc = tiny()
    scores = [torch.ones(16), torch.ones(16)]
    for bad in (0, 17):
        with pytest.raises(ValueError, match="d_ff must be in 1..16"):
            prune_ffn(enc, scores, bad)


def test_the_command_line_names_a_missing_bundle_and_a_width_too_large(tmp_path):
    import subprocess

    tool = Path(__file__).resolve().parents[2] / "tools" / "prune_ffn.py"
    run = lambda *a: subprocess.run([sys.executable, str(tool), *a, str(tmp_path / "out")],  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    missing = run(str(tmp_path / "nowhere"), "512")
    assert missing.returncode != 0 and "no such bundle directory" in missing.stderr and "Traceback" not in missing.stderr
    wide = run("default", "2000")
    assert wide.returncode != 0 and "d_ff must be in 1..512" in wide.stderr and "Traceback" not in wide.stderr
    assert not (tmp_path / "out").exists()


def test_the_cut_bundle_keeps_its_sources_training_record_and_the_card_shows_the_cut(tiny_corpus, tmp_path):
    """The manifest chain continues through a cut (as through lwx-edge transfer): a run started from the cut
    bundle keeps how its source was trained, and the model card says what was cut, after that stage."""
    import json
    import shutil
    import subprocess

    from conftest import make_tiny_bundle

    from lwx_edge.modelcard import _training

    src = make_tiny_bundle(tiny_corpus, tmp_path / "src")
    (tmp_path / "corpus" / "everyday").mkdir(parents=True)
    shutil.copy(tiny_corpus["train_fr"], tmp_path / "corpus" / "everyday" / "train.en-fr.tsv")
    tool = Path(__file__).resolve().parents[2] / "tools" / "prune_ffn.py"
    done = subprocess.run([sys.executable, str(tool), str(src), "16", str(tmp_path / "cut"), "--corpus",
                           str(tmp_path / "corpus"), "--texts", "20"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "cut" / "manifest.json").read_text())["training"]
    assert record == {"note": "test, seed 0",
                      "ffn_pruned": {"from": str(src), "d_ff": 16, "of": 64, "scored_on_texts": 40}}
    assert json.loads((tmp_path / "cut" / "config.json").read_text())["model"]["d_ff"] == 16

    trained = {"step": 120, "elapsed_s": 60, "device": "cuda:0", "config": {"batch_size": 512, "corpus": ["d/ddtp"]}}
    card = "\n".join(_training({**trained, "ffn_pruned": record["ffn_pruned"]}, trained["config"]))
    assert "120 steps at batch 512" in card
    assert card.index("120 steps") < card.index("Then its feed-forward layers were cut from 64 to 16 neurons "
                                                "without training (`tools/prune_ffn.py`: the most used ones on 40")
