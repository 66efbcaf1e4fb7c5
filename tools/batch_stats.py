r"""How hard and how padded a run's batches are under each ``batch_group`` (numpy only, no training).

For a training config (its corpus, tokenizer and teacher cache), one epoch of batches per grouping:
  padding   padded tokens per real token, both sides (the cost: attention and FFN run on the padding)
  hardest   mean over pairs of the teacher cosine of the nearest *other* English sentence in the pair's batch
            (the hardest in-batch negative the alignment losses see; the same English in another language
            is not counted)

    python tools/batch_stats.py --config recipes/default.json --config cpu-ab.json \
        lang lang+cluster lang+cluster:0 lang+cluster:8:400@400

A grouping is KEYS[:CLUSTER_RUN[:CLUSTERS]][@BUCKET]: the config's batch_group syntax, then cluster_run (default
the config's), batch_clusters (default: bucket) and bucket (default the config's). The teacher cache must hold the
corpus' English sides (a training run with the teacher fills it). Prints one line per grouping; --out writes JSON.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lwx_edge.data.batches import PairBatcher, TokenizedPairs, batch_groups, group_key_problems  # noqa: E402


class CachedTeacher:
    """The teacher's name and size, to read its cache; a text missing from the cache is an error, not a computation."""

    name, dim = "use-multilingual-v3", 512

    def encode(self, texts):
        raise SystemExit(f"error: {len(texts)} English sentences of the corpus are not in the teacher cache: a "
                         "training run with the teacher (or tools/gpu_run/teacher_all.py) fills it")


def cpu_name() -> str:
    """The CPU's model name (benchmark files record it)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return platform.processor() or "unknown"


def parse_spec(spec: str, cluster_run: int, bucket: int) -> dict:
    """``KEYS[:CLUSTER_RUN[:CLUSTERS]][@BUCKET]`` -> {keys, cluster_run, clusters, bucket}."""
    head, _, b = spec.partition("@")
    keys, *rest = head.split(":")
    bucket = int(b) if b else bucket
    run = int(rest[0]) if rest else cluster_run
    clusters = int(rest[1]) if len(rest) > 1 else bucket
    return {"keys": keys, "cluster_run": run, "clusters": clusters, "bucket": bucket}


def batch_stats(data: TokenizedPairs, vectors: np.ndarray, batch_size: int, keys: str, bucket: int,
                clusters: int, cluster_run: int, seed: int = 0) -> dict:
    """Padding and hardest in-batch negative of epoch 0's batches under one grouping."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    start = time.perf_counter()
    groups, labels, said = batch_groups(keys, data, vectors, clusters, seed)
    grouping_s = time.perf_counter() - start
    batcher = PairBatcher(data, batch_size, np.ones(1, bool), seed, None, bucket, groups, neighbours=labels,
                          cluster_run=cluster_run)
    padded = real = 0
    hardest = []
    text = np.asarray(data.src_text, dtype=object)
    for i in range(batcher.steps_per_epoch):
        idx = batcher.indices(0, i)
        la = np.array([len(data.src[j]) for j in idx])
        lb = np.array([len(data.tgt[j]) for j in idx])
        padded += len(idx) * (la.max() + lb.max())
        real += la.sum() + lb.sum()
        cos = unit[idx] @ unit[idx].T
        cos[text[idx][:, None] == text[idx][None]] = -1.0  # itself, and its English in another language
        hardest.append(cos.max(1).mean())
    return {"grouping": said, "keys": keys, "bucket": bucket, "clusters": clusters if labels is not None else None,
            "cluster_run": cluster_run if labels is not None else None, "padding": float(padded / real),
            "hardest": float(np.mean(hardest)), "grouping_s": round(grouping_s, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("groupings", nargs="+", help="KEYS[:CLUSTER_RUN[:CLUSTERS]][@BUCKET], e.g. lang+cluster:8@400")
    ap.add_argument("--config", action="append", required=True, help="training config files, overlaid in order")
    ap.add_argument("--out", help="write the results here as JSON")
    args = ap.parse_args(argv)

    from lwx_edge.data.batches import tokenize_pairs
    from lwx_edge.data.teacher import TeacherCache
    from lwx_edge.tokenizer import Tokenizer
    from lwx_edge.training.config import TrainConfig
    from lwx_edge.training.inputs import read_pairs

    cfg = TrainConfig.from_files(args.config)
    try:  # every grouping checked before the corpus is read
        specs = [parse_spec(spec, cfg.cluster_run, cfg.bucket) for spec in args.groupings]
    except ValueError:
        ap.error(f"a grouping is KEYS[:CLUSTER_RUN[:CLUSTERS]][@BUCKET] with whole numbers, got {args.groupings}")
    for spec in specs:
        if group_key_problems(spec["keys"]):
            ap.error("; ".join(group_key_problems(spec["keys"])))
    tokenizer = cfg.tokenizer or str(Path(cfg.init_from or "lwx_edge/default_model") / "tokenizer.model")
    data = tokenize_pairs(read_pairs(cfg.corpus, print), Tokenizer(tokenizer), cfg.train_max_len)
    vectors = TeacherCache(cfg.teacher_cache, CachedTeacher()).vectors(data.src_text, progress=False).astype(np.float32)
    rows = []
    for spec, parsed in zip(args.groupings, specs):
        row = batch_stats(data, vectors, cfg.batch_size, **parsed, seed=cfg.seed)
        rows.append(row)
        print(f"{spec:>28}: padding {row['padding']:.2f}, hardest in-batch negative {row['hardest']:.3f} "
              f"({row['grouping']}; grouping {row['grouping_s']} s)")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "command": "python tools/batch_stats.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "pairs": len(data), "batch_size": cfg.batch_size, "cpu": cpu_name(),
            "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
