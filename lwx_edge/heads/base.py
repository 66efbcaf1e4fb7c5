"""The shared part of the classifier heads: inputs (texts or embeddings), labels, the numpy forward pass,
class balancing, the stratified held-out slice, evaluation, and the encoder check.

Every head is a stack of dense layers on the L2-normalised, standardised embedding:

    x = e / ||e||;  z = (x - mean) / scale;  h = act_i(h @ W_i + b_i) ...;  proba = softmax(h @ W_L + b_L)

so prediction needs numpy alone (and an app can re-implement it from ``head.json`` + ``head.npz``). Fitting uses
scikit-learn's parts: input checks (``validate_data``), class weights (``compute_class_weight``), the metrics
(``balanced_accuracy_score``, ``confusion_matrix``, ``precision_recall_fscore_support``); the logistic head fits
with ``LogisticRegression``. The held-out slice stays ours (``stratified_split`` says why).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin

from ..errors import InputError
from .persistence import (
    KINDS,
    HeadError,
    NotFittedHeadError,
    check_encoder,
    encoder_identity,
)

try:
    from sklearn.utils.validation import validate_data
except ImportError:  # scikit-learn < 1.6: the estimator's own method
    def validate_data(_estimator: Any, /, X: Any, **kwargs: Any) -> Any:
        """``estimator._validate_data``, what scikit-learn 1.6 made the function ``validate_data``."""
        return _estimator._validate_data(X, **kwargs)

if TYPE_CHECKING:
    import sys

    from ..encoder import Encoder

    if sys.version_info >= (3, 11):
        from typing import Self
    else:
        from typing_extensions import Self

#: What ``fit``, ``predict``, ``predict_proba`` take: texts (embedded with the head's encoder) or embeddings [n, d].
HeadInput = Union[Sequence[str], ArrayLike]

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

def class_weights(class_weight: str | Mapping[Any, float] | None, classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-class loss weights in the order of ``classes``: scikit-learn's ``compute_class_weight`` over labels
    ``y`` ("balanced" = n / (n_classes * count_c); a dict {label: weight}, other classes 1; None = ones)."""
    from sklearn.utils.class_weight import compute_class_weight

    if not (class_weight is None or class_weight == "balanced" or isinstance(class_weight, Mapping)):
        raise InputError(f"class_weight must be 'balanced', a dict {{label: weight}} or None, got {class_weight!r}")
    try:
        return compute_class_weight(dict(class_weight) if isinstance(class_weight, Mapping) else class_weight,
                                    classes=classes, y=y).astype(np.float64)
    except ValueError as e:
        raise InputError(f"class_weight {class_weight!r} does not fit the labels ({e})") from None


def stratified_split(y_idx: np.ndarray, fraction: float, rng: np.random.Generator,
                     min_dev: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, dev indices): ``fraction`` of every class with >= 2 examples goes to dev (at least
    one each, never all). Returns an empty dev set when there is too little data for one.

    Kept instead of scikit-learn's ``StratifiedShuffleSplit``/``train_test_split(stratify=y)``, on purpose:
    those allocate in proportion, so a class with fewer than 1 / ``fraction`` examples can get no dev example
    (the balanced accuracy on the slice, which picks the logistic head's C and the MLP's epoch, then ignores
    it), they refuse a class with a single example, and they draw with another random stream, which would
    move every dev score, chosen C and kept epoch of the same data and seed."""
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


def balanced_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """scikit-learn's ``balanced_accuracy_score``: the mean recall over the classes present in ``y_true``
    (a prediction of a class absent from ``y_true`` counts as an error, without scikit-learn's warning)."""
    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        return float(balanced_accuracy_score(y_true, y_pred))


def _label_kind(values: np.ndarray) -> str:
    kinds = {("str" if isinstance(v, (str, np.str_)) else
              "bool" if isinstance(v, (bool, np.bool_)) else
              "int" if isinstance(v, (int, np.integer)) else
              "float" if isinstance(v, (float, np.floating)) else "other") for v in values.tolist()}
    if "bool" in kinds and kinds != {"bool"}:
        kinds.discard("bool")
        kinds.add("int")
    if "float" in kinds and kinds <= {"int", "float"}:
        return "float"
    if len(kinds) != 1 or "other" in kinds:
        raise InputError("labels must all be strings or all be integers (got "
                         f"{', '.join(sorted(kinds))})")
    return kinds.pop()


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
    ``encoder``) or an array of embeddings [n, d]. Subclasses implement ``_fit_layers``.

    On embeddings (``encoder=None``) a head passes scikit-learn's ``check_estimator`` but for the checks in
    its ``EXPECTED_FAILED_CHECKS`` ({check: why it fails by design}); ``tests/heads/test_heads.py`` runs it.
    """

    kind = "base"
    #: check_estimator checks this head fails by design: {check name: reason}
    EXPECTED_FAILED_CHECKS: dict[str, str] = {}

    encoder: Encoder | None
    # learned by fit (or load_head)
    classes_: np.ndarray
    n_features_in_: int
    mean_: NDArray[np.float32] | None
    scale_: NDArray[np.float32] | None
    layers_: list[tuple[np.ndarray, np.ndarray, str]]
    encoder_info_: dict[str, Any] | None
    dev_score_: float | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        KINDS[cls.kind] = cls  # load_head finds the class of a saved head by its kind

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if getattr(self, "encoder", None) is not None:  # a list of texts is an input too
            tags.input_tags.string = True
            tags.input_tags.one_d_array = True
        return tags

    # ---------------------------------------------------------------- inputs
    def _encoder_for_texts(self) -> Encoder:
        enc = getattr(self, "encoder", None)
        if enc is None:
            raise InputError("this head has no encoder, so it cannot embed texts: pass embeddings "
                             "(encoder.embed(texts)) or create the head with encoder=Encoder.load(...)")
        return enc

    def _features(self, X: Any, *, reset: bool) -> NDArray[np.floating]:
        """Embeddings [n, d] of texts, or checked embeddings: float32 stays float32 (what the encoder returns,
        computed as on a device), anything else becomes float64. ``reset`` (fit) records ``n_features_in_``,
        otherwise the dimension must match it."""
        if isinstance(X, (str, bytes)):
            raise InputError("expected a list of texts or an array of embeddings, got a single string "
                             "(wrap it in a list)")
        if not hasattr(X, "__array__") and not hasattr(X, "shape") and isinstance(X, Iterable):
            X = list(X)  # a generator, a dict's values...: texts or rows of numbers
        elif getattr(X, "ndim", None) == 1 and getattr(getattr(X, "dtype", None), "kind", "") in ("O", "U", "S"):
            X = list(X)  # a 1-d array or pandas Series of texts
        if isinstance(X, (list, tuple)):
            if len(X) == 0:
                raise InputError("expected a non-empty list of texts or embeddings, got an empty one")
            if any(isinstance(t, str) for t in X):
                enc = self._encoder_for_texts()
                if not reset:
                    self._check_encoder(enc)
                X = enc.embed(list(X), batch_size=int(getattr(self, "batch_size_embed", 32)))
        shape = getattr(X, "shape", None)
        if shape is None and isinstance(X, (list, tuple)):
            try:
                shape = np.shape(X)
            except ValueError:  # ragged: check_array says so
                shape = None
        if shape is not None and not hasattr(X, "tocsr"):  # (a sparse matrix: refused by check_array)
            if len(shape) == 1:
                raise InputError(f"embeddings must be a 2-d array [n, d], got a 1-d one of shape {tuple(shape)}. "
                                 "Reshape your data: np.reshape(x, (1, -1)) for a single example")
            if len(shape) != 2:
                raise InputError(f"embeddings must be a 2-d array [n, d], got shape {tuple(shape)}")
            if shape[0] == 0:
                raise InputError("expected at least one example, got an empty array")
        try:  # scikit-learn's checks: numeric, finite, not sparse, n_features_in_ (and feature names)
            return validate_data(self, X, reset=reset, dtype=[np.float64, np.float32])
        except ValueError as e:
            raise InputError(str(e)) from None

    def _labels(self, y: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(classes_, class index of each label) of labels ``y`` for ``n`` examples."""
        from sklearn.exceptions import DataConversionWarning
        from sklearn.utils.multiclass import check_classification_targets

        if y is None:
            raise InputError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        if isinstance(y, (str, bytes)):
            raise InputError("y must be a list of labels, got a single string")
        y = np.asarray(y, dtype=object)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is read as 1-d",
                          DataConversionWarning, stacklevel=3)
            y = y[:, 0]
        if y.ndim != 1:
            raise InputError(f"y must be 1-d, got shape {y.shape}")
        if len(y) != n:
            raise InputError(f"X has {n} examples but y has {len(y)} labels")
        if any(v is None or (isinstance(v, float) and v != v) for v in y.tolist()):
            raise InputError("y contains missing labels (None/NaN)")
        kind = _label_kind(y)
        if kind == "float":  # integral numbers only: "Unknown label type: continuous" for others
            y = y.astype(np.float64)
            try:
                check_classification_targets(y)
            except ValueError as e:
                raise InputError(str(e)) from None
        y = y.astype(str) if kind == "str" else y.astype(np.int64)
        classes, y_idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise InputError(f"need at least two classes to fit a classifier, got {len(classes)} class "
                             f"({classes.tolist()})")
        return classes, y_idx.astype(np.int64)

    # ---------------------------------------------------------------- encoder identity
    def _record_encoder(self) -> None:
        self.encoder_info_ = encoder_identity(getattr(self, "encoder", None))

    def _check_encoder(self, enc: Encoder | None) -> None:
        check_encoder(getattr(self, "encoder_info_", None), enc, where="this head")

    # ---------------------------------------------------------------- sklearn API
    def fit(self, X: Sequence[str] | ArrayLike, y: ArrayLike) -> Self:
        """Fit on texts (needs ``encoder``) or embeddings [n, d] and their labels (strings or integers);
        returns self."""
        Xf = self._features(X, reset=True).astype(np.float32, copy=False)  # fitted in float32
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

    def _fit_layers(self, z: np.ndarray, y_idx: np.ndarray, n_classes: int) -> list[tuple[np.ndarray, np.ndarray, str]]:
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "layers_"):
            raise NotFittedHeadError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) or "
                                     "load_head()")

    def _logits(self, X: HeadInput) -> NDArray[np.floating]:
        """Logits [n, n_classes] (numpy)."""
        self._check_fitted()
        Xf = self._features(X, reset=False)
        return forward(Xf, self.mean_, self.scale_, self.layers_)

    def decision_function(self, X: Sequence[str] | ArrayLike) -> NDArray[np.floating]:
        """Scores [n, n_classes] (the logits), or for two classes scikit-learn's [n]: the log-odds of
        ``classes_[1]`` (> 0: predicted)."""
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X: Sequence[str] | ArrayLike) -> NDArray[np.float64]:
        """Class probabilities [n, n_classes] (rows sum to 1), columns in ``classes_`` order."""
        return softmax(self._logits(X).astype(np.float64))

    def predict(self, X: Sequence[str] | ArrayLike) -> np.ndarray:
        """Labels [n] (from ``classes_``: strings or integers, as fitted)."""
        logits = self._logits(X)
        return self.classes_[np.argmax(logits, axis=1)]

    def score(self, X: Sequence[str] | ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Accuracy of ``predict(X)`` against labels ``y`` (scikit-learn's ``ClassifierMixin.score``)."""
        return float(super().score(X, y, sample_weight=sample_weight))

    def evaluate(self, X: Sequence[str] | ArrayLike, y: ArrayLike) -> dict[str, Any]:
        """Accuracy, balanced accuracy, macro-F1 and the confusion matrix on labelled data. Labels the head
        has never seen count as errors (they appear as extra rows)."""
        from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

        self._check_fitted()
        if isinstance(y, (str, bytes)):
            raise InputError("y must be a list of labels, got a single string")
        y = np.asarray(y)
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
        m = confusion_matrix(y, pred, labels=labels)
        _, _, f1, support = precision_recall_fscore_support(y, pred, labels=labels, average=None, zero_division=0)
        present = support > 0
        return {"n": int(len(y)), "accuracy": float(np.mean(pred == y)),
                "balanced_accuracy": balanced_accuracy(y, pred),
                "macro_f1": float(f1[present].mean()) if present.any() else float("nan"),
                "labels": labels, "confusion": m.tolist(), "unseen_labels": unseen,
                "majority_baseline": float(np.max(np.unique(y, return_counts=True)[1]) / len(y))}

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str], info: Mapping[str, Any] | None = None) -> Path:
        """Write ``head.json`` + ``head.npz`` into directory ``path`` (no pickle). Returns the path."""
        from .persistence import save_head

        return save_head(self, path, info=info)

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "layers_")
