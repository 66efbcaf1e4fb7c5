"""The parity report: every artefact against the fp32 eager PyTorch encoder on the fixed probe set.

For each artefact, on the probe texts (``probe.py`` + one text longer than ``max_len``, truncated to exactly
``max_len`` tokens), run alone (batch 1, no padding) and in right-padded batches of several sizes:

* ``cos_mean`` / ``cos_min``: cosine to the eager output on the same inputs, over all runs;
* ``max_abs_diff``: largest absolute difference to the eager output (raw, un-normalised vectors);
* ``nn_top1_agreement`` / ``nn_top5_overlap``: retrieval set = the probe texts, each querying all others by
  cosine; agreement of the artefact's nearest neighbour (top-5 set) with the eager one;
* ``batch_invariance``: largest |artefact(text alone) - artefact(text in a padded batch)|; for fp32 artefacts it
  must be <= 1e-5. ``batch_invariance_cos``: largest 1 - cosine between a text's vector alone and in a padded
  batch; <= 1e-6 for every artefact (the int8 ones quantize activations per token, never per batch).

Token-id parity: ``lwx_edge.tokenizer.Tokenizer`` (Python SentencePiece) against
``pytorch_tokenizers.CppSPTokenizer`` (the C++ SentencePiece an ExecuTorch app links). lwx-edge lowercases and
NFKC-normalises *before* SentencePiece (``lwx_edge.text.normalize``), so CppSPTokenizer is fed the normalised
text; an app must apply the same normalisation.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..probe import LANGUAGES, TOKENIZER_EDGE_CASES, over_length_text, probe_texts

NORMALISATION_NOTE = ("lwx-edge normalises text before SentencePiece (lwx_edge.text.normalize: NFKC, typographic "
                      "quotes/dashes to ASCII, whitespace collapsed, lowercase); CppSPTokenizer was fed the "
                      "normalised text, and an on-device app must normalise the same way")


@dataclass
class Thresholds:
    """Pass/fail limits. int8: cosine mean/min to fp32 eager. fp32: near-exactness and batch invariance."""

    int8_min_cos_mean: float = 0.999
    int8_min_cos_min: float = 0.99
    fp32_min_cos: float = 0.99999
    fp32_max_abs: float = 1e-4        # relative to max(1, max |eager output|)
    fp32_batch_invariance: float = 1e-5
    max_batch_invariance_cos: float = 1e-6   # 1 - cosine, alone vs in a batch, every precision

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- probe

@dataclass
class Probe:
    """The tokenized probe set of a parity check: texts, their ids after truncation, what was cut."""
    records: list[dict]          # {"text", "lang", "group", "kind"} per probe text
    ids: list[list[int]]         # token ids after truncation at max_len
    truncated: list[dict]        # {"index", "tokens_before", "tokens_kept"}
    max_len: int

    def summary(self) -> dict:
        lengths = [len(r) for r in self.ids]
        return {
            "texts": len(self.records),
            "languages": list(LANGUAGES),
            "kinds": {k: sum(1 for r in self.records if r["kind"] == k)
                      for k in dict.fromkeys(r["kind"] for r in self.records)},
            "tokens_min": min(lengths), "tokens_max": max(lengths),
            "tokens_mean": round(float(np.mean(lengths)), 1),
            "max_len": self.max_len,
            "at_max_len": sum(1 for n in lengths if n == self.max_len),
            "truncated": self.truncated,
        }


def build_probe(tokenizer) -> Probe:
    """Encode the probe set with the bundle tokenizer (its ``max_len`` is the exported max length)."""
    records = probe_texts() + [{"text": over_length_text(), "lang": "mixed", "group": -1, "kind": "over_max_len"}]
    enc = tokenizer.encode([r["text"] for r in records])
    truncated = [{"index": i, "tokens_before": enc.lengths_before[i], "tokens_kept": len(enc.ids[i])}
                 for i in enc.truncated]
    return Probe(records, enc.ids, truncated, tokenizer.max_len)


def batch_sizes(max_batch: int | None) -> list[int]:
    """Batch sizes the parity check runs: 1, 4, 16, capped at and including ``max_batch``."""
    sizes = [1, 4, 16]
    if max_batch is not None:
        sizes = sorted({min(s, max_batch) for s in sizes} | {max_batch})
    return sizes


def run_modes(run: Callable[[np.ndarray, np.ndarray], np.ndarray], ids: Sequence[Sequence[int]],
              sizes: Sequence[int]) -> tuple[dict[int, np.ndarray], list[list[int]]]:
    """Run texts alone (size 1) and in right-padded batches of consecutive texts (mixed lengths)."""
    from lwx_edge.tokenizer import Tokenizer

    out: dict[int, np.ndarray] = {}
    shapes: list[list[int]] = []
    for bs in sizes:
        parts = []
        for s in range(0, len(ids), bs):
            x, m = Tokenizer.pad(ids[s:s + bs])
            shapes.append([int(x.shape[0]), int(x.shape[1])])
            parts.append(np.asarray(run(x, m), dtype=np.float32))
        out[bs] = np.concatenate(parts, axis=0)
    uniq = sorted({tuple(s) for s in shapes})
    return out, [list(s) for s in uniq]


# ---------------------------------------------------------------------------------------------- metrics

def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    den = np.maximum(np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1), 1e-30)
    return (a64 * b64).sum(1) / den


def _neighbours(x: np.ndarray, k: int) -> np.ndarray:
    x = x.astype(np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)
    s = x @ x.T
    np.fill_diagonal(s, -np.inf)
    return np.argsort(-s, axis=1, kind="stable")[:, :k]


def retrieval_agreement(ref: np.ndarray, art: np.ndarray, k: int = 5) -> dict:
    """Nearest-neighbour agreement of an artefact's vectors with the reference's (top-1, top-k overlap)."""
    k = max(1, min(k, ref.shape[0] - 1))
    nr, na = _neighbours(ref, k), _neighbours(art, k)
    top1 = float(np.mean(nr[:, 0] == na[:, 0]))
    topk = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(nr, na)]))
    return {"nn_top1_agreement": round(top1, 4), f"nn_top{k}_overlap": round(topk, 4), "retrieval_set": len(ref)}


def batch_invariance(modes: dict[int, np.ndarray]) -> float:
    """Largest absolute difference between each batch size's vectors and the batch-1 ones."""
    alone = modes[min(modes)]
    return float(max((np.abs(v - alone).max() for bs, v in modes.items() if bs != min(modes)), default=0.0))


def batch_invariance_cos(modes: dict[int, np.ndarray]) -> float:
    """Largest 1 - cosine between each batch size's vectors and the batch-1 ones."""
    alone = modes[min(modes)]
    return float(max((1 - _cos(v, alone).min() for bs, v in modes.items() if bs != min(modes)), default=0.0))


def compare(ref: dict[int, np.ndarray], art: dict[int, np.ndarray]) -> dict:
    """Cosine, max abs difference and batch invariance of an artefact against the reference, per batch size."""
    cos = np.concatenate([_cos(art[bs], ref[bs]) for bs in art])
    diff = max(float(np.abs(art[bs] - ref[bs]).max()) for bs in art)
    largest = max(art)
    out = {
        "cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
        "max_abs_diff": diff,
        "ref_max_abs": float(max(np.abs(v).max() for v in ref.values())),
        "batch_invariance": batch_invariance(art),
        "batch_invariance_cos": batch_invariance_cos(art),
    }
    out.update(retrieval_agreement(ref[min(ref)], art[largest]))
    return out


def check(entry: dict, th: Thresholds) -> list[str]:
    """Failed checks of one artefact entry (empty = passed)."""
    fails = []
    if entry.get("batch_invariance_cos", 0.0) > th.max_batch_invariance_cos:
        fails.append(f"a text's vector depends on its batch: 1 - cosine {entry['batch_invariance_cos']:.1e} > "
                     f"{th.max_batch_invariance_cos}")
    if entry["precision"] == "int8":
        if entry["cos_mean"] < th.int8_min_cos_mean:
            fails.append(f"cosine mean {entry['cos_mean']:.5f} < {th.int8_min_cos_mean}")
        if entry["cos_min"] < th.int8_min_cos_min:
            fails.append(f"cosine min {entry['cos_min']:.5f} < {th.int8_min_cos_min}")
    else:
        if entry["cos_min"] < th.fp32_min_cos:
            fails.append(f"cosine min {entry['cos_min']:.7f} < {th.fp32_min_cos}")
        scale = max(1.0, entry["ref_max_abs"])
        if entry["max_abs_diff"] > th.fp32_max_abs * scale:
            fails.append(f"max abs diff {entry['max_abs_diff']:.2e} > {th.fp32_max_abs * scale:.1e}")
        if entry["batch_invariance"] > th.fp32_batch_invariance:
            fails.append(f"batch invariance {entry['batch_invariance']:.2e} > {th.fp32_batch_invariance}")
    return fails


# ---------------------------------------------------------------------------------------------- tokenizer

def tokenizer_parity(tokenizer, texts: Sequence[str]) -> dict:
    """Token ids of ``lwx_edge.tokenizer.Tokenizer`` vs ``pytorch_tokenizers.CppSPTokenizer``."""
    from lwx_edge.text import normalize

    texts = list(texts) + list(TOKENIZER_EDGE_CASES)
    base = {"runtime": "pytorch_tokenizers.CppSPTokenizer", "texts": len(texts), "note": NORMALISATION_NOTE}
    try:
        import pytorch_tokenizers
        from pytorch_tokenizers import CppSPTokenizer
    except Exception as e:
        return {**base, "status": "skipped", "reason": f"pytorch_tokenizers is not importable ({e})"}
    try:
        from importlib.metadata import version

        base["pytorch_tokenizers_version"] = version("pytorch_tokenizers")
    except Exception:
        pass
    cpp = CppSPTokenizer()
    cpp.load(str(tokenizer.model_path))
    ours = tokenizer.encode(texts).ids
    mismatches = []
    for i, (t, a) in enumerate(zip(texts, ours)):
        b = list(cpp.encode(normalize(t, tokenizer.lower), 0, 0))[: tokenizer.max_len]
        if list(a) != b:
            mismatches.append({"index": i, "text": t[:80], "python": list(a)[:20], "cpp": b[:20]})
    same_vocab = int(cpp.vocab_size()) == tokenizer.vocab_size
    return {**base, "status": "ok" if not mismatches and same_vocab else "mismatch",
            "identical": len(texts) - len(mismatches), "mismatches": mismatches[:10],
            "vocab_size_python": tokenizer.vocab_size, "vocab_size_cpp": int(cpp.vocab_size()),
            "pytorch_tokenizers_module": getattr(pytorch_tokenizers, "__name__", "pytorch_tokenizers")}


# ---------------------------------------------------------------------------------------------- table

def format_table(report: dict) -> str:
    """A short plain-text/markdown table of a parity report."""
    rows = [("artefact", "prec", "MB", "cos mean", "cos min", "max|Δ|", "NN top1", "batch 1-cos", "arena MB",
             "result")]
    ref = report.get("reference") or {}
    if ref:
        rows.append(("torch eager (reference)", "fp32", "-", "1", "1", "0", "1",
                     f"{ref.get('batch_invariance_cos', 0):.1e}", "-", "-"))
    for name, e in report.get("artifacts", {}).items():
        rows.append((name, e["precision"], f"{e['bytes'] / 1e6:.2f}", f"{e['cos_mean']:.6f}", f"{e['cos_min']:.6f}",
                     f"{e['max_abs_diff']:.1e}", f"{e['nn_top1_agreement']:.3f}",
                     f"{e.get('batch_invariance_cos', e['batch_invariance']):.1e}",
                     f"{e['arena_bytes'] / 1e6:.1f}" if e.get("arena_bytes") is not None else "-",
                     "pass" if e.get("passed") else "FAIL: " + "; ".join(e.get("failures", []))))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    probe = report.get("probe", {})
    tp = report.get("tokenizer_parity", {})
    notes = [f"probe: {probe.get('texts')} texts ({', '.join(probe.get('languages', []))}), "
             f"{probe.get('tokens_min')}-{probe.get('tokens_max')} tokens, max_len {probe.get('max_len')}, "
             f"batch sizes {report.get('batch_sizes')}"]
    trunc = probe.get("truncated", [])
    if trunc:
        longest = max(trunc, key=lambda t: t["tokens_before"])
        notes.append(f"truncated: {len(trunc)} probe text(s) longer than max_len {probe.get('max_len')} kept their "
                     f"first {probe.get('max_len')} tokens (longest: text {longest['index']}, "
                     f"{longest['tokens_before']} tokens)")
    if tp.get("status") == "skipped":
        notes.append(f"token ids vs CppSPTokenizer: skipped ({tp.get('reason')})")
    elif tp:
        notes.append(f"token ids vs CppSPTokenizer: {tp.get('identical')}/{tp.get('texts')} identical "
                     f"(fed lwx_edge.text.normalize(text): lowercase + NFKC before SentencePiece)")
    return "\n".join(lines + [""] + notes)


def sha256(path: str | os.PathLike) -> str:
    """sha256 of a file (hex)."""
    from lwx_edge.atomic import sha256_file

    return sha256_file(Path(path))
