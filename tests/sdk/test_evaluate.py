"""Evaluation protocols (issue #6 §1): DDTP retrieval and zero-shot section classification, reference systems."""
import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse

from lwx_edge.errors import CorpusError
from lwx_edge.evaluate import (
    SECTIONS,
    ddtp_pairs,
    doc_text,
    evaluate_ddtp,
    markdown_table,
    p_at_1,
    random_embedder,
    section_docs,
    tfidf_embedder,
)

LEX = {  # section -> words per language; a word identifies its section in every language
    "games": {"en": "game play level", "fr": "jeu jouer niveau", "de": "spiel spielen stufe"},
    "sound": {"en": "sound audio music", "fr": "son audio musique", "de": "klang audio musik"},
    "mail": {"en": "mail message inbox", "fr": "courrier message boîte", "de": "post nachricht postfach"},
}


def write_split(path, n, seed):
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            sec = list(LEX)[i % 3]
            picks = rng.integers(0, 3, size=4)
            doc = {"md5": f"{seed}-{i}", "section": sec if i % 2 else f"contrib/{sec}", "short": {}, "long": {}}
            for lang in ("en", "fr", "de"):
                words = LEX[sec][lang].split()
                doc["short"][lang] = " ".join(words[p] for p in picks) + f" n{seed}x{i}"
                doc["long"][lang] = f"about {words[0]} id{seed}x{i}"
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddtp")
    for split, n, seed in (("train", 60, 0), ("dev", 30, 1), ("test", 30, 2)):
        write_split(d / f"{split}.docs.jsonl", n, seed)
    return d


def test_pairs_doc_text_and_sections(corpus):
    src, tgt = ddtp_pairs(corpus / "test.docs.jsonl", "fr")
    assert len(src) == len(tgt) == 30 and src[0].endswith("n2x0")
    doc = json.loads((corpus / "test.docs.jsonl").read_text().splitlines()[0])
    assert doc_text(doc, "fr", "doc") == doc["short"]["fr"] + "\n" + doc["long"]["fr"]
    assert doc_text(doc, "es", "doc") is None
    texts, labels = section_docs(corpus / "train.docs.jsonl", "en")
    assert len(texts) == 60 and set(labels) == set(LEX) and set(LEX) <= set(SECTIONS)  # contrib/ stripped


def test_p_at_1_dense_and_sparse_agree():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(50, 8))
    k = q + 0.1 * rng.normal(size=(50, 8))
    k[3], k[7] = k[7].copy(), k[3].copy()  # two wrong
    assert p_at_1(q, k) == pytest.approx(48 / 50)
    qs, ks = sparse.csr_matrix(np.abs(q)), sparse.csr_matrix(np.abs(k))
    assert p_at_1(qs, ks) == p_at_1(np.abs(q), np.abs(k))


def test_reference_systems_rank_as_expected(corpus):
    fit = [t for split in ("train",) for line in (corpus / f"{split}.docs.jsonl").read_text().splitlines()
           for t in json.loads(line)["short"].values()]
    oracle_vocab = {w: i for i, w in enumerate(sorted({w for lex in LEX.values() for ws in lex.values()
                                                       for w in ws.split()}))}
    translate = {w: en for lex in LEX.values() for lang, ws in lex.items()
                 for w, en in zip(ws.split(), lex["en"].split())}

    def oracle(texts):  # a perfect translator: bag of English words + the unique id token
        out = np.zeros((len(texts), len(oracle_vocab) + 500), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split():
                if w in translate:
                    out[i, oracle_vocab[translate[w]]] += 1
                elif w.startswith(("n", "id")) and "x" in w:
                    out[i, len(oracle_vocab) + hash(w.split("x")[-1]) % 500] += 3
        return out

    res = evaluate_ddtp({"oracle": oracle, "tfidf": tfidf_embedder(fit, sparse=True), "random": random_embedder(16)},
                        corpus, "test", log=lambda m: None)
    assert res["oracle"]["xsr_short"]["avg"] > 0.9 and res["oracle"]["cls"]["avg_en_x"] == 1.0
    assert res["random"]["cls"]["avg_en_x"] < 0.7 and res["random"]["xsr_short"]["avg"] < 0.3
    assert set(res["tfidf"]["cls"]["langs"]) == {"en", "fr", "de"}
    for r in res.values():  # document-resampling intervals around every balanced accuracy
        for lang in r["cls"]["langs"].values():
            assert lang["ci95"][0] <= lang["balanced_accuracy"] <= lang["ci95"][1]
        assert r["cls"]["avg_en_x_ci95"][0] <= r["cls"]["avg_en_x"] <= r["cls"]["avg_en_x_ci95"][1]
    assert res["tfidf"]["cls"]["langs"]["en"]["balanced_accuracy"] == 1.0  # in-language: words match exactly
    table = markdown_table(res, "test")
    assert "| oracle | " in table and "cls en→fr" in table
    assert f"random {res['random']['cls']['avg_en_x_ci95'][0]:.3f}–" in table


def test_random_embedder_is_deterministic():
    e = random_embedder(8, seed=1)
    a, b = e(["x", "y", "x"]), e(["x"])
    assert np.array_equal(a[0], a[2]) and np.array_equal(a[0], b[0]) and not np.array_equal(a[0], a[1])


@pytest.mark.parametrize("args, message", [
    (["--split", "train"], "--split must be dev or test"),
    (["--tasks", "bleu"], "--tasks takes xsr, cls, dialogue, everyday, conversation"),
    (["--refs", "gpt"], "--refs takes teacher, tfidf, random"),
    (["--corpus", "nowhere"], "no test.docs.jsonl"),
    (["--tasks", "dialogue"], "nowhere: no test.en-xx.tsv (build it with: lwx-edge data dialogue"),
    (["--tasks", "everyday"], "nowhere: no test.en-xx.tsv (build it with: lwx-edge data everyday"),
    (["--tasks", "conversation"], "nowhere: no test.en-xx.tsv (build it with: lwx-edge data conversation"),
])
def test_cli_eval_errors(args, message, tmp_path):
    if args[0] == "--tasks" and args[1] in ("dialogue", "everyday", "conversation"):  # a DDTP corpus dir, but no pair corpus
        (tmp_path / "test.docs.jsonl").write_text("")
        args = [*args, "--corpus", str(tmp_path), f"--{args[1]}", str(tmp_path / "nowhere")]
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "eval", "default", *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_space_diagnostics_exact_on_a_known_geometry():
    from lwx_edge.evaluate import space_diagnostics

    # 4 keys on the axes, queries all equal to key 0 + a little of their own key: one hub (key 0)
    k = np.eye(4, dtype=np.float32)
    q = np.stack([k[0] + 0.1 * k[i] for i in range(4)])
    d = space_diagnostics(q, k)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    off = [(qn[i] @ k[j]) for i in range(4) for j in range(4) if i != j]
    assert d["unrelated_cos"] == pytest.approx(np.mean(off), abs=1e-6)
    assert d["related_cos"] == pytest.approx(np.mean([qn[i] @ k[i] for i in range(4)]), abs=1e-6)
    assert d["max_k_occurrence"] == 4 and d["never_retrieved"] == pytest.approx(0.75)
    # a spread space: identity against itself, unrelated cosine 0, every key retrieved once
    assert space_diagnostics(k, k) == {"related_cos": 1.0, "unrelated_cos": 0.0, "never_retrieved": 0.0, "max_k_occurrence": 1}
    # sparse input (TF-IDF) gives the same numbers
    from scipy.sparse import csr_matrix

    assert space_diagnostics(csr_matrix(q), csr_matrix(k))["unrelated_cos"] == pytest.approx(d["unrelated_cos"], abs=1e-6)


def test_dialogue_retrieval_on_deduplicated_pairs(tmp_path, corpus):
    from lwx_edge.evaluate import tsv_pairs

    for lang in ("fr", "de", "es", "it"):
        rows = [f"line {i} of the story\tLINE {i} OF THE STORY ({lang})" for i in range(20)]
        (tmp_path / f"test.en-{lang}.tsv").write_text("\n".join(rows + rows[:3] + ["line 1 of the story\tautre"]) + "\n")
    src, tgt = tsv_pairs(tmp_path / "test.en-fr.tsv")
    assert len(src) == 20 and src[1] == "line 1 of the story" and tgt[1] == "LINE 1 OF THE STORY (fr)"
    base = random_embedder(16)

    def oracle(texts):  # knows that the capitalised line translates the lower-case one
        return base([t.lower().rsplit(" (", 1)[0] for t in texts])

    res = evaluate_ddtp({"oracle": oracle, "random": base}, corpus, "test", tasks=("dialogue",),
                        log=lambda m: None, pair_dirs={"dialogue": tmp_path})
    assert res["oracle"]["xsr_dialogue"]["avg"] == 1.0 and res["random"]["xsr_dialogue"]["avg"] < 0.3
    assert set(res["oracle"]["xsr_dialogue"]) == {"en-fr", "fr-en", "en-de", "de-en", "en-es", "es-en",
                                                  "en-it", "it-en", "avg", "ci95", "diag"}
    assert res["oracle"]["xsr_dialogue"]["ci95"] == [1.0, 1.0]  # every pair right: no spread
    vs = res["random"]["xsr_dialogue"]["vs"]  # the second system against the first, on the same pairs
    assert vs["system"] == "oracle" and vs["diff"] == pytest.approx(res["random"]["xsr_dialogue"]["avg"] - 1.0)
    assert vs["ci95"][0] < vs["diff"] < vs["ci95"][1] < 0
    assert res["oracle"]["xsr_dialogue"]["diag"]["never_retrieved"] == 0.0
    table = markdown_table(res, "test")
    assert "| system | XSR dialogue avg |" in table and "| oracle | 1.000 |" in table and "nan" not in table
    assert "minus oracle's" in table and f"| random | {100 * vs['diff']:+.1f} (" in table
    assert "per direction" not in table  # only the conversation task gets the per-direction table
    (tmp_path / "test.en-it.tsv").unlink()  # a language the corpus lacks is left out, not an error
    res = evaluate_ddtp({"oracle": oracle, "random": base}, corpus, "test", tasks=("conversation",),
                        log=lambda m: None, pair_dirs={"conversation": tmp_path})
    assert "en-it" not in res["oracle"]["xsr_conversation"]
    table = markdown_table(res, "test")
    assert "XSR conversation, P@1 per direction:" in table
    assert "| system | en→fr | fr→en | en→de | de→en | en→es | es→en |" in table
    random_row = "| random | " + " | ".join(f"{res['random']['xsr_conversation'][d]:.3f}"
                                           for d in ("en-fr", "fr-en", "en-de", "de-en", "en-es", "es-en")) + " |"
    assert "| oracle | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |" in table and random_row in table
    (tmp_path / "test.en-de.tsv").write_text("one field only\n")
    with pytest.raises(CorpusError, match=r"test.en-de.tsv:1: expected 'english<TAB>translation', got 1 fields"):
        tsv_pairs(tmp_path / "test.en-de.tsv")


def test_eval_threads_reach_the_teacher(corpus, teacher_threads, tmp_path):
    from typer.testing import CliRunner

    from lwx_edge.cli import app

    r = CliRunner().invoke(app, ["eval", "default", "--corpus", str(corpus), "--split", "dev", "--tasks", "xsr",
                                 "--refs", "teacher", "--threads", "1", "-o", str(tmp_path / "e.json")])
    assert r.exit_code == 0, r.output
    assert teacher_threads == [1]
    res = json.loads((tmp_path / "e.json").read_text())["results"]
    assert set(res) == {"lwx-edge default", "teacher USE-m v3"}


def test_eval_writes_to_a_fifo_and_puts_no_table_beside_it(corpus, tmp_path):
    """``-o /dev/stdout`` / ``/dev/null`` / a FIFO: the JSON goes through it; no ``NAME.md`` appears beside it."""
    import os
    import threading

    from typer.testing import CliRunner

    from lwx_edge.cli import app

    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    r = CliRunner().invoke(app, ["eval", "default", "--corpus", str(corpus), "--split", "dev", "--tasks", "xsr",
                                 "--refs", "", "-o", str(fifo)])
    reader.join(timeout=60)
    assert r.exit_code == 0, r.output
    assert "lwx-edge default" in json.loads(got[0])["results"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_paired_intervals_hold_their_coverage_and_see_a_real_difference():
    """avg_interval / paired_difference: exact on known scores, and 95% intervals that cover the truth about
    95% of the time when two systems of equal accuracy are compared on the same pairs."""
    from lwx_edge.evaluate import avg_interval, paired_difference

    same = {lang: np.array([1.0, 0.5, 0.0, 1.0]) for lang in ("fr", "de")}
    assert paired_difference(same, same) == {"diff": 0.0, "ci95": [0.0, 0.0]}
    better = {"fr": np.array([1.0, 1.0, 0.0, 1.0]), "de": same["de"]}  # one pair, half a point each way
    d = paired_difference(better, same)
    assert d["diff"] == pytest.approx((0.5 / 4) / 2)  # fr's mean up by 0.125, averaged over two languages
    assert d["ci95"][0] < d["diff"] < d["ci95"][1]
    with pytest.raises(ValueError, match="same languages"):
        paired_difference({"fr": same["fr"]}, same)

    rng = np.random.default_rng(0)
    langs, n, covered, covered_one = ("fr", "de", "es", "it"), 300, 0, 0
    for _ in range(400):  # both systems right on a pair with probability 0.8, partly correlated
        shared = rng.random((4, n, 2)) < 0.8
        a = {lang: np.where(rng.random((n, 2)) < 0.5, shared[i], rng.random((n, 2)) < 0.8).mean(axis=1)
             for i, lang in enumerate(langs)}
        b = {lang: np.where(rng.random((n, 2)) < 0.5, shared[i], rng.random((n, 2)) < 0.8).mean(axis=1)
             for i, lang in enumerate(langs)}
        lo, hi = paired_difference(a, b)["ci95"]
        covered += lo <= 0.0 <= hi
        lo, hi = avg_interval(a)
        covered_one += lo <= 0.8 <= hi
    assert 0.91 <= covered / 400 <= 0.99 and 0.91 <= covered_one / 400 <= 0.99
    b_worse = {lang: np.clip(x - (rng.random(n) < 0.1) * 0.5, 0, 1) for lang, x in a.items()}  # 5 points lower
    lo, hi = paired_difference(a, b_worse)["ci95"]
    assert 0 < lo < 0.05 < hi


def test_bootstrap_balanced_accuracy_centres_on_the_score_and_narrows_with_more_documents():
    from sklearn.metrics import balanced_accuracy_score

    from lwx_edge.evaluate import bootstrap_balanced_accuracy

    labels = np.repeat(["a", "b", "c"], [50, 30, 20])
    assert np.all(bootstrap_balanced_accuracy(labels, labels, reps=50) == 1.0)
    rng = np.random.default_rng(1)
    widths = []
    for n in (100, 1600):
        y = rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1])
        pred = np.where(rng.random(n) < 0.7, y, rng.choice(["a", "b", "c", "d"], size=n))
        boot = bootstrap_balanced_accuracy(y, pred)
        assert abs(np.median(boot) - balanced_accuracy_score(y, pred)) < 0.02
        widths.append(np.percentile(boot, 97.5) - np.percentile(boot, 2.5))
    assert 3 < widths[0] / widths[1] < 5.5  # about sqrt(16) = 4


def test_eval_warns_loudly_about_a_collapsed_model_and_still_scores_it(corpus, tiny_corpus, tmp_path):
    torch = pytest.importorskip("torch")
    from lwx_edge.training.checkpoint import save_bundle
    from lwx_edge.training.model import ModelConfig, SentenceEncoder

    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(vocab_size=160, d_model=32, n_heads=4, d_ff=64, max_len=48)).eval()
    with torch.no_grad():  # the last LayerNorm's gain at 0: one vector for every text
        enc.blocks[-1].ln2.weight.zero_()
        enc.blocks[-1].ln2.bias.normal_()
    bundle = save_bundle(enc, tiny_corpus["tokenizer"], tmp_path / "collapsed", {"note": "collapsed"})
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "eval", str(bundle), "--corpus", str(corpus), "--split",
                        "dev", "--tasks", "xsr", "--refs", "", "-o", str(tmp_path / "e.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "WARNING: " in r.stderr and "the model is collapsed" in r.stderr
    res = json.loads((tmp_path / "e.json").read_text())["results"][f"lwx-edge {bundle}"]
    assert res["xsr_short"]["avg"] < 0.2  # scored as it is: near chance
