"""Write parity fixtures for the Android demo's JVM core (``android_demo/core``) with the Python SDK.

    python tools/android_parity.py BUNDLE HEAD_DIR OUT_DIR [--seed 0] [--fuzz 400]

BUNDLE is a model bundle directory (``default`` for the shipped one); HEAD_DIR a head saved with
``head.save(dir)`` / ``lwx-edge fit --out dir``. OUT_DIR receives plain JSON and ``.npy`` files only (no
pickle), which ``android_demo/run_jvm_tests.sh OUT_DIR`` checks the Java code against:

    parity.json            what is here, the versions that wrote it, counts
    bundle/                manifest.json, config.json, tokenizer.model copied from BUNDLE (nothing else)
    head/                  head.json + head.npz copied from HEAD_DIR
    tokens.json            multilingual probe texts: normalize(text), Tokenizer.encode ids (truncated at the
                           bundle's max_len), truncation, token count before truncation, or the InputError kind
    normalize_table.json   every code point whose normalize(chr(cp)) is not chr(cp), and what it becomes
    head_embeddings.npy    float32 [n, d] random (unnormalised) embeddings
    head_proba.npy         float64 [n, classes] head.predict_proba of those
    head_cases.json        classes and predicted labels
    search_*.npy, search.json   corpora/queries (float32) and lwx_edge.search.search top-k indices + scores
    index.lwxindex         an lwx_edge.index.Index file (int8 rows; ids mixing text and integers; rows deleted
                           and upserted; identical vectors for ties) filled with seeded random unit vectors
    index_queries.npy      float32 [20, d] probe query vectors (not normalised)
    index_expected.json    Index.open(index.lwxindex).search(queries, top_k=10): ids (as strings) + scores

The max_len used is the one ``Encoder.load(BUNDLE, backend="executorch")`` uses: the manifest's
``artifacts["model.int8.pte"].max_len`` when present, else ``config.json`` ``model.max_len``.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import unicodedata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PTE = "model.int8.pte"

# ------------------------------------------------------------------------------------------ probe set
# (language, text). Covers the five training languages with their accents and casing, typographic quotes and
# dashes, emoji (ZWJ sequences, skin tones, flags), characters outside the vocabulary, NFKC compatibility
# forms, odd whitespace and control characters, literal special-piece strings, and texts that are empty
# after normalisation.
PROBES: list[tuple[str, str]] = [
    ("en", "A text editor for programmers"),
    ("en", "The quick brown fox jumps over the lazy dog."),
    ("en", "It's a \u201csmart\u201d tool \u2014 isn\u2019t it? Yes\u2026 it is!"),
    ("en", "Don't panic: version 2.0.1 costs $19.99 (or \u00a317, \u20ac20)."),
    ("en", "E-mail me at someone@example.org or visit https://example.org/path?q=1&r=2"),
    ("en", "HELLO World, CamelCaseIdentifiers and snake_case_names"),
    ("en", "Music player with playlists \U0001F3B5\U0001F3B6"),
    ("fr", "Un \u00e9diteur de texte pour les programmeurs"),
    ("fr", "\u00ab Biblioth\u00e8que pour lire des fichiers d\u2019images \u00bb"),
    ("fr", "L\u2019\u00e9t\u00e9 o\u00f9 No\u00ebl tomba un lundi : \u00e7a, c\u2019est g\u00e9nial !"),
    ("fr", "\u00c9COLE \u00c0 C\u00d4T\u00c9 DE L\u2019\u00c9GLISE, \u0152UVRE \u00c6STH\u00c9TIQUE"),
    ("fr", "Outils pour envoyer et lire du courrier \u00e9lectronique\u202f; tr\u00e8s simple\u202f!"),
    ("de", "Ein Texteditor f\u00fcr Programmierer"),
    ("de", "Stra\u00dfe, Gr\u00f6\u00dfe, \u00c4rger \u00fcber \u00d6l \u2013 \u201eso geht\u2019s\u201c"),
    ("de", "GROSSE STRA\u1e9eE und Donaudampfschifffahrtsgesellschaftskapit\u00e4nsm\u00fctze"),
    ("de", "Werkzeuge zum Senden und Lesen von E-Mails"),
    ("es", "\u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Ma\u00f1ana ser\u00e1 otro d\u00eda!"),
    ("es", "El ni\u00f1o peque\u00f1o ping\u00fcino ama la m\u00fasica"),
    ("es", "Herramientas para enviar y leer correo electr\u00f3nico"),
    ("it", "Un editor di testo per programmatori"),
    ("it", "Perch\u00e9 c\u2019\u00e8 pi\u00f9 caff\u00e8? Citt\u00e0, virt\u00f9, cos\u00ec sia."),
    ("it", "L'universit\u00e0 \u00e8 aperta luned\u00ec e venerd\u00ec"),
    ("mixed", "caf\u00e9 vs cafe\u0301 (NFC vs NFD) and A\u030a vs \u00c5"),
    ("mixed", "\ufb01nance \ufb02ow \ufb00 \uff21\uff22\uff23\uff11\uff12\uff13 \u2163 \u00bd x\u00b2 \u2122 \u2460"),
    ("mixed", "\U0001d407\U0001d41e\U0001d425\U0001d425\U0001d428 \U0001d54e\U0001d560\U0001d563\U0001d55d\U0001d555"),
    ("mixed", "\u0130stanbul ve \u0131\u015f\u0131k; \u039f\u0394\u039f\u03a3 \u039a\u0391\u0399 \u03a3\u039f\u03a6\u0399\u0391\u03a3"),
    ("sigma", "\u039f\u0394\u039f\u03a3. \u03a3\u0391\u03a3\u0391\u03a3 \u0391\u03a3'\u0392 \u0391\u03a31 \u0391\u03a3\u0301 \u0391\u0301\u03a3 1\u03a3 \u0392\u03a3-\u0391 \u03a3"),
    ("sigma", "\u0130\u0392\u0430\u0411\u0392\u03a3\u2460 \u1100\u03a3\u6587 a\u00ad\u03a3 \u0391\u02b0\u03a3 \u0391\u03a3\u00b7\u0431"),
    ("mixed", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea \u0939\u093f\u0928\u094d\u0926\u0940"),
    ("emoji", "\U0001F44D\U0001F3FD great \U0001F468\u200d\U0001F469\u200d\U0001F467 family \U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EA"),
    ("emoji", "\u2764\ufe0f\U0001F525\U0001F525\U0001F525 \U0001F600\U0001F603\U0001F604"),
    ("unknown", "\u2603 snowman \U00013000 hieroglyph \ue000 private \u2603\u2603\u2603"),
    ("unknown", "\u0f00\u0f01\u0f02 \u1200\u1201 \ua000\ua001 \U0001F9A9"),
    ("special", "<mask> <unk> <pad> <s> </s> literal special pieces"),
    ("special", "\u2581already\u2581escaped \u2581\u2581 spaces\u2581"),
    ("whitespace", "  leading\tand   trailing \n whitespace \r\n  "),
    ("whitespace", "nbsp\u00a0thin\u2009narrow\u202fideographic\u3000em\u2003line\u2028para\u2029end"),
    ("whitespace", "zero\u200bwidth\u200cjoiner\u200d and\ufeffbom and soft\u00adhyphen"),
    ("control", "bell\x07 null\x00 escape\x1b delete\x7f unit\x1fsep\x1c"),
    ("punct", "\u2018single\u2019 \u201cdouble\u201d \u2039angle\u203a \u201alow\u201b \u2032prime \u22c5dot \u2212minus \u2010\u2011hyphens"),
    ("punct", "...!!!???---___***&&&%%%$$$###@@@"),
    ("digits", "3,14159 1.000.000,00 \u20ac 2024-05-17 12:30 +33 6 12 34 56 78"),
    ("short", "a"),
    ("short", "\u00c9"),
    ("short", "\U0001F600"),
    ("short", "\u2603"),
    ("empty", ""),
    ("empty", "   \t\n  "),
    ("empty", "\u00a0\u2009\u202f\u3000"),
    ("empty", "\u200b"),
    ("empty", "\x00\x01\x02"),
    ("empty", "\ufeff"),
]

LONG_SOURCES = {
    "en": "Tools to send and read email, a puzzle game for children and a library for reading image files. ",
    "fr": "Biblioth\u00e8que pour lire des fichiers d\u2019images, un \u00e9diteur de texte tr\u00e8s rapide. ",
    "de": "Ein Werkzeug zum \u00dcbersetzen gro\u00dfer Dateien, schnell und zuverl\u00e4ssig. ",
    "emoji": "\U0001F600\u2603\U0001F44D\U0001F3FD ",
}

FUZZ_POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    " .,;:!?'\"-()[]{}<>/\\|@#$%^&*_+=~`",
    "\u00e0\u00e2\u00e4\u00e7\u00e8\u00e9\u00ea\u00eb\u00ee\u00ef\u00f4\u00f6\u00f9\u00fb\u00fc\u00ff\u00df\u00f1\u00e1\u00ed\u00f3\u00fa\u00ec\u00f2\u00c0\u00c9\u00c8\u00d6\u00dc\u00d1\u0152\u0153\u00c6\u00e6\u1e9e",
    "\u0301\u0300\u0308\u0327\u0303\u030a",  # combining marks
    "\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u2013\u2014\u2212\u2026\u22c5\u2010\u2011",
    "\u00a0\u202f\u2009\u2003\u3000\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028\u2029\u205f\u1680",
    "\x00\x01\x07\x1b\x7f\u200b\u200c\u200d\u2060\ufeff\u00ad",
    "\u0391\u0392\u0393\u03a3\u03c3\u03c2\u03b1\u03b2\u0410\u0411\u0416\u0430\u0431\u0436\u0130\u0131",
    "\u65e5\u672c\u8a9e\u4e2d\u6587\u5b57\u3042\u3044\u30a2\u30a4\ud55c\uad6d\u1100\u1161\u11a8",
    "\u0627\u0644\u0639\u0640\u05e2\u05d1\u0939\u093f\u0928\u0e01\u0e32",
    "\ufb01\ufb02\ufb00\uff21\uff41\uff10\u2163\u00bd\u00b2\u2122\u2460\u3371\u33a1\u2474",
    "\U0001F600\U0001F44D\U0001F3FD\U0001F468\u200d\U0001F469\U0001F1EB\U0001F1F7\u2764\ufe0f\U0001F525\U0001F9A9",
    "\u2603\U00013000\ue000\U000f0000\u0f00\ua000\u2581\U0001d400\U0001d7d8",
]

FUZZ_WORDS = ("the editor file \u00e9diteur fichier r\u00e9seau Stra\u00dfe schnell m\u00fasica ni\u00f1o citt\u00e0 "
              "perch\u00e9 Bibliothek biblioteca library music musique Musik jeu Spiel gioco juego").split()


def _fuzz(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        if i % 3 == 0:  # word salad with random casing and punctuation
            words = []
            for _ in range(rng.randint(1, 12)):
                w = rng.choice(FUZZ_WORDS)
                w = rng.choice([w, w.upper(), w.capitalize()])
                words.append(w + rng.choice(["", "", ",", ".", "!", "\u2019s", "\u2026"]))
            sep = rng.choice([" ", "  ", "\u00a0", " \t", "\u202f"])
            out.append(("fuzz-words", sep.join(words)))
        else:  # characters from a few random pools
            pools = rng.sample(FUZZ_POOLS, rng.randint(1, 4))
            chars = "".join(pools)
            out.append(("fuzz-chars", "".join(rng.choice(chars) for _ in range(rng.randint(1, 60)))))
    return out


def _exact_length_text(tok, n_tokens: int) -> str:
    """A text of exactly ``n_tokens`` tokens (grown word by word; falls back to the nearest shorter one)."""
    from lwx_edge.text import normalize

    def count(t: str) -> int:
        return len(tok.sp.encode(normalize(t, lower=True)))

    words = LONG_SOURCES["en"].split() * (n_tokens + 10)
    best = ""
    for k in range(1, len(words) + 1):
        t = " ".join(words[:k])
        n = count(t)
        if n == n_tokens:
            return t
        if n > n_tokens:
            # trim characters off the last word until the count fits
            for cut in range(len(t) - 1, 0, -1):
                if count(t[:cut]) == n_tokens:
                    return t[:cut]
            return best
        best = t
    return best


def probe_texts(tok, max_len: int, seed: int, n_fuzz: int) -> list[tuple[str, str]]:
    texts = list(PROBES)
    for lang, src in LONG_SOURCES.items():
        reps = max(2, (3 * max_len) // max(1, len(src.split())) + 1)
        texts.append((f"long-{lang}", src * reps))
    texts.append(("long-exact", _exact_length_text(tok, max_len)))
    texts.append(("long-exact+1", _exact_length_text(tok, max_len + 1)))
    texts.append(("long-nospace", "x" * (4 * max_len) + "\u00e9" * (2 * max_len)))
    texts.extend(_fuzz(random.Random(seed), n_fuzz))
    return texts


# ------------------------------------------------------------------------------------------ writers

def _dump(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def token_cases(tok, texts: list[tuple[str, str]]) -> list[dict]:
    from lwx_edge.errors import InputError
    from lwx_edge.text import normalize

    cases = []
    for i, (lang, text) in enumerate(texts):
        case = {"id": i, "lang": lang, "text": text, "normalized": normalize(text, lower=True)}
        try:
            enc = tok.encode([text])
            case.update(ids=enc.ids[0], truncated=bool(enc.truncated), length_before=enc.lengths_before[0],
                        error=None)
        except InputError as e:
            kind = "empty" if "empty" in str(e) else "no_tokens" if "no tokens" in str(e) else "other"
            case.update(ids=None, truncated=False, length_before=0, error=kind, message=str(e))
        cases.append(case)
    return cases


CASE_CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Mn", "Mc", "Me", "Cf", "Sk")


def normalize_table() -> dict:
    """normalize() of every single code point (where it changes it), and the two character properties
    CPython's str.lower() consults for capital sigma (Final_Sigma), observed through lower() itself."""
    from lwx_edge.text import normalize

    sigma, final = "\u03a3", "\u03c2"
    changed, cased, ignorable, categories = {}, [], [], {}
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        n = normalize(c, lower=True)
        if n != c:
            changed[str(cp)] = n
        is_cased = c.islower() or c.isupper() or c.istitle()   # Unicode Cased = Lowercase | Uppercase | Lt
        if is_cased:
            cased.append(cp)
            ign = ("1" + c + sigma).lower()[-1] != final        # skipped over: the '1' before decides
        else:
            ign = ("A" + c + sigma).lower()[-1] == final        # skipped over: the cased 'A' before decides
        if ign:
            ignorable.append(cp)
        cat = unicodedata.category(c)
        if cat in CASE_CATEGORIES:
            categories[str(cp)] = cat
    return {"unicode_version": unicodedata.unidata_version, "python": platform.python_version(),
            "changed": changed, "cased": cased, "case_ignorable": ignorable,
            "categories": categories}  # only those in CASE_CATEGORIES: explains Unicode-version differences


def head_fixtures(head, out: Path, rng: np.random.Generator, n: int = 64) -> dict:
    d = int(head.n_features_in_)
    E = rng.standard_normal((n, d)).astype(np.float32)
    E[1] *= 1e-3                      # tiny and huge norms: the head L2-normalises first
    E[2] *= 1e3
    E[3] = 0.0                        # zero vector: x / max(||x||, 1e-12) = 0
    E[4] = np.abs(E[4])
    proba = head.predict_proba(E).astype(np.float64)
    np.save(out / "head_embeddings.npy", E)
    np.save(out / "head_proba.npy", proba)
    labels = head.predict(E)
    classes = [str(c) for c in head.classes_.tolist()]
    _dump(out / "head_cases.json", {"classes": classes, "predicted": [str(x) for x in labels.tolist()],
                                    "n": n, "n_features": d, "kind": head.kind})
    return {"n": n, "n_features": d, "classes": len(classes)}


def search_fixtures(out: Path, rng: np.random.Generator, d: int) -> dict:
    from lwx_edge.search import search

    cases = []
    specs = [("main", 300, 24, 10), ("small", 5, 4, 10), ("top1", 50, 8, 1)]
    for name, n_corpus, n_queries, k in specs:
        C = rng.standard_normal((n_corpus, d)).astype(np.float32)
        if n_corpus >= 50:
            C[40] = C[7]              # exact duplicates: equal scores, the lower index must come first
            C[41] = C[7]
            C[45] = C[12]
        Q = rng.standard_normal((n_queries, d)).astype(np.float32)
        Q[0] = C[7] if n_corpus > 7 else C[0]   # a query equal to a (duplicated) corpus row
        Q[1] = C[1] * 3.0 if n_corpus > 1 else Q[1]
        res = search(Q, C, k)
        np.save(out / f"search_{name}_corpus.npy", C)
        np.save(out / f"search_{name}_queries.npy", Q)
        cases.append({"name": name, "corpus": f"search_{name}_corpus.npy", "queries": f"search_{name}_queries.npy",
                      "top_k": k, "indices": res.indices.tolist(), "scores": res.scores.astype(float).tolist()})
    _dump(out / "search.json", {"cases": cases})
    return {"cases": len(cases), "queries": sum(s[2] for s in specs)}


class _GivenVectors:
    """Stands in for the Encoder while filling the fixture index: each text "embeds" to a vector chosen ahead
    (seeded random unit vectors), so no model weights are needed -- the JVM side never embeds, it reads the
    stored int8 rows and scales. Identity and text contract are the bundle's, as Encoder.identity writes them."""

    backend_name = "vectors-given"
    artifact = PTE
    precision = "int8"

    def __init__(self, bundle, dim: int, max_len: int, vectors: dict):
        from types import SimpleNamespace

        self.bundle, self.dim, self.max_len, self._vectors = bundle, dim, max_len, vectors
        self.tokenizer = SimpleNamespace(check=lambda texts: None)

    def identity(self) -> dict:
        from lwx_edge.bundle import TOKENIZER, WEIGHTS

        files = self.bundle.manifest.get("files", {})
        # the program, else another program of the bundle (the shipped default lists its ONNX program only; its
        # ExecuTorch copy shares that identity), else the weights
        model = next((n for n in (self.artifact, "model.int8.onnx", WEIGHTS) if n in files), None)
        return {"tokenizer_sha256": files.get(TOKENIZER, {}).get("sha256"), "embedding_dim": self.dim,
                "backend": self.backend_name, "artifact": self.artifact, "precision": self.precision,
                "bundle": str(self.bundle.path), **self.bundle.identity(model)}

    def embed(self, texts, **_) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts]).astype(np.float32)


def index_fixtures(out: Path, rng: np.random.Generator, bundle, d: int, max_len: int, n: int = 300,
                   n_queries: int = 20, k: int = 10) -> dict:
    """index.lwxindex written by lwx_edge.index.Index (add, delete, upsert), probe queries, and the top-k of
    Index.search. Random queries whose top k+1 scores come closer than 1e-4 without being equal are skipped,
    so float32 rounding cannot reorder distinct items; equal scores come from identical int8 rows only."""
    from lwx_edge.index import Index, dequantize

    path = out / "index.lwxindex"
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        p.unlink(missing_ok=True)

    def unit(m):
        v = rng.standard_normal((m, d)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    V = unit(n)
    tied = [20, 150, 151]                 # three identical vectors: equal scores, row order decides
    V[tied] = V[tied[0]]

    def item_id(r: int):                  # text and integer ids; ids sort differently from the rows
        return [f"doc-{n - r:04d}", 10_000_000_000 - r * 7, f"\u00e9l\u00e9ment-{r}", -r, "0" + str(r)][r % 5]

    ids = [item_id(r) for r in range(n)]
    ids[tied[0]], ids[tied[1]], ids[tied[2]] = "zz-tie-first", "aa-tie-second", 3  # id order != row order
    texts = [f"item {r}" for r in range(n)]
    vectors = dict(zip(texts, V))
    replaced = {5: unit(1)[0], 60: V[tied[0]].copy()}   # upserted: new rowid at the end (60 joins the tie)
    for r, v in replaced.items():
        vectors[f"item {r} (replaced)"] = v
    enc = _GivenVectors(bundle, d, max_len, vectors)
    with Index.open(path, enc, create=True) as index:
        index.add(ids, texts, [{"row": r} if r % 4 else None for r in range(n)], batch_size=64)
        index.delete([ids[7], ids[100], ids[299]])
        index.upsert([ids[r] for r in replaced], [f"item {r} (replaced)" for r in replaced])

    # reference scores in float64 from what the file holds, rows in rowid order
    with Index.open(path) as index:
        rows = index.conn.execute("SELECT id, vector, scale FROM items ORDER BY rowid").fetchall()
        row_id = [r[0] for r in rows]
        q8 = np.stack([np.frombuffer(r[1], dtype=np.int8) for r in rows])
        scale = np.array([r[2] for r in rows], dtype=np.float32)
        # identical rows (int8 and scale) get bit-identical reference scores: each distinct row is scored once
        uniq, inverse = np.unique(np.concatenate([q8.view(np.uint8), scale[:, None].view(np.uint8)], axis=1),
                                  axis=0, return_inverse=True)
        exact = dequantize(uniq[:, :d].view(np.int8), uniq[:, d:].copy().view(np.float32)[:, 0]).astype(np.float64)

        def reference(q: np.ndarray) -> np.ndarray:
            return (exact @ (q.astype(np.float64) / np.linalg.norm(q.astype(np.float64))))[inverse.reshape(-1)]

        def conditioned(q: np.ndarray) -> bool:
            s = np.sort(reference(q))[::-1][:k + 1]
            gaps = s[:-1] - s[1:]
            return bool(np.all((gaps == 0) | (gaps > 1e-4)))

        # the tied vector (4 equal scores on top), an unnormalised stored vector, a dequantized row, then random
        Q = [q for q in (V[tied[0]], V[11] * 3.0, dequantize(q8[:1], scale[:1])[0]) if conditioned(q)]
        while len(Q) < n_queries:
            q = rng.standard_normal(d).astype(np.float32) * rng.uniform(0.2, 5.0)
            if conditioned(q):
                Q.append(q)
        Q = np.stack(Q).astype(np.float32)
        hits = index.search(Q, top_k=k)
        meta = index.meta
    t = row_id.index(ids[tied[0]])

    # Index.search must match the float64 reference with the documented tie rule (equal scores: lower row first)
    for qi, (q, h) in enumerate(zip(Q, hits)):
        s = reference(q)
        want = [row_id[r] for r in sorted(range(len(s)), key=lambda r: (-s[r], r))[:k]]
        if [x.id for x in h] != want:
            raise SystemExit(f"index fixture: Index.search differs from the float64 reference on query {qi}: "
                             f"{[x.id for x in h]} vs {want}")
    np.save(out / "index_queries.npy", Q)
    _dump(out / "index_expected.json", {
        "index": path.name, "top_k": k, "items": len(rows), "dim": d,
        "encoder_sha256": meta["encoder"].get("sha256"),
        "tie_ids": [str(row_id[r]) for r in range(len(row_id))
                    if np.array_equal(q8[r], q8[t]) and scale[r] == scale[t]],
        "queries": [{"ids": [str(x.id) for x in h], "scores": [float(x.score) for x in h]} for h in hits]})
    return {"items": len(rows), "queries": len(Q), "top_k": k}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", help="model bundle directory, or 'default' for the shipped model")
    ap.add_argument("head", type=Path, help="head directory (head.json + head.npz)")
    ap.add_argument("out", type=Path, help="directory to write the fixtures into (created; replaced files)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fuzz", type=int, default=400, help="number of random fuzz texts (default 400)")
    ap.add_argument("--texts", type=Path, nargs="*", default=[],
                    help="extra UTF-8 files of probe texts: one per line, tab-separated fields are separate texts")
    a = ap.parse_args(argv)

    from lwx_edge.atomic import sha256_file
    from lwx_edge.bundle import CONFIG, MANIFEST, TOKENIZER, Bundle
    from lwx_edge.encoder import default_model_path
    from lwx_edge.heads import load_head
    from lwx_edge.tokenizer import Tokenizer

    path = default_model_path() if a.bundle == "default" and not Path(a.bundle).exists() else Path(a.bundle)
    bundle = Bundle.load(path, verify=False)
    for name in (CONFIG, TOKENIZER):  # what the JVM side uses is verified; other listed files may be absent
        if sha256_file(bundle.file(name)) != bundle.manifest["files"][name]["sha256"]:
            raise SystemExit(f"{path}: {name} does not match its manifest entry")
    arts = bundle.manifest.get("artifacts") or {}
    max_len = int((arts.get(PTE) or {}).get("max_len") or bundle.config["model"]["max_len"])
    tok = Tokenizer(bundle.file(TOKENIZER), max_len=max_len)
    head = load_head(a.head)

    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "bundle").mkdir(exist_ok=True)
    for name in (MANIFEST, CONFIG, TOKENIZER):
        shutil.copyfile(path / name, out / "bundle" / name)
    if (out / "head").exists():
        shutil.rmtree(out / "head")
    (out / "head").mkdir()
    for name in ("head.json", "head.npz"):
        shutil.copyfile(a.head / name, out / "head" / name)

    texts = probe_texts(tok, max_len, a.seed, a.fuzz)
    for f in a.texts:
        for line in f.read_text(encoding="utf-8").splitlines():
            texts.extend(("file", t) for t in line.split("\t"))
    cases = token_cases(tok, texts)
    _dump(out / "tokens.json", {"max_len": max_len, "tokenizer_sha256": tok.sha256, "vocab_size": tok.vocab_size,
                                "cases": cases})
    _dump(out / "normalize_table.json", normalize_table())
    rng = np.random.default_rng(a.seed)
    head_info = head_fixtures(head, out, rng)
    search_info = search_fixtures(out, rng, int(head.n_features_in_))
    index_info = index_fixtures(out, rng, bundle, int(head.n_features_in_), max_len)

    import sentencepiece

    import lwx_edge

    summary = {
        "format": "lwx-edge-android-parity", "format_version": 1,
        "bundle": str(path), "max_len": max_len, "vocab_size": tok.vocab_size,
        "texts": len(cases), "texts_with_error": sum(c["error"] is not None for c in cases),
        "texts_truncated": sum(c["truncated"] for c in cases),
        "head": head_info, "search": search_info, "index": index_info,
        "versions": {"lwx_edge": lwx_edge.__version__, "sentencepiece": sentencepiece.__version__,
                     "numpy": np.__version__, "python": platform.python_version(),
                     "unicode": unicodedata.unidata_version},
    }
    _dump(out / "parity.json", summary)
    print(json.dumps({k: summary[k] for k in ("texts", "texts_with_error", "texts_truncated", "max_len",
                                               "vocab_size")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
