"""Cut a bundle's feed-forward layers to their ``d_ff`` most used neurons (issue 14: a smaller model for CPUs
without VNNI, where int8 GEMMs bound the speed).

    python tools/prune_ffn.py runs/gpu128-words/bundle 512 runs/lite/d512    # then lwx-edge export --int8

Per layer, a neuron's score is the mass of its activation, sum |silu(W1·x + b1)| over the tokens of train-split
texts (``--texts``: the first lines of shuffled everyday and DDTP train pairs, both sides), times the norm of
its outgoing weights (its column of W2). The top ``d_ff`` keep their weights, in their order; nothing is
retrained. Every other weight, the tokenizer and the table's form are kept, so ``lwx-edge train --init-from``
can continue it (``--set model.d_ff=...``; ``recipes/history/gpu-words-ffn512.json``), and the manifest keeps the source's
training record with the cut added (``ffn_pruned``).
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lwx_edge.errors import LwxError  # noqa: E402
from lwx_edge.tokenizer import Tokenizer  # noqa: E402
from lwx_edge.training.checkpoint import save_bundle  # noqa: E402
from lwx_edge.training.model import ModelConfig, SentenceEncoder  # noqa: E402
from lwx_edge.training.transfer import encoder_weights  # noqa: E402


def train_texts(corpus: Path, per_file: int) -> list[str]:
    """Both sides of ``per_file`` seeded-random pairs of every everyday and DDTP train file."""
    out = []
    for f in sorted((corpus / "everyday").glob("train.en-*.tsv")) + sorted((corpus / "ddtp").glob("train.en-*.tsv")):
        lines = f.read_text(encoding="utf-8").splitlines()
        random.Random(0).shuffle(lines)
        out += [c for line in lines[:per_file] for c in line.split("\t")[:2] if c.strip()]
    return out


def neuron_scores(encoder: SentenceEncoder, tokenizer: Tokenizer, texts: list[str]) -> list[torch.Tensor]:
    """Per layer, activation mass times outgoing weight norm of every FFN neuron."""
    mass = [torch.zeros(encoder.config.d_ff) for _ in encoder.blocks]
    real = [None]  # the batch's attention mask: padding positions do not count

    def add(j, output):
        mass[j].add_((F.silu(output).abs() * real[0][..., None]).sum((0, 1)))

    hooks = [b.fc1.register_forward_hook(lambda m, i, o, j=j: add(j, o)) for j, b in enumerate(encoder.blocks)]
    encoder.eval()
    try:
        with torch.no_grad():
            for s in range(0, len(texts), 64):
                ids, mask = Tokenizer.pad(tokenizer.encode(texts[s:s + 64]).ids)
                real[0] = torch.from_numpy(mask).float()
                encoder(torch.from_numpy(ids), torch.from_numpy(mask))
    finally:
        for h in hooks:
            h.remove()
    return [m * b.fc2.weight.detach().norm(dim=0) for m, b in zip(mass, encoder.blocks)]


def prune_ffn(encoder: SentenceEncoder, scores: list[torch.Tensor], d_ff: int) -> SentenceEncoder:
    """A copy of ``encoder`` whose FFNs keep the ``d_ff`` best-scored neurons of each layer, in their order."""
    if not 0 < d_ff <= encoder.config.d_ff:
        raise ValueError(f"d_ff must be in 1..{encoder.config.d_ff}, got {d_ff}")
    small = SentenceEncoder(ModelConfig(**{**encoder.config.to_dict(), "d_ff": d_ff}))
    state = {k: v.clone() for k, v in encoder.state_dict().items()}
    for j, score in enumerate(scores):
        keep = torch.sort(torch.topk(score, d_ff).indices).values
        p = f"blocks.{j}."
        state[p + "fc1.weight"], state[p + "fc1.bias"] = state[p + "fc1.weight"][keep], state[p + "fc1.bias"][keep]
        state[p + "fc2.weight"] = state[p + "fc2.weight"][:, keep]
    small.load_state_dict(state)
    return small.train(encoder.training)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", help="bundle to cut (fp32 weights or an int8 ONNX export; 'default': the shipped one)")
    ap.add_argument("d_ff", type=int, help="neurons to keep per layer")
    ap.add_argument("out", type=Path)
    ap.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    ap.add_argument("--texts", type=int, default=250, help="pairs per train file that score the neurons")
    a = ap.parse_args()
    try:
        state, config, bundle = encoder_weights(a.bundle)
    except LwxError as e:
        sys.exit(f"error: {e}")
    if not 0 < a.d_ff <= config.d_ff:
        sys.exit(f"error: d_ff must be in 1..{config.d_ff} (the bundle's FFN width), got {a.d_ff}")
    encoder = SentenceEncoder(config)
    encoder.load_weights(state)
    tokenizer = Tokenizer(bundle.file("tokenizer.model"), max_len=config.max_len)
    texts = train_texts(a.corpus, a.texts)
    if not texts:
        sys.exit(f"error: no everyday or DDTP train pairs under {a.corpus} (run lwx-edge data all)")
    scores = neuron_scores(encoder, tokenizer, texts)
    small = prune_ffn(encoder, scores, a.d_ff)
    for j, score in enumerate(scores):
        kept = torch.topk(score, a.d_ff).values.sum() / score.sum()
        print(f"layer {j}: kept {a.d_ff} of {config.d_ff} neurons, {100 * kept:.1f}% of the score")
    cut = {"from": str(a.bundle), "d_ff": a.d_ff, "of": config.d_ff, "scored_on_texts": len(texts)}
    # the source's training record with the cut added, as lwx-edge transfer does: a run that continues this
    # bundle keeps the whole chain, and the model card shows the cut after the stage it came from
    save_bundle(small, bundle.file("tokenizer.model"), a.out,
                {**bundle.manifest.get("training", {}), "ffn_pruned": cut})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
