"""sentence-transformers' conventions on an :class:`~lwx_edge.encoder.Encoder`: the texts a call takes, the
arguments of ``encode`` (device, prompts, truncate_dim), texts-or-vectors for ``similarity`` and ``search``, and
torch tensors when asked for (imported then, from the torch backend's module: the base install is torch-free)."""
from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .errors import InputError

# sentence-transformers' encode(precision=...) values other than float32: quantised outputs, not offered here.
ST_PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")


def as_text_list(texts: Any) -> list:
    """Accept a list/tuple (or another non-string sequence, e.g. a numpy array of str) of texts."""
    if isinstance(texts, (list, tuple)):
        return list(texts)
    if isinstance(texts, (str, bytes)):
        raise InputError("expected a list of strings, got a single " + type(texts).__name__ +
                         " (wrap it in a list: embed([text]))")
    if isinstance(texts, np.ndarray):
        if texts.ndim != 1:
            raise InputError(f"expected a 1-d list of strings, got an array of shape {texts.shape}")
        return [t if not isinstance(t, np.str_) else str(t) for t in texts.tolist()]
    if hasattr(texts, "__iter__") and not isinstance(texts, dict):
        return list(texts)
    raise InputError(f"expected a list of strings, got {type(texts).__name__}")



def check_device(device: object, running_on: str, backend_name: str) -> None:
    """Refuse an encode(device=...) other than the one this Encoder runs on (None: any)."""
    if device is None:
        return
    if isinstance(device, (list, tuple)):
        raise InputError(f"device={list(device)!r} (sentence-transformers' multi-process encoding) is not "
                         "supported; pass device=None")
    name = str(device)

    def where(d: str) -> tuple[str, str]:  # "cuda" is "cuda:0"; every "cpu" is the CPU
        kind, _, index = d.partition(":")
        return (kind, "" if kind == "cpu" else index or "0")

    if where(name) == where(running_on):
        return
    raise InputError(f"device={name!r}: this Encoder runs on {running_on!r} (the {backend_name} "
                     "backend; ONNX and ExecuTorch run on the CPU only) and cannot move per call; pass "
                     f"device=None or {running_on!r} (a bundle with weights can be loaded on a GPU: "
                     "Encoder.load(path, backend='torch', device='cuda'))")


def prompt_text(prompts: dict[str, str], default_prompt_name: str | None, prompt_name: object,
                prompt: object) -> str:
    """The text put before every sentence: ``prompt``, else the named one of ``prompts``, else the default's."""
    if prompt is not None:  # as sentence-transformers: prompt wins over prompt_name
        if not isinstance(prompt, str):
            raise InputError(f"prompt must be a string, got {type(prompt).__name__}")
        return prompt
    if prompt_name is not None:
        if isinstance(prompt_name, str) and prompt_name in prompts:
            return prompts[prompt_name]
        names = ", ".join(repr(n) for n in prompts) or "none"
        hint = (" (encode's second positional argument is prompt_name, as in sentence-transformers: pass "
                f"batch_size={prompt_name!r} by keyword)" if isinstance(prompt_name, numbers.Number) else "")
        raise InputError(f"prompt_name={prompt_name!r}: this Encoder has no such prompt (its prompts: "
                         f"{names}); set enc.prompts = {{'query': 'query: '}} or pass prompt='...'{hint}")
    if default_prompt_name is not None:
        return prompts.get(default_prompt_name, "")
    return ""


def checked_truncate_dim(k: int | None, d: int | None) -> int | None:
    """encode's ``truncate_dim``: None, or a checked number of leading dimensions to keep."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 or (d is not None and k > d):
        raise InputError(f"truncate_dim must be an integer from 1 to {d} (the vector size) or None, "
                         f"got {k!r}")
    return int(k)


def as_vectors(x: Any, embed: Callable[[list[str]], np.ndarray]) -> tuple[np.ndarray, bool]:
    """(2-d normalised vectors, was_single) for texts, one text, or precomputed vectors."""
    if isinstance(x, str):
        return embed([x]), True
    if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
        return x, x.ndim == 1
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor (encode(convert_to_tensor=True))
        arr = x.detach().cpu().float().numpy()
        return arr, arr.ndim == 1
    items = as_text_list(x)
    if items and all(isinstance(t, str) for t in items):
        return embed(items), False
    if items and not isinstance(items[0], str):
        arr = np.asarray(items)
        if arr.dtype.kind in "fiu":
            return arr, arr.ndim == 1
    return embed(items), False  # raises the precise InputError


def torch_outputs(vecs: np.ndarray, convert_to_tensor: bool) -> Any:
    """``vecs`` as a torch tensor (``convert_to_tensor``, or one vector), else a list of 1-d tensors
    (sentence-transformers' ``convert_to_numpy=False``)."""
    from .runtime.torch_backend import torch_module

    tensor = torch_module().from_numpy(vecs)
    if convert_to_tensor or tensor.ndim == 1:
        return tensor
    return list(tensor)
