"""Evaluation protocols (torch-free): cross-lingual sentence retrieval (cosine P@1) on DDTP."""
from __future__ import annotations

import json
import os
from typing import Callable, Sequence

import numpy as np

from .errors import CorpusError
from .text import normalize


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


def p_at_1(queries, keys) -> float:
    """Share of queries whose cosine nearest key is the one with the same index (dense or sparse inputs)."""
    q, k = _unit_rows(queries), _unit_rows(keys)
    hits = 0
    for s in range(0, q.shape[0], 1024):
        scores = _dense(q[s:s + 1024] @ k.T)
        hits += int((np.argmax(scores, axis=1) == np.arange(s, min(s + 1024, q.shape[0]))).sum())
    return hits / q.shape[0]


def retrieval(embed: Callable[[Sequence[str]], np.ndarray], docs_path: str | os.PathLike,
              langs: Sequence[str] = ("fr", "de", "es", "it"), field: str = "short",
              max_pairs: int | None = None) -> dict[str, float]:
    """P@1 both directions for en<->each language: {"en-fr": .., "fr-en": .., ..., "avg": ..}."""
    return pair_retrieval(embed, {lang: ddtp_pairs(docs_path, lang, field) for lang in langs}, max_pairs)


def pair_retrieval(embed: Callable[[Sequence[str]], np.ndarray], pairs: dict[str, tuple[list[str], list[str]]],
                   max_pairs: int | None = None) -> dict[str, float]:
    """P@1 both directions for each language's (English texts, translations), row i translating row i."""
    out = {}
    for lang, (src, tgt) in pairs.items():
        if max_pairs:
            src, tgt = src[:max_pairs], tgt[:max_pairs]
        if len(src) < 2:
            continue
        es, et = embed(src), embed(tgt)
        out[f"en-{lang}"] = p_at_1(es, et)
        out[f"{lang}-en"] = p_at_1(et, es)
    if out:
        out["avg"] = float(np.mean(list(out.values())))
    return out


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
    for lang in langs:
        texts, labels = section_docs(d / f"{split}.docs.jsonl", lang)
        if texts:
            pred = head.predict(embed(texts))
            out["langs"][lang] = {"n": len(labels), "balanced_accuracy": float(balanced_accuracy_score(labels, pred)),
                                  "accuracy": float(accuracy_score(labels, pred))}
    xs = [v["balanced_accuracy"] for k, v in out["langs"].items() if k != "en"]
    out["avg_en_x"] = float(np.mean(xs)) if xs else float("nan")
    return out


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


def evaluate_ddtp(systems: dict[str, Callable[[Sequence[str]], np.ndarray]], corpus_dir: str | os.PathLike,
                  split: str = "test", tasks: Sequence[str] = ("xsr", "cls"), log: Callable[[str], None] = print,
                  dialogue_dir: str | os.PathLike | None = None) -> dict:
    """Every task for every system on one split: {system: {"xsr_short": {...}, "xsr_doc": {...}, "cls": {...},
    "xsr_dialogue": {...}}}; "dialogue" is retrieval on ``dialogue_dir/{split}.en-xx.tsv`` (everyday-style text)."""
    from pathlib import Path

    docs = Path(corpus_dir) / f"{split}.docs.jsonl"
    dialogue = ({lang: tsv_pairs(Path(dialogue_dir) / f"{split}.en-{lang}.tsv") for lang in ("fr", "de", "es", "it")}
                if "dialogue" in tasks else {})
    results = {}
    for name, embed in systems.items():
        r = {}
        if dialogue:
            r["xsr_dialogue"] = pair_retrieval(embed, dialogue)
            log(f"{name}: xsr dialogue avg P@1 {r['xsr_dialogue']['avg']:.4f}")
        if "xsr" in tasks:
            for field in ("short", "doc"):
                r[f"xsr_{field}"] = retrieval(embed, docs, field=field)
                log(f"{name}: xsr {field} avg P@1 {r[f'xsr_{field}']['avg']:.4f}")
        if "cls" in tasks:
            r["cls"] = classification(embed, corpus_dir, split)
            log(f"{name}: cls en->x avg balanced accuracy {r['cls']['avg_en_x']:.4f}")
        results[name] = r
    return results


def markdown_table(results: dict, split: str) -> str:
    """One row per system: XSR P@1 (short, doc; avg of both directions) and zero-shot classification."""
    langs = ("fr", "de", "es", "it")
    head = ("| system | XSR short avg | XSR doc avg | XSR dialogue avg | " + " | ".join(f"cls en→{x}" for x in langs)
            + " | cls en→X avg | cls en (in-language) |")
    rows = [f"DDTP {split} split: XSR = cosine P@1 (en↔X, both directions, pool = all texts of the split); "
            "dialogue = the same on the Wesnoth campaigns' dialogue of the split; "
            "cls = balanced accuracy over 8 Debian sections, logistic head fitted on English train docs, "
            "C chosen on English dev.", "", head, "|" + "---|" * (head.count("|") - 1)]
    for name, r in results.items():
        xs, xd, cl = r.get("xsr_short", {}), r.get("xsr_doc", {}), r.get("cls", {})
        cells = [f"{xs.get('avg', float('nan')):.3f}", f"{xd.get('avg', float('nan')):.3f}",
                 f"{r.get('xsr_dialogue', {}).get('avg', float('nan')):.3f}"]
        cells += [f"{cl.get('langs', {}).get(x, {}).get('balanced_accuracy', float('nan')):.3f}" for x in langs]
        cells += [f"{cl.get('avg_en_x', float('nan')):.3f}",
                  f"{cl.get('langs', {}).get('en', {}).get('balanced_accuracy', float('nan')):.3f}"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
