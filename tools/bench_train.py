"""Training-speed benchmark: pairs/s and peak memory of the real training step, all losses on.

    python tools/bench_train.py --out benchmarks/bench_train_cpu.json            # CPU (fp32)
    python tools/bench_train.py --precision bf16 ...                              # CPU, bf16 autocast
    python tools/bench_train.py --device cuda --batch 128 512 2048 --compile     # GPU (bf16 autocast)
    python tools/bench_train.py --device cuda --vocab 128000 --table-bits 4 --table-rank 160 --d-ff 512   # the shipped shape

The step is the trainer's own (model forward, every loss term of ``compute_losses``, backward, Adam),
on synthetic token batches of a fixed length per side, with random teacher vectors.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lwx_edge.atomic import write_json_atomic  # noqa: E402
from lwx_edge.training.config import LossWeights, TrainConfig  # noqa: E402
from lwx_edge.training.model import DualEncoderModel, ModelConfig  # noqa: E402
from lwx_edge.training.objective import compute_losses, total_loss


def make_batch(n: int, length: int, vocab: int, mono: int, teacher_dim: int, device, rng) -> dict:
    def ids(rows):
        return torch.from_numpy(rng.integers(3, vocab, size=(rows, length))).to(device)

    b = {"ids_a": ids(n), "ids_b": ids(n), "mask_a": torch.ones(n, length, dtype=torch.long, device=device),
         "mask_b": torch.ones(n, length, dtype=torch.long, device=device),
         "masked_side": torch.from_numpy(rng.integers(0, 2, n)).to(device),
         "masked_token": torch.from_numpy(rng.integers(3, vocab, n)).to(device),
         "teacher": torch.randn(n, teacher_dim, device=device)}
    rows = torch.arange(n, device=device)
    b["ids_a"][rows[b["masked_side"] == 0], 0] = 2
    b["ids_b"][rows[b["masked_side"] == 1], 0] = 2
    if mono:
        b.update(mono_ids=ids(mono), mono_mask=torch.ones(mono, length, dtype=torch.long, device=device),
                 mono_teacher=torch.randn(mono, teacher_dim, device=device))
    return b


def bench(batch: int, args, device) -> dict:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cfg = TrainConfig(batch_size=batch, weights=LossWeights(distance=args.distance, ranking=args.ranking))
    model = DualEncoderModel(ModelConfig(vocab_size=args.vocab, table_bits=args.table_bits, table_rank=args.table_rank,
                                         d_ff=args.d_ff), teacher_dim=512).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, weight_decay=1e-5, amsgrad=True)
    fwd = torch.compile(model) if args.compile else model
    bf16 = args.precision == "bf16" or (args.precision == "auto" and device.type == "cuda")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)  # as the trainer's ``precision``
    mono = batch // 2 if args.mono else 0
    batches = [make_batch(batch, args.length, args.vocab, mono, 512, device, rng) for _ in range(4)]

    def step(b):
        with autocast:
            out = fwd(b["ids_a"], b["mask_a"], b["ids_b"], b["mask_b"], b.get("mono_ids"), b.get("mono_mask"))
        terms = compute_losses(out, b, cfg, 1)
        loss = total_loss(terms, cfg.weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, sorted(terms)

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(args.warmup):
        step(batches[i % 4])
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for i in range(args.steps):
        loss, terms = step(batches[i % 4])
    float(loss)  # sync
    dt = time.perf_counter() - t0
    res = {"batch": batch, "pairs_per_s": round(batch * args.steps / dt, 1),
           "ms_per_step": round(1000 * dt / args.steps, 2), "loss_terms": terms}
    if device.type == "cuda":
        res["peak_gpu_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    res["rss_growth_mb"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024, 1)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, nargs="+", default=[128])
    ap.add_argument("--length", type=int, default=32, help="tokens per side")
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--table-bits", type=int, default=ModelConfig.table_bits, help="model.table_bits (4: the shipped table)")
    ap.add_argument("--table-rank", type=int, default=ModelConfig.table_rank,
                    help="model.table_rank (160: the shipped default's rows; 0: full width)")
    ap.add_argument("--d-ff", type=int, default=ModelConfig.d_ff, help="model.d_ff (512: the shipped default's)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                    help="auto: bf16 autocast on CUDA, fp32 on CPU (the trainer's precision setting)")
    ap.add_argument("--no-mono", dest="mono", action="store_false", help="leave out the monolingual KD batch")
    ap.add_argument("--distance", type=float, default=0.0, help="weight of the cT-LASER term (0 = off)")
    ap.add_argument("--ranking", type=float, default=0.0, help="weight of the ranking term (0 = off)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/bench_train.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    results = []
    for b in args.batch:
        r = bench(b, args, device)
        print(json.dumps(r), flush=True)
        results.append(r)
    from bench_app import cpu_info

    info = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
            "machine": cpu_info(),
            "precision": "bf16 autocast" if args.precision == "bf16" or (args.precision == "auto" and device.type == "cuda")
            else "fp32", "torch": torch.__version__,
            "threads": torch.get_num_threads(), "vocab": args.vocab, "table_bits": args.table_bits,
            "table_rank": args.table_rank, "d_ff": args.d_ff, "length_per_side": args.length,
            "compile": args.compile, "mono_batch": "batch/2" if args.mono else 0,
            "command": " ".join(["python", *sys.argv]), "results": results}
    write_json_atomic(args.out, info)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
