"""Classifier heads on frozen embeddings (issue #5): scikit-learn API, learning, balancing, files, errors.

Embeddings here are synthetic Gaussian clusters, so these tests need no encoder; the encoder check and the
CLI are in test_sdk.py, the cross-lingual transfer with a trained model in test_default_model.py.
"""
import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score

from lwx_edge.errors import InputError
from lwx_edge.heads import HeadError, LogisticHead, MLPHead, load_head, make_head
from lwx_edge.heads.base import forward, softmax

KINDS = [LogisticHead, MLPHead]


def clusters(n_per_class=(60, 60, 60), d=32, spread=0.6, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(len(n_per_class), d))
    X = np.concatenate([c + spread * rng.normal(size=(n, d)) for c, n in zip(centers, n_per_class)])
    y = np.concatenate([[f"class{k}"] * n for k, n in enumerate(n_per_class)])
    perm = rng.permutation(len(y))
    return X[perm].astype(np.float32), y[perm]


@pytest.mark.parametrize("cls", KINDS)
def test_fit_predict_proba_score(cls):
    X, y = clusters()
    head = cls()
    assert head.fit(X, y) is head
    assert head.classes_.tolist() == ["class0", "class1", "class2"] and head.n_features_in_ == 32
    P = head.predict_proba(X)
    assert P.shape == (180, 3) and np.allclose(P.sum(1), 1) and (P >= 0).all()
    assert (head.predict(X) == head.classes_[P.argmax(1)]).all()
    assert head.score(X, y) > 0.95
    assert head.dev_score_ is not None and 0 <= head.dev_score_ <= 1


def test_logistic_learned_attributes_and_c_choice():
    X, y = clusters()
    head = LogisticHead().fit(X, y)
    assert head.coef_.shape == (3, 32) and head.intercept_.shape == (3,)
    assert head.C_ in head.dev_scores_ and set(head.dev_scores_) == {0.01, 0.1, 1.0, 10.0}
    fixed = LogisticHead(C=0.5).fit(X, y)
    assert fixed.C_ == 0.5 and fixed.dev_scores_.keys() == {0.5}


def test_binary_labels_integers_and_two_column_proba():
    X, y = clusters((50, 50))
    yi = (y == "class1").astype(int)
    for cls in KINDS:
        head = cls().fit(X, yi)
        assert head.classes_.tolist() == [0, 1] and head.predict_proba(X).shape == (100, 2)
        assert head.predict(X).dtype.kind == "i" and head.score(X, yi) > 0.95


def test_mlp_early_stopping_keeps_the_best_epoch():
    X, y = clusters(spread=1.5, seed=2)
    head = MLPHead(max_epochs=20, patience=2, hidden_layer_sizes=(64,)).fit(X, y)
    assert 1 <= head.best_epoch_ <= head.n_epochs_ <= 20
    assert len(head.history_) == head.n_epochs_
    scores = [h["dev_score"] for h in head.history_]
    assert head.dev_score_ == pytest.approx(max(scores), abs=1e-5)
    if head.n_epochs_ < 20:  # stopped early: `patience` epochs without improvement after the best
        assert head.n_epochs_ - head.best_epoch_ >= 2


def test_class_balancing_raises_minority_recall():
    X, y = clusters((300, 15), spread=1.6, seed=4)
    recall = {}
    for cw in ("balanced", None):
        head = LogisticHead(C=1.0, class_weight=cw).fit(X, y)
        Xt, yt = clusters((300, 300), spread=1.6, seed=4)  # same centers, fresh points
        pred = head.predict(Xt)
        recall[cw] = np.mean(pred[yt == "class1"] == "class1")
    assert recall["balanced"] > recall[None]


@pytest.mark.parametrize("cls", KINDS)
def test_save_load_round_trip_is_exact_and_numpy_only(cls, tmp_path):
    X, y = clusters()
    head = cls().fit(X, y)
    head.save(tmp_path / "h", info={"task": "demo"})
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["head.json", "head.npz"]
    back = load_head(tmp_path / "h")
    assert type(back) is cls and back.info_ == {"task": "demo"}
    assert np.array_equal(back.predict_proba(X), head.predict_proba(X))
    assert (back.predict(X) == head.predict(X)).all()
    # what a phone app does with the two files: no pickle, no scikit-learn
    meta = json.loads((tmp_path / "h" / "head.json").read_text())
    with np.load(tmp_path / "h" / "head.npz", allow_pickle=False) as z:
        h = X / np.linalg.norm(X, axis=1, keepdims=True)
        h = (h - z["mean"]) / z["scale"]
        for layer in meta["layers"]:
            h = h @ z[layer["weight"]] + z[layer["bias"]]
            h = {"tanh": np.tanh, "relu": lambda a: np.maximum(a, 0), "identity": lambda a: a}[layer["activation"]](h)
    p = np.exp(h - h.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert np.abs(p - head.predict_proba(X)).max() < 1e-5
    assert meta["classes"] == ["class0", "class1", "class2"] and meta["kind"] == cls.kind


def test_corrupt_or_missing_head_files(tmp_path):
    X, y = clusters()
    MLPHead(hidden_layer_sizes=(16,)).fit(X, y).save(tmp_path / "h")
    with pytest.raises(HeadError, match="no such head directory"):
        load_head(tmp_path / "nothing")
    npz = tmp_path / "h" / "head.npz"
    npz.write_bytes(npz.read_bytes()[:-10])
    with pytest.raises(HeadError, match="head.npz: corrupt"):
        load_head(tmp_path / "h")
    (tmp_path / "h" / "head.json").write_text("{not json")
    with pytest.raises(HeadError, match="corrupt"):
        load_head(tmp_path / "h")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    with pytest.raises(HeadError, match="not empty and holds no head"):
        MLPHead().fit(X, y).save(tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "x"


def test_a_save_killed_between_the_two_renames_still_loads(tmp_path):
    X, y = clusters()
    head = MLPHead(hidden_layer_sizes=(4,)).fit(X, y)
    head.save(tmp_path / "h")
    (tmp_path / "h").rename(tmp_path / ".h.old-1-2")
    assert np.array_equal(load_head(tmp_path / "h").predict_proba(X), head.predict_proba(X))


@pytest.mark.parametrize("file", ["../x.npz", "/etc/passwd"])
def test_a_head_cannot_read_weights_outside_its_directory(tmp_path, file):
    X, y = clusters()
    MLPHead(hidden_layer_sizes=(4,)).fit(X, y).save(tmp_path / "h")
    (tmp_path / "x.npz").write_bytes((tmp_path / "h" / "head.npz").read_bytes())
    meta = json.loads((tmp_path / "h" / "head.json").read_text())
    meta["weights"]["file"] = file
    (tmp_path / "h" / "head.json").write_text(json.dumps(meta))
    with pytest.raises(HeadError, match="weights file .* points outside the directory"):
        load_head(tmp_path / "h")


@pytest.mark.parametrize("X, y, message", [
    (np.zeros((4, 8)), ["a", "b", "a"], "4 examples but y has 3 labels"),
    (np.zeros((4, 8)), ["a", "a", "a", "a"], "at least two classes"),
    (np.full((2, 8), np.nan), ["a", "b"], "NaN"),
    (np.zeros((2, 2, 2)), ["a", "b"], "2-d"),
    ([], [], "empty"),
    (np.zeros((2, 8)), ["a", None], "missing labels"),
    (["text one", "text two"], ["a", "b"], "no encoder"),
])
def test_bad_fit_inputs(X, y, message):
    with pytest.raises(InputError, match=message):
        MLPHead().fit(X, y)


def test_predict_errors():
    X, y = clusters()
    with pytest.raises(NotFittedError):
        LogisticHead().predict(X)
    head = LogisticHead().fit(X, y)
    with pytest.raises(InputError, match="32"):
        head.predict(np.zeros((2, 16)))
    with pytest.raises(InputError, match="unknown head kind"):
        make_head("svm")


def test_scikit_learn_compatibility():
    X, y = clusters()
    head = MLPHead(hidden_layer_sizes=(32,), max_epochs=5)
    assert clone(head).get_params() == head.get_params()
    scores = cross_val_score(LogisticHead(C=1.0), X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.9


def test_evaluate_reports_confusion_and_unseen_labels():
    from lwx_edge.heads import format_confusion

    X, y = clusters()
    head = LogisticHead().fit(X, y)
    y2 = y.copy()
    y2[:5] = "class9"
    rep = head.evaluate(X, y2)
    assert rep["unseen_labels"] == ["class9"] and rep["labels"][-1] == "class9"
    assert np.asarray(rep["confusion"]).sum() == 180 and rep["accuracy"] <= 175 / 180
    table = format_confusion(rep)
    assert table.splitlines()[0].startswith("true \\ pred") and "recall" in table
    assert forward(X, head.mean_, head.scale_, head.layers_).shape == (180, 3)
    assert np.allclose(softmax(np.zeros((2, 3))), 1 / 3)


def test_mostly_single_example_labels_are_warned_about_before_fitting(tiny_bundle, tmp_path, monkeypatch, capsys):
    """Thousands of one-example labels fit for minutes with no held-out slice to stop early: say so up front."""
    from lwx_edge.cli import main
    from lwx_edge.heads.base import FewExamplesWarning, few_examples

    assert few_examples(np.repeat(np.arange(600), 1)).count("can take minutes") == 1
    assert few_examples(np.array([0, 0, 1, 1, 2])) is None  # one label of three with a single example
    X = np.random.default_rng(0).normal(size=(12, 8)).astype(np.float32)
    y = [f"label{i}" for i in range(10)] + ["label0", "label1"]
    with pytest.warns(FewExamplesWarning, match="8 of 10 labels have a single example.*Encoder.search"):
        LogisticHead(C=1.0).fit(X, y)
    data = tmp_path / "faq.csv"
    data.write_text("text,label\n" + "".join(f"question {w},answer {i}\n" for i, w in
                                             enumerate(["cat", "dog", "car", "sun", "tree", "book"])))
    monkeypatch.setattr("sys.argv", ["lwx-edge", "fit", str(tiny_bundle), str(data), "--kind", "logistic",
                                     "-o", str(tmp_path / "head"), "--dev-fraction", "0"])
    with pytest.raises(SystemExit) as e:
        main()
    err = capsys.readouterr().err
    assert e.value.code == 0, err
    assert err.count("6 of 6 labels have a single example") == 1 and err.index("warning:") < err.index("fitting")


def test_the_default_head_is_the_one_that_wins_on_small_data():
    """issue 18: `fit` (SDK make_head and `lwx-edge fit`) defaults to the head that won the measured few-shot
    comparison, benchmarks/compare_heads.json (tools/compare_heads.py), which the README quotes."""
    import inspect
    from pathlib import Path

    from lwx_edge.cli.fit import fit
    from lwx_edge.heads import DEFAULT_HEAD_KIND, HEAD_KINDS

    repo = Path(__file__).resolve().parents[1]
    bench = json.loads((repo / "benchmarks" / "compare_heads.json").read_text(encoding="utf-8"))
    assert DEFAULT_HEAD_KIND == bench["verdict"]["winner"] == "logistic" and HEAD_KINDS[0] == DEFAULT_HEAD_KIND
    assert isinstance(make_head(), LogisticHead) and isinstance(make_head("mlp"), MLPHead)
    assert inspect.signature(fit).parameters["kind"].default.default == DEFAULT_HEAD_KIND  # the CLI's --kind
    for ds in bench["results"].values():  # the verdict is what the table says: logistic ahead on the mean
        for res in ds["k"].values():
            assert res["logistic"]["en"]["mean"] >= res["mlp"]["en"]["mean"]
            assert res["logistic"]["x_avg"]["mean"] >= res["mlp"]["x_avg"]["mean"]
    readme = " ".join((repo / "README.md").read_text(encoding="utf-8").split())
    assert f"`{bench['command']}`" in readme and "benchmarks/compare_heads.md" in readme
