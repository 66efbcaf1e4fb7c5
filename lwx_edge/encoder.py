"""``Encoder``: load a bundle and embed text (tokenize, sort by length, batch, restore order).

    from lwx_edge import Encoder
    enc = Encoder.load("path/to/bundle")                  # backend="auto"
    vecs = enc.embed(["A cat.", "Un chat."])              # float32 [2, 512], L2-normalised
    enc.similarity("A cat.", "Un chat.")                  # cosine, float
    hits = enc.search(["cat"], corpus_texts, top_k=5)     # exact, batched (numpy)

Backends (``Encoder.load(path, backend=...)``; the registry in :mod:`lwx_edge.runtime` lists them):

* ``"onnx"``: ``model.int8.onnx`` (else ``model.onnx``) with onnxruntime -- the base install, torch-free;
* ``"executorch"``: ``model.int8.pte`` (else ``model.pte``) with ExecuTorch's Python runtime (imports torch);
* ``"torch"``: ``model.safetensors`` with PyTorch (``pip install 'lwx-edge[train]'``), for training bundles;
* ``"auto"`` (default): the first of ONNX int8, ONNX fp32, ExecuTorch int8, ExecuTorch fp32, torch that the
  bundle has and the installed runtimes can run.

``precision="int8"|"fp32"`` picks one artefact of a backend. Texts longer than the model's max length keep
their first ``max_len`` tokens; this is never silent: ``embed`` warns (``TruncationWarning``, or raises with
``truncation="error"``) and records the indices in ``last_truncated`` (per thread); ``truncated(texts)`` asks
beforehand. A text with nothing to embed (empty, whitespace, or only control or invisible characters such as a
zero-width space) gets an all-zero vector (also when normalised; its cosine with anything is 0) and the batch
goes on: ``embed`` warns once per call (``EmptyTextWarning``, or raises with ``empty="error"``) and records the
indices in ``last_empty``. One Encoder may be shared by several threads, and pickled (it re-opens its bundle),
so joblib and scikit-learn's ``n_jobs`` work. ``encode`` takes sentence-transformers' keyword arguments.
"""
from __future__ import annotations

import copy
import numbers
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, cast, overload

import numpy as np

from . import runtime
from .bundle import CONFIG, TOKENIZER, Bundle
from .errors import BackendUnavailable, BundleError, InputError, LwxError
from .runtime import Backend
from .runtime.base import usable_threads
from .runtime.choose import choose
from .runtime.torch_backend import torch_module
from .shipped import DEFAULT_MODEL, default_for, default_model_path  # noqa: F401 (public names)
from .st_compat import (
    ST_PRECISIONS,
    as_text_list,
    as_vectors,
    check_device,
    checked_truncate_dim,
    prompt_text,
    torch_outputs,
)
from .sub_batches import plan_batches
from .tokenizer import UNK_ID, Tokenizer

if TYPE_CHECKING:
    import torch

    from .search import SearchResult

__all__ = ["Encoder", "BackendUnavailable", "TruncationWarning", "EmptyTextWarning",
           "BACKENDS", "ARTIFACTS", "DEFAULT_MODEL"]  # noqa: F822 (lazy: __getattr__)

class TruncationWarning(UserWarning):
    """Some inputs were longer than the model's max length and lost their tail."""


class EmptyTextWarning(UserWarning):
    """Some inputs had nothing to embed (empty, whitespace, only invisible characters): their vectors are all
    zeros."""



def __getattr__(name: str) -> Any:
    """``BACKENDS`` and ``ARTIFACTS``: the backend registry's (:mod:`lwx_edge.runtime`), as it is now."""
    if name == "BACKENDS":
        return ("auto", *(spec.name for spec in runtime.backends()))
    if name == "ARTIFACTS":  # (backend, file, precision) in the order "auto" prefers them
        return runtime.artifacts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Encoder:
    """A frozen sentence encoder: ``Encoder.load(path).embed(texts) -> float32 [n, d]``."""

    def __init__(self, tokenizer: Tokenizer, backend: Backend, bundle: Bundle | None = None, *,
                 artifact: str | None = None, precision: str | None = None):
        self.tokenizer = tokenizer
        self.backend = backend
        self.bundle = bundle
        self.artifact = artifact
        self.precision = precision
        self._local = threading.local()
        self._model_max_len = tokenizer.max_len  # max_seq_length may go down to 1, never above this
        self.device = str(getattr(backend, "device", "cpu"))  # where the backend runs (ONNX, ExecuTorch: cpu)
        # sentence-transformers' prompts: encode(prompt_name="query") prepends prompts["query"]
        self.prompts: dict[str, str] = {}
        self.default_prompt_name: str | None = None
        self._load_args: dict | None = None  # how Encoder.load made it (a pickled Encoder re-opens its bundle)

    # ------------------------------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike | None = None, backend: str = "auto", threads: int | None = None, *,
             precision: str | None = None, device: str = "cpu", verify: bool = True) -> "Encoder":
        """Load a bundle directory; with no ``path`` (or ``"default"``) the default model shipped in the package.

        ``backend``: "auto" | "onnx" | "executorch" | "torch" (see the module docstring). ``threads``: CPU
        threads of the runtime and of the tokenizer (None: their defaults, which use every core). onnxruntime's
        is per session; ExecuTorch's and torch's thread pools are process-wide. ``precision``: "int8" | "fp32" |
        None (int8 when present).
        ``verify``: check the sha256 of the files used (config, tokenizer, the model file) against the
        manifest. Raises ``BundleError`` for a missing/corrupt bundle or one without a model this backend
        can run, ``BackendUnavailable`` when the runtime is not installed, ``InputError`` for bad arguments.
        """
        spec = runtime.get(backend.lower()) if isinstance(backend, str) else None
        if spec is None and not (isinstance(backend, str) and backend.lower() == "auto"):
            names = ", ".join(("auto", *(b.name for b in runtime.backends())))
            raise InputError(f"unknown backend {backend!r}; choose one of {names}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InputError(f"threads must be a positive integer or None, got {threads!r}")
        threads = usable_threads(threads)
        if precision is not None and precision not in ("int8", "fp32"):
            raise InputError(f"precision must be 'int8', 'fp32' or None, got {precision!r}")
        from_default = path is None or (isinstance(path, (str, os.PathLike)) and os.fspath(path) == "default"
                                        and not Path(path).exists())
        if from_default:  # the shipped default; for ExecuTorch its copy built by `lwx-edge export default`
            path = default_for(spec.format if spec else None)
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"path must be a bundle directory (str or Path), got {type(path).__name__}")

        bundle = Bundle.load(path, verify=False)  # layout, manifest, config; hashes below, for what we read
        name, spec, prec = choose(bundle, spec, precision)
        if verify:
            bundle.verify((CONFIG, TOKENIZER, name))
        tokenizer = bundle.tokenizer(artifact=name, threads=threads)  # SentencePiece's pool follows threads too
        file = bundle.file(name)
        be = spec.open(file, bundle, threads=threads, max_batch=bundle.artifact(name).get("max_batch"),
                       device=device)
        dim = getattr(be, "dim", None)
        expected = bundle.config.get("embedding_dim") or bundle.config["model"].get("d_model")
        if isinstance(dim, int) and isinstance(expected, int) and dim != expected:
            raise BundleError(f"{file}: outputs {dim}-d vectors but config.json says {expected}: "
                              "the model file does not belong to this bundle")
        enc = cls(tokenizer, be, bundle, artifact=name, precision=prec)
        where = Path(bundle.path).resolve()
        default = from_default or where == DEFAULT_MODEL
        enc._load_args = {"path": None if default else str(where), "backend": spec.name,
                          "threads": threads, "precision": prec, "device": device, "verify": verify}
        return enc

    # ------------------------------------------------------------------------------------------ identity
    @property
    def dim(self) -> int | None:
        if self.bundle is not None:
            d = self.bundle.config.get("embedding_dim") or self.bundle.config["model"].get("d_model")
            if isinstance(d, int):
                return d
        return getattr(self.backend, "dim", None)

    @property
    def max_len(self) -> int:
        return self.tokenizer.max_len

    @property
    def backend_name(self) -> str:
        return getattr(self.backend, "name", type(self.backend).__name__)

    @property
    def sha256(self) -> str | None:
        """The encoder's identity (:meth:`identity`): the sha256 of the fp32 weights its model came from (a
        training bundle's own, or those an export records), else of the model file in use. Heads and indexes
        record it."""
        return self.identity()["sha256"]

    def identity(self) -> dict[str, Any]:
        """What classifier heads and indexes record about the encoder they were built with, and check: the model
        named by its provenance and bound to the file loaded (:meth:`lwx_edge.bundle.Bundle.identity`: ``sha256``
        is the weights it came from, so a training bundle and its exports agree; ``artifact_sha256`` the file's
        own, hashed from disk when the bundle was loaded with ``verify=False``), the tokenizer by the bytes read."""
        base = {"tokenizer_sha256": self.tokenizer.sha256, "embedding_dim": self.dim, "backend": self.backend_name}
        if self.bundle is None:
            return {"sha256": None, "model_files": {}, **base}
        return {**base, "artifact": self.artifact, "precision": self.precision, "bundle": str(self.bundle.path),
                **self.bundle.identity(self.artifact)}

    def __repr__(self) -> str:
        where = str(self.bundle.path) if self.bundle is not None else "?"
        return (f"Encoder({where!r}, backend={self.backend_name!r}, artifact={self.artifact!r}, "
                f"dim={self.dim}, max_len={self.max_len})")

    # An encoder is immutable and thread-safe: copies (e.g. scikit-learn's clone) share it.
    def __copy__(self) -> "Encoder":
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> "Encoder":
        return self

    # Pickled (joblib, scikit-learn's n_jobs, multiprocessing): how it was loaded, re-opened on unpickling.
    def __reduce__(self) -> tuple[Callable[[dict, dict], Encoder], tuple[dict, dict]]:
        if self._load_args is None:
            raise TypeError("this Encoder was not made by Encoder.load, so it cannot be pickled (a pickled "
                            "Encoder re-opens its bundle); load it with Encoder.load(path)")
        ident = self.identity()
        state = {"max_seq_length": self.max_seq_length, "prompts": dict(self.prompts),
                 "default_prompt_name": self.default_prompt_name,
                 "sha256": ident["sha256"], "tokenizer_sha256": ident["tokenizer_sha256"]}
        return _unpickle, (dict(self._load_args), state)

    # ------------------------------------------------------------------------------------------ sentence-transformers names
    @property
    def max_seq_length(self) -> int:
        """Tokens kept of each text (sentence-transformers' name for :attr:`max_len`). Settable to a smaller
        value (1 up to the model's max length), e.g. to embed only the head of long documents."""
        return self.tokenizer.max_len

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        limit = self._model_max_len
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= limit:
            raise InputError(f"max_seq_length must be an integer from 1 to {limit} (the model's max length; "
                             f"it cannot see further), got {value!r}")
        self.tokenizer.max_len = int(value)

    def get_max_seq_length(self) -> int:
        """:attr:`max_seq_length` (sentence-transformers' method)."""
        return self.max_seq_length

    def get_sentence_embedding_dimension(self) -> int | None:
        """The vector size (sentence-transformers' name for :attr:`dim`)."""
        return self.dim

    # ------------------------------------------------------------------------------------------ truncation
    @property
    def last_truncated(self) -> list[int]:
        """Indices of the inputs of this thread's last ``embed`` call that were cut at ``max_len``."""
        return list(getattr(self._local, "truncated", []))

    @last_truncated.setter
    def last_truncated(self, value: list[int]) -> None:
        self._local.truncated = list(value)

    @property
    def last_empty(self) -> list[int]:
        """Indices of the inputs of this thread's last ``embed`` call that had nothing to embed (all-zero
        vectors)."""
        return list(getattr(self._local, "empty", []))

    @last_empty.setter
    def last_empty(self, value: list[int]) -> None:
        self._local.empty = list(value)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text before truncation (0 for a text with nothing to embed)."""
        return list(self.tokenizer.encode(as_text_list(texts), empty="keep").lengths_before)

    def truncated(self, texts: Sequence[str]) -> list[int]:
        """Indices of the texts that ``embed`` would cut at the model's max length (without embedding)."""
        return list(self.tokenizer.encode(as_text_list(texts), empty="keep").truncated)

    # ------------------------------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str] | str, batch_size: int = 32, normalize: bool = True,
              progress: bool = False, truncation: str = "warn", empty: str = "warn") -> np.ndarray:
        """Embed texts -> float32 [n, d] (L2-normalised unless ``normalize=False``), in input order; one
        string -> one vector [d]; an empty list -> an empty [0, d] array.

        Texts are sorted by length and split into batches of at most ``batch_size`` rows where padding
        would cost more than another backend call (:func:`lwx_edge.sub_batches.plan_batches`); the order is
        restored, and a text's vector does not depend on the batch it ran in.
        Inputs longer than the model's max length keep their head; their indices are in
        ``self.last_truncated`` and, with ``truncation="warn"`` (default), a ``TruncationWarning`` says so;
        ``"ignore"`` only records them, ``"error"`` raises ``InputError`` instead of embedding.
        A text with nothing to embed (empty, whitespace, or only control or invisible characters) gets an
        all-zero vector, also when normalised (its cosine with anything is 0), and never reaches the model;
        its index is in ``self.last_empty`` and, with ``empty="warn"`` (default), one ``EmptyTextWarning``
        per call says how many and which; ``"ignore"`` only records them, ``"error"`` raises ``InputError``
        naming the first. A non-string is always an ``InputError`` naming its index.
        """
        return self._embed(texts, batch_size, normalize, progress, truncation, empty)

    def _embed(self, texts: Sequence[str] | str, batch_size: int, normalize: bool, progress: bool,
               truncation: str, empty: str, prompt: str = "", dims: int | None = None,
               stacklevel: int = 3) -> np.ndarray:
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        batch_size = int(batch_size)
        if truncation not in ("warn", "ignore", "error"):
            raise InputError(f"truncation must be 'warn', 'ignore' or 'error', got {truncation!r}")
        if empty not in ("warn", "ignore", "error"):
            raise InputError(f"empty must be 'warn', 'ignore' or 'error', got {empty!r}")
        single = isinstance(texts, str)
        texts = [texts] if single else as_text_list(texts)
        if not texts:
            self.last_truncated, self.last_empty = [], []
            return np.zeros((0, dims or self.dim or 0), dtype=np.float32)
        enc = self.tokenizer.encode(texts, empty="raise" if empty == "error" else "keep", prefix=prompt)
        self.last_truncated, self.last_empty = enc.truncated, enc.empty
        if enc.truncated:
            msg = (f"{len(enc.truncated)} of {len(texts)} text(s) are longer than the model's max length "
                   f"({self.max_len} tokens) and were truncated (indices {_shown(enc.truncated)}; see "
                   "Encoder.last_truncated)")
            if truncation == "error":
                raise InputError(msg.replace("were truncated", "would be truncated"))
            if truncation == "warn":
                warnings.warn(msg, TruncationWarning, stacklevel=stacklevel)
        if enc.empty and empty == "warn":
            warnings.warn(f"{len(enc.empty)} of {len(texts)} text(s) have nothing to embed (empty, whitespace, or "
                          f"only control or invisible characters) and got all-zero vectors (indices "
                          f"{_shown(enc.empty)}; see Encoder.last_empty)", EmptyTextWarning, stacklevel=stacklevel)
        # only rows with tokens reach the planner and the backend; the others stay zero
        rows_in = np.flatnonzero([len(x) > 0 for x in enc.ids]) if enc.empty else np.arange(len(enc.ids))
        lengths = np.fromiter((len(enc.ids[i]) for i in rows_in), dtype=np.int64, count=len(rows_in))
        rows = min(batch_size, getattr(self.backend, "max_batch", None) or batch_size)
        groups = plan_batches(lengths, rows, getattr(self.backend, "call_overhead", float("inf")))
        out = np.zeros((len(texts), self.dim), dtype=np.float32) if enc.empty and self.dim else None
        if progress:
            from tqdm.auto import tqdm

            groups = tqdm(groups, desc="embed", unit="batch", leave=False, disable=None)  # terminals only
        for group in groups:
            idx = rows_in[group]
            ids, mask = Tokenizer.pad([enc.ids[i] for i in idx])
            vecs = np.asarray(self.backend.run(ids, mask), dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(idx):
                raise LwxError(f"the {self.backend_name} backend returned shape {vecs.shape} for "
                               f"{len(idx)} inputs")
            if out is None:
                out = np.zeros((len(enc.ids), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        if out is None:  # every text empty, and no vector size on record: ask the model
            out = np.zeros((len(texts), self._probe_dim()), dtype=np.float32)
        if dims is not None and dims < out.shape[1]:
            out = np.ascontiguousarray(out[:, :dims])  # sentence-transformers' truncate_dim: cut, then normalise
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)  # zero rows stay zero
        return out[0] if single else out

    def _probe_dim(self) -> int:
        ids, mask = Tokenizer.pad([[UNK_ID]])
        return int(np.asarray(self.backend.run(ids, mask)).shape[-1])

    @overload
    def encode(self, sentences: Sequence[str] | str, prompt_name: str | None = ..., prompt: str | None = ...,
               batch_size: int = ..., show_progress_bar: bool | None = ..., output_value: str | None = ...,
               precision: str = ..., convert_to_numpy: Literal[True] = ..., convert_to_tensor: Literal[False] = ...,
               device: str | None = ..., normalize_embeddings: bool = ..., truncate_dim: int | None = ...,
               pool: object = ..., chunk_size: int | None = ..., **kwargs: str) -> np.ndarray: ...

    @overload
    def encode(self, sentences: Sequence[str] | str, prompt_name: str | None = ..., prompt: str | None = ...,
               batch_size: int = ..., show_progress_bar: bool | None = ..., output_value: str | None = ...,
               precision: str = ..., convert_to_numpy: bool = ..., convert_to_tensor: bool = ...,
               device: str | None = ..., normalize_embeddings: bool = ..., truncate_dim: int | None = ...,
               pool: object = ..., chunk_size: int | None = ...,
               **kwargs: str) -> np.ndarray | torch.Tensor | list[torch.Tensor]: ...

    def encode(self, sentences: Sequence[str] | str, prompt_name: str | None = None, prompt: str | None = None,
               batch_size: int = 32, show_progress_bar: bool | None = None,
               output_value: str | None = "sentence_embedding", precision: str = "float32",
               convert_to_numpy: bool = True, convert_to_tensor: bool = False, device: str | None = None,
               normalize_embeddings: bool = True, truncate_dim: int | None = None, pool: object = None,
               chunk_size: int | None = None, **kwargs: str) -> np.ndarray | torch.Tensor | list[torch.Tensor]:
        """:meth:`embed` under sentence-transformers' name and keyword arguments (``SentenceTransformer.encode``,
        same names and order), so code written for a SentenceTransformer runs on an Encoder.

        Unlike sentence-transformers, vectors are L2-normalised by default (``normalize_embeddings=False``:
        raw). ``prompt`` (or ``prompts[prompt_name]``, or ``prompts[default_prompt_name]``) is prepended to
        every text that has something to embed; its tokens count towards ``max_seq_length``.
        ``truncate_dim=k`` keeps the first k dimensions, then normalises. ``convert_to_tensor=True`` returns
        a torch tensor and ``convert_to_numpy=False`` a list of them (torch must be installed). ``device``:
        None or the device the Encoder runs on (``self.device``, "cpu" for ONNX and ExecuTorch).
        ``output_value`` other than "sentence_embedding", ``precision`` other than "float32", ``pool`` and
        ``chunk_size`` are refused with an ``InputError`` that says why. ``truncation=`` and ``empty=`` are
        passed to :meth:`embed`; any other keyword is an ``InputError``.
        """
        other = sorted(set(kwargs) - {"truncation", "empty"})
        if other:
            raise InputError(f"encode() got an unexpected keyword argument {other[0]!r}; it takes "
                             "sentence-transformers' arguments and embed()'s truncation= and empty=")
        if output_value != "sentence_embedding":
            raise InputError(f"output_value={output_value!r}: only sentence embeddings are available (the "
                             "exported model outputs one pooled vector per text, no token embeddings); use "
                             "output_value='sentence_embedding'")
        if precision != "float32":
            what = ("quantised outputs are not offered" if precision in ST_PRECISIONS
                    else f"choose one of {', '.join(ST_PRECISIONS)}; only 'float32' is offered")
            raise InputError(f"precision={precision!r}: {what}; the vectors are float32 (Encoder.load(precision=...) "
                             "picks the model's weights, not the output's; lwx_edge.Index stores vectors as int8)")
        if pool is not None or chunk_size is not None:
            raise InputError("pool= and chunk_size= (sentence-transformers' multi-process encoding) are not "
                             "supported: one Encoder already runs on every core; for several processes, pickle "
                             "it (joblib.Parallel, scikit-learn's n_jobs) and call encode in each")
        check_device(device, self.device, self.backend_name)
        text_prompt = prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)
        dims = checked_truncate_dim(truncate_dim, self.dim)
        want_torch = bool(convert_to_tensor) or not convert_to_numpy
        if want_torch:  # refused before any work when torch is missing
            torch_module()
        vecs = self._embed(sentences, batch_size, normalize_embeddings, bool(show_progress_bar),
                           kwargs.get("truncation", "warn"), kwargs.get("empty", "warn"), prompt=text_prompt,
                           dims=dims, stacklevel=3)
        return torch_outputs(vecs, bool(convert_to_tensor)) if want_torch else vecs


    @overload
    def similarity(self, a: str, b: str, batch_size: int = ...) -> float: ...

    @overload
    def similarity(self, a: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]],
                   b: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]],
                   batch_size: int = ...) -> float | np.ndarray: ...

    def similarity(self, a: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]],
                   b: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]],
                   batch_size: int = 32) -> float | np.ndarray:
        """Cosine similarity of texts (or vectors, numpy or torch): two texts -> float; one text and a list ->
        [n]; two lists (or two 2-d arrays, sentence-transformers' ``model.similarity(emb, emb)``) -> numpy
        [n_a, n_b]. A zero vector (a text with nothing to embed) has cosine 0 with everything."""
        from .search import similarity

        def embed(texts: list[str]) -> np.ndarray:
            return self.embed(texts, batch_size=batch_size)

        va, sa = as_vectors(a, embed)
        vb, sb = as_vectors(b, embed)
        s = similarity(va[0] if sa and va.ndim == 2 else va, vb[0] if sb and vb.ndim == 2 else vb)
        return s

    def search(self, queries: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]],
               corpus: str | Sequence[str] | np.ndarray | torch.Tensor | Sequence[Sequence[float]], top_k: int = 10,
               batch_size: int = 32) -> SearchResult:
        """Exact cosine search: for each query (text or vector) the ``top_k`` nearest corpus entries (texts
        or precomputed vectors, e.g. ``embed(corpus)`` kept from before). Returns ``SearchResult(indices,
        scores)``, arrays [n_queries, k] sorted best first (1-d for a single query)."""
        from .search import search

        def embed(texts: list[str]) -> np.ndarray:
            return self.embed(texts, batch_size=batch_size)

        q, single = as_vectors(queries, embed)
        c, _ = as_vectors(corpus, embed)
        return search(q[0] if single and q.ndim == 2 else q, c, top_k=top_k)


def _shown(indices: list[int], limit: int = 10) -> str:
    return ", ".join(str(i) for i in indices[:limit]) + (" ..." if len(indices) > limit else "")



# Encoders re-opened by unpickling in this process, by how they were loaded: joblib sends the pickled Encoder with
# every task, and re-opening the bundle each time would cost more than most tasks.
_REOPENED: dict[tuple, Encoder] = {}
_REOPENED_MAX = 4
_REOPENED_LOCK = threading.Lock()


def _unpickle(args: dict, state: dict) -> Encoder:
    """An Encoder re-opened from what ``Encoder.__reduce__`` stored; refused if the bundle changed since. The
    runtime session and the tokenizer's model are shared with earlier unpickled copies of the same Encoder in
    this process (they are read-only); its settings (max_seq_length, prompts) are its own."""
    key = (tuple(sorted(args.items())), state["sha256"], state["tokenizer_sha256"])
    with _REOPENED_LOCK:
        base = _REOPENED.get(key)
    if base is None:
        base = Encoder.load(**args)
        ident = base.identity()
        if (ident["sha256"], ident["tokenizer_sha256"]) != (state["sha256"], state["tokenizer_sha256"]):
            raise BundleError(f"{cast(Bundle, base.bundle).path}: the bundle is not the one this Encoder was "
                              "pickled from (the sha256 of its model or tokenizer differs); re-create the Encoder "
                              "with Encoder.load")
        with _REOPENED_LOCK:
            while len(_REOPENED) >= _REOPENED_MAX:
                _REOPENED.pop(next(iter(_REOPENED)))
            _REOPENED[key] = base
    enc = Encoder(copy.copy(base.tokenizer), base.backend, base.bundle, artifact=base.artifact,
                  precision=base.precision)
    enc._model_max_len = base._model_max_len
    enc._load_args = dict(args)
    enc.max_seq_length = state["max_seq_length"]
    enc.prompts = dict(state["prompts"])
    enc.default_prompt_name = state["default_prompt_name"]
    return enc
