"""tools/batch_stats.py: padding and hardest in-batch negative of each batch grouping, without training."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import batch_stats as bs  # noqa: E402

from lwx_edge.data.batches import TokenizedPairs  # noqa: E402


def test_specs_read_run_clusters_and_bucket():
    assert bs.parse_spec("lang", 8, 50) == {"keys": "lang", "cluster_run": 8, "clusters": 50, "bucket": 50}
    assert bs.parse_spec("lang+cluster:0", 8, 50)["cluster_run"] == 0
    assert bs.parse_spec("lang+cluster:4:200@400", 8, 50) == {"keys": "lang+cluster", "cluster_run": 4,
                                                              "clusters": 200, "bucket": 400}
    assert bs.parse_spec("cluster@100", 8, 50)["clusters"] == 100  # clusters default to the bucket


@pytest.fixture(scope="module")
def planted():
    """60 topics of 16 pairs each; a topic's English sentences are near each other (teacher vectors), lengths vary."""
    rng = np.random.default_rng(0)
    topic = np.repeat(np.arange(60), 16)
    vecs = rng.normal(size=(60, 32))[topic] + 0.5 * rng.normal(size=(960, 32))
    lengths = rng.integers(2, 40, 960)
    data = TokenizedPairs([np.full(k, 4) for k in lengths], [np.full(k, 5) for k in lengths],
                          [f"sentence {i}" for i in range(960)], [""] * 960, ["en-fr"] * 960)
    return data, vecs


def test_neighbour_batches_are_harder_and_runs_cost_less_padding(planted):
    data, vecs = planted
    mixed = bs.batch_stats(data, vecs, 32, "none", 30, 30, 0)
    whole = bs.batch_stats(data, vecs, 32, "cluster", 30, 30, 0)
    runs = bs.batch_stats(data, vecs, 32, "cluster", 30, 30, 8)
    assert whole["hardest"] > mixed["hardest"] + 0.2 and runs["hardest"] > mixed["hardest"] + 0.2
    assert mixed["padding"] < runs["padding"] < 0.8 * whole["padding"]
    assert (runs["clusters"], runs["cluster_run"], mixed["clusters"]) == (30, 8, None)
    assert whole["grouping"] == "batches grouped by cluster: 30 clusters"


def test_the_same_english_in_another_language_is_not_a_negative():
    """Four translations of one English sentence in a batch: none is the others' hardest negative."""
    vecs = np.eye(8)[[0, 0, 0, 0, 1, 2, 3, 4]].astype(float)
    data = TokenizedPairs([np.full(3, 4)] * 8, [np.full(3, 5)] * 8, ["a"] * 4 + list("bcde"), [""] * 8,
                          ["en-fr", "en-de", "en-es", "en-it"] * 2)
    assert bs.batch_stats(data, vecs, 8, "none", 1, 2, 0)["hardest"] == pytest.approx(0.0)


@pytest.mark.parametrize("spec, message", [("lang:x", "with whole numbers"), ("topic", "unknown batch_group 'topic'")])
def test_a_bad_grouping_is_refused_before_the_corpus_is_read(spec, message, capsys):
    with pytest.raises(SystemExit) as e:
        bs.main(["--config", "recipes/default.json", spec])
    assert e.value.code == 2 and message in capsys.readouterr().err
