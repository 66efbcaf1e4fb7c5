"""Logistic vs MLP head on small data (issue 18): which head should ``fit`` use by default?

    python tools/compare_heads.py --out benchmarks/compare_heads.json      # also writes benchmarks/compare_heads.md

With the shipped default encoder (``Encoder.load()``: int8 ONNX, no torch), both heads of ``lwx_edge.heads``
with their default hyper-parameters and search (``LogisticHead``: C picked on a stratified held-out slice,
then refitted on everything; ``MLPHead``: early stopping on a stratified 10% slice) are fitted on ``k``
English examples per class, for several ``k`` and seeds (each seed draws other examples and seeds the head),
and scored by balanced accuracy (mean recall over the classes) in English and zero-shot on French, German,
Spanish and Italian. Two labelled sets, neither a public evaluation set:

* ``ddtp``: Debian package descriptions (short + long) labelled with their Debian section, the 8 sections of
  ``lwx_edge.evaluate.SECTIONS``. Training examples are drawn from a seeded pool of English documents of the
  **train** split; every language is scored on a fixed, seeded sample of the **dev** split (the test split is
  never read).
* ``intents``: ``examples/intents.*.csv`` (4 intents; 10 English examples per intent, 3 per intent in each
  other language): ``k`` English examples per intent are drawn, the other ``10 - k`` are the English test, the
  other languages' files are the zero-shot test. Too small for k >= 10, so it has its own ``--intent-ks``.

Fit times are the wall time of ``head.fit`` on the embeddings (one BLAS thread, as the heads set): indicative
only when the CPU is shared. Every text is embedded once, before any fit.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("en", "fr", "de", "es", "it")
HEADS = ("logistic", "mlp")


def ddtp_data(corpus: Path, pool_per_class: int, test_per_class: int, seed: int = 0) -> dict:
    """English training pool (train split) and per-language test sets (dev split), per section, seeded."""
    from lwx_edge.evaluate import section_docs

    rng = np.random.default_rng(seed)

    def sample(texts, labels, per_class):
        texts, labels = np.asarray(texts, dtype=object), np.asarray(labels)
        keep = []
        for c in sorted(set(labels.tolist())):
            idx = np.flatnonzero(labels == c)
            keep.extend(rng.permutation(idx)[:per_class].tolist())
        keep = sorted(keep)
        return texts[keep].tolist(), labels[keep].tolist()

    pool = sample(*section_docs(corpus / "train.docs.jsonl", "en"), pool_per_class)
    tests = {lang: sample(*section_docs(corpus / "dev.docs.jsonl", lang), test_per_class) for lang in LANGS}
    return {"pool": pool, "tests": tests, "test_from_pool": False}


def intents_data(examples: Path) -> dict:
    """English examples (drawn from, the rest is the English test) and the other languages' files."""
    from lwx_edge.heads import read_labelled

    files = {lang: read_labelled(examples / f"intents.{lang}.csv") for lang in LANGS}
    return {"pool": (files["en"].texts, files["en"].labels),
            "tests": {lang: (f.texts, f.labels) for lang, f in files.items() if lang != "en"},
            "test_from_pool": True}


def draw(labels: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(k indices per class, the other indices)."""
    pick = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        if len(idx) < k:
            raise SystemExit(f"class {c!r} has {len(idx)} examples, fewer than k={k}")
        pick.extend(rng.permutation(idx)[:k].tolist())
    pick = np.asarray(sorted(pick))
    return pick, np.setdiff1d(np.arange(len(labels)), pick)


def mean_std(xs) -> dict:
    xs = np.asarray(xs, dtype=np.float64)
    return {"mean": round(float(xs.mean()), 4), "std": round(float(xs.std(ddof=1)) if len(xs) > 1 else 0.0, 4),
            "n": int(len(xs))}


def run_dataset(name: str, data: dict, enc, ks, seeds: int, log) -> dict:  # noqa: C901 - one linear loop
    """Embed every text once, then fit both heads for every (k, seed); per k and head: mean ± std."""
    import warnings

    from lwx_edge.heads import make_head
    from lwx_edge.heads.base import FewExamplesWarning, balanced_accuracy

    t0 = time.perf_counter()
    pool_t, pool_y = data["pool"]
    Xpool = enc.embed(pool_t, truncation="ignore")
    ypool = np.asarray(pool_y)
    tests = {lang: (enc.embed(t, truncation="ignore"), np.asarray(y)) for lang, (t, y) in data["tests"].items()}
    n_texts = len(pool_t) + sum(len(t) for t, _ in data["tests"].values())
    embed_s = time.perf_counter() - t0
    log(f"{name}: embedded {n_texts} texts in {embed_s:.1f} s")
    classes = sorted(set(pool_y))
    out = {"classes": classes, "pool_examples": len(pool_t), "embedded_texts": n_texts,
           "embed_seconds": round(embed_s, 1),
           "test_examples": {lang: int(len(y)) for lang, (_, y) in tests.items()}, "k": {}}
    x_langs = [lang for lang in tests if lang != "en"]
    for k in ks:
        per_head = {h: {"en": [], **{lang: [] for lang in x_langs}, "x_avg": [], "fit_s": []} for h in HEADS}
        for seed in range(seeds):
            rng = np.random.default_rng(1000 * k + seed)
            tr, rest = draw(ypool, k, rng)
            evals = dict(tests)
            if data["test_from_pool"]:
                evals["en"] = (Xpool[rest], ypool[rest])
            for h in HEADS:
                head = make_head(h, random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FewExamplesWarning)
                    t1 = time.perf_counter()
                    head.fit(Xpool[tr], ypool[tr])
                    per_head[h]["fit_s"].append(time.perf_counter() - t1)
                for lang, (X, y) in evals.items():
                    per_head[h][lang].append(balanced_accuracy(y, head.predict(X)))
                per_head[h]["x_avg"].append(float(np.mean([per_head[h][lang][-1] for lang in x_langs])))
        res = {h: {key: mean_std(v) for key, v in r.items()} for h, r in per_head.items()}
        res["paired"] = {"seeds": seeds, "en_test_examples": int(len(evals["en"][1]))}
        for metric in ("en", "x_avg"):  # per seed (same examples for both heads): who scored higher
            pairs = list(zip(per_head["logistic"][metric], per_head["mlp"][metric]))
            res["paired"][f"logistic_better_{metric}"] = sum(a > b for a, b in pairs)
            res["paired"][f"mlp_better_{metric}"] = sum(b > a for a, b in pairs)
        out["k"][str(k)] = res
        log(f"{name} k={k}: " + "; ".join(
            f"{h} en {res[h]['en']['mean']:.3f}±{res[h]['en']['std']:.3f} "
            f"x {res[h]['x_avg']['mean']:.3f}±{res[h]['x_avg']['std']:.3f} fit {res[h]['fit_s']['mean']:.2f}s"
            for h in HEADS))
    return out


def verdict(results: dict) -> dict:
    """Which head wins more (dataset, k, metric) cells on the mean; the head with more wins is the default."""
    cells = {"logistic": 0, "mlp": 0, "tie": 0}
    for ds in results.values():
        for res in ds["k"].values():
            for metric in ("en", "x_avg"):
                a, b = res["logistic"][metric]["mean"], res["mlp"][metric]["mean"]
                cells["logistic" if a > b else "mlp" if b > a else "tie"] += 1
    winner = "logistic" if cells["logistic"] > cells["mlp"] else "mlp" if cells["mlp"] > cells["logistic"] else "tie"
    return {"cells_won": cells, "winner": winner}


def pm(s: dict) -> str:
    return f"{s['mean']:.3f} ± {s['std']:.3f}"


def markdown(res: dict) -> str:
    m = res["machine"]
    from bench_app import simd_text

    lines = [f"Command: `{res['command']}`", "",
             f"Encoder: {res['encoder']}. Machine: {m['cpu']}, {m['cores']} cores, SIMD {simd_text(m)}; "
             f"Python {res['python']}; {res['seeds']} seeds per k.", "",
             f"**Fit times are indicative only**: {res['note']}", "",
             "Balanced accuracy (mean recall over classes), mean ± std over seeds; heads fitted on k English "
             "examples per class; en→X = mean of fr/de/es/it (zero-shot). Fit time: `head.fit` on embeddings.", ""]
    for name, ds in res["results"].items():
        x_langs = [lang for lang in ds["test_examples"] if lang != "en"]
        lines += [f"### {name}: {len(ds['classes'])} classes; {res['datasets'][name]}", "",
                  "| k | head | en | en→X avg | " + " | ".join(x_langs)
                  + " | fit (s) | seeds won, logistic:mlp (en; en→X) |",
                  "|---:|---|---:|---:|" + "---:|" * len(x_langs) + "---:|---:|"]
        for k, r in ds["k"].items():
            for h in HEADS:
                p = r["paired"]
                wins = (f"{p['logistic_better_en']}:{p['mlp_better_en']}; "
                        f"{p['logistic_better_x_avg']}:{p['mlp_better_x_avg']}") if h == "logistic" else ""
                lines.append(f"| {k} | {h} | {pm(r[h]['en'])} | {pm(r[h]['x_avg'])} | "
                             + " | ".join(f"{r[h][lang]['mean']:.3f}" for lang in x_langs)
                             + f" | {r[h]['fit_s']['mean']:.2f} | {wins} |")
        en_n = ", ".join(f"k={k}: {r['paired']['en_test_examples']}" for k, r in ds["k"].items())
        lines += ["", "Test examples: " + ", ".join(f"{lang} {n}" for lang, n in ds["test_examples"].items())
                  + f" (en: {en_n}). Seeds won: on how many seeds (same draw for both heads) each head scored "
                  "strictly higher; the rest are ties.", ""]
    v = res["verdict"]
    lines += [f"Verdict: (dataset, k, metric) cells won on the mean: {v['cells_won']}; winner: **{v['winner']}**.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", default="default")
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16, 32], help="examples per class (ddtp)")
    ap.add_argument("--intent-ks", type=int, nargs="+", default=[2, 4, 8], help="examples per class (intents)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--pool-per-class", type=int, default=96, help="ddtp: English train documents drawn from")
    ap.add_argument("--test-per-class", type=int, default=40, help="ddtp: dev documents per section and language")
    ap.add_argument("--corpus", default=str(ROOT / "data" / "corpus" / "ddtp"))
    ap.add_argument("--examples", default=str(ROOT / "examples"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "tools"))
    from bench_app import cpu_info

    from lwx_edge import Encoder

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    enc = Encoder.load(None if args.bundle == "default" else args.bundle, threads=args.threads)
    results = {
        "ddtp": run_dataset("ddtp", ddtp_data(Path(args.corpus), args.pool_per_class, args.test_per_class),
                            enc, args.ks, args.seeds, log),
        "intents": run_dataset("intents", intents_data(Path(args.examples)), enc, args.intent_ks, args.seeds, log),
    }
    argv = " ".join(sys.argv[1:]).replace(str(ROOT) + "/", "")
    res = {"command": f"python tools/compare_heads.py {argv}".strip(),
           "encoder": f"{args.bundle} ({enc.artifact}, {args.threads} thread(s))",
           "machine": cpu_info(), "python": platform.python_version(), "seeds": args.seeds,
           "datasets": {"ddtp": f"English train-split documents (pool of {args.pool_per_class} per section), "
                                f"scored on up to {args.test_per_class} dev-split documents per section and language",
                        "intents": "examples/intents.*.csv; English test = the English examples not drawn"},
           "note": "the 2 CPU cores were shared with a training run while this was measured, so fit times "
                   "(and their ratio) may be off by a large factor; accuracies are unaffected.",
           "results": results}
    res["verdict"] = verdict(results)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(res), encoding="utf-8")
    print(markdown(res))


if __name__ == "__main__":
    main()
