"""Logistic-regression head: scikit-learn's multinomial ``LogisticRegression`` (lbfgs) on the standardised
embedding, class-balanced (``compute_class_weight``); the inverse regularisation ``C`` is chosen on a stratified
held-out slice (``C="auto"``, scored with ``balanced_accuracy_score``) and the model is then refitted on all the
data. Stored and applied as one dense layer (numpy softmax), so prediction needs no scikit-learn.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..errors import InputError
from .base import BaseHead, balanced_accuracy, class_weights, stratified_split

if TYPE_CHECKING:
    from ..encoder import Encoder

C_GRID = (0.01, 0.1, 1.0, 10.0)


class LogisticHead(BaseHead):
    """Multinomial logistic regression on frozen embeddings.

    Parameters: ``encoder`` (for text inputs), ``C`` ("auto" or a float), ``class_weight`` ("balanced", a dict
    {label: weight} or None), ``validation_fraction`` (the held-out slice that picks C), ``max_iter``, ``tol``,
    ``standardize``, ``random_state``. Learned: ``classes_``, ``n_features_in_``, ``coef_`` [k, d], ``intercept_`` [k],
    ``C_``, ``dev_scores_`` {C: balanced accuracy}, ``dev_score_``, ``n_iter_``, ``fit_seconds_``,
    ``mean_``/``scale_``, ``layers_``, ``encoder_info_``.

    On embeddings (``encoder=None``) it passes every check of scikit-learn's ``check_estimator``.
    """

    kind = "logistic"
    EXPECTED_FAILED_CHECKS: dict[str, str] = {}  # passes every check of check_estimator (on embeddings)

    def __init__(self, encoder: Encoder | None = None, C: float | str = "auto",
                 class_weight: str | Mapping[Any, float] | None = "balanced", validation_fraction: float = 0.1,
                 max_iter: int = 500, tol: float = 1e-4, standardize: bool = True, random_state: int | None = 0) -> None:
        self.encoder = encoder
        self.C = C
        self.class_weight = class_weight
        self.validation_fraction = validation_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.random_state = random_state

    def _model(self, C: float, y_idx: np.ndarray) -> Any:
        """An unfitted LogisticRegression for class indices ``y_idx``, weighted per class like ``class_weight``
        says of the labels."""
        from sklearn.linear_model import LogisticRegression

        present = np.unique(y_idx)
        weights = class_weights(self.class_weight, self.classes_[present], self.classes_[y_idx])
        return LogisticRegression(C=C, class_weight=dict(zip(present.tolist(), weights.tolist())),
                                  max_iter=int(self.max_iter), tol=float(self.tol), solver="lbfgs")

    def _fit_layers(self, z: np.ndarray, y_idx: np.ndarray, n_classes: int) -> list[tuple[np.ndarray, np.ndarray, str]]:
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        t0 = time.perf_counter()
        class_weights(self.class_weight, self.classes_, self.classes_[y_idx])  # an InputError before any fitting
        grid: tuple[float, ...]
        if self.C == "auto":
            grid = C_GRID
        else:
            try:
                grid = (float(self.C),)
            except (TypeError, ValueError):
                raise InputError(f"C must be 'auto' or a positive number, got {self.C!r}") from None
            if not grid[0] > 0:
                raise InputError(f"C must be 'auto' or a positive number, got {self.C!r}")
        rng = np.random.default_rng(self.random_state)
        tr, dev = stratified_split(y_idx, float(self.validation_fraction), rng, min_dev=n_classes)
        self.dev_scores_: dict[float, float] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if len(dev) and len(np.unique(y_idx[tr])) == n_classes:
                for C in grid:
                    m = self._model(C, y_idx[tr]).fit(z[tr], y_idx[tr])
                    self.dev_scores_[C] = balanced_accuracy(y_idx[dev], m.predict(z[dev]))
                best = max(self.dev_scores_.values())
                self.C_ = min(C for C, s in self.dev_scores_.items() if s == best)  # ties: stronger regularisation
                self.dev_score_ = float(best)
            else:
                self.C_ = 1.0 if self.C == "auto" else grid[0]
                self.dev_score_ = None
            model = self._model(self.C_, y_idx).fit(z, y_idx)  # refit on everything with the chosen C
        W = model.coef_.astype(np.float32)
        b = model.intercept_.astype(np.float32)
        if n_classes == 2:  # scikit-learn's binary form: one logit for class 1 -> a 2-way softmax
            W = np.concatenate([np.zeros_like(W), W], axis=0)
            b = np.concatenate([np.zeros_like(b), b], axis=0)
        self.coef_ = W
        self.intercept_ = b
        self.n_iter_ = int(np.max(model.n_iter_))
        self.fit_seconds_ = round(time.perf_counter() - t0, 3)
        return [(W.T.copy(), b, "identity")]
