"""SDK overhead benchmark (issue #5): ``Encoder.embed`` next to the bare runtime on the same batches.

    python tools/bench_sdk.py BUNDLE --out benchmarks/bench_sdk.json

For each exported artefact of the bundle (ONNX and ExecuTorch, int8 and fp32), at ``--threads`` (default 1):

* ``bare``: the runtime alone (``backend.run``) on batches that were tokenised, length-sorted and padded
  beforehand -- the floor any wrapper can reach;
* ``sdk``: ``Encoder.embed(texts, batch_size)`` end to end: normalisation, SentencePiece, length sort,
  padding, the runtime, order restore and L2 normalisation;
* ``overhead`` = sdk time / bare time - 1, and the tokenizer's share of it.

Texts: the export probe set (short and long sentences in five languages) cycled to ``--n`` texts. Each
measurement is the best of ``--repeats`` passes over all texts (sentences/s), in one process per artefact.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTEFACTS = [("onnx", "int8"), ("onnx", "fp32"), ("executorch", "int8"), ("executorch", "fp32")]


def texts(n: int) -> list[str]:
    from lwx_edge.probe import probe_texts

    base = [r["text"] for r in probe_texts()]
    return [base[i % len(base)] for i in range(n)]


def best_of(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def worker(bundle: Path, backend: str, precision: str, threads: int, n: int, batch: int, repeats: int) -> dict:
    import numpy as np

    from lwx_edge import Encoder
    from lwx_edge.tokenizer import Tokenizer

    enc = Encoder.load(bundle, backend=backend, precision=precision, threads=threads)
    xs = texts(n)
    ids = enc.tokenizer.encode(xs).ids
    order = np.argsort([len(x) for x in ids], kind="stable")
    batches = [Tokenizer.pad([ids[i] for i in order[s:s + batch]]) for s in range(0, n, batch)]

    def bare():
        for b in batches:
            enc.backend.run(*b)

    t_bare = best_of(bare, repeats)
    t_tok = best_of(lambda: enc.tokenizer.encode(xs), repeats)
    t_sdk = best_of(lambda: enc.embed(xs, batch_size=batch, truncation="ignore"), repeats)
    return {"artifact": enc.artifact, "backend": backend, "precision": precision, "threads": threads,
            "texts": n, "batch": batch, "mean_tokens": float(np.mean([len(x) for x in ids])),
            "bare_sent_per_s": round(n / t_bare, 1), "sdk_sent_per_s": round(n / t_sdk, 1),
            "tokenize_sent_per_s": round(n / t_tok, 1),
            "overhead_pct": round(100 * (t_sdk / t_bare - 1), 1),
            "tokenizer_share_of_sdk_pct": round(100 * t_tok / t_sdk, 1)}


def markdown(res: dict) -> str:
    rows = ["| artefact | threads | batch | bare runtime (sent/s) | SDK embed (sent/s) | SDK overhead | tokenizer share |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["results"]:
        rows.append(f"| {r['artifact']} | {r['threads']} | {r['batch']} | {r['bare_sent_per_s']:,.0f} | "
                    f"{r['sdk_sent_per_s']:,.0f} | {r['overhead_pct']:+.1f}% | {r['tokenizer_share_of_sdk_pct']:.1f}% |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path, help="exported bundle, or 'default' for the shipped model")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_sdk.json")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--n", type=int, default=512, help="texts per pass")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if str(a.bundle) == "default" and not a.bundle.exists():
        from lwx_edge.encoder import default_model_path

        a.bundle = default_model_path()
    if a.worker:
        print(json.dumps(worker(a.bundle, *a.worker, a.threads, a.n, a.batch, a.repeats)))
        return
    results = []
    for backend, precision in ARTEFACTS:
        name = {"onnx": "model{}.onnx", "executorch": "model{}.pte"}[backend].format(".int8" if precision == "int8" else "")
        if not (a.bundle / name).is_file():
            print(f"skip {name}: not in the bundle", file=sys.stderr)
            continue
        env = {**os.environ, "OMP_NUM_THREADS": str(a.threads)}
        r = subprocess.run([sys.executable, __file__, str(a.bundle), "--threads", str(a.threads), "--batch",
                            str(a.batch), "--n", str(a.n), "--repeats", str(a.repeats), "--worker", backend, precision],
                           capture_output=True, text=True, env=env)
        if r.returncode:
            sys.exit(f"{name}: benchmark failed\n{r.stderr[-2000:]}")
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), file=sys.stderr)
    from bench_app import cpu_info

    res = {"bundle": str(a.bundle), "machine": {**cpu_info(), "python": platform.python_version()},
           "command": "python tools/bench_sdk.py " + " ".join(sys.argv[1:]), "results": results}
    sys.path.insert(0, str(ROOT))
    from lwx_edge.atomic import write_json_atomic, write_text_atomic

    write_json_atomic(a.out, res)
    write_text_atomic(a.out.with_suffix(".md"), markdown(res) + "\n")
    print(markdown(res))


if __name__ == "__main__":
    main()
