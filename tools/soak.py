"""Soak test (issue 37): hammer the runtime from several processes and threads for N minutes and report native
crashes, hangs, vectors that changed, errors and resident memory.

    python tools/soak.py --minutes 10 --processes 2 --threads 3 --out benchmarks/soak_epyc.json

Each worker process runs ``--threads`` threads that pick, at random, one of: load an encoder (ONNX or ExecuTorch,
with and without ``threads=``, the load ExecuTorch's process-wide thread pool used to crash on), embed a random
batch and compare every vector with the reference vector of its text (computed once, one text per call: the same
text must get the same vector in any batch, on any backend: 1 - cos <= 1e-6), write to a shared index (add,
upsert, delete, each a transaction) or read it (search exact and approximate, get, info). The parent watches
each worker: a worker killed by a signal is a crash, one whose heartbeat stops for ``--hang`` seconds is a hang
(killed and counted); either way a new worker takes its place until the time is up. Resident memory (VmRSS) is
sampled every few seconds per worker; the report gives each worker's first and last samples and the largest.
Not part of the unit suite: it runs for minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from bench_runtime import rss_mb  # noqa: E402 - this process's VmRSS, MB

TEXTS = [
    "Where is the nearest train station?", "Où est la gare la plus proche ?", "Wo ist der nächste Bahnhof?",
    "¿Dónde está la estación de tren más cercana?", "Dov'è la stazione più vicina?", "renew my passport",
    "Le rendez-vous chez le dentiste est jeudi.", "Ich habe meinen Schlüssel verloren.", "pay the bills",
    "Vorrei un caffè, per favore.", "¿Puedes ayudarme con esto?", "a text editor for programmers",
    "un éditeur de texte pour les programmeurs", "ein kleines Werkzeug zum Umbenennen von Dateien",
    "What's the wifi password?", "😀 emoji and mixed scripts: Ελληνικά, русский, 日本語",
    "Beaucoup de bruit pour rien, " * 12, "x", "Do you want to come with us tonight?",
]


# ------------------------------------------------------------------------------------------------ worker

def worker(args) -> None:
    """One worker process: ``args.threads`` threads doing random operations until ``args.until``; a heartbeat
    line (JSON counts and RSS) every ``beat`` seconds on stdout."""
    import numpy as np

    from lwx_edge import Encoder, Index
    from lwx_edge.errors import LwxError

    rng0 = random.Random(args.seed)
    backends = [b for b in args.backends.split(",") if b]
    refs = {b: np.concatenate([Encoder.load(backend=b).embed([t]) for t in TEXTS]) for b in backends}
    encoders: list = [Encoder.load(backend=backends[0])]
    lock = threading.Lock()
    counts = {"loads": 0, "embeds": 0, "vectors": 0, "changed": 0, "index_writes": 0, "index_reads": 0,
              "errors": 0, "unexpected": 0}
    errors: list[str] = []
    worst = [0.0]

    def bump(key: str, n: int = 1) -> None:
        with lock:
            counts[key] += n

    def op_load(rng):
        b = rng.choice(backends)
        enc = Encoder.load(backend=b, threads=rng.choice([None, 1, 2, 4]))
        with lock:
            encoders.append(enc)
            if len(encoders) > 4:
                encoders.pop(rng.randrange(len(encoders) - 1))
        bump("loads")

    def op_embed(rng):
        with lock:
            enc = rng.choice(encoders)
        idx = [rng.randrange(len(TEXTS)) for _ in range(rng.randint(1, 40))]
        v = enc.embed([TEXTS[i] for i in idx], batch_size=rng.choice([1, 3, 8, 32]))
        gap = float((1 - (v * refs[enc.backend_name][idx]).sum(1)).max())
        with lock:
            worst[0] = max(worst[0], gap)
        bump("embeds")
        bump("vectors", len(idx))
        if gap > 1e-6:
            bump("changed")

    def op_index_write(rng):
        with lock:
            enc = rng.choice(encoders)
        with Index.open(args.index, enc, create=True) as index:
            ids = [f"{os.getpid()}-{rng.randrange(10**9)}" for _ in range(rng.randint(1, 20))]
            index.add(ids, [rng.choice(TEXTS) for _ in ids], [{"pid": os.getpid()}] * len(ids))
            if rng.random() < 0.3:
                index.upsert(ids[:1], [rng.choice(TEXTS)])
            if rng.random() < 0.3:
                index.delete(ids[-1:])
        bump("index_writes")

    def op_index_read(rng):
        with lock:
            enc = rng.choice(encoders)
        if not Path(args.index).exists():
            return
        with Index.open(args.index, enc) as index:
            index.search(rng.choice(TEXTS), top_k=5, approximate=rng.random() < 0.5)
            index.search(rng.choice(TEXTS), top_k=3, where={"pid": os.getpid()})
            index.info()
        bump("index_reads")

    ops = [(op_load, 1), (op_embed, 6), (op_index_write, 2), (op_index_read, 3)]
    population = [op for op, w in ops for _ in range(w)]

    def loop(seed: int) -> None:
        rng = random.Random(seed)
        while time.time() < args.until:
            op = rng.choice(population)
            try:
                op(rng)
            except LwxError as e:  # expected kinds of refusal (a busy index, say) are counted, not fatal
                bump("errors")
                with lock:
                    if len(errors) < 20:
                        errors.append(f"{op.__name__}: {type(e).__name__}: {e}")
            except Exception as e:  # a raw exception is a defect: counted, sampled, and the thread goes on
                bump("unexpected")
                with lock:
                    if len(errors) < 20:
                        errors.append(f"UNEXPECTED {op.__name__}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=loop, args=(rng0.randrange(10**9),), daemon=True)
               for _ in range(args.threads)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        with lock:
            beat = {"t": time.time(), "rss_mb": round(rss_mb(), 1), "worst_1_minus_cos": worst[0], **counts,
                    "error_samples": errors[:5]}
        print(json.dumps(beat), flush=True)
        time.sleep(args.beat)
    with lock:
        print(json.dumps({"t": time.time(), "rss_mb": round(rss_mb(), 1), "worst_1_minus_cos": worst[0],
                          **counts, "error_samples": errors[:5], "done": True}), flush=True)


# ------------------------------------------------------------------------------------------------ parent

class Watched:
    """A worker process, its heartbeats read by a thread."""

    def __init__(self, cmd: list[str], slot: int):
        self.slot, self.started = slot, time.time()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.beats: list[dict] = []
        self.last = time.time()
        self.stderr_tail = ""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.beats.append(json.loads(line))
                self.last = time.time()
            except json.JSONDecodeError:
                pass

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + line)[-2000:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--threads", type=int, default=3, help="threads per worker process")
    ap.add_argument("--backends", default="onnx,executorch")
    ap.add_argument("--hang", type=float, default=120.0, help="seconds without a heartbeat that count as a hang")
    ap.add_argument("--beat", type=float, default=5.0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--index", help=argparse.SUPPRESS)
    ap.add_argument("--until", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a)
        return

    until = time.time() + 60 * a.minutes
    tmp = tempfile.mkdtemp(prefix="lwx-soak-")
    index = os.path.join(tmp, "soak.lwxindex")
    crashes, hangs, finished, seed = [], [], [], 0

    def spawn(slot: int) -> Watched:
        nonlocal seed
        seed += 1
        cmd = [sys.executable, __file__, "--worker", "--index", index, "--until", str(until), "--seed", str(seed),
               "--threads", str(a.threads), "--backends", a.backends, "--beat", str(a.beat)]
        return Watched(cmd, slot)

    live = [spawn(i) for i in range(a.processes)]
    while live:
        time.sleep(1)
        for w in list(live):
            rc = w.proc.poll()
            if rc is None and time.time() - w.last > a.hang:
                os.killpg(w.proc.pid, signal.SIGKILL)
                w.proc.wait()
                hangs.append({"slot": w.slot, "after_s": round(time.time() - w.started), "stderr": w.stderr_tail})
                rc = "hang"
            if rc is None:
                continue
            live.remove(w)
            if rc != "hang":
                if rc < 0 or rc > 1:
                    crashes.append({"slot": w.slot, "returncode": rc, "after_s": round(time.time() - w.started),
                                    "signal": signal.Signals(-rc).name if rc < 0 else None,
                                    "stderr": w.stderr_tail})
                elif rc == 1:
                    crashes.append({"slot": w.slot, "returncode": rc, "python_error": True,
                                    "stderr": w.stderr_tail})
            finished.append(w)
            if time.time() < until - 10:
                live.append(spawn(w.slot))

    final = [w.beats[-1] for w in finished if w.beats]
    keys = ("loads", "embeds", "vectors", "changed", "index_writes", "index_reads", "errors", "unexpected")
    report = {
        "command": "python tools/soak.py " + " ".join(sys.argv[1:]),
        "cpu": platform.processor() or _cpu_model(), "cores": os.cpu_count(),
        "minutes": a.minutes, "processes": a.processes, "threads_per_process": a.threads,
        "backends": a.backends.split(","), "crashes": crashes, "hangs": hangs,
        "workers_started": len(finished),
        "totals": {k: sum(b.get(k, 0) for b in final) for k in keys},
        "worst_1_minus_cos": max((b.get("worst_1_minus_cos", 0.0) for b in final), default=None),
        # per worker: RSS at 0, 25, 50, 75 and 100% of its run (flat = the second half grows little)
        "rss_mb": [{"at_quarters": [w.beats[min(len(w.beats) - 1, q * len(w.beats) // 4)]["rss_mb"]
                                    for q in range(5)],
                    "max": max(b["rss_mb"] for b in w.beats), "beats": len(w.beats)} for w in finished if w.beats],
        "error_samples": sorted({e for b in final for e in b.get("error_samples", [])})[:10],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n", encoding="utf-8")
    totals = report["totals"]
    sys.exit(1 if crashes or hangs or totals["unexpected"] or totals["changed"] else 0)


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


if __name__ == "__main__":
    main()
