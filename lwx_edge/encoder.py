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
beforehand. One Encoder may be shared by several threads.
"""
from __future__ import annotations

import numbers
import os
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from . import runtime
from .batching import plan_batches
from .bundle import CONFIG, TOKENIZER, WEIGHTS, Bundle
from .errors import BackendUnavailable, BundleError, InputError, LwxError
from .runtime import Backend
from .tokenizer import Tokenizer

__all__ = ["Encoder", "BackendUnavailable", "TruncationWarning", "BACKENDS", "ARTIFACTS", "DEFAULT_MODEL"]  # noqa: F822 (lazy: __getattr__)

# The int8 model shipped inside the package (tools/make_default_model.py builds it); Encoder.load() loads it.
DEFAULT_MODEL = Path(__file__).resolve().parent / "default_model"


def default_model_path() -> Path:
    """The shipped default bundle, or a BundleError saying it is not part of this install."""
    if not (DEFAULT_MODEL / "manifest.json").is_file():
        raise BundleError(f"no default model in this install ({DEFAULT_MODEL} is missing); give a bundle path, "
                          "or rebuild it: python tools/make_default_model.py BUNDLE")
    return DEFAULT_MODEL


class TruncationWarning(UserWarning):
    """Some inputs were longer than the model's max length and lost their tail."""


def __getattr__(name: str):
    """``BACKENDS`` and ``ARTIFACTS``: the backend registry's (:mod:`lwx_edge.runtime`), as it is now."""
    if name == "BACKENDS":
        return ("auto", *(spec.name for spec in runtime.backends()))
    if name == "ARTIFACTS":  # (backend, file, precision) in the order "auto" prefers them
        return runtime.artifacts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _as_text_list(texts) -> list:
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
        if precision is not None and precision not in ("int8", "fp32"):
            raise InputError(f"precision must be 'int8', 'fp32' or None, got {precision!r}")
        if path is None or (isinstance(path, (str, os.PathLike)) and os.fspath(path) == "default"
                            and not Path(path).exists()):
            path = default_model_path()
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"path must be a bundle directory (str or Path), got {type(path).__name__}")

        bundle = Bundle.load(path, verify=False)  # layout, manifest, config; hashes below, for what we read
        name, spec, prec = cls._choose(bundle, spec, precision)
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
        return cls(tokenizer, be, bundle, artifact=name, precision=prec)

    @staticmethod
    def _choose(bundle: Bundle, spec: runtime.BackendSpec | None,
                precision: str | None) -> tuple[str, runtime.BackendSpec, str]:
        """(file, backend, precision) to load (``spec`` None: "auto"), or a clear error."""
        present = [(s, f, p) for s in ([spec] if spec else runtime.backends()) for p, f in s.artifacts.items()
                   if (precision is None or p == precision or s.any_precision) and bundle.has(f)]
        if spec is not None:
            if not present:
                if spec.format is None:
                    raise BundleError(f"{bundle.path}: bundle has no {' / '.join(spec.artifacts.values())}; "
                                      f"{spec.missing}")
                files = " / ".join(f for p, f in spec.artifacts.items() if precision in (None, p))
                raise BundleError(f"{bundle.path}: bundle has no {spec.name} model ({files}); run "
                                  f"{spec.export_hint(bundle.path)}")
            if not spec.installed():
                raise BackendUnavailable(f"the {spec.name} backend needs a runtime that is not installed: "
                                         f"{spec.install}")
            return present[0][1], spec, present[0][2]
        for s, f, p in present:
            if s.installed():
                return f, s, p
        if all(s.format is None for s, _, _ in present):
            if bundle.has(WEIGHTS):
                raise BackendUnavailable(
                    f"{bundle.path}: bundle has no exported model and torch is not installed; run "
                    f"lwx-edge export {bundle.path} --int8 (on a machine with lwx-edge[export]), "
                    "or install lwx-edge[train] for the torch backend")
            raise BundleError(f"{bundle.path}: bundle has no exported model; run lwx-edge export "
                              f"{bundle.path} --int8, or install lwx-edge[train] for the torch backend")
        have = ", ".join(f for _, f, _ in present)
        needs = {s.name: s.install for s, _, _ in present}
        raise BackendUnavailable(f"{bundle.path}: no installed runtime can run this bundle's models ({have}): "
                                 + "; ".join(f"{n}: {how}" for n, how in needs.items()))

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
        """The encoder's identity: sha256 of its weights (model.safetensors), or of the model file in use
        when the bundle ships without weights. Heads record it."""
        return self.identity()["sha256"]

    def identity(self) -> dict:
        """What a classifier head records about the encoder it was fitted on (from the manifest)."""
        if self.bundle is None:
            return {"sha256": None, "tokenizer_sha256": self.tokenizer.sha256, "model_files": {},
                    "embedding_dim": self.dim, "backend": self.backend_name}
        files = self.bundle.manifest.get("files", {})
        model_files = {n: files[n]["sha256"] for _, n, _ in runtime.artifacts() if n in files}
        primary = model_files.get(WEIGHTS) or model_files.get(self.artifact or "")
        return {"sha256": primary, "tokenizer_sha256": files.get(TOKENIZER, {}).get("sha256"),
                "model_files": model_files, "embedding_dim": self.dim, "backend": self.backend_name,
                "artifact": self.artifact, "precision": self.precision, "bundle": str(self.bundle.path)}

    def __repr__(self) -> str:
        where = str(self.bundle.path) if self.bundle is not None else "?"
        return (f"Encoder({where!r}, backend={self.backend_name!r}, artifact={self.artifact!r}, "
                f"dim={self.dim}, max_len={self.max_len})")

    # An encoder is immutable and thread-safe: copies (e.g. scikit-learn's clone) share it.
    def __copy__(self) -> "Encoder":
        return self

    def __deepcopy__(self, memo) -> "Encoder":
        return self

    # ------------------------------------------------------------------------------------------ truncation
    @property
    def last_truncated(self) -> list[int]:
        """Indices of the inputs of this thread's last ``embed`` call that were cut at ``max_len``."""
        return list(getattr(self._local, "truncated", []))

    @last_truncated.setter
    def last_truncated(self, value: list[int]) -> None:
        self._local.truncated = list(value)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text before truncation."""
        return list(self.tokenizer.encode(_as_text_list(texts)).lengths_before)

    def truncated(self, texts: Sequence[str]) -> list[int]:
        """Indices of the texts that ``embed`` would cut at the model's max length (without embedding)."""
        return list(self.tokenizer.encode(_as_text_list(texts)).truncated)

    # ------------------------------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str] | str, batch_size: int = 32, normalize: bool = True,
              progress: bool = False, truncation: str = "warn") -> np.ndarray:
        """Embed texts -> float32 [n, d] (L2-normalised unless ``normalize=False``), in input order; one
        string -> one vector [d]; an empty list -> an empty [0, d] array.

        Texts are sorted by length and split into batches of at most ``batch_size`` rows where padding
        would cost more than another backend call (:func:`lwx_edge.batching.plan_batches`); the order is
        restored, and a text's vector does not depend on the batch it ran in.
        Inputs longer than the model's max length keep their head; their indices are in
        ``self.last_truncated`` and, with ``truncation="warn"`` (default), a ``TruncationWarning`` says so;
        ``"ignore"`` only records them, ``"error"`` raises ``InputError`` instead of embedding.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        batch_size = int(batch_size)
        if truncation not in ("warn", "ignore", "error"):
            raise InputError(f"truncation must be 'warn', 'ignore' or 'error', got {truncation!r}")
        if isinstance(texts, str):
            return self.embed([texts], batch_size, normalize, progress, truncation)[0]
        texts = _as_text_list(texts)
        if not texts:
            self.last_truncated = []
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        enc = self.tokenizer.encode(texts)
        self.last_truncated = enc.truncated
        if enc.truncated:
            shown = ", ".join(str(i) for i in enc.truncated[:10]) + (" ..." if len(enc.truncated) > 10 else "")
            msg = (f"{len(enc.truncated)} of {len(texts)} text(s) are longer than the model's max length "
                   f"({self.max_len} tokens) and were truncated (indices {shown}; see Encoder.last_truncated)")
            if truncation == "error":
                raise InputError(msg.replace("were truncated", "would be truncated"))
            if truncation == "warn":
                warnings.warn(msg, TruncationWarning, stacklevel=2)
        lengths = np.fromiter((len(x) for x in enc.ids), dtype=np.int64, count=len(enc.ids))
        rows = min(batch_size, getattr(self.backend, "max_batch", None) or batch_size)
        groups = plan_batches(lengths, rows, getattr(self.backend, "call_overhead", float("inf")))
        out = None
        if progress:
            from tqdm.auto import tqdm

            groups = tqdm(groups, desc="embed", unit="batch", leave=False, disable=None)  # terminals only
        for idx in groups:
            ids, mask = Tokenizer.pad([enc.ids[i] for i in idx])
            vecs = np.asarray(self.backend.run(ids, mask), dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(idx):
                raise LwxError(f"the {self.backend_name} backend returned shape {vecs.shape} for "
                               f"{len(idx)} inputs")
            if out is None:
                out = np.empty((len(enc.ids), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def encode(self, sentences: Sequence[str] | str, batch_size: int = 32, show_progress_bar: bool = False,
               normalize_embeddings: bool = True, **kwargs) -> np.ndarray:
        """:meth:`embed` under the name (and keyword names) sentence-transformers and model2vec users know.
        Unlike sentence-transformers, vectors are L2-normalised by default."""
        return self.embed(sentences, batch_size=batch_size, normalize=normalize_embeddings,
                          progress=show_progress_bar, **kwargs)

    def get_sentence_embedding_dimension(self) -> int | None:
        """The vector size (sentence-transformers' name for :attr:`dim`)."""
        return self.dim

    # ------------------------------------------------------------------------------------------ helpers
    def _vectors(self, x, batch_size: int) -> tuple[np.ndarray, bool]:
        """(2-d normalised vectors, was_single) for texts, one text, or precomputed vectors."""
        if isinstance(x, str):
            return self.embed([x], batch_size=batch_size), True
        if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
            return x, x.ndim == 1
        items = _as_text_list(x)
        if items and all(isinstance(t, str) for t in items):
            return self.embed(items, batch_size=batch_size), False
        if items and not isinstance(items[0], str):
            arr = np.asarray(items)
            if arr.dtype.kind in "fiu":
                return arr, arr.ndim == 1
        return self.embed(items, batch_size=batch_size), False  # raises the precise InputError

    def similarity(self, a, b, batch_size: int = 32):
        """Cosine similarity of texts (or vectors): two texts -> float; one text and a list -> [n];
        two lists -> [n_a, n_b]."""
        from .search import similarity

        va, sa = self._vectors(a, batch_size)
        vb, sb = self._vectors(b, batch_size)
        s = similarity(va[0] if sa and va.ndim == 2 else va, vb[0] if sb and vb.ndim == 2 else vb)
        return s

    def search(self, queries, corpus, top_k: int = 10, batch_size: int = 32):
        """Exact cosine search: for each query (text or vector) the ``top_k`` nearest corpus entries (texts
        or precomputed vectors, e.g. ``embed(corpus)`` kept from before). Returns ``SearchResult(indices,
        scores)``, arrays [n_queries, k] sorted best first (1-d for a single query)."""
        from .search import search

        q, single = self._vectors(queries, batch_size)
        c, _ = self._vectors(corpus, batch_size)
        return search(q[0] if single and q.ndim == 2 else q, c, top_k=top_k)
