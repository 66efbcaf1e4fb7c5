"""Evaluation protocols (torch-free): cross-lingual sentence retrieval (cosine P@1) on DDTP."""
from __future__ import annotations

import json
import logging
import os
import re
from typing import Callable, Sequence

import numpy as np

from .errors import CorpusError
from .text import normalize

log = logging.getLogger(__name__)


def ddtp_pairs(docs_path: str | os.PathLike, lang: str, field: str = "short") -> tuple[list[str], list[str]]:
    """English/``lang`` text pairs of one DDTP split file (``{split}.docs.jsonl``; ``field`` "short" or "doc",
    see :func:`doc_text`), deduplicated on both sides (normalised) so every query has exactly one gold target."""
    return _distinct_pairs((doc_text(doc, "en", field), doc_text(doc, lang, field)) for doc in _docs(docs_path))


def _distinct_pairs(pairs) -> tuple[list[str], list[str]]:
    """(English texts, translations) of the pairs with both sides present, keeping a pair only when neither
    side (normalised) was seen before, so every query has exactly one gold target."""
    src, tgt, seen_s, seen_t = [], [], set(), set()
    for en, xx in pairs:
        if not en or not xx:
            continue
        ks, kt = normalize(en), normalize(xx)
        if ks in seen_s or kt in seen_t:
            continue
        seen_s.add(ks)
        seen_t.add(kt)
        src.append(en)
        tgt.append(xx)
    return src, tgt


def _unit_rows(x):
    """Rows scaled to unit L2 norm (numpy arrays or scipy sparse matrices)."""
    if hasattr(x, "tocsr"):
        from sklearn.preprocessing import normalize as l2

        return l2(x.tocsr().astype(np.float32))
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _dense(x) -> np.ndarray:
    return np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float32)


def nearest(queries, keys) -> np.ndarray:
    """Index of each query's cosine-nearest key (dense or sparse inputs), in chunks of 1,024 queries."""
    q, k = _unit_rows(queries), _unit_rows(keys)
    return np.concatenate([np.argmax(_dense(q[s:s + 1024] @ k.T), axis=1) for s in range(0, q.shape[0], 1024)])


def p_at_1(queries, keys) -> float:
    """Share of queries whose cosine nearest key is the one with the same index (dense or sparse inputs)."""
    return float((nearest(queries, keys) == np.arange(queries.shape[0])).mean())


def space_diagnostics(queries, keys, hits: np.ndarray | None = None) -> dict[str, float]:
    """How the space spreads, for row-aligned (query i ↔ key i) sets:

    - ``related_cos``: mean cosine of the n aligned pairs (qᵢ, kᵢ): what a translation or paraphrase scores;
    - ``unrelated_cos``: mean cosine of the n(n−1) unrelated pairs (i ≠ j), exact: (Σq·Σk − Σᵢ qᵢ·kᵢ) / n(n−1)
      on unit rows; near 0 for a well-spread space, high when every vector sits in one narrow cone;
    - ``never_retrieved``: share of keys that are nobody's nearest neighbour;
    - ``max_k_occurrence``: the most queries one key is nearest to (hubness; 1 is ideal).
    """
    q, k = _unit_rows(queries), _unit_rows(keys)
    n = q.shape[0]
    hits = nearest(q, k) if hits is None else hits
    sq, sk = _dense(q.sum(axis=0)).ravel(), _dense(k.sum(axis=0)).ravel()
    diag = float(np.asarray(q.multiply(k).sum()) if hasattr(q, "multiply") else np.einsum("ij,ij->", q, k))
    counts = np.bincount(hits, minlength=k.shape[0])
    return {"related_cos": diag / max(n, 1), "unrelated_cos": float((sq @ sk - diag) / max(n * (n - 1), 1)),
            "never_retrieved": float((counts == 0).mean()), "max_k_occurrence": int(counts.max())}


def retrieval(embed: Callable[[Sequence[str]], np.ndarray], docs_path: str | os.PathLike,
              langs: Sequence[str] = ("fr", "de", "es", "it"), field: str = "short",
              max_pairs: int | None = None, diagnostics: bool = False) -> dict:
    """P@1 both directions for en<->each language: {"en-fr": .., "fr-en": .., ..., "avg": ..} (see
    :func:`pair_retrieval`)."""
    return pair_retrieval(embed, {lang: ddtp_pairs(docs_path, lang, field) for lang in langs}, max_pairs,
                          diagnostics)


def pair_retrieval(embed: Callable[[Sequence[str]], np.ndarray], pairs: dict[str, tuple[list[str], list[str]]],
                   max_pairs: int | None = None, diagnostics: bool = False,
                   hits_out: dict[str, np.ndarray] | None = None) -> dict:
    """P@1 both directions for each language's (English texts, translations), row i translating row i:
    {"en-fr": .., "fr-en": .., ..., "avg": .., "ci95": [lo, hi]} (the interval: :func:`avg_interval`); with
    ``diagnostics``, also "diag": :func:`space_diagnostics` over all directions (means; the largest
    k-occurrence). ``hits_out`` receives each language's per-pair score (mean of its two directions' hits),
    for :func:`paired_difference`."""
    out, diags, scores = {}, [], {}
    for lang, (src, tgt) in pairs.items():
        if max_pairs:
            src, tgt = src[:max_pairs], tgt[:max_pairs]
        if len(src) < 2:
            continue
        es, et = embed(src), embed(tgt)
        both = []
        for name, q, k in ((f"en-{lang}", es, et), (f"{lang}-en", et, es)):
            hits = nearest(q, k)
            both.append(hits == np.arange(len(hits)))
            out[name] = float(both[-1].mean())
            if diagnostics:
                diags.append(space_diagnostics(q, k, hits))
        scores[lang] = (both[0].astype(np.float64) + both[1]) / 2
    if out:
        out["avg"] = float(np.mean(list(out.values())))
        lo, hi = avg_interval(scores)
        out["ci95"] = [lo, hi]
    if hits_out is not None:
        hits_out.update(scores)
    if diags:
        out["diag"] = {"related_cos": float(np.mean([d["related_cos"] for d in diags])),
                       "unrelated_cos": float(np.mean([d["unrelated_cos"] for d in diags])),
                       "never_retrieved": float(np.mean([d["never_retrieved"] for d in diags])),
                       "max_k_occurrence": max(d["max_k_occurrence"] for d in diags)}
    return out


Z95 = 1.959964  # two-sided 95% quantile of the normal distribution


def avg_interval(scores: dict[str, np.ndarray], other: dict[str, np.ndarray] | None = None) -> tuple[float, float]:
    """95% interval of "avg" P@1 (each direction weighted equally) from per-pair scores (mean of a pair's two
    directions' hits, one array per language); with ``other``, of the difference to another system on the same
    pairs (paired: per-pair differences, so what both get right or wrong cancels). Normal approximation: the
    variance of each language's mean is its pairs' sample variance / n, languages are independent sets."""
    if other is not None and set(other) != set(scores):
        raise ValueError(f"paired scores need the same languages, got {sorted(scores)} and {sorted(other)}")
    diffs = {lang: s - other[lang] if other is not None else s for lang, s in scores.items()}
    mean = float(np.mean([d.mean() for d in diffs.values()]))
    se = float(np.sqrt(sum(d.var(ddof=1) / len(d) for d in diffs.values() if len(d) > 1))) / len(diffs)
    return mean - Z95 * se, mean + Z95 * se


def paired_difference(scores: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> dict:
    """{"diff": avg P@1 of ``scores`` minus that of ``other`` on the same pairs, "ci95": [lo, hi]}."""
    diff = float(np.mean([scores[lang].mean() - other[lang].mean() for lang in scores]))
    lo, hi = avg_interval(scores, other)
    return {"diff": diff, "ci95": [lo, hi]}


def tsv_pairs(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """English/translation pairs of a corpus file (``en<TAB>xx`` lines), deduplicated on both sides
    (normalised) so every query has exactly one gold target."""
    def rows():
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 2:
                    raise CorpusError(f"{path}:{i}: expected 'english<TAB>translation', got {len(parts)} fields")
                yield parts[0], parts[1]

    try:
        return _distinct_pairs(rows())
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the pairs ({e.strerror})") from None


def tfidf_embedder(fit_texts: Sequence[str], max_features: int | None = None, sparse: bool = False):
    """Word-level TF-IDF vectors (scikit-learn) fitted on ``fit_texts``: the lexical baseline. Dense float32,
    or scipy sparse rows with ``sparse=True`` (large vocabularies)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(preprocessor=normalize, sublinear_tf=True, max_features=max_features,
                          dtype=np.float32).fit(fit_texts)
    if sparse:
        return lambda texts: vec.transform(texts)
    return lambda texts: vec.transform(texts).toarray()


# --------------------------------------------------------------------------------------------- DDTP tasks
SECTIONS = ("games", "sound", "graphics", "science", "mail", "net", "editors", "text")
C_GRID = (0.01, 0.1, 1.0, 10.0)


def _docs(path: str | os.PathLike):
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as e:
                        raise CorpusError(f"{path}:{i}: not valid JSON ({e.msg})") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot read DDTP docs ({e.strerror})") from None


def doc_text(doc: dict, lang: str, field: str = "short") -> str | None:
    """``field="short"``: the short description; ``"doc"``: short + long description (one text)."""
    short = (doc.get("short") or {}).get(lang)
    if field == "short" or not short:
        return short
    long = (doc.get("long") or {}).get(lang)
    return f"{short}\n{long}" if long else short


def section_docs(path: str | os.PathLike, lang: str, sections: Sequence[str] = SECTIONS) -> tuple[list[str], list[str]]:
    """(texts, labels): the whole ``lang`` descriptions of a DDTP split file whose Debian section (last path
    part, so ``contrib/games`` is ``games``) is one of ``sections``."""
    texts, labels = [], []
    for doc in _docs(path):
        sec = str(doc.get("section", "")).split("/")[-1]
        text = doc_text(doc, lang, "doc") if sec in sections else None
        if text:
            texts.append(text)
            labels.append(sec)
    return texts, labels


def _classifier(C: float, sparse: bool):
    """The logistic head of the SDK; for sparse inputs (TF-IDF) scikit-learn's LogisticRegression on the raw
    sparse matrix, the same class-balanced multinomial model without standardisation."""
    if sparse:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=C, class_weight="balanced", max_iter=1000)
    from .heads import LogisticHead

    return LogisticHead(C=C, validation_fraction=0)


def classification(embed: Callable[[Sequence[str]], np.ndarray], corpus_dir: str | os.PathLike,
                   split: str = "test", langs: Sequence[str] = ("en", "fr", "de", "es", "it"),
                   grid: Sequence[float] = C_GRID) -> dict:
    """Zero-shot cross-lingual classification, MLDoc-style, on the DDTP Debian sections: a class-balanced
    logistic head (lwx_edge.heads) fitted on English train-split embeddings, C chosen on the English dev split
    (balanced accuracy), scored on each language's ``split`` documents. Per language: balanced accuracy (mean
    recall over the sections, so every class counts the same) and accuracy; "avg_en_x" averages fr/de/es/it."""
    from pathlib import Path

    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    d = Path(corpus_dir)
    Xtr_t, ytr = section_docs(d / "train.docs.jsonl", "en")
    Xdev_t, ydev = section_docs(d / "dev.docs.jsonl", "en")
    Xtr, Xdev = embed(Xtr_t), embed(Xdev_t)
    sparse = hasattr(Xtr, "tocsr")
    scores = {C: balanced_accuracy_score(ydev, _classifier(C, sparse).fit(Xtr, ytr).predict(Xdev)) for C in grid}
    best = max(scores, key=lambda c: (scores[c], -c))
    head = _classifier(best, sparse).fit(Xtr, ytr)
    out = {"C": best, "dev_en_balanced_accuracy": float(scores[best]), "train_docs": len(ytr), "langs": {}}
    resampled = {}
    for lang in langs:
        texts, labels = section_docs(d / f"{split}.docs.jsonl", lang)
        if texts:
            pred = head.predict(embed(texts))
            resampled[lang] = bootstrap_balanced_accuracy(labels, pred)
            out["langs"][lang] = {"n": len(labels), "balanced_accuracy": float(balanced_accuracy_score(labels, pred)),
                                  "accuracy": float(accuracy_score(labels, pred)),
                                  "ci95": _percentiles(resampled[lang])}
    xs = [v["balanced_accuracy"] for k, v in out["langs"].items() if k != "en"]
    out["avg_en_x"] = float(np.mean(xs)) if xs else float("nan")
    if xs:
        out["avg_en_x_ci95"] = _percentiles(np.mean([r for k, r in resampled.items() if k != "en"], axis=0))
    return out


def bootstrap_balanced_accuracy(labels: Sequence, pred: Sequence, reps: int = 1000, seed: int = 0) -> np.ndarray:
    """Balanced accuracy of ``reps`` resamples (with replacement, seeded) of the scored documents: the spread
    that the choice of test documents alone gives. A class absent from a resample does not count in it."""
    classes, y = np.unique(np.asarray(labels), return_inverse=True)
    hit = np.asarray(pred) == np.asarray(labels)
    idx = np.random.default_rng(seed).integers(0, len(y), size=(reps, len(y)))
    k = len(classes)
    flat = (np.arange(reps)[:, None] * k + y[idx]).ravel()
    count = np.bincount(flat, minlength=reps * k).reshape(reps, k)
    right = np.bincount(flat, weights=hit[idx].ravel(), minlength=reps * k).reshape(reps, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nanmean(np.where(count > 0, right / count, np.nan), axis=1)


def _percentiles(samples: np.ndarray) -> list[float]:
    return [float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))]


def random_embedder(dim: int = 512, seed: int = 0) -> Callable[[Sequence[str]], np.ndarray]:
    """A fixed random vector per distinct (normalised) text: the floor every system must beat."""
    import hashlib

    def embed(texts):
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, t in enumerate(texts):
            h = int.from_bytes(hashlib.sha256(f"{seed}:{normalize(t)}".encode()).digest()[:8], "little")
            out[i] = np.random.default_rng(h).standard_normal(dim)
        return out

    return embed


PAIR_TASKS = ("dialogue", "everyday", "conversation")  # retrieval on {split}.en-xx.tsv files of a corpus dir


def evaluate_ddtp(systems: dict[str, Callable[[Sequence[str]], np.ndarray]], corpus_dir: str | os.PathLike,
                  split: str = "test", tasks: Sequence[str] = ("xsr", "cls"), log: Callable[[str], None] | None = None,
                  pair_dirs: dict[str, str | os.PathLike] | None = None) -> dict:
    """Every task for every system on one split: {system: {"xsr_short": {...}, "xsr_doc": {...}, "cls": {...},
    "xsr_dialogue": {...}, "xsr_everyday": {...}}}. A task of :data:`PAIR_TASKS` is retrieval on
    ``pair_dirs[task]/{split}.en-xx.tsv``. Every retrieval task carries the space diagnostics ("diag") and a
    95% interval ("ci95"); every system after the first also its paired difference from the first ("vs").
    Each result line is logged (INFO); ``log``, if given, receives it too."""
    from pathlib import Path

    from ._logging import reporter

    say = reporter(__name__, log)

    docs = Path(corpus_dir) / f"{split}.docs.jsonl"
    pair_sets = {task: {lang: tsv_pairs(Path(pair_dirs[task]) / f"{split}.en-{lang}.tsv")
                        for lang in ("fr", "de", "es", "it")
                        if (Path(pair_dirs[task]) / f"{split}.en-{lang}.tsv").is_file()}
                 for task in PAIR_TASKS if task in tasks}
    pair_sets.update({field: {lang: ddtp_pairs(docs, lang, field) for lang in ("fr", "de", "es", "it")}
                      for field in ("short", "doc")} if "xsr" in tasks else {})
    results, scores = {}, {}
    for name, embed in systems.items():
        r, scores[name] = {}, {}
        for task, pairs in pair_sets.items():
            scores[name][task] = {}
            r[f"xsr_{task}"] = x = pair_retrieval(embed, pairs, diagnostics=True, hits_out=scores[name][task])
            say(f"{name}: xsr {task} avg P@1 {x['avg']:.4f} (95% CI {x['ci95'][0]:.4f}-{x['ci95'][1]:.4f}), "
                f"unrelated cos {x['diag']['unrelated_cos']:.3f}")
        if "cls" in tasks:
            r["cls"] = classification(embed, corpus_dir, split)
            say(f"{name}: cls en->x avg balanced accuracy {r['cls']['avg_en_x']:.4f}")
        results[name] = r
    first = next(iter(systems), None)
    for name in list(systems)[1:]:  # every other system against the first, on the same pairs
        for task, own in scores[name].items():
            results[name][f"xsr_{task}"]["vs"] = {"system": first, **paired_difference(own, scores[first][task])}
    return results


XSR_COLUMNS = ("short", "doc", "dialogue", "everyday", "conversation")


def markdown_table(results: dict, split: str) -> str:
    """One row per system: XSR P@1 (avg of both directions) per task and zero-shot classification; then the
    space diagnostics per retrieval task. Tasks no system was scored on get no column."""
    langs = ("fr", "de", "es", "it")
    xsr = [t for t in XSR_COLUMNS if any(f"xsr_{t}" in r for r in results.values())]
    cls = any("cls" in r for r in results.values())
    head = ["system"] + [f"XSR {t} avg" for t in xsr]
    if cls:
        head += [f"cls en→{x}" for x in langs] + ["cls en→X avg", "cls en (in-language)"]
    rows = [f"DDTP {split} split: XSR = cosine P@1 (en↔X, both directions, pool = all texts of the split); "
            "dialogue = the same on the Wesnoth campaigns' dialogue of the split; everyday = the same on the "
            "everyday corpus's split (game dialogue and story text, split by gettext domain; FreeDroid RPG held "
            "out whole); conversation = the same on short conversational lines of games no corpus trains on, split "
            "by game (test: Fish Fillets NG; dev: FreeDink, Adonthell, The Question); cls = balanced accuracy "
            "over 8 Debian sections, logistic head fitted on English train "
            "docs, C chosen on English dev.", "", _row(head), "|" + "---|" * len(head)]
    for name, r in results.items():
        cells = [name] + [f"{r[f'xsr_{t}']['avg']:.3f}" if f"xsr_{t}" in r else "–" for t in xsr]
        if cls:
            cl = r.get("cls", {})
            cells += [f"{cl['langs'][x]['balanced_accuracy']:.3f}" if x in cl.get("langs", {}) else "–"
                      for x in (*langs,)]
            cells += [f"{cl['avg_en_x']:.3f}" if "avg_en_x" in cl else "–",
                      f"{cl['langs']['en']['balanced_accuracy']:.3f}" if "en" in cl.get("langs", {}) else "–"]
        rows.append(_row(cells))
    spread = [f"{name} {r['cls']['avg_en_x_ci95'][0]:.3f}–{r['cls']['avg_en_x_ci95'][1]:.3f}"
              for name, r in results.items() if "avg_en_x_ci95" in r.get("cls", {})]
    if spread:
        rows += ["", "cls en→X avg, 95% interval from resampling the scored documents (the head as fitted): "
                 + "; ".join(spread) + "."]
    rows += _paired_table(results, xsr)
    rows += _direction_table(results, [t for t in DIRECTION_TASKS if t in xsr])
    if xsr:
        head = ["system"] + [f"{t}: {m}" for t in xsr
                             for m in ("related cos", "unrelated cos", "never retrieved", "max k-occ.")]
        rows += ["", "Space diagnostics per retrieval task: mean cosine of translation pairs and of unrelated pairs, "
                 "share of the pool that is nobody's nearest neighbour, most queries one item is nearest to.", "",
                 _row(head),
                 "|" + "---|" * len(head)]
        for name, r in results.items():
            cells = [name]
            for t in xsr:
                d = r.get(f"xsr_{t}", {}).get("diag")
                cells += ([f"{d['related_cos']:.3f}" if "related_cos" in d else "–", f"{d['unrelated_cos']:.3f}",
                           f"{d['never_retrieved']:.3f}", str(d["max_k_occurrence"])] if d else ["–"] * 4)
            rows.append(_row(cells))
    return "\n".join(rows)


def _paired_table(results: dict, xsr: Sequence[str]) -> list[str]:
    """Markdown lines: each system's XSR difference from the first system, with its paired 95% interval."""
    vs = {name: {t: r[f"xsr_{t}"]["vs"] for t in xsr if "vs" in r.get(f"xsr_{t}", {})} for name, r in results.items()}
    vs = {name: d for name, d in vs.items() if d}
    if not vs:
        return []
    first = next(iter(next(iter(vs.values())).values()))["system"]
    pct = lambda x: f"{100 * x:+.1f}"  # noqa: E731
    lines = ["", f"XSR avg P@1 minus {first}'s, in points, on the same pairs (95% interval, paired: a pair both "
             "systems get right or wrong adds nothing; normal approximation):", "",
             _row(["system"] + [f"XSR {t}" for t in xsr]), "|" + "---|" * (len(xsr) + 1)]
    for name, d in vs.items():
        lines.append(_row([name] + [f"{pct(d[t]['diff'])} ({pct(d[t]['ci95'][0])} to {pct(d[t]['ci95'][1])})"
                                    if t in d else "–" for t in xsr]))
    return lines


DIRECTION_TASKS = ("conversation",)  # tasks whose markdown also shows every direction (issue 35's acceptance)


def _direction_table(results: dict, tasks: Sequence[str]) -> list[str]:
    """Markdown lines: P@1 of every direction (en→X and X→en) per system, one table per task."""
    lines = []
    for task in tasks:
        dirs = [k for k in next(r[f"xsr_{task}"] for r in results.values() if f"xsr_{task}" in r)
                if re.fullmatch(r"[a-z]{2}-[a-z]{2}", k)]
        lines += ["", f"XSR {task}, P@1 per direction:", "", _row(["system"] + [d.replace("-", "→") for d in dirs]),
                  "|" + "---|" * (len(dirs) + 1)]
        lines += [_row([name] + [f"{r[f'xsr_{task}'][d]:.3f}" if d in r[f"xsr_{task}"] else "–" for d in dirs])
                  for name, r in results.items() if f"xsr_{task}" in r]
    return lines


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"
