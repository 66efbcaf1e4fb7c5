"""What the index stores and takes: the format's constants, its errors and results, int8 rows, and the checks
that turn callers' ids, texts, metadata and vectors into what SQLite stores (or an InputError naming them)."""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import InputError, LwxError
from . import ann

if TYPE_CHECKING:
    from ..encoder import Encoder



FORMAT, FORMAT_VERSION = "lwx-edge-index", 1
_CHUNK_ROWS = 2048          # rows converted at once: 2048 x 512 float64 = 8 MB
_SCORE_BLOCK = 1 << 22      # scores held at once (queries x items): 16 MB of float32
_DEFAULT_BATCH = 256        # texts embedded and committed per transaction
_APPROX_EXTRA = 20          # the graph's candidates per query: 2 * top_k + this, rescored exactly
_MAX_DIM = 1 << 16          # a meta table claiming more dimensions is damaged
_MAX_SCALE = 1.0001 / 127   # a stored row is a unit vector: its scale (largest entry / 127) is at most 1/127
_INT64 = (-(1 << 63), 1 << 63)



class IndexFileError(LwxError):
    """An index file that is missing, corrupt, of another format, or built by another encoder."""


class Hit(NamedTuple):
    """One search result: the item's ``id``, cosine ``score``, stored ``text`` and ``metadata`` (or None)."""

    id: str | int
    score: float
    text: str | None
    metadata: dict | None


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows -> (int8 rows, float32 scales) with ``row ≈ scale · int8`` (symmetric, one scale per row)."""
    v = np.asarray(vectors, dtype=np.float32)
    scale = np.maximum(np.abs(v).max(axis=1), 1e-12) / 127.0
    q = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """int8 rows times their per-row scale, as float32."""
    return q.astype(np.float32) * np.asarray(scale, dtype=np.float32)[:, None]


def _contract(encoder: Encoder) -> dict:
    """The text contract the vectors were made under: normalisation and length limit."""
    bundle = getattr(encoder, "bundle", None)
    cfg = bundle.config if bundle is not None else {}
    tok = dict(cfg.get("tokenizer", {})) if isinstance(cfg.get("tokenizer"), dict) else {}
    tok.pop("file", None)
    return {"tokenizer": tok, "max_len": int(encoder.max_len)}


def _id(i: object, what: str = "item_id", kinds: str = "a string or an integer") -> str | int:
    """One item id as SQLite stores it: a str, or an int (numpy integers too) of 64 bits."""
    if isinstance(i, np.integer):
        i = int(i)
    if isinstance(i, bool) or not isinstance(i, (str, int)):
        raise InputError(f"{what} must be {kinds}, got {type(i).__name__} ({_short(i)})")
    if isinstance(i, int) and not _INT64[0] <= i < _INT64[1]:
        raise InputError(f"{what} must fit in 64 bits, got {i}")
    if isinstance(i, str):
        _utf8(i, what)
    return i


def _ids(ids: object, what: str = "ids") -> list[str | int]:
    if isinstance(ids, (str, bytes, int, np.integer)):
        ids = [ids]
    return [_id(i, what, "strings or integers") for i in _seq(ids, what)]


def _seq(x: object, what: str) -> list:
    """``x`` as a list, or InputError naming ``what`` when it is not a sequence of items."""
    if isinstance(x, (dict, bytes)) or not isinstance(x, Iterable):
        raise InputError(f"{what} must be a list, got {type(x).__name__}")
    return list(x)


def _utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (a lone surrogate): {_short(text)}") from None


def _short(x: object) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _positive_int(x: object, what: str) -> int:
    if isinstance(x, np.integer):
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise InputError(f"{what} must be a positive integer, got {_short(x)}")
    return x


def _tristate(x: object, what: str) -> bool | None:
    if x is not None and not isinstance(x, bool):
        raise InputError(f"{what} must be True, False or None, got {_short(x)}")
    return x


def _metadata_json(m: object, n: int) -> str | None:
    """The JSON text of one item's metadata, or InputError: JSON has no NaN or infinity (SQLite's JSON
    functions would refuse the row, and with it every ``where=`` search), and only plain values."""
    if m is None:
        return None
    if not isinstance(m, dict):
        raise InputError(f"metadata {n} must be a dict or None, got {type(m).__name__}")

    def plain(o: object) -> Any:  # numpy scalars (from pandas, say) are stored as the Python values they hold
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(f"a {type(o).__name__} value ({_short(o)})")
    try:
        out = json.dumps(m, ensure_ascii=False, sort_keys=True, allow_nan=False, default=plain)
    except ValueError:
        bad = [k for k, v in m.items() if isinstance(v, (float, np.floating)) and not math.isfinite(v)]
        raise InputError(f"metadata {n} holds NaN or an infinite number{' at ' + _shown(bad) if bad else ''}; "
                         "JSON (and so the index) has no such values: store null or a string") from None
    except (TypeError, RecursionError) as e:
        raise InputError(f"metadata {n} cannot be stored as JSON ({e}): use text, numbers, true/false, null, "
                         "lists and objects with text keys") from None
    _utf8(out, f"metadata {n}")
    return out


def _duplicates(ids: list) -> list:
    seen, dup = set(), []
    for i in ids:
        if i in seen and i not in dup:
            dup.append(i)
        seen.add(i)
    return dup


def _shown(items: list, n: int = 5) -> str:
    return ", ".join(repr(x) for x in items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")



def _need_ann() -> LwxError:
    from ..errors import BackendUnavailable

    return BackendUnavailable(f"approximate=True needs the approximate index (usearch): {ann.INSTALL}")


def _load_meta(blob: str | None) -> dict | None:
    """A stored metadata object; None for none, and for what is not a JSON object (a damaged row)."""
    if blob is None:
        return None
    try:
        out = json.loads(blob)
    except (ValueError, TypeError, RecursionError):
        return None
    return out if isinstance(out, dict) else None


def _float_rows(x: Any, what: str) -> np.ndarray:
    """``x`` as a float32 array of finite real numbers, or InputError naming ``what``."""
    if x is None or isinstance(x, (str, bytes, dict)):
        raise InputError(f"{what} must be an array of numbers, got {type(x).__name__}")
    if np.iscomplexobj(x):
        raise InputError(f"{what} must be real numbers, got complex ones")
    try:
        v = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):
        got = f"an array of {x.dtype}" if isinstance(x, np.ndarray) else f"a {type(x).__name__}"
        raise InputError(f"{what} must be an array of numbers, got {got}") from None
    if not np.isfinite(v).all():
        raise InputError(f"{what} contain NaN or infinite values")
    return v
