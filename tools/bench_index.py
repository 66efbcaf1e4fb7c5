"""Benchmark of the persistent index (issue 16): add and search speed, latency, size, memory, recall.

    python tools/bench_index.py --out benchmarks/bench_index.json        # 10k, 100k, 1M items, 1 thread
    python tools/bench_index.py --sizes 2000 --real 3000 --queries 50 --cache /tmp/b/vectors.npz --out /tmp/b/x.json

Vectors: the shipped default model (int8 ONNX) embeds up to ``--real`` distinct Debian package-description
lines (apt lists, en/fr/de/es/it); larger indexes repeat them with small seeded perturbations (speed and size
do not depend on the vectors, recall is measured on the real ones only). Per size, in a fresh process
(honest peak RSS): write throughput of precomputed vectors (``Index.add_vectors``, texts not stored), file size
per item, the first search (loads the vectors into memory), then ``--queries`` single-query searches with the
query embedded each time (p50/p99 ms, the app's view) and without (search alone), all exact
(``approximate=False``; from ``SCAN_MIN_ITEMS`` items on with the int8 first pass), then search alone again
with every row scored in float32 (the first pass off), and whether both return the same hits. Then the approximate graph (``pip install 'lwx-edge[ann]'``, usearch): its build time
(the first ``approximate=True`` search, which also writes the ``.ann`` sidecar), sidecar size, the first search
after reopening (vectors + sidecar loaded), search-alone p50/p99 and its recall@10 against the exact search of
the same index (int8, same queries). Once: ``Index.add`` throughput with embedding, and recall@10 of the int8
storage against exact float32 search on the real vectors. Vectors are generated and written 100k at a time,
so ``--sizes 1000000`` fits in memory.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def real_texts(n: int) -> list[str]:
    from bench_runtime import ddtp_texts

    seen = dict.fromkeys(t for t in ddtp_texts(limit_per_lang=n // 5 + 2000) if 10 <= len(t) <= 300)
    return list(seen)[:n]


def vector_chunks(n: int, real, seed: int = 0, chunk: int = 100_000):
    """``n`` unit vectors, ``chunk`` at a time: the real ones, then seeded perturbations of them."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for s in range(0, n, chunk):
        idx = np.arange(s, min(n, s + chunk)) % len(real)
        v = real[idx]
        fresh = np.arange(s, min(n, s + chunk)) < len(real)
        if not fresh.all():
            noisy = v + rng.standard_normal(v.shape).astype(np.float32) * 0.02
            v = np.where(fresh[:, None], v, noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
        yield s, v


def worker(size: int, cache: Path, queries: int, threads: int) -> dict:
    import numpy as np

    import lwx_edge.index.search as index_mod
    from lwx_edge import Encoder
    from lwx_edge.index import Index
    from lwx_edge.index import ann as _ann

    data = np.load(cache)
    real = data["vectors"]
    qtexts = json.loads(str(data["queries"]))
    enc = Encoder.load(threads=threads)
    ms = lambda xs, p: round(float(np.percentile(np.array(xs) * 1e3, p)), 3)  # noqa: E731
    with tempfile.TemporaryDirectory(dir=cache.parent) as tmp:
        path = Path(tmp) / "bench.lwxindex"
        with Index.open(path, enc, create=True, approximate=False) as ix:
            write_s = 0.0
            for s, vecs in vector_chunks(size, real):
                t0 = time.perf_counter()
                ix.add_vectors([f"item{i}" for i in range(s, s + len(vecs))], vecs)
                write_s += time.perf_counter() - t0
            del vecs
        size_bytes = path.stat().st_size
        rss_before_open = peak_mb()
        with Index.open(path, enc, approximate=False) as ix:
            t0 = time.perf_counter()
            ix.search(qtexts[0], top_k=10)
            first_ms = (time.perf_counter() - t0) * 1e3
            qv = enc.embed(qtexts[:queries])
            with_embed, search_only = [], []
            for i in range(queries):
                t0 = time.perf_counter()
                ix.search(qtexts[i], top_k=10)
                with_embed.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                ix.search(qv[i], top_k=10)
                search_only.append(time.perf_counter() - t0)
            exact = [[h.id for h in ix.search(qv[i], top_k=10)] for i in range(queries)]
            scanned = len(ix) >= index_mod.SCAN_MIN_ITEMS
            index_mod.SCAN_MIN_ITEMS, min_items = 10**12, index_mod.SCAN_MIN_ITEMS  # float32 throughout
            float_only, float_ids = [], []
            for i in range(queries):
                t0 = time.perf_counter()
                float_ids.append([h.id for h in ix.search(qv[i], top_k=10)])
                float_only.append(time.perf_counter() - t0)
            index_mod.SCAN_MIN_ITEMS = min_items
        out = {"items": size, "write_items_per_s": round(size / write_s, 1), "write_s": round(write_s, 2),
               "file_bytes_per_item": round(size_bytes / size, 1), "file_mb": round(size_bytes / 1e6, 1),
               "first_search_ms": round(first_ms, 1),
               "query_with_embedding_ms": {"p50": ms(with_embed, 50), "p99": ms(with_embed, 99)},
               "search_only_ms": {"p50": ms(search_only, 50), "p99": ms(search_only, 99)},
               "int8_first_pass": scanned,
               "search_only_float32_scoring_ms": {"p50": ms(float_only, 50), "p99": ms(float_only, 99)},
               "same_hits_as_float32_scoring": exact == float_ids,
               "peak_rss_mb_exact": round(peak_mb(), 1), "peak_rss_mb_before_open": round(rss_before_open, 1)}
        if _ann.available():
            with Index.open(path, enc, approximate=True) as ix:
                ix.search(qv[0], top_k=10, approximate=False)  # vectors loaded: time the graph alone
                t0 = time.perf_counter()
                ix.search(qv[0], top_k=10)  # builds the graph and writes the sidecar
                build_s = time.perf_counter() - t0
            sidecar = _ann.sidecar_path(path).stat().st_size
            with Index.open(path, enc, approximate=True) as ix:
                t0 = time.perf_counter()
                ix.search(qv[0], top_k=10)  # vectors + sidecar
                first_approx_ms = (time.perf_counter() - t0) * 1e3
                approx_only, approx_embed, found = [], [], []
                for i in range(queries):
                    t0 = time.perf_counter()
                    ix.search(qtexts[i], top_k=10)
                    approx_embed.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    hits = ix.search(qv[i], top_k=10)
                    approx_only.append(time.perf_counter() - t0)
                    found.append(len({h.id for h in hits} & set(exact[i])) / max(len(exact[i]), 1))
            out["approximate"] = {
                "recall_at_10_vs_exact": round(float(np.mean(found)), 4), "build_s": round(build_s, 2),
                "sidecar_bytes_per_item": round(sidecar / size, 1), "first_search_ms": round(first_approx_ms, 1),
                "query_with_embedding_ms": {"p50": ms(approx_embed, 50), "p99": ms(approx_embed, 99)},
                "search_only_ms": {"p50": ms(approx_only, 50), "p99": ms(approx_only, 99)}}
    out["peak_rss_mb"] = round(peak_mb(), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--real", type=int, default=100_000, help="real texts embedded (recall is measured on them)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_index.json")
    ap.add_argument("--cache", type=Path, default=ROOT / "runs" / "bench-index" / "vectors.npz")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    sys.path.insert(0, str(ROOT))
    if args.worker:
        print("@@RESULT@@" + json.dumps(worker(args.worker, args.cache, args.queries, args.threads)), flush=True)
        return
    import numpy as np
    from bench_app import command_line, cpu_info

    from lwx_edge import Encoder
    from lwx_edge.atomic import write_json_atomic, write_text_atomic
    from lwx_edge.index import Index, dequantize, quantize

    command = command_line(__file__)
    enc = Encoder.load(threads=args.threads)
    if not args.cache.is_file():
        texts = real_texts(args.real + args.queries)
        queries, texts = texts[:args.queries], texts[args.queries:]
        print(f"embedding {len(texts):,} texts for the benchmark (cached in {args.cache}) ...", flush=True)
        vecs = enc.embed(texts, batch_size=64, progress=True, truncation="ignore")
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(args.cache, vectors=vecs, queries=json.dumps(queries, ensure_ascii=False),
                 texts=json.dumps(texts[:10_000], ensure_ascii=False))
    data = np.load(args.cache)
    real, queries = data["vectors"], json.loads(str(data["queries"]))
    qv = enc.embed(queries)

    # recall@10 of the int8 storage against exact float32 search, on the real vectors
    exact = np.argsort(-(real @ qv.T).T, axis=1)[:, :10]
    q8, s8 = quantize(real)
    approx = np.argsort(-(dequantize(q8, s8) @ qv.T).T, axis=1)[:, :10]
    recall = float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact)]))
    print(f"recall@10 of int8 storage vs float32 ({len(real):,} items, {len(queries)} queries): {recall:.4f}",
          flush=True)

    # Index.add throughput, embedding included
    texts = json.loads(str(data["texts"]))
    with tempfile.TemporaryDirectory(dir=args.cache.parent) as tmp, \
            Index.open(Path(tmp) / "add.lwxindex", enc, create=True) as ix:
        t0 = time.perf_counter()
        ix.add([f"t{i}" for i in range(len(texts))], texts, progress=False)
        add_rate = len(texts) / (time.perf_counter() - t0)
    print(f"Index.add with embedding: {add_rate:.0f} items/s ({len(texts):,} texts)", flush=True)

    sizes = []
    for size in args.sizes:
        cmd = [sys.executable, __file__, "--worker", str(size), "--cache", str(args.cache), "--queries",
               str(args.queries), "--threads", str(args.threads)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        line = [x for x in p.stdout.splitlines() if x.startswith("@@RESULT@@")]
        if p.returncode or not line:
            raise SystemExit(f"size {size}: worker failed\n{p.stderr[-3000:]}")
        r = json.loads(line[0][len("@@RESULT@@"):])
        sizes.append(r)
        a = r.get("approximate")
        print(f"{size:>9,} items: write {r['write_items_per_s']:,.0f}/s, {r['file_bytes_per_item']:.0f} B/item, "
              f"query p50 {r['query_with_embedding_ms']['p50']:.2f} ms (search alone "
              f"{r['search_only_ms']['p50']:.2f}), p99 {r['query_with_embedding_ms']['p99']:.2f} ms, "
              f"peak RSS {r['peak_rss_mb']:.0f} MB" + (
                  f"; approximate: recall@10 {a['recall_at_10_vs_exact']:.4f}, search alone p50 "
                  f"{a['search_only_ms']['p50']:.2f} ms, build {a['build_s']:.1f} s" if a else
                  "; approximate: not measured (pip install 'lwx-edge[ann]')"), flush=True)
    res = {"command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": cpu_info(), "threads": args.threads, "model": "default (int8, ONNX)",
           "recall_at_10_int8_vs_fp32": round(recall, 4), "recall_items": len(real), "recall_queries": len(queries),
           "add_with_embedding_items_per_s": round(add_rate, 1), "sizes": sizes,
           "notes": ["vectors beyond the real ones are seeded perturbations of them (speed and size only)",
                     "query_with_embedding: Index.search(text) -- the query is embedded each time; "
                     "search_only: Index.search(vector)", "texts are not stored in the size runs",
                     "exact columns: approximate=False; approximate: usearch HNSW graph (connectivity 16, "
                     "expansion 128 add / 256 search), 2k+20 candidates rescored exactly; its recall@10 is against the "
                     "exact int8 search of the same index; build_s: the first approximate search "
                     "(usearch adds on all cores; the graph is built and its sidecar written)"]}
    write_json_atomic(args.out, res)
    rows = ["| items | write items/s | bytes per item | query p50 / p99 ms (embedding included) | search alone p50 ms "
            "| search alone, float32 scoring only, p50 ms | first search ms | approx. recall@10 | approx. query p50 / p99 ms (embedding included) "
            "| approx. search alone p50 / p99 ms | graph build s | graph bytes per item | peak RSS MB |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sizes:
        a = r.get("approximate")
        approx = (f"{a['recall_at_10_vs_exact']:.4f} | {a['query_with_embedding_ms']['p50']:.2f} / "
                  f"{a['query_with_embedding_ms']['p99']:.2f} | {a['search_only_ms']['p50']:.2f} / "
                  f"{a['search_only_ms']['p99']:.2f} | {a['build_s']:.1f} | {a['sidecar_bytes_per_item']:.0f}"
                  if a else " | ".join(["-"] * 5))
        rows.append(f"| {r['items']:,} | {r['write_items_per_s']:,.0f} | {r['file_bytes_per_item']:.0f} | "
                    f"{r['query_with_embedding_ms']['p50']:.2f} / {r['query_with_embedding_ms']['p99']:.2f} | "
                    f"{r['search_only_ms']['p50']:.2f} | {r['search_only_float32_scoring_ms']['p50']:.2f}"
                    f"{'' if r['same_hits_as_float32_scoring'] else ' (other hits!)'} | {r['first_search_ms']:.0f} | "
                    f"{approx} | "
                    f"{r['peak_rss_mb']:.0f} |")
    from bench_app import simd_text

    m = res["machine"]
    md = (f"Command: `{command}`\n\nMachine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; "
          f"{args.threads} thread(s). Recall@10 of the int8 storage against float32 exact search: {recall:.4f} "
          f"({len(real):,} real vectors, {len(queries)} queries). Index.add with embedding: {add_rate:,.0f} items/s."
          "\n\n" + "\n".join(rows) + "\n")
    write_text_atomic(args.out.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
