"""Training batches: tokenized pairs, SMLM masking (docs/METHOD.md §3.1) and padding (numpy only).

Everything random here is a pure function of (seed, epoch, batch index), so a resumed run sees exactly
the batches and masks an uninterrupted one would, and every DDP rank can cut its slice from the same
global batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..tokenizer import MASK_ID, PAD_ID, Tokenizer


@dataclass
class TokenizedPairs:
    """Parallel pairs as token ids (truncated to max_len) with the original source text for the teacher."""

    src: list[np.ndarray]
    tgt: list[np.ndarray]
    src_text: list[str]
    tgt_text: list[str]
    pair_lang: list[str]
    dropped: int = 0
    source: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.src)


def tokenize_pairs(pairs: Iterable, tokenizer: Tokenizer, max_len: int) -> TokenizedPairs:
    """Tokenize ``Pair``s; drop pairs with a side that has no maskable token (SMLM needs one)."""
    pairs = list(pairs)
    maskable = tokenizer.is_maskable()
    out = TokenizedPairs([], [], [], [], [])
    chunk = 4096
    for s in range(0, len(pairs), chunk):
        part = pairs[s:s + chunk]
        a = tokenizer.encode([p.src for p in part]).ids
        b = tokenizer.encode([p.tgt for p in part]).ids
        for p, ia, ib in zip(part, a, b):
            ia, ib = np.asarray(ia[:max_len], np.int32), np.asarray(ib[:max_len], np.int32)
            if not (maskable[ia].any() and maskable[ib].any()):
                out.dropped += 1
                continue
            out.src.append(ia)
            out.tgt.append(ib)
            out.src_text.append(p.src)
            out.tgt_text.append(p.tgt)
            out.pair_lang.append(f"{p.src_lang}-{p.tgt_lang}")
            out.source.append(p.source)
    return out


def pad(seqs: Sequence[np.ndarray], length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad to ``length`` (default: the longest sequence) -> ids int64 [n, L], mask int64 [n, L]."""
    length = max(len(s) for s in seqs) if length is None else length
    ids = np.full((len(seqs), length), PAD_ID, dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    return ids, (ids != PAD_ID).astype(np.int64)


def stack_padded(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Stack [n_i, T_i] arrays into one [Σn, max T], right-padded with zeros."""
    t = max(a.shape[1] for a in arrays)
    return np.concatenate([np.pad(a, ((0, 0), (0, t - a.shape[1]))) for a in arrays])


def padded_length(longest: int, multiple: int, cap: int | None) -> int:
    """``longest`` rounded up to a multiple of ``multiple`` (0: unchanged), never beyond ``cap`` (the model's
    train_max_len): a few fixed shapes, so a compiled step is not recompiled for every new length."""
    if not multiple:
        return longest
    rounded = -(-longest // multiple) * multiple
    return max(longest, min(rounded, cap)) if cap else rounded


def mask_one_token(a: np.ndarray, b: np.ndarray, maskable: np.ndarray, rng: np.random.Generator):
    """SMLM corruption of one pair: choose a side (p = 0.5; the other if it has nothing maskable),
    then a uniform maskable position, replaced 100% by <MASK>. Returns (a', b', side, w_t)."""
    side = int(rng.random() < 0.5)
    sides = [a, b]
    if not maskable[sides[side]].any():
        side = 1 - side
    seq = sides[side].copy()
    positions = np.flatnonzero(maskable[seq])
    t = positions[rng.integers(len(positions))]
    token = int(seq[t])
    seq[t] = MASK_ID
    return (seq, b, side, token) if side == 0 else (a, seq, side, token)


class PairBatcher:
    """Shuffled, drop-last batches of masked pairs; batch (epoch, i) is deterministic given the seed.

    With ``bucket`` > 0, each run of ``bucket`` batches of the shuffled order is sorted by length before
    it is cut into batches, and the batches are then shuffled: far less padding, still random batches.
    With ``groups`` (one integer per pair, e.g. its language pair), the run is sorted by group first, so a batch
    holds pairs of one group wherever the run has a batch's worth of it: harder in-batch negatives for the
    alignment losses (a French sentence is no longer told apart from German ones).
    With ``neighbours`` (one cluster label per pair), the run is sorted by group, then cluster, then length, so
    pairs about the same thing share a batch (mined hard negatives); with ``cluster_run`` > 0 it is cut into runs of
    that many (one cluster, similar lengths), which are sorted by group and length before the batches are cut: each
    pair keeps ``cluster_run`` - 1 neighbours in its batch without the padding of whole clusters, whose lengths vary.
    With ``pad_to`` > 0, both sides of a batch are padded to one length, the longest rounded up to a multiple of
    ``pad_to`` (at most ``max_len``): the shapes a compiled step sees come from a short fixed list.
    """

    def __init__(self, data: TokenizedPairs, batch_size: int, maskable: np.ndarray, seed: int = 0,
                 teacher: np.ndarray | None = None, bucket: int = 0, groups: np.ndarray | None = None,
                 pad_to: int = 0, max_len: int | None = None, neighbours: np.ndarray | None = None,
                 cluster_run: int = 0):
        if len(data) < batch_size:
            raise InputError(f"the corpus has {len(data)} usable pairs, fewer than one batch ({batch_size})")
        for name, values in (("groups", groups), ("neighbours", neighbours)):
            if values is not None and (len(values) != len(data) or not bucket):
                raise InputError(f"{name} need one value per pair ({len(data)}, got {len(values)}) and bucket > 0 "
                                 f"(got {bucket})")
        self.data, self.batch_size, self.maskable, self.seed, self.teacher = data, batch_size, maskable, seed, teacher
        self.bucket, self.groups, self.pad_to, self.max_len = bucket, groups, pad_to, max_len
        self.neighbours, self.cluster_run = neighbours, cluster_run
        self.lengths = np.array([max(len(a), len(b)) for a, b in zip(data.src, data.tgt)])
        self._epoch_order: tuple[int, np.ndarray] | None = None

    @property
    def steps_per_epoch(self) -> int:
        return len(self.data) // self.batch_size

    def _order(self, epoch: int) -> np.ndarray:
        if self._epoch_order is None or self._epoch_order[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch])
            order = rng.permutation(len(self.data))
            if self.bucket:
                chunk = self.batch_size * self.bucket
                order = np.concatenate([c[self._sorted(c)] for c in np.split(order, range(chunk, len(order), chunk))])
                batches = order[:self.steps_per_epoch * self.batch_size].reshape(-1, self.batch_size)
                order = batches[rng.permutation(len(batches))].reshape(-1)
            self._epoch_order = (epoch, order)
        return self._epoch_order[1]

    def _sorted(self, chunk: np.ndarray) -> np.ndarray:
        """Positions in ``chunk`` in batch order: by group, cluster and length (see the class)."""
        lengths = self.lengths[chunk]
        order = np.lexsort([lengths] + [k[chunk] for k in (self.neighbours, self.groups) if k is not None])
        if self.neighbours is None or not self.cluster_run:
            return order
        starts = np.arange(0, len(order), self.cluster_run)
        longest = np.maximum.reduceat(lengths[order], starts)
        group = self.groups[chunk][order][starts] if self.groups is not None else np.zeros(len(starts), np.int64)
        return np.concatenate([order[s:s + self.cluster_run] for s in starts[np.lexsort((longest, group))]])

    def indices(self, epoch: int, i: int) -> np.ndarray:
        return self._order(epoch)[i * self.batch_size:(i + 1) * self.batch_size]

    def batch(self, epoch: int, i: int) -> dict[str, np.ndarray]:
        idx = self.indices(epoch, i)
        rng = np.random.default_rng([self.seed, epoch, i, 1])
        a, b, side, token = zip(*(mask_one_token(self.data.src[j], self.data.tgt[j], self.maskable, rng)
                                  for j in idx))
        width = padded_length(max(len(x) for x in a + b), self.pad_to, self.max_len) if self.pad_to else None
        ids_a, mask_a = pad(a, width)
        ids_b, mask_b = pad(b, width)
        out = {"ids_a": ids_a, "mask_a": mask_a, "ids_b": ids_b, "mask_b": mask_b,
               "masked_side": np.asarray(side, np.int64), "masked_token": np.asarray(token, np.int64),
               "index": idx}
        if self.teacher is not None:
            out["teacher"] = self.teacher[idx].astype(np.float32)
        return out


GROUP_KEYS = ("lang", "source", "cluster")
NOUNS = {"lang": "language pairs", "source": "sources", "cluster": "clusters"}


NEEDS_TEACHER = ("batch_group=cluster clusters the teacher's vectors of the pairs: it needs a teacher (teacher=use "
                 "with weights.kd or weights.mono > 0)")


def group_key_problems(keys: str) -> list[str]:
    """What is wrong with a ``batch_group`` value ("none", or keys of :data:`GROUP_KEYS` joined by '+', cluster
    last)."""
    if keys == "none":
        return []
    parts = keys.split("+")
    if set(parts) - set(GROUP_KEYS) or len(set(parts)) < len(parts):
        return [f"unknown batch_group {keys!r} (use 'none', or any of {', '.join(map(repr, GROUP_KEYS))} joined by "
                "'+', e.g. 'lang+cluster')"]
    if "cluster" in parts[:-1]:
        return [f"batch_group {keys!r}: cluster comes last (e.g. 'lang+cluster')"]
    return []


def batch_groups(keys: str, data: TokenizedPairs, vectors: np.ndarray | None = None, n_clusters: int = 0,
                 seed: int = 0, cluster_run: int = 0) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """For :class:`PairBatcher`, from ``keys`` ("none", or "+"-joined ``lang``, ``source`` and, last, ``cluster``):
    one group per pair (its language pair and/or source, sorted in the order given), one cluster label per pair
    (or None), and a line saying what they are (and the ``cluster_run`` the batcher will cut clusters into).

    ``cluster`` is a k-means cluster (scikit-learn's MiniBatchKMeans, seeded) of ``vectors`` (one per pair, e.g.
    the teacher's vector of its English side), cosine geometry: pairs about the same thing share a batch, so each
    is told apart from its neighbours, not from random text (mined hard negatives, by batch composition).
    """
    if keys == "none":
        return None, None, "batches: mixed"
    problems = group_key_problems(keys)
    if problems:
        raise InputError("; ".join(problems))
    codes, said, labels = [], [], None
    for key in keys.split("+"):
        if key == "lang":
            values = np.asarray(data.pair_lang)
        elif key == "source":
            values = np.asarray(data.source)
        else:
            if vectors is None:
                raise InputError(NEEDS_TEACHER)
            labels = kmeans_labels(vectors, n_clusters, seed)
            said.append(f"{n_clusters} {NOUNS[key]}")
            continue
        names, code = np.unique(values, return_inverse=True)
        codes.append(code)
        said.append(f"{len(names)} {NOUNS[key]}")
    group = None
    if codes:
        group = np.unique(np.ravel_multi_index(tuple(codes), tuple(int(c.max()) + 1 for c in codes)),
                          return_inverse=True)[1]
    runs = f", in runs of {cluster_run}" if labels is not None and cluster_run else ""
    return group, labels, f"batches grouped by {keys}: {' x '.join(said)}{runs}"


def kmeans_labels(vectors: np.ndarray, n_clusters: int, seed: int = 0) -> np.ndarray:
    """k-means cluster of each (L2-normalised) row: MiniBatchKMeans, seeded, so every run and rank agrees."""
    from sklearn.cluster import MiniBatchKMeans

    if not 2 <= n_clusters <= len(vectors):
        raise InputError(f"batch_clusters must lie in [2, {len(vectors)}] (the number of pairs), got {n_clusters}")
    x = np.asarray(vectors, np.float32)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    km = MiniBatchKMeans(n_clusters, random_state=seed, batch_size=4096, n_init=3)
    return km.fit_predict(x).astype(np.int64)


class MonoBatcher:
    """Batches of monolingual sentences with their teacher vectors (distillation on single sentences);
    batch ``step`` is deterministic given the seed, with the same length bucketing as ``PairBatcher``."""

    def __init__(self, ids: list[np.ndarray], teacher: np.ndarray, batch_size: int, seed: int = 0,
                 bucket: int = 0, pad_to: int = 0, max_len: int | None = None):
        self.ids, self.teacher, self.seed, self.pad_to, self.max_len = ids, teacher, seed, pad_to, max_len
        self.pairs = PairBatcher(TokenizedPairs(ids, ids, [], [], []), min(batch_size, len(ids)),
                                 np.ones(1, bool), seed + 2, bucket=bucket)

    def batch(self, step: int) -> dict[str, np.ndarray]:
        idx = self.pairs.indices(*divmod(step, self.pairs.steps_per_epoch))
        seqs = [self.ids[j] for j in idx]
        ids, mask = pad(seqs, padded_length(max(len(x) for x in seqs), self.pad_to, self.max_len))
        return {"ids": ids, "mask": mask, "teacher": self.teacher[idx].astype(np.float32)}


def slice_rows(batch: dict[str, np.ndarray], rank: int, world: int) -> dict[str, np.ndarray]:
    """This rank's contiguous share of every array of a global batch (DDP). Each array is cut by its own
    length: the monolingual rows (``mono_*``) are a batch of another size than the pairs."""
    out = {}
    for key, v in batch.items():
        if len(v) % world:
            raise InputError(f"global batch {len(v)} ({key}) is not divisible by the world size {world}")
        k = len(v) // world
        out[key] = v[rank * k:(rank + 1) * k]
    return out