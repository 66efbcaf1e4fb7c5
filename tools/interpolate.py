"""Blend a fine-tuned bundle with the bundle it started from, weight by weight (Wortsman et al. 2022, WiSE-FT):
``(1 - alpha) * start + alpha * tuned``. A continuation that gains on one task and loses on another often keeps
most of the gain at alpha < 1 and gives back most of the loss.

    python tools/interpolate.py default runs/conv-lang-align6/best 0.5 runs/blend-05    # then lwx-edge export --int8

Both bundles must have the same architecture, weight names and tokenizer (a run and its ``init_from``). The
manifest keeps the tuned bundle's training record with the blend added (``interpolated``), as
tools/prune_ffn.py records its cut.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lwx_edge.errors import LwxError  # noqa: E402
from lwx_edge.tokenizer import Tokenizer  # noqa: E402
from lwx_edge.training.checkpoint import save_bundle  # noqa: E402
from lwx_edge.training.model import SentenceEncoder  # noqa: E402
from lwx_edge.training.transfer import encoder_weights  # noqa: E402


def interpolate(start: dict[str, np.ndarray], tuned: dict[str, np.ndarray], alpha: float) -> dict[str, np.ndarray]:
    """(1 - alpha) * start + alpha * tuned for every weight; the two must hold the same names and shapes."""
    if set(start) != set(tuned):
        raise LwxError(f"the bundles' weights differ in names: {sorted(set(start) ^ set(tuned))[:5]}")
    bad = [k for k in start if start[k].shape != tuned[k].shape]
    if bad:
        raise LwxError(f"the bundles' weights differ in shape: {bad[0]} {start[bad[0]].shape} vs {tuned[bad[0]].shape}")
    return {k: ((1 - alpha) * start[k].astype(np.float64) + alpha * tuned[k]).astype(np.float32) for k in start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("start", help="the bundle the run started from ('default': the shipped one)")
    ap.add_argument("tuned", help="the run's bundle")
    ap.add_argument("alpha", type=float, help="weight of the tuned bundle, in [0, 1]")
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    if not 0.0 <= a.alpha <= 1.0:
        sys.exit(f"error: alpha must be in [0, 1], got {a.alpha}")
    try:
        start, start_config, start_bundle = encoder_weights(a.start)
        tuned, config, bundle = encoder_weights(a.tuned)
        if start_config.to_dict() != config.to_dict():
            raise LwxError(f"the bundles' architectures differ: {start_config.to_dict()} vs {config.to_dict()}")
        tok_a, tok_b = (Tokenizer(b.file("tokenizer.model")) for b in (start_bundle, bundle))
        if tok_a.sha256 != tok_b.sha256:
            raise LwxError("the bundles' tokenizers differ: a blend needs one vocabulary")
        state = interpolate(start, tuned, a.alpha)
    except LwxError as e:
        sys.exit(f"error: {e}")
    encoder = SentenceEncoder(config)
    encoder.load_weights(state)
    blend = {"start": str(a.start), "tuned": str(a.tuned), "alpha": a.alpha}
    save_bundle(encoder, bundle.file("tokenizer.model"), a.out, {**bundle.manifest.get("training", {}),
                                                                    "interpolated": blend})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
