"""Warm start (``init_from``): the weights of a training bundle or of an exported int8 bundle, read back."""
import json
import shutil

import numpy as np
import pytest
import torch
from test_train import tiny_config

from lwx_edge.errors import BundleError, LwxError
from lwx_edge.training.model import SentenceEncoder
from lwx_edge.training.trainer import Trainer, train
from lwx_edge.training.transfer import encoder_weights

TEXTS = ["Hello, how are you?", "Un éditeur de texte", "Wo ist der Bahnhof?", "see you tomorrow at the dentist",
         "¿Dónde está la farmacia?", "x"]


def test_the_int8_onnx_program_of_the_default_reads_back_as_its_own_encoder():
    from lwx_edge import Encoder
    from lwx_edge.runtime.torch_backend import TorchBackend

    state, config, bundle = encoder_weights("default")
    encoder = SentenceEncoder(config)
    assert set(state) == set(encoder.state_dict())
    encoder.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    onnx = Encoder.load(backend="onnx")
    ids, mask = onnx.tokenizer.pad(onnx.tokenizer.encode(TEXTS).ids)
    ours = TorchBackend(encoder).run(ids, mask)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    theirs = onnx.embed(TEXTS)
    # the int8 program's own rounding is all that differs: its activations are quantized per call (also the 160
    # values of a factorised table's rows before their map), most visibly on a 4-token text (0.99895)
    assert (ours * theirs).sum(1).min() > 0.998
    # distinct texts stay distinct: a scrambled layer mapping would not give this parity
    assert (ours @ theirs.T)[~np.eye(len(TEXTS), dtype=bool)].max() < 0.99


def test_training_continues_from_a_bundle_with_its_tokenizer(tiny_corpus, tmp_path):
    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=3))
    start, _, _ = encoder_weights(tmp_path / "first" / "bundle")
    cfg = tiny_config(tiny_corpus, tmp_path / "second", max_steps=3, tokenizer=None,
                      init_from=str(tmp_path / "first" / "bundle"))
    trainer = Trainer(cfg)
    for name, value in trainer.model.encoder.state_dict().items():
        assert torch.equal(value, torch.from_numpy(start[name])), name
    copied = tmp_path / "second" / "tokenizer.model"
    assert copied.read_bytes() == (tmp_path / "first" / "bundle" / "tokenizer.model").read_bytes()
    assert cfg.tokenizer == str(copied)  # a resumed run reads the copy, whatever happens to the source bundle
    # the run's record keeps the start's own, so a chain of continuations is read from the last manifest
    first = json.loads((tmp_path / "first" / "bundle" / "manifest.json").read_text())["training"]
    assert first["step"] == 3 and "started_from" not in first
    assert trainer._info()["started_from"] == {"bundle": str(tmp_path / "first" / "bundle"), "training": first}


def test_another_tokenizer_moves_the_token_table_by_vocabulary_transfer(tiny_corpus, tmp_path):
    from lwx_edge.tokenizer import Tokenizer, train_tokenizer
    from lwx_edge.training.transfer import transfer_vocabulary

    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=2))
    source = tmp_path / "first" / "bundle"
    texts = [t for p in ("train_fr", "train_de") for line in tiny_corpus[p].read_text().splitlines()
             for t in line.split("\t")]
    new_tok = train_tokenizer(texts[::2], tmp_path / "other.model", vocab_size=200, progress=False)
    cfg = tiny_config(tiny_corpus, tmp_path / "second", max_steps=2, init_from=str(source), tokenizer=str(new_tok))
    trainer = Trainer(cfg)
    old, new = Tokenizer(source / "tokenizer.model"), Tokenizer(new_tok)
    start, _, _ = encoder_weights(source)
    table = trainer.model.encoder.state_dict()["tok.weight"].numpy()
    assert table.shape == (200, 32) and trainer.tokenizer.vocab_size == 200
    shared = [i for i in range(200) if old.piece_to_id(new.id_to_piece(i)) != old.sp.unk_id()]
    assert 0 < len(shared) < 200
    for i in shared:  # a piece both vocabularies know keeps its row
        assert np.array_equal(table[i], start["tok.weight"][old.piece_to_id(new.id_to_piece(i))])
    row = {p: start["tok.weight"][old.piece_to_id(p)] for p in ("\u2581m", "us", "s", "e")}
    for piece, parts in (("\u2581mus", ("\u2581m", "us")), ("se", ("s", "e"))):  # new pieces here
        assert old.piece_to_id(piece) == old.sp.unk_id() and all(old.piece_to_id(p) != 1 for p in parts)
        # a word-initial piece is read as the start of a word, a word-internal one inside a word
        assert np.allclose(table[new.piece_to_id(piece)], np.mean([row[p] for p in parts], axis=0))
    assert np.array_equal(trainer.model.encoder.state_dict()["blocks.0.q.weight"].numpy(), start["blocks.0.q.weight"])
    again, copied = transfer_vocabulary(start["tok.weight"], old, old)  # same vocabulary: identity
    assert copied == old.vocab_size and np.array_equal(again, start["tok.weight"])


def test_init_from_refuses_another_architecture_or_a_bundle_without_weights(tiny_corpus, tmp_path):
    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=2))
    source = tmp_path / "first" / "bundle"
    wider = tiny_config(tiny_corpus, tmp_path / "a", init_from=str(source), tokenizer=None)
    wider.model.d_ff = 96
    with pytest.raises(LwxError, match=r"architecture differs .*'d_ff': \(96, 64\)"):
        Trainer(wider)
    empty = tmp_path / "empty"
    shutil.copytree(source, empty)
    (empty / "model.safetensors").unlink()
    from lwx_edge.bundle import write_manifest

    write_manifest(empty)
    with pytest.raises(BundleError, match="no weights to start from"):
        encoder_weights(empty)


class _LinearTeacher:
    """A stand-in teacher: a fixed random 8-d vector per text (seeded by the text)."""
    name, dim = "fake-linear", 8

    def encode(self, texts):
        import zlib

        return np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts]
                        ).astype(np.float32)


def _two_tokenizers(tiny_corpus, tmp_path):
    from lwx_edge.tokenizer import Tokenizer, train_tokenizer

    texts = [t for p in ("train_fr", "train_de") for line in tiny_corpus[p].read_text().splitlines()
             for t in line.split("\t")]
    big = train_tokenizer(texts, tmp_path / "big.model", vocab_size=260, progress=False)
    return Tokenizer(tiny_corpus["tokenizer"]), Tokenizer(big)


def test_new_pieces_start_from_the_teacher_through_the_map_fitted_on_shared_pieces(tiny_corpus, tmp_path):
    from lwx_edge.data.teacher import token_vectors
    from lwx_edge.training.transfer import transfer_vocabulary

    old, new = _two_tokenizers(tiny_corpus, tmp_path)
    teacher = _LinearTeacher()
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(8, 32)), rng.normal(size=32)
    old_table = (token_vectors(old, teacher) @ a + b).astype(np.float32)  # a table the teacher explains exactly
    new_vectors = token_vectors(new, teacher)
    table, copied = transfer_vocabulary(old_table, old, new, new_vectors)
    shared = np.array([old.piece_to_id(new.id_to_piece(i)) != old.sp.unk_id() for i in range(new.vocab_size)])
    shared[new.sp.unk_id()] = True
    assert copied == shared.sum() and 0 < (~shared).sum() < new.vocab_size
    assert np.allclose(table[~shared], new_vectors[~shared] @ a + b, atol=1e-3)  # the map is recovered
    mean_table, _ = transfer_vocabulary(old_table, old, new)  # without vectors: the mean of old pieces
    assert np.array_equal(mean_table[shared], table[shared])
    assert not np.allclose(mean_table[~shared], table[~shared], atol=1e-2)
    with pytest.raises(ValueError, match="one row per piece of the new vocabulary"):
        transfer_vocabulary(old_table, old, new, new_vectors[:-1])


def test_lwx_edge_transfer_writes_a_bundle_on_the_new_vocabulary(tiny_corpus, tmp_path):
    from test_train import _cli

    from lwx_edge import Encoder

    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=2))
    source = tmp_path / "first" / "bundle"
    _, new = _two_tokenizers(tiny_corpus, tmp_path)
    r = _cli(["transfer", str(source), "--tokenizer", str(new.model_path), "-o", str(tmp_path / "moved"),
                "--teacher", "none"])
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["vocab_size"] == 260 and summary["rows_kept"] + summary["new_rows"] == 260
    enc = Encoder.load(tmp_path / "moved", backend="torch")
    assert enc.tokenizer.vocab_size == 260 and enc.embed(TEXTS).shape == (len(TEXTS), 32)
    start, _, _ = encoder_weights(source)
    moved, _, _ = encoder_weights(tmp_path / "moved")
    assert moved["tok.weight"].shape == (260, 32)
    assert np.array_equal(moved["blocks.1.fc2.weight"], start["blocks.1.fc2.weight"])  # only the table moves
    record = json.loads((tmp_path / "moved" / "manifest.json").read_text())["training"]
    assert record["step"] == 2 and record["vocabulary_transfer"]["new_rows_from"] == "mean of old pieces"
    from lwx_edge.modelcard import model_card

    assert "Then moved to a vocabulary of 260 pieces without training" in model_card(tmp_path / "moved")
    bad = _cli(["transfer", str(source), "--tokenizer", str(new.model_path), "-o", str(tmp_path / "x"),
                  "--teacher", "big"])
    assert bad.returncode == 2 and "unknown teacher 'big'" in bad.stderr and not (tmp_path / "x").exists()
    from lwx_edge.training.transfer import transfer_bundle

    transfer_bundle(source, new.model_path, tmp_path / "moved")  # a bundle is replaced whole
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "file.txt").write_text("mine")
    for out, message in [("notes", "is not empty and holds no bundle; refusing to replace it"),
                         ("file.txt", "is a file, not a directory; refusing to replace it"),
                         ("file.txt/sub", "lies under a file")]:
        with pytest.raises(BundleError, match=message):
            transfer_bundle(source, new.model_path, tmp_path / out)
    assert (tmp_path / "notes" / "keep.txt").read_text() == (tmp_path / "file.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_training_from_a_bundle_with_a_new_tokenizer_starts_new_pieces_from_the_teacher(tiny_corpus, tmp_path,
                                                                                       monkeypatch):
    import lwx_edge.data.teacher as teacher_mod
    from lwx_edge.data.teacher import token_vectors
    from lwx_edge.training.config import LossWeights
    from lwx_edge.training.transfer import transfer_vocabulary

    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=2))
    source = tmp_path / "first" / "bundle"
    old, new = _two_tokenizers(tiny_corpus, tmp_path)
    monkeypatch.setattr(teacher_mod, "USETeacher", lambda threads=None: _LinearTeacher())
    cfg = tiny_config(tiny_corpus, tmp_path / "second", max_steps=2, init_from=str(source),
                      tokenizer=str(new.model_path), teacher="use",
                      weights=LossWeights(kd=0, mono=0))  # a teacher for the transfer, no distillation
    table = Trainer(cfg).model.encoder.state_dict()["tok.weight"].numpy()
    start, _, _ = encoder_weights(source)
    want, _ = transfer_vocabulary(start["tok.weight"], old, new, token_vectors(new, _LinearTeacher()))
    assert np.allclose(table, want, atol=1e-6)
    mean, _ = transfer_vocabulary(start["tok.weight"], old, new)
    assert not np.allclose(table, mean, atol=1e-3)


def test_piece_weights_follow_counts_or_the_merge_order_and_skip_control_pieces(tiny_corpus):
    from lwx_edge.tokenizer import Tokenizer
    from lwx_edge.training.transfer import piece_counts, piece_weights

    tok = Tokenizer(tiny_corpus["tokenizer"])
    control = [i for i in range(tok.vocab_size) if tok.sp.is_control(i)]
    assert control and all(piece_weights(tok)[control] == 0)
    counts = piece_counts(tok, ["hello hello", "hello world"])
    ids = [i for row in tok.encode(["hello hello", "hello world"]).ids for i in row]
    assert counts.sum() == len(ids) and counts[ids[0]] == ids.count(ids[0])
    weights = piece_weights(tok, counts)
    normal = [i for i in range(tok.vocab_size) if i not in control]
    assert np.allclose(weights[normal], np.sqrt(counts[normal] + 1.0))
    by_order = piece_weights(tok)[normal]
    merges = [i for i in normal if not tok.sp.is_unknown(i) and len(tok.id_to_piece(i).lstrip("\u2581")) > 1]
    assert np.all(np.diff(piece_weights(tok)[merges]) <= 0)  # later merges: rarer pieces
    assert by_order.max() <= 1.0
    with pytest.raises(ValueError, match="one entry per piece"):
        piece_weights(tok, counts[:-1])


def test_lwx_edge_transfer_stores_the_table_at_a_rank(tiny_corpus, tmp_path):
    from test_train import _cli

    from lwx_edge import Encoder
    from lwx_edge.training.transfer import full_table

    first = tiny_config(tiny_corpus, tmp_path / "first", max_steps=2)
    first.model.d_model, first.model.d_ff = 64, 64
    train(first)
    source = tmp_path / "first" / "bundle"
    _, new = _two_tokenizers(tiny_corpus, tmp_path)
    corpus = tmp_path / "corpus"  # a corpus root with everyday text: --counts-from counts its pieces
    (corpus / "everyday").mkdir(parents=True)
    shutil.copy(tiny_corpus["train_fr"], corpus / "everyday" / "train.en-fr.tsv")
    (corpus / "mono").mkdir()
    (corpus / "mono" / "train.fr.txt").write_text("bonjour\n")
    r = _cli(["transfer", str(source), "--tokenizer", str(new.model_path), "-o", str(tmp_path / "r32"),
              "--teacher", "none", "--table-bits", "4", "--table-rank", "32", "--counts-from", str(corpus)])
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["table_rank"] == 32 and 0.5 < summary["table_energy_kept"] < 1
    assert summary["rows_weighted_by"].startswith("counts in ")
    ranked, config, _ = encoder_weights(tmp_path / "r32")
    assert config.table_rank == 32 and config.table_bits == 4
    assert ranked["tok.weight"].shape == (260, 32) and ranked["tok_proj.weight"].shape == (64, 32)
    full = _cli(["transfer", str(source), "--tokenizer", str(new.model_path), "-o", str(tmp_path / "full"),
                 "--teacher", "none"])
    assert full.returncode == 0, full.stderr
    want = encoder_weights(tmp_path / "full")[0]["tok.weight"]
    got = full_table(ranked)
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert np.median(cos) > 0.7  # the rank-32 table approximates the full one
    assert Encoder.load(tmp_path / "r32", backend="torch").embed(TEXTS).shape == (len(TEXTS), 64)
    from lwx_edge.modelcard import model_card

    assert "as rows of 32 values and one map to the model's width" in model_card(tmp_path / "r32")
    bad = _cli(["transfer", str(source), "--tokenizer", str(new.model_path), "-o", str(tmp_path / "x"),
                "--teacher", "none", "--table-bits", "4", "--table-rank", "48"])
    assert bad.returncode == 2 and "width divisible by 32" in bad.stderr and not (tmp_path / "x").exists()


def test_a_run_from_a_full_width_bundle_can_store_its_table_at_a_rank(tiny_corpus, tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="lwx_edge.train")
    train(tiny_config(tiny_corpus, tmp_path / "first", max_steps=2))
    source = tmp_path / "first" / "bundle"
    cfg = tiny_config(tiny_corpus, tmp_path / "second", max_steps=2, tokenizer=None, init_from=str(source))
    cfg.model.table_rank = 8
    trainer = Trainer(cfg)
    start, _, _ = encoder_weights(source)
    enc = trainer.model.encoder
    assert enc.tok.weight.shape[1] == 8 and enc.tok_proj is not None
    assert np.array_equal(enc.state_dict()["blocks.0.q.weight"].numpy(), start["blocks.0.q.weight"])
    assert "its token table of full width stored at rank 8" in caplog.text
    train(cfg)  # trains, checkpoints and writes a bundle with the factorised table
    back, config, _ = encoder_weights(tmp_path / "second" / "bundle")
    assert config.table_rank == 8 and back["tok_proj.weight"].shape == (32, 8)
