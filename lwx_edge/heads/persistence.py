"""Saving and loading heads without pickle: a directory with ``head.json`` (metadata) + ``head.npz`` (weights).

``head.json``::

    {"format": "lwx-edge-head", "format_version": 1, "kind": "mlp" | "logistic",
     "classes": [...], "classes_type": "str" | "int", "n_features": 512,
     "input": {"l2_normalize": true, "standardize": true},
     "layers": [{"weight": "W0", "bias": "b0", "activation": "tanh"}, ..., {"activation": "identity"}],
     "output": "softmax",
     "weights": {"file": "head.npz", "sha256": "..."},
     "encoder": {"sha256": <sha256 of the fp32 weights the model came from>, "tokenizer_sha256": ...,
                 "model_files": {name: sha256}, "artifact_sha256": <the model file's>, "embedding_dim": 512,
                 "backend": ..., "artifact": ...},
     "params": {...}, "training": {...}, "info": {...}}

``head.npz`` holds float32 arrays ``mean``, ``scale`` (if standardised) and ``W{i}`` [in, out], ``b{i}``
[out]; it is read with ``allow_pickle=False``. Prediction::

    x = e / ||e||;  z = (x - mean) / scale;  h = act_i(h @ W_i + b_i) for each layer;  p = softmax(h)

``save_head`` and ``load_head`` are in :mod:`lwx_edge.heads.base`, beside ``BaseHead`` (which imports this module).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from sklearn.exceptions import NotFittedError

from ..atomic import read_json, recover_dir
from ..bundle import Bundle, inside
from ..errors import BundleError, LwxError

if TYPE_CHECKING:
    from ..encoder import Encoder

FORMAT = "lwx-edge-head"
FORMAT_VERSION = 1
ACTIVATIONS = ("tanh", "relu", "identity")
# kind -> head class; each BaseHead subclass adds itself (lwx_edge.heads imports them all)
KINDS: dict[str, type] = {}


class HeadError(LwxError):
    """A head that cannot be saved/loaded, or one used with an encoder it was not fitted on."""


class NotFittedHeadError(HeadError, NotFittedError):
    """A head used (predict, evaluate, save) before ``fit``: scikit-learn's ``NotFittedError`` (so a
    ``ValueError`` and an ``AttributeError`` too) and a ``HeadError``."""


HEAD_JSON = "head.json"
HEAD_NPZ = "head.npz"

_TRAINING_ATTRS = ("dev_score_", "dev_scores_", "C_", "n_iter_", "best_epoch_", "n_epochs_", "history_",
                   "fit_seconds_")


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def read_head_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``head.json`` of a head directory (or of that file itself), as a dict."""
    path = Path(path)
    if path.is_file() and path.name == HEAD_JSON:
        path = path.parent
    if not path.exists():
        recover_dir(path)  # a save killed between its two renames
    if not path.exists():
        raise HeadError(f"{path}: no such head directory")
    if not path.is_dir():
        raise HeadError(f"{path}: a head is a directory (head.json + head.npz), got a file")
    try:
        meta = read_json(inside(path, HEAD_JSON, "head file"), HEAD_JSON, HeadError,
                         missing=f"{path}: not a head directory ({HEAD_JSON} is missing)")
    except BundleError as e:
        raise HeadError(str(e)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise HeadError(f"{path / HEAD_JSON}: not an lwx-edge head")
    if meta.get("format_version") != FORMAT_VERSION:
        raise HeadError(f"{path}: head format version {meta.get('format_version')} is not supported "
                        f"(this lwx-edge reads version {FORMAT_VERSION})")
    for key, kind in (("classes", list), ("layers", list), ("weights", dict), ("input", dict), ("params", dict),
                      ("training", dict), ("info", dict)):
        if meta.get(key) is not None and not isinstance(meta[key], kind):
            raise HeadError(f"{path / HEAD_JSON}: {key!r} is not a JSON {'list' if kind is list else 'object'} "
                            "(damaged or edited); refit the head")
    return meta


def encoder_identity(enc: Encoder | None) -> dict[str, Any] | None:
    """What a head records about encoder ``enc`` and is checked against: ``enc.identity()`` with the model named
    by its provenance and bound to the file loaded (:meth:`lwx_edge.bundle.Bundle.identity`: the sha256 of the
    weights it came from, so a training bundle and its exports agree; the model file hashed from disk when the
    bundle was not verified) and the tokenizer by the bytes it was read from."""
    ident = enc.identity() if enc is not None and hasattr(enc, "identity") else None
    bundle = getattr(enc, "bundle", None)
    if isinstance(ident, dict) and isinstance(bundle, Bundle):
        try:
            model = bundle.identity(getattr(enc, "artifact", None))
        except BundleError as e:
            raise HeadError(f"cannot tell which model this encoder runs: {e}") from None
        if model.get("sha256"):
            ident = {**ident, **model}
        tok = getattr(getattr(enc, "tokenizer", None), "sha256", None)
        if isinstance(tok, str):
            ident["tokenizer_sha256"] = tok
    return ident


def check_encoder(recorded: Mapping[str, Any] | None, enc: Encoder | None, where: str = "the head") -> None:
    """Refuse an encoder that is not the one a head was fitted on: same model (the weights it came from, or the
    very model file it runs), tokenizer and vector size."""
    if enc is None:
        return
    if recorded is not None and (not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str)
                                 or not isinstance(recorded.get("model_files") or {}, dict)):
        raise HeadError(f"{where}: its encoder record is malformed (no sha256 or model files); refit the head")
    if recorded is None:
        warnings.warn(f"{where} does not record which encoder it was fitted on; cannot check that it "
                      "matches this encoder", UserWarning, stacklevel=3)
        return
    ident = encoder_identity(enc)
    if ident is None or not ident.get("sha256"):
        warnings.warn(f"this encoder has no bundle identity; cannot check that it matches {where}",
                      UserWarning, stacklevel=3)
        return
    ours = set((recorded.get("model_files") or {}).values()) | {recorded["sha256"]}
    # the same model: the weights it came from, or the very file this encoder runs is one the head was fitted
    # with (not merely any file of its bundle); both as loaded, not as a manifest says
    running = (ident.get("artifact_sha256") or (ident.get("model_files") or {}).get(ident.get("artifact") or "")
               or ident["sha256"])
    same_model = ident["sha256"] == recorded["sha256"] or running in ours
    tok_a, tok_b = recorded.get("tokenizer_sha256"), ident.get("tokenizer_sha256")
    same_tok = tok_a is None or tok_b is None or tok_a == tok_b
    dim_a, dim_b = recorded.get("embedding_dim"), ident.get("embedding_dim")
    same_dim = dim_a is None or dim_b is None or dim_a == dim_b
    if not (same_model and same_tok and same_dim):
        what = "model" if not same_model else "tokenizer" if not same_tok else "embedding size"
        swapped = ("" if ident.get("matches_manifest", True) else
                   f"; its {ident.get('artifact')} is not the file its bundle's manifest lists (changed or swapped "
                   "since, and not verified: loaded with verify=False)")
        raise HeadError(
            f"{where} was fitted on another encoder ({what} differs): fitted on sha256 "
            f"{recorded['sha256'][:12]}... ({recorded.get('bundle', '?')}), this encoder is "
            f"{ident['sha256'][:12]}... ({ident.get('bundle', '?')}{swapped}). A head only works with the "
            "encoder it was fitted on; refit it on this one (lwx-edge fit BUNDLE data.csv ...)")
