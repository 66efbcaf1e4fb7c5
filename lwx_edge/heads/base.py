"""The shared part of the classifier heads: inputs (texts or embeddings), labels, the numpy forward pass,
class balancing, the stratified held-out slice, evaluation, and the encoder check.

Every head is a stack of dense layers on the L2-normalised, standardised embedding:

    x = e / ||e||;  z = (x - mean) / scale;  h = act_i(h @ W_i + b_i) ...;  proba = softmax(h @ W_L + b_L)

so prediction needs numpy alone (and an app can re-implement it from ``head.json`` + ``head.npz``).
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ..errors import InputError
from .io import ACTIVATIONS, KINDS, HeadError, check_encoder, encoder_identity, save_head  # noqa: F401  (re-exported)

# --------------------------------------------------------------------------------------------- numpy math

def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, in place on a copy of the shifted logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def activate(h: np.ndarray, act: str) -> np.ndarray:
    """Apply a hidden activation (tanh, relu, identity, ...) in place."""
    if act == "tanh":
        return np.tanh(h, out=h)
    if act == "relu":
        return np.maximum(h, 0, out=h)
    if act == "identity":
        return h
    raise HeadError(f"unknown activation {act!r}")


def forward(x: np.ndarray, mean: np.ndarray | None, scale: np.ndarray | None,
            layers: Sequence[tuple[np.ndarray, np.ndarray, str]]) -> np.ndarray:
    """Logits of L2-normalised inputs ``x`` [n, d] through standardisation and dense layers."""
    h = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    if mean is not None:
        h = (h - mean) / scale
    for W, b, act in layers:
        h = activate(h @ W + b, act)
    return h


# --------------------------------------------------------------------------------------------- helpers

def class_weights(y_idx: np.ndarray, n_classes: int, mode) -> np.ndarray:
    """Per-class loss weights: "balanced" = n / (n_classes * count_c) (scikit-learn's rule), None = ones,
    or a dict {class index: weight}."""
    if mode is None:
        return np.ones(n_classes, dtype=np.float64)
    if mode == "balanced":
        counts = np.bincount(y_idx, minlength=n_classes).astype(np.float64)
        return np.where(counts > 0, len(y_idx) / (n_classes * np.maximum(counts, 1)), 0.0)
    raise InputError(f"class_weight must be 'balanced' or None, got {mode!r}")


def stratified_split(y_idx: np.ndarray, fraction: float, rng: np.random.Generator,
                     min_dev: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, dev indices): ``fraction`` of every class with >= 2 examples goes to dev (at least
    one each). Returns an empty dev set when there is too little data for one."""
    if not 0 < fraction < 1:
        return np.arange(len(y_idx)), np.arange(0)
    train, dev = [], []
    for c in np.unique(y_idx):
        idx = np.flatnonzero(y_idx == c)
        rng.shuffle(idx)
        n_dev = int(round(fraction * len(idx)))
        if len(idx) >= 2:
            n_dev = min(max(n_dev, 1), len(idx) - 1)
        else:
            n_dev = 0
        dev.append(idx[:n_dev])
        train.append(idx[n_dev:])
    dev_idx = np.sort(np.concatenate(dev))
    if len(dev_idx) < min_dev:
        return np.arange(len(y_idx)), np.arange(0)
    return np.sort(np.concatenate(train)), dev_idx


class FewExamplesWarning(UserWarning):
    """Most labels have a single example: a head learns little from them and cannot stop its training early."""


def few_examples(y_idx: np.ndarray) -> str | None:
    """What to tell a user whose labels (class indices ``y_idx``) mostly have one example, else None."""
    counts = np.bincount(y_idx)
    single = int((counts == 1).sum())
    if single * 2 <= len(counts):
        return None
    return (f"{single} of {len(counts)} labels have a single example: a classifier learns little from one "
            "example per label, and with no second example no held-out slice can stop its training early"
            + (" (fitting this many labels can take minutes)" if len(counts) >= 500 else "")
            + "; to find the closest known text instead, use Encoder.search or lwx_edge.Index")


def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean recall over the classes present in ``y_true`` (NaN when empty)."""
    recalls = [float(np.mean(y_pred[y_true == c] == c)) for c in np.unique(y_true)]
    return float(np.mean(recalls)) if recalls else float("nan")


def _label_kind(values: np.ndarray) -> str:
    kinds = {("str" if isinstance(v, (str, np.str_)) else
              "bool" if isinstance(v, (bool, np.bool_)) else
              "int" if isinstance(v, (int, np.integer)) else "other") for v in values.tolist()}
    if "bool" in kinds and kinds != {"bool"}:
        kinds.discard("bool")
        kinds.add("int")
    if len(kinds) != 1 or "other" in kinds:
        raise InputError("labels must all be strings or all be integers (got "
                         f"{', '.join(sorted(kinds))})")
    return kinds.pop()


def confusion(y_true: Sequence, y_pred: Sequence, labels: Sequence) -> np.ndarray:
    """Confusion matrix [true, predicted] in the order of ``labels``."""
    pos = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for t, p in zip(y_true, y_pred):
        m[pos[t], pos[p]] += 1
    return m


def format_confusion(report: dict, max_label: int = 14) -> str:
    """A plain-text confusion table (rows = true label, columns = predicted) of an ``evaluate`` report."""
    labels = [str(x) for x in report["labels"]]
    short = [lab if len(lab) <= max_label else lab[: max_label - 1] + "~" for lab in labels]
    m = np.asarray(report["confusion"])
    w0 = max([len("true \\ pred")] + [len(s) for s in short])
    widths = [max(len(s), len(str(int(m[:, j].max()) if m.size else 0)), 3) for j, s in enumerate(short)]
    lines = ["true \\ pred".ljust(w0) + "  " + "  ".join(s.rjust(w) for s, w in zip(short, widths))
             + "  recall"]
    for i, s in enumerate(short):
        row = m[i]
        rec = f"{row[i] / row.sum():.3f}" if row.sum() else "  -  "
        lines.append(s.ljust(w0) + "  " + "  ".join(str(int(v)).rjust(w) for v, w in zip(row, widths))
                     + "  " + rec)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- base class

class BaseHead(ClassifierMixin, BaseEstimator):
    """scikit-learn classifier on frozen sentence embeddings. ``X`` is either a list of texts (embedded with
    ``encoder``) or an array of embeddings [n, d]. Subclasses implement ``_fit_layers``."""

    kind = "base"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KINDS[cls.kind] = cls  # load_head finds the class of a saved head by its kind

    # ---------------------------------------------------------------- inputs
    def _encoder_for_texts(self):
        enc = getattr(self, "encoder", None)
        if enc is None:
            raise InputError("this head has no encoder, so it cannot embed texts: pass embeddings "
                             "(encoder.embed(texts)) or create the head with encoder=Encoder.load(...)")
        return enc

    def _features(self, X, *, fitted: bool) -> np.ndarray:
        if isinstance(X, (str, bytes)):
            raise InputError("expected a list of texts or an array of embeddings, got a single string "
                             "(wrap it in a list)")
        is_array = isinstance(X, np.ndarray) and X.dtype.kind in "fiub"
        if not is_array:
            items = list(X) if not isinstance(X, np.ndarray) else X.tolist()
            if len(items) == 0:
                raise InputError("expected a non-empty list of texts or embeddings, got an empty one")
            if any(isinstance(t, str) for t in items):
                enc = self._encoder_for_texts()
                if fitted:
                    self._check_encoder(enc)
                return enc.embed(items, batch_size=int(getattr(self, "batch_size_embed", 32)))
            try:
                X = np.asarray(items, dtype=np.float32)
            except (TypeError, ValueError):
                raise InputError("expected texts (str) or numeric embeddings") from None
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise InputError(f"embeddings must be a 2-d array [n, d], got shape {X.shape}")
        if X.shape[0] == 0:
            raise InputError("expected at least one example, got an empty array")
        if not np.isfinite(X).all():
            raise InputError("embeddings contain NaN or infinite values")
        if fitted and X.shape[1] != self.n_features_in_:
            raise InputError(f"embeddings have {X.shape[1]} dimensions but the head was fitted on "
                             f"{self.n_features_in_}")
        return X

    def _labels(self, y, n: int) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(y, (str, bytes)):
            raise InputError("y must be a list of labels, got a single string")
        y = np.asarray(list(y) if not isinstance(y, np.ndarray) else y, dtype=object)
        if y.ndim != 1:
            raise InputError(f"y must be 1-d, got shape {y.shape}")
        if len(y) != n:
            raise InputError(f"X has {n} examples but y has {len(y)} labels")
        if any(v is None or (isinstance(v, float) and v != v) for v in y.tolist()):
            raise InputError("y contains missing labels (None/NaN)")
        kind = _label_kind(y)
        y = y.astype(str) if kind == "str" else y.astype(np.int64)
        classes, y_idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise InputError(f"need at least two classes to fit a classifier, got {len(classes)} "
                             f"({classes.tolist()})")
        return classes, y_idx.astype(np.int64)

    # ---------------------------------------------------------------- encoder identity
    def _record_encoder(self) -> None:
        self.encoder_info_ = encoder_identity(getattr(self, "encoder", None))

    def _check_encoder(self, enc) -> None:
        check_encoder(getattr(self, "encoder_info_", None), enc, where="this head")

    # ---------------------------------------------------------------- sklearn API
    def fit(self, X, y):
        """Fit on texts (needs ``encoder``) or embeddings [n, d] and labels; returns self."""
        Xf = self._features(X, fitted=False)
        classes, y_idx = self._labels(y, Xf.shape[0])
        few = few_examples(y_idx)
        if few:
            warnings.warn(few, FewExamplesWarning, stacklevel=2)
        self._record_encoder()
        if self.encoder_info_ is not None and self.encoder_info_.get("embedding_dim") not in (None, Xf.shape[1]):
            raise InputError(f"embeddings have {Xf.shape[1]} dimensions but the encoder outputs "
                             f"{self.encoder_info_['embedding_dim']}")
        self.classes_ = classes
        self.n_features_in_ = int(Xf.shape[1])
        x = Xf / np.maximum(np.linalg.norm(Xf, axis=1, keepdims=True), 1e-12)
        if self.standardize:
            self.mean_ = x.mean(axis=0).astype(np.float32)
            self.scale_ = np.maximum(x.std(axis=0), 1e-6).astype(np.float32)
            z = (x - self.mean_) / self.scale_
        else:
            self.mean_, self.scale_ = None, None
            z = x
        # Small matrices (batch 16): one BLAS thread is fastest, and multi-threaded BLAS on busy cores is
        # pathological (10x slower measured on 2 shared cores).
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            self.layers_ = self._fit_layers(z.astype(np.float32), y_idx, len(classes))
        return self

    def _fit_layers(self, z: np.ndarray, y_idx: np.ndarray, n_classes: int):
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "layers_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) or load_head()")

    def decision_function(self, X) -> np.ndarray:
        """Logits [n, n_classes]."""
        self._check_fitted()
        Xf = self._features(X, fitted=True)
        return forward(Xf, self.mean_, self.scale_, self.layers_)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities [n, n_classes] (rows sum to 1), columns in ``classes_`` order."""
        return softmax(self.decision_function(X).astype(np.float64))

    def predict(self, X) -> np.ndarray:
        """Labels [n] (from ``classes_``)."""
        scores = self.decision_function(X)
        return self.classes_[np.argmax(scores, axis=1)]

    # score(X, y) (accuracy) comes from ClassifierMixin

    def evaluate(self, X, y) -> dict:
        """Accuracy, balanced accuracy, macro-F1 and the confusion matrix on labelled data. Labels the head
        has never seen count as errors (they appear as extra rows)."""
        self._check_fitted()
        if isinstance(y, (str, bytes)):
            raise InputError("y must be a list of labels, got a single string")
        y = np.asarray(list(y) if not isinstance(y, np.ndarray) else y)
        kind = "str" if self.classes_.dtype.kind in "UO" else "int"
        try:
            y = y.astype(str) if kind == "str" else y.astype(np.int64)
        except (TypeError, ValueError):
            raise InputError("labels do not have the head's label type") from None
        pred = self.predict(X)
        if len(pred) != len(y):
            raise InputError(f"X has {len(pred)} examples but y has {len(y)} labels")
        known = set(self.classes_.tolist())
        unseen = sorted({v for v in y.tolist() if v not in known}, key=str)
        labels = self.classes_.tolist() + unseen
        m = confusion(y.tolist(), pred.tolist(), labels)
        tp = np.diag(m).astype(np.float64)
        prec = np.divide(tp, m.sum(0), out=np.zeros_like(tp), where=m.sum(0) > 0)
        rec = np.divide(tp, m.sum(1), out=np.zeros_like(tp), where=m.sum(1) > 0)
        f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros_like(tp), where=(prec + rec) > 0)
        present = m.sum(1) > 0
        return {"n": int(len(y)), "accuracy": float(np.mean(pred == y)),
                "balanced_accuracy": float(rec[present].mean()) if present.any() else float("nan"),
                "macro_f1": float(f1[present].mean()) if present.any() else float("nan"),
                "labels": labels, "confusion": m.tolist(), "unseen_labels": unseen,
                "majority_baseline": float(np.max(np.unique(y, return_counts=True)[1]) / len(y))}

    # ---------------------------------------------------------------- persistence
    def save(self, path, info: dict | None = None):
        """Write ``head.json`` + ``head.npz`` into directory ``path`` (no pickle). Returns the path."""
        return save_head(self, path, info=info)

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "layers_")
