"""lwx_edge.tokenizer: training, special ids, normalisation, truncation, errors, padding, maskable ids."""
from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

from lwx_edge.errors import InputError, LwxError
from lwx_edge.tokenizer import MASK_ID, MASK_PIECE, PAD_ID, UNK_ID, Encoded, Tokenizer, train_tokenizer

REPO = Path(__file__).resolve().parents[2]
VOCAB = 400

_WORDS = {
    "en": "the cat dog house city final film office river small large green people work water "
          "friend school morning evening table window figure first".split(),
    "fr": "le la chat chien maison ville fichier finale efficace petit grand vert gens travail eau "
          "ami école matin soir fenêtre première très déjà".split(),
    "de": "der die das katze hund haus stadt fluss klein groß grün leute arbeit wasser freund "
          "schule morgen abend fenster über schön".split(),
    "es": "el la gato perro casa ciudad río pequeño grande verde gente trabajo agua amigo escuela "
          "mañana noche ventana año está".split(),
    "it": "il la gatto cane casa città fiume piccolo grande verde gente lavoro acqua amico scuola "
          "mattina sera finestra perché è".split(),
}
_PUNCT = [".", "?", "!", ",", ";", ":"]


def make_corpus(n: int = 600, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = _WORDS[list(_WORDS)[i % 5]]
        s = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))
        s = s.capitalize() + rng.choice(_PUNCT)
        if rng.random() < 0.3:
            s = s + ' "' + rng.choice(words) + '" (' + rng.choice(words) + ") - " + rng.choice(words) + "."
        out.append(s)
    return out


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "bpe.model"
    return train_tokenizer(make_corpus(), out, vocab_size=VOCAB, progress=False)


@pytest.fixture(scope="module")
def tok(model_path) -> Tokenizer:
    return Tokenizer(model_path)


# ------------------------------------------------------------------------------------------- training

def test_special_ids_on_trained_model(model_path, tok):
    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    assert (PAD_ID, UNK_ID, MASK_ID, MASK_PIECE) == (0, 1, 2, "<mask>")
    assert sp.pad_id() == 0 and sp.unk_id() == 1
    assert sp.piece_to_id("<mask>") == 2 and sp.is_control(2)
    assert sp.bos_id() == -1 and sp.eos_id() == -1
    assert sp.id_to_piece(0) == "<pad>" and sp.id_to_piece(1) == "<unk>"
    assert sp.get_piece_size() == VOCAB == tok.vocab_size
    assert tok.piece_to_id("<mask>") == MASK_ID
    assert tok.id_to_piece(MASK_ID) == "<mask>"


def test_typed_mask_is_not_the_mask_id(tok):
    for text in ["le chat <mask> la maison", "<mask>", "<MASK> cat"]:
        ids = tok.encode_one(text)
        assert MASK_ID not in ids, (text, ids)
        assert PAD_ID not in ids
    assert "<pad>" not in [tok.id_to_piece(i) for i in tok.encode_one("<pad> the cat")]
    assert PAD_ID not in tok.encode_one("<pad> the cat")


def test_training_is_deterministic_and_atomic(tmp_path, model_path):
    a = train_tokenizer(make_corpus(), tmp_path / "a.model", vocab_size=VOCAB, progress=False)
    b = train_tokenizer(make_corpus(), tmp_path / "b.model", vocab_size=VOCAB, progress=False)
    assert isinstance(a, Path) and a == tmp_path / "a.model"
    assert a.read_bytes() == b.read_bytes() == model_path.read_bytes()
    assert Tokenizer(a).sha256 == Tokenizer(b).sha256
    # only the two models, no temp files left behind; overwriting an existing model works
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.model", "b.model"]
    train_tokenizer(make_corpus(seed=1), a, vocab_size=VOCAB, progress=False)
    assert a.read_bytes() != b.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.model", "b.model"]


def test_training_normalises_lowercase(tok):
    pieces = [tok.id_to_piece(i) for i in range(tok.vocab_size)]
    assert not any(any(c.isupper() for c in p) for p in pieces)


def test_subsampling_is_deterministic(tmp_path):
    corpus = make_corpus(800)
    a = train_tokenizer(corpus, tmp_path / "a.model", vocab_size=200, max_sentences=150, progress=False)
    b = train_tokenizer(iter(corpus), tmp_path / "b.model", vocab_size=200, max_sentences=150, progress=False)
    c = train_tokenizer(corpus, tmp_path / "c.model", vocab_size=200, max_sentences=150, seed=7,
                        progress=False)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_vocab_too_large(tmp_path):
    corpus = make_corpus(60)
    with pytest.warns(UserWarning, match=r"too small for a vocabulary of 5000 pieces; learned \d+"):
        p = train_tokenizer(corpus, tmp_path / "soft.model", vocab_size=5000, progress=False)
    t = Tokenizer(p)
    assert 3 < t.vocab_size < 5000
    assert t.piece_to_id("<mask>") == MASK_ID
    with pytest.raises(InputError, match=r"--vocab-size \(<= \d+\)"):
        train_tokenizer(corpus, tmp_path / "strict.model", vocab_size=5000, progress=False, strict_vocab=True)
    assert not (tmp_path / "strict.model").exists()


def test_training_input_errors(tmp_path):
    with pytest.raises(InputError, match="no non-empty text"):
        train_tokenizer(["", "   ", "\n"], tmp_path / "x.model", vocab_size=100, progress=False)
    with pytest.raises(InputError, match="single str"):
        train_tokenizer("hello world", tmp_path / "x.model", vocab_size=100, progress=False)
    with pytest.raises(InputError, match="text 1 is int"):
        train_tokenizer(["a b", 5], tmp_path / "x.model", vocab_size=100, progress=False)
    assert not (tmp_path / "x.model").exists()


# ------------------------------------------------------------------------------------------- encoding

def test_encode_lowercases_and_nfkc(tok):
    assert tok.encode_one("HELLO The CAT") == tok.encode_one("hello the cat")
    assert tok.encode_one("Le Fichier FINAL") == tok.encode_one("le fichier final")
    # U+FB01 LATIN SMALL LIGATURE FI -> "fi" under NFKC
    assert tok.encode_one("le \ufb01chier \ufb01nal") == tok.encode_one("le fichier final")
    assert tok.encode_one("l\u2019école") == tok.encode_one("l'école")
    assert tok.encode_one("  the\t\tcat \n") == tok.encode_one("the cat")
    # a case-preserving tokenizer does not equate them
    cased = Tokenizer(tok.model_path, lower=False)
    assert cased.encode_one("HELLO") != cased.encode_one("hello")
    # "fi" is known to the model, so the ligature would otherwise be unknown
    assert UNK_ID not in tok.encode_one("\ufb01chier")


def test_encode_returns_encoded(tok):
    enc = tok.encode(["le chat", ("the dog is in the house")])
    assert isinstance(enc, Encoded)
    assert len(enc.ids) == 2 and all(isinstance(i, int) for row in enc.ids for i in row)
    assert enc.truncated == []
    assert enc.lengths_before == [len(r) for r in enc.ids]
    assert tok.encode(("le chat",)).ids == [tok.encode_one("le chat")]
    assert all(0 <= i < tok.vocab_size for row in enc.ids for i in row)
    assert tok.decode(tok.encode_one("Le Chat")) == "le chat"


def test_small_and_large_lists_encode_alike(tok):
    """Up to 16 texts are encoded one SentencePiece call each (faster), more in one threaded call: same ids."""
    import lwx_edge.tokenizer as tokenizer_module

    texts = make_corpus(40, seed=3)
    one_by_one = [tok.encode([t]).ids[0] for t in texts]
    assert len(texts) > tokenizer_module._ONE_BY_ONE
    assert tok.encode(texts).ids == one_by_one
    assert tok.encode(texts[:5]).ids == one_by_one[:5]
    assert tok.encode(texts[:5]).ids == [list(r) for r in tok.sp.encode([t.lower() for t in texts[:5]], out_type=int)]


@pytest.mark.parametrize("n", [1, 20])  # one SentencePiece call per text, and one call for the list
def test_lone_surrogates_are_named_on_both_paths(tok, n):
    texts = ["le chat"] * (n - 1) + ["caf\udce9"]
    with pytest.raises(InputError, match=f"text {n - 1} is not valid Unicode"):
        tok.encode(texts)


def test_truncation_keeps_head(model_path, tok):
    long_text = " ".join(["The cat and the dog in the green house"] * 6)
    full = tok.encode_one(long_text)
    assert 20 < len(full) < 200
    assert full == tok.sp.encode(long_text.lower())
    short_tok = Tokenizer(model_path, max_len=12)
    assert short_tok.max_len == 12
    enc = short_tok.encode(["le chat", long_text, "le chien", long_text + " extra words"])
    assert enc.truncated == [1, 3]
    assert enc.lengths_before[1] == len(full)
    assert enc.lengths_before[0] == len(tok.encode_one("le chat"))
    assert enc.ids[1] == full[:12]
    assert [len(r) for r in enc.ids] == [enc.lengths_before[0], 12, enc.lengths_before[2], 12]


@pytest.mark.parametrize("bad, exc_match", [
    ("just a string", r"^expected a list of strings, got str$"),
    ([], r"empty list"),
    (["ok", 3], r"text 1 is int"),
    (["ok", "fine", b"bytes"], r"text 2 is bytes"),
    (["ok", None], r"text 1 is NoneType"),
    (["ok", ""], r"text 1 is empty or whitespace-only"),
    (["  \t\n ", "ok"], r"text 0 is empty or whitespace-only"),
    (["ok", "\u00a0\u202f"], r"text 1 is empty or whitespace-only"),
    (["ok", "ok", "\u200b"], r"text 2 has no tokens"),
    ({"a": 1}, r"expected a list of strings, got dict"),
])
def test_encode_errors(tok, bad, exc_match):
    with pytest.raises(InputError, match=exc_match):
        tok.encode(bad)


@pytest.mark.parametrize("n", [3, 40])  # one SentencePiece call per text, and one call for the list
def test_empty_texts_are_kept_as_empty_rows_when_asked(tok, n):
    """``empty="keep"``: a text with nothing to embed gets an empty row, 0 tokens, and its index in ``empty``; the
    others encode exactly as without it; non-strings are still errors; a lone surrogate is still named."""
    texts = make_corpus(n, seed=5)
    mixed = texts[:1] + ["", "  \t ", "\u200b\ufeff", "\x00"] + texts[1:]
    enc = tok.encode(mixed, empty="keep")
    assert enc.empty == [1, 2, 3, 4]
    assert enc.ids[1:5] == [[], [], [], []] and enc.lengths_before[1:5] == [0, 0, 0, 0]
    assert enc.ids[:1] + enc.ids[5:] == tok.encode(texts).ids and 1 not in enc.truncated
    assert tok.encode(texts, empty="keep").empty == []
    assert tok.encode(["", " "], empty="keep").ids == [[], []]
    tok.check(["ok", ""], empty="keep")
    with pytest.raises(InputError, match="text 1 is empty or whitespace-only"):
        tok.check(["ok", ""])
    with pytest.raises(InputError, match="text 2 is int"):
        tok.encode(["", "ok", 3], empty="keep")
    with pytest.raises(InputError, match="text 2 is not valid Unicode"):
        tok.encode(["", "ok", "caf\udce9"] + [""] * n, empty="keep")
    with pytest.raises(InputError, match="empty must be 'raise' or 'keep', got 'zero'"):
        tok.encode(["ok"], empty="zero")


def test_a_prefix_is_encoded_before_texts_with_something_to_embed(tok):
    """A prompt ("query: ") is prepended to each text that has something to embed and counts towards max_len;
    an empty text stays empty (the prompt alone is not a text)."""
    enc = tok.encode(["le chat", "", "The cat."], empty="keep", prefix="Query: ")
    assert enc.ids[0] == tok.encode(["query: le chat"]).ids[0] and enc.ids[1] == [] and enc.empty == [1]
    assert enc.ids[2] == tok.encode(["Query: The cat."]).ids[0]
    assert enc.lengths_before[0] == len(tok.encode_one("query: le chat")) > len(tok.encode_one("le chat"))
    with pytest.raises(InputError, match="prefix must be a string"):
        tok.encode(["x"], prefix=3)


def test_encode_one_errors(tok):
    with pytest.raises(InputError, match="expected a string"):
        tok.encode_one(["a"])
    with pytest.raises(InputError, match="text 0 is empty"):
        tok.encode_one("   ")
    assert issubclass(InputError, LwxError)


def test_load_errors(tmp_path, model_path):
    with pytest.raises(InputError, match="not found: .*missing.model"):
        Tokenizer(tmp_path / "missing.model")
    junk = tmp_path / "junk.model"
    junk.write_bytes(os.urandom(300))
    with pytest.raises(InputError, match=r"junk\.model is not a SentencePiece model"):
        Tokenizer(junk)
    trunc = tmp_path / "trunc.model"
    trunc.write_bytes(model_path.read_bytes()[:500])
    with pytest.raises(InputError, match=r"trunc\.model is not a SentencePiece model"):
        Tokenizer(trunc)
    empty = tmp_path / "empty.model"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"empty\.model is not a SentencePiece model"):
        Tokenizer(empty)
    with pytest.raises(InputError, match="is a directory"):
        Tokenizer(tmp_path)
    with pytest.raises(InputError, match="max_len"):
        Tokenizer(model_path, max_len=0)


def test_foreign_sentencepiece_model_rejected(tmp_path):
    prefix = tmp_path / "plain"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(make_corpus(200)), model_prefix=str(prefix),
                                   vocab_size=150, model_type="bpe", minloglevel=2)  # unk 0, bos 1, eos 2
    with pytest.raises(InputError, match="not an lwx-edge tokenizer"):
        Tokenizer(f"{prefix}.model")


def test_sha256_and_pickle(model_path, tok):
    import hashlib
    assert tok.sha256 == hashlib.sha256(model_path.read_bytes()).hexdigest()
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.sha256 == tok.sha256 and clone.max_len == tok.max_len
    assert clone.encode_one("Le chat dort") == tok.encode_one("Le chat dort")


def test_id_piece_round_trip(tok):
    for i in range(tok.vocab_size):
        assert tok.piece_to_id(tok.id_to_piece(i)) == i
    assert tok.piece_to_id("definitely-not-a-piece") == UNK_ID
    with pytest.raises(InputError, match="outside the vocabulary"):
        tok.id_to_piece(tok.vocab_size)
    with pytest.raises(InputError, match="outside the vocabulary"):
        tok.id_to_piece(-1)


# ------------------------------------------------------------------------------------------- padding

def test_pad():
    ids, mask = Tokenizer.pad([[5, 6, 7], [8], [9, 10]])
    assert ids.dtype == np.int64 and mask.dtype == np.int64
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, 0, 0], [9, 10, 0]])
    np.testing.assert_array_equal(mask, [[1, 1, 1], [1, 0, 0], [1, 1, 0]])
    ids, mask = Tokenizer.pad([[5, 6], [7]], pad_to=4)
    assert ids.shape == mask.shape == (2, 4)
    np.testing.assert_array_equal(ids, [[5, 6, 0, 0], [7, 0, 0, 0]])
    np.testing.assert_array_equal(mask.sum(1), [2, 1])
    ids, mask = Tokenizer.pad((np.array([3, 4]),))
    np.testing.assert_array_equal(ids, [[3, 4]])
    with pytest.raises(InputError, match="shorter than the longest row"):
        Tokenizer.pad([[1, 2, 3]], pad_to=2)
    with pytest.raises(InputError, match="empty batch"):
        Tokenizer.pad([])


def test_pad_encoded_batch(tok):
    enc = tok.encode(["le chat", "the dog is in the green house today"])
    ids, mask = tok.pad(enc.ids)
    assert ids.shape == (2, max(map(len, enc.ids)))
    assert (ids[mask == 0] == PAD_ID).all() and (ids[mask == 1] != PAD_ID).all()
    np.testing.assert_array_equal(mask.sum(1), [len(r) for r in enc.ids])


# ------------------------------------------------------------------------------------------- maskable

def test_is_maskable(tok):
    m = tok.is_maskable()
    assert m.shape == (tok.vocab_size,) and m.dtype == bool
    assert not m[PAD_ID] and not m[UNK_ID] and not m[MASK_ID]
    assert tok.is_maskable() is m  # cached
    punct = [".", ",", "?", "!", ";", ":", '"', "(", ")", "-"]
    present = [p for p in punct if tok.piece_to_id(p) != UNK_ID]
    assert len(present) >= 6, present
    for p in present:
        assert not m[tok.piece_to_id(p)], p
    # every non-maskable id is a special or decodes to a listed punctuation mark / bare space
    for i in np.flatnonzero(~m):
        s = tok.sp.decode([int(i)])
        assert i in (PAD_ID, UNK_ID, MASK_ID) or s in set(punct) | {"'", " "} or s.isspace(), (i, s)
    # the lone "▁" piece decodes to "" and stays maskable; ordinary word pieces are maskable
    space = tok.piece_to_id("\u2581")
    assert space != UNK_ID and tok.sp.decode([space]) == "" and m[space]
    for w in ["\u2581the", "\u2581le", "\u2581casa"]:
        assert tok.piece_to_id(w) != UNK_ID and m[tok.piece_to_id(w)], w
    assert m.sum() > tok.vocab_size - 20


# ------------------------------------------------------------------------------------------- torch-free

def test_tokenizer_does_not_import_torch():
    code = "import lwx_edge.tokenizer, sys; assert 'torch' not in sys.modules, 'torch was imported'"
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr


def test_the_list_call_runs_on_the_threads_asked_for(model_path, tok, monkeypatch):
    """SentencePiece's list call starts one thread per hardware thread unless told otherwise; an Encoder loaded
    with ``threads=1`` must not tokenize on every core (issue 14: CPU time above wall time on a 16-core host)."""
    import sentencepiece as spm

    texts = make_corpus(40, seed=4)
    seen = []
    real = spm.SentencePieceProcessor.encode
    monkeypatch.setattr(spm.SentencePieceProcessor, "encode",
                        lambda self, x, **kw: seen.append((type(x), kw.get("num_threads"))) or real(self, x, **kw))
    want = tok.encode(texts).ids
    assert seen == [(list, None)]  # no threads given: one list call, SentencePiece's own pool
    for threads, calls in ((2, [(list, 2)]), (1, [(str, None)] * 40)):  # one thread: a call per text, no pool
        seen.clear()
        assert Tokenizer(model_path, threads=threads).encode(texts).ids == want  # same ids, whatever the pool
        assert seen == calls
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="threads must be a positive integer or None"):
            Tokenizer(model_path, threads=bad)


def test_an_encoder_passes_its_threads_to_the_tokenizer(tiny_bundle):
    from lwx_edge import Encoder

    assert Encoder.load(tiny_bundle, threads=1, backend="torch").tokenizer.threads == 1
    assert Encoder.load(tiny_bundle, backend="torch").tokenizer.threads is None


def test_a_pickled_tokenizer_keeps_its_threads_and_encodes_a_long_list(tmp_path):
    import pickle

    from lwx_edge.encoder import Encoder

    tok = Encoder.load(threads=1).tokenizer
    back = pickle.loads(pickle.dumps(tok))
    assert back.threads == tok.threads == 1
    texts = [f"text number {i}" for i in range(40)]  # more than the one-by-one path takes
    assert back.encode(texts).ids == tok.encode(texts).ids
