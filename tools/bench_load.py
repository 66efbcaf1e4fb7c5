"""Load time and memory of each runtime (issue 14): what an app pays before its first vector.

    python tools/bench_load.py --out benchmarks/bench_load.json        # the shipped default, 1 thread

Every measurement is a fresh Python process (``sys.executable``), so nothing is cached in-process: it imports
``lwx_edge``, loads the default bundle with one backend (``Encoder.load(backend=..., threads=1)``) and embeds one
sentence. Reported per backend, median over ``--repeats`` processes (the first, run right after the page cache
was dropped when ``/proc/sys/vm/drop_caches`` is writable, is kept apart as "cold"): seconds to import
``lwx_edge``, to load (bundle check, tokenizer, runtime import, program load), to the first vector, and the
process's peak RSS. A second probe times the imports a backend cannot do without, alone in a fresh process
(``torch``, ``executorch.runtime``, ``onnxruntime``): the part of the load that is the runtime's own, not ours.
The JSON records the CPU model and its SIMD flags.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from bench_app import command_line, cpu_info, simd_text  # noqa: E402

PROBE = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from lwx_edge import Encoder
t1 = time.perf_counter()
enc = Encoder.load({bundle!r}, backend={backend!r}, threads=1)
t2 = time.perf_counter()
enc.embed(["Where is the train station?"])
t3 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t1, "first_vector_s": t3 - t2, "total_s": t3 - t0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch_imported": "torch" in sys.modules}}))
"""

IMPORTS = r"""
import json, resource, time
out = {{}}
for name in {modules!r}:
    t = time.perf_counter()
    __import__(name)
    out[name] = time.perf_counter() - t
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

RUNTIME_IMPORTS = {"executorch": ["torch", "executorch.runtime", "executorch.kernels.quantized"],
                   "onnx": ["onnxruntime"]}


def drop_page_cache() -> bool:
    """Drop the page cache (root only) so the next load reads its files from disk; False if not allowed."""
    try:
        subprocess.run(["sync"], check=False)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def probe(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"probe failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", default="default")
    ap.add_argument("--backends", nargs="+", default=["onnx", "executorch"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_load.json")
    args = ap.parse_args()

    results = {}
    for backend in args.backends:
        cold_dropped = drop_page_cache()
        cold = probe(PROBE.format(bundle=args.bundle, backend=backend))
        warm = [probe(PROBE.format(bundle=args.bundle, backend=backend)) for _ in range(args.repeats)]
        imports = [probe(IMPORTS.format(modules=RUNTIME_IMPORTS[backend])) for _ in range(args.repeats)]
        results[backend] = {
            "cold": {**cold, "page_cache_dropped": cold_dropped},
            "warm_median": {k: statistics.median(r[k] for r in warm) for k in warm[0] if k != "torch_imported"},
            "torch_imported": warm[0]["torch_imported"],
            "runtime_imports_median_s": {k: statistics.median(r[k] for r in imports) for k in imports[0]},
        }
        print(backend, json.dumps(results[backend]["warm_median"]), flush=True)
    command = command_line(__file__)
    report = {"command": command, "machine": cpu_info(), "bundle": args.bundle, "repeats": args.repeats,
              "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(args.out)
    m = report["machine"]
    lines = [f"Command: `{command}`", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; fresh process per row, 1 thread.",
             "", "| backend | import lwx_edge s | load s | first vector s | total s | peak RSS MB | cold total s "
             "| cold RSS MB | runtime's own imports s |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for backend, r in results.items():
        w, c = r["warm_median"], r["cold"]
        own = ", ".join(f"{k} {v:.2f}" for k, v in r["runtime_imports_median_s"].items() if k != "peak_rss_mb")
        lines.append(f"| {backend} | {w['import_s']:.2f} | {w['load_s']:.2f} | {w['first_vector_s']:.3f} | "
                     f"{w['total_s']:.2f} | {w['peak_rss_mb']:.0f} | {c['total_s']:.2f} | {c['peak_rss_mb']:.0f} | "
                     f"{own} (RSS {r['runtime_imports_median_s']['peak_rss_mb']:.0f} MB) |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
