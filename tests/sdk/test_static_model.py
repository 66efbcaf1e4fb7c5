"""The static-embedding reference (lwx_edge.static_model, `lwx-edge eval --refs static`): distilled from the
shipped default the Model2Vec way, scored beside it."""
import numpy as np
import pytest

from lwx_edge import Encoder
from lwx_edge.static_model import StaticModel
from lwx_edge.tokenizer import MASK_ID, PAD_ID, UNK_ID


@pytest.fixture(scope="module")
def static():
    return StaticModel.distil(Encoder.load(), dims=64)


def test_the_table_has_a_row_per_piece_and_none_for_the_specials(static):
    assert static.table.shape == (Encoder.load().tokenizer.vocab_size, 64) and static.table.dtype == np.float32
    assert not static.table[[PAD_ID, UNK_ID, MASK_ID]].any()
    # Zipf weights: log(1 + rank), so the rows of later (rarer) pieces are longer on average
    norms = np.linalg.norm(static.table, axis=1)
    assert norms[1000:2000].mean() < norms[100_000:101_000].mean()


def test_embed_averages_the_pieces_and_keeps_translations_close(static):
    v = static.embed(["Where is the station?", "Où est la gare ?", "The file could not be saved.", ""])
    assert v.shape == (4, 64) and np.allclose(np.linalg.norm(v[:3], axis=1), 1, atol=1e-6)
    assert not v[3].any()  # nothing to average: a zero vector, as the encoder gives an empty text
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1
    ids = static.tokenizer.encode(["Where is the station?"]).ids[0]
    mean = static.table[ids].mean(axis=0)
    assert np.allclose(v[0], mean / np.linalg.norm(mean), atol=1e-6)


def test_eval_takes_static_as_a_reference():
    from lwx_edge.cli.eval import _checked_options
    from lwx_edge.errors import InputError

    assert _checked_options("dev", "xsr", "static,tfidf")[1] == ["static", "tfidf"]
    with pytest.raises(InputError, match="--refs takes teacher, tfidf, random, static"):
        _checked_options("dev", "xsr", "model2vec")
