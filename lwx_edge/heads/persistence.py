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

``save_head`` and ``load_head`` write and read them (``BaseHead`` imports this module; this one needs it only for types).
"""
from __future__ import annotations

import io
import json
import os
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from sklearn.exceptions import NotFittedError

from ..atomic import atomic_dir, read_json, recover_dir, sha256_file, under_a_file
from ..bundle import Bundle, inside
from ..errors import BundleError, LwxError

if TYPE_CHECKING:
    from ..encoder import Encoder
    from .base import BaseHead

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


# --------------------------------------------------------------------------------------------- files

def check_head_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a place to save a head: missing, empty or a head (replaced); refused otherwise, before any
    work."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise HeadError(f"{path}: exists and is not a directory; give a directory for the head")
        if any(path.iterdir()) and not (path / HEAD_JSON).is_file():
            raise HeadError(f"{path}: directory is not empty and holds no head; refusing to replace it "
                            "(give a new or empty directory)")
    elif under_a_file(path):
        raise HeadError(f"{path}: lies under a file")
    return path


def save_head(head: BaseHead, path: str | os.PathLike[str], info: Mapping[str, Any] | None = None) -> Path:
    """Write a fitted head into directory ``path`` atomically (replacing an older head there)."""
    head._check_fitted()
    path = check_head_dir(path)
    arrays: dict[str, Any] = {}
    if head.mean_ is not None:
        arrays["mean"] = np.asarray(head.mean_, dtype=np.float32)
        arrays["scale"] = np.asarray(head.scale_, dtype=np.float32)
    layers = []
    for i, (W, b, act) in enumerate(head.layers_):
        arrays[f"W{i}"] = np.ascontiguousarray(W, dtype=np.float32)
        arrays[f"b{i}"] = np.ascontiguousarray(b, dtype=np.float32)
        layers.append({"weight": f"W{i}", "bias": f"b{i}", "activation": act,
                       "shape": [int(W.shape[0]), int(W.shape[1])]})
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    blob = buf.getvalue()
    from .._version import __version__

    params = {k: _jsonable(v) for k, v in head.get_params(deep=False).items() if k != "encoder"}
    classes = head.classes_.tolist()
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "kind": head.kind,
        "lwx_edge_version": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "classes": classes, "classes_type": "str" if head.classes_.dtype.kind in "UO" else "int",
        "n_features": int(head.n_features_in_),
        "input": {"l2_normalize": True, "standardize": head.mean_ is not None},
        "layers": layers, "output": "softmax",
        "weights": {"file": HEAD_NPZ, "sha256": __import__("hashlib").sha256(blob).hexdigest(),
                    "bytes": len(blob)},
        "encoder": _jsonable(getattr(head, "encoder_info_", None)),
        "params": params,
        "training": {k.rstrip("_"): _jsonable(getattr(head, k)) for k in _TRAINING_ATTRS if hasattr(head, k)},
        "info": _jsonable(info or {}),
        "prediction": "x = e/||e||; z = (x - mean)/scale; h = act(h @ W + b) per layer; p = softmax(h)",
    }
    try:
        with atomic_dir(path) as tmp:
            (tmp / HEAD_NPZ).write_bytes(blob)
            (tmp / HEAD_JSON).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise HeadError(f"{path}: cannot write the head ({e.strerror or e})") from None
    return path


def load_head(path: str | os.PathLike[str], encoder: Encoder | None = None) -> BaseHead:
    """Load a head saved with ``head.save(path)``. With ``encoder``, refuse it unless it is the encoder the
    head was fitted on (``HeadError``); the head then embeds texts with it."""
    path = Path(path)
    if path.is_file() and path.name == HEAD_JSON:
        path = path.parent
    meta = read_head_meta(path)
    kind = meta.get("kind")
    cls: type[BaseHead] | None = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise HeadError(f"{path}: unknown head kind {meta.get('kind')!r} (known: {', '.join(KINDS)})")
    if "encoder" not in meta:  # save_head always writes it (null for a head fitted on vectors)
        raise HeadError(f"{path}: head.json has no 'encoder' entry (damaged or edited); refit the head")
    check_encoder(meta.get("encoder"), encoder, where=f"head {path}")
    head, layers = _built(cls, meta, _weights(path, meta), path)
    _check_chain(head, layers, path)
    head.layers_ = layers
    if cls.kind == "mlp":
        head.coefs_ = [W for W, _, _ in layers]
        head.intercepts_ = [b for _, b, _ in layers]
    else:
        head.coef_ = layers[0][0].T.copy()
        head.intercept_ = layers[0][1]
    for k, v in (meta.get("training") or {}).items():
        if k + "_" in _TRAINING_ATTRS:  # never layers_, classes_... from an edited file
            setattr(head, k + "_", v)
    head.encoder_info_ = meta.get("encoder")
    head.info_ = meta.get("info") or {}
    head.encoder = encoder
    return head


def _weights(path: Path, meta: dict) -> dict[str, np.ndarray]:
    """The arrays of the head's weights file, checked: inside the head, the sha256 head.json records, finite
    numbers, positive scales."""
    try:
        wfile = inside(path, (meta.get("weights") or {}).get("file", HEAD_NPZ), "weights file")
    except BundleError as e:
        raise HeadError(str(e)) from None
    if not wfile.is_file():
        raise HeadError(f"{path}: weights file {wfile.name} is missing")
    expected = (meta.get("weights") or {}).get("sha256")
    if not expected:
        raise HeadError(f"{path}: head.json records no sha256 for its weights (cannot check them)")
    if sha256_file(wfile) != expected:
        raise HeadError(f"{wfile}: corrupt (sha256 does not match head.json)")
    try:
        with np.load(wfile, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:
        raise HeadError(f"{wfile}: cannot be read as .npz ({type(e).__name__}: {e})") from None
    for name, a in arrays.items():
        if a.dtype.kind not in "fiu" or not np.isfinite(a).all():
            raise HeadError(f"{wfile}: array {name!r} holds NaN, infinite or non-numeric values")
    if "scale" in arrays and (arrays["scale"] <= 0).any():
        raise HeadError(f"{wfile}: array 'scale' has zero or negative entries")
    return arrays


def _built(cls: type[BaseHead], meta: dict, arrays: dict[str, np.ndarray], path: Path) -> tuple[BaseHead, list]:
    """A head of ``cls`` with the parameters, classes, standardisation and layers head.json records."""
    try:
        params: dict[str, Any] = {k: (tuple(v) if k == "hidden_layer_sizes" and isinstance(v, list) else v)
                                  for k, v in (meta.get("params") or {}).items()}
        if isinstance(params.get("class_weight"), dict) and meta.get("classes_type") == "int":
            params["class_weight"] = {int(k): w for k, w in params["class_weight"].items()}  # JSON keys are strings
        head = cls(**{k: v for k, v in params.items() if k in cls().get_params(deep=False)})
        classes = meta["classes"]
        head.classes_ = np.asarray(classes, dtype=str if meta.get("classes_type") == "str" else np.int64)
        head.n_features_in_ = int(meta["n_features"])
        std = bool((meta.get("input") or {}).get("standardize"))
        head.mean_ = arrays["mean"] if std else None
        head.scale_ = arrays["scale"] if std else None
        layers = []
        for spec in meta["layers"]:
            act = spec["activation"]
            if act not in ACTIVATIONS:
                raise HeadError(f"{path}: unknown activation {act!r}")
            layers.append((arrays[spec["weight"]].astype(np.float32), arrays[spec["bias"]].astype(np.float32),
                           act))
    except HeadError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise HeadError(f"{path}: head.json and head.npz do not fit together ({type(e).__name__}: {e})") from None
    return head, layers


def _check_chain(head: BaseHead, layers: list, path: Path) -> None:
    """Refuse layers whose shapes do not chain from the head's features to its classes."""
    # shapes chain from n_features to n_classes
    d = head.n_features_in_
    for W, b, _ in layers:
        if W.ndim != 2 or W.shape[0] != d or b.shape != (W.shape[1],):
            raise HeadError(f"{path}: layer shapes do not chain ({W.shape} after {d} features)")
        d = W.shape[1]
    if d != len(head.classes_) or (head.mean_ is not None and head.mean_.shape != (head.n_features_in_,)):
        raise HeadError(f"{path}: the output layer has {d} units but the head has {len(head.classes_)} classes")
