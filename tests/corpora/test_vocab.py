"""The tokenizer's training mix (``lwx-edge data tokenizer``): everyday text is half, train splits only."""
import pytest

from lwx_edge.data.vocab import build_tokenizer, tokenizer_texts
from lwx_edge.errors import CorpusError
from lwx_edge.tokenizer import Tokenizer


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "corpus"
    _write(root / "everyday" / "train.en-fr.tsv", [f"see you at the dentist {i}\tà bientôt chez le dentiste {i}"
                                                   for i in range(50)])
    _write(root / "everyday" / "dev.en-fr.tsv", ["HELDOUT dev line\tligne DEV"])
    _write(root / "dialogue" / "train.en-de.tsv", [f"run to the castle {i}\tlauf zur Burg {i}" for i in range(25)])
    _write(root / "everyday" / "mono" / "train.en.txt", [f"the cat sleeps on the sofa {i}" for i in range(100)])
    _write(root / "ddtp" / "train.en-fr.tsv", [f"library for parsing xml {i}\tbibliothèque xml {i}"
                                               for i in range(500)])
    _write(root / "ddtp" / "test.en-fr.tsv", ["HELDOUT test line\tligne TEST"])
    _write(root / "mono" / "train.fr.txt", [f"outil de configuration réseau {i}" for i in range(500)])
    return root


def test_every_everyday_text_and_as_much_software_text_from_train_splits_only(corpus):
    texts, summary = tokenizer_texts(corpus)
    assert summary == {"everyday": 250, "software_pairs": 125, "software_mono": 125, "total": 500}
    assert len(texts) == 500 and sum(t.startswith("see you at") for t in texts) == 50
    assert sum("xml" in t for t in texts) == 125 and sum("réseau" in t for t in texts) == 125
    assert not any("HELDOUT" in t or "DEV" in t or "TEST" in t for t in texts)
    assert tokenizer_texts(corpus)[0] == texts  # seeded


def test_build_tokenizer_writes_a_model_of_the_asked_size(corpus, tmp_path):
    info = build_tokenizer(tmp_path / "tok" / "t.model", vocab_size=120, corpus_root=corpus)
    assert info["vocab_size"] == 120 and Tokenizer(tmp_path / "tok" / "t.model").vocab_size == 120


def test_missing_corpora_are_named(tmp_path):
    with pytest.raises(CorpusError, match="no everyday train text .*lwx-edge data everyday"):
        tokenizer_texts(tmp_path)
    _write(tmp_path / "everyday" / "mono" / "train.en.txt", ["hello there"])
    with pytest.raises(CorpusError, match="no software train text"):
        tokenizer_texts(tmp_path)


def test_the_cli_builds_it(corpus, tmp_path):
    from typer.testing import CliRunner

    from lwx_edge.cli import app

    out = tmp_path / "cli.model"
    result = CliRunner().invoke(app, ["data", "tokenizer", "--corpus", str(corpus), "--out", str(out),
                                      "--vocab-size", "100"])
    assert result.exit_code == 0, result.output
    assert '"total": 500' in result.output and Tokenizer(out).vocab_size == 100
    result = CliRunner().invoke(app, ["data", "tokenizer", "--corpus", str(tmp_path / "none"), "--out", str(out)])
    assert isinstance(result.exception, CorpusError)  # main() prints it as one line, exit status 2
