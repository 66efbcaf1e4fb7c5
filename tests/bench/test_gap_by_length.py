"""tools/gap_by_length.py: P@1 by English length and each length's share of the gap to the teacher."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import gap_by_length as gl  # noqa: E402

EN = ["yes", "good morning", "where is the station", "I would like a cup of coffee please"]
FR = ["oui", "bonjour", "où est la gare", "je voudrais une tasse de café s'il vous plaît"]
PAIRS = {"fr": (EN, FR)}


def _embedder(confused: set[str]):
    """Pair i shares axis i; English texts also carry a little of a spare axis. A text in ``confused`` moves to
    that spare axis, with a little of the last pair's axis: as a query it finds the last pair's text."""
    spare = len(EN)

    def embed(texts):
        v = np.zeros((len(texts), spare + 1), dtype=np.float32)
        for row, t in enumerate(texts):
            if t in confused:
                v[row, spare], v[row, spare - 1] = 1.0, 0.1
            else:
                v[row, EN.index(t) if t in EN else FR.index(t)] = 1.0
                v[row, spare] = 0.05 if t in EN else 0.0
        return v
    return embed


def test_hits_are_binned_by_the_english_length_in_both_directions():
    perfect = gl.hits_by_length(_embedder(set()), PAIRS)
    assert perfect == {"1-2": [4, 4], "3-5": [2, 2], "6-10": [2, 2], "11+": [0, 0]}
    short_miss = gl.hits_by_length(_embedder({"oui"}), PAIRS)      # "oui" finds the coffee sentence
    assert short_miss == {"1-2": [3, 4], "3-5": [2, 2], "6-10": [2, 2], "11+": [0, 0]}


def test_the_gap_table_splits_the_whole_gap_by_length():
    rows = gl.gap_table(gl.hits_by_length(_embedder({"oui"}), PAIRS), gl.hits_by_length(_embedder(set()), PAIRS))
    assert rows["1-2"]["model"] == 0.75 and rows["1-2"]["teacher"] == 1.0
    assert rows["1-2"]["gap_points"] == pytest.approx(12.5) and rows["3-5"]["gap_points"] == 0
    assert rows["all"] == {"queries": 8, "model": 0.875, "teacher": 1.0, "gap_points": pytest.approx(12.5)}
    assert rows["11+"]["model"] is None and "| 11+ | 0 | - | - | 0.0 |" in gl.markdown(rows)


def test_a_corpus_without_the_split_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no test.en-xx.tsv files"):
        gl.main(["default", "--split", "test", "--corpus", str(tmp_path)])
