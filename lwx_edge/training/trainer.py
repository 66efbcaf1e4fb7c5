"""The training loop: single process or torchrun DDP (its configuration: :mod:`lwx_edge.training.config`).

    lwx-edge train --corpus data/corpus/ddtp/train.en-fr.tsv ... --out runs/demo

Objective (docs/METHOD.md §3; distillation §3.6): L = w_gen·L_gen + w_align·L_align + w_sim·L_sim + w_kd·L_KD
+ w_mono·L_KD(mono) [+ w_distance·L_cT-LASER + w_ranking·L_rank]. Every weight can be 0 (ablations).

The terms are the registry :data:`lwx_edge.training.losses.LOSSES`: adding one is its function, a registry
entry and a :class:`LossWeights` field.

DDP and in-batch negatives: ``batch_size`` is the *global* batch. Every rank cuts its contiguous slice
of the same global batch, all-gathers the inputs of the batch-level losses (align, sim, distance, ranking,
rel: u, v, the teacher vectors) with autograd (``torch.distributed.nn``) and computes them over the whole
global batch, so their negatives are exactly those of a single process. Per-pair losses (generative,
distillation) are means over the local slice; DDP's gradient averaging turns both into the single-process
gradient.
"""
from __future__ import annotations

import functools
import math
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from ..atomic import recover_dir, write_json_atomic
from ..collapse import MAX_UNRELATED_COS, probe_texts, unrelated_cosine
from ..data.batches import MonoBatcher, PairBatcher, batch_groups, slice_rows, stack_padded, tokenize_pairs
from ..errors import LwxError
from ..tokenizer import Tokenizer, train_tokenizer
from .checkpoint import load_checkpoint, save_bundle, save_checkpoint
from .config import LossWeights, TrainConfig, lr_at
from .guard import DivergenceGuard
from .inputs import dev_sets, read_mono, read_pairs
from .model import DualEncoderModel
from .objective import compute_losses, total_loss
from .processes import dist_info, from_rank0, run_device, to_device
from .run_log import RunLog
from .start import check_architecture, load_start, transferred

__all__ = ["Trainer", "train", "TrainConfig", "LossWeights", "KILL_ENV"]

KILL_ENV = "LWX_EDGE_KILL_AFTER_STEP"  # test hook: SIGKILL this process after that step


class Trainer:
    """Builds tokenizer, data, teacher targets and model from a TrainConfig, then trains."""

    def __init__(self, cfg: TrainConfig, resume: bool = False):
        cfg.validate()
        cfg.check_dev_sets()
        self.cfg = cfg
        self._join_processes()
        fresh = not Path(cfg.out_dir).exists()
        self._open_run_dir(resume)
        try:
            self._set_up(resume)
        except BaseException:  # a run that never started leaves no run directory behind
            if fresh and self.rank == 0:
                shutil.rmtree(self.out, ignore_errors=True)
            raise

    def _set_up(self, resume: bool) -> None:
        """Data, tokenizer, teacher targets and model of the run."""
        cfg = self.cfg
        if cfg.batch_size % self.world:
            raise LwxError(f"batch size {cfg.batch_size} is not divisible by the world size {self.world}")
        if not cfg.corpus:
            raise LwxError("no training corpus given (--corpus FILE, a *.en-xx.tsv file)")
        use_teacher = bool(cfg.teacher != "none" and (cfg.weights.kd or cfg.weights.mono))
        torch.manual_seed(cfg.seed)

        start = self._start_weights() if cfg.init_from else None
        pairs = read_pairs(cfg.corpus, self.log)
        mono_texts = read_mono(cfg.mono, cfg.mono_max_per_lang, cfg.seed) if (cfg.mono and use_teacher and cfg.weights.mono) else []
        self.tokenizer_path = self._tokenizer(pairs, mono_texts)
        self.tokenizer = Tokenizer(self.tokenizer_path, max_len=cfg.model.max_len)
        cfg.model.vocab_size = self.tokenizer.vocab_size
        data, dev = self._train_and_dev(pairs)
        self.log(f"data: {len(data):,} training pairs ({data.dropped} without a maskable token dropped), "
                 f"{len(dev):,} dev pairs, {len(mono_texts):,} monolingual sentences")
        teacher_dim = self._batchers(data, dev, mono_texts, use_teacher)
        resuming = resume and (self.out / "checkpoint").exists()
        self._build_model(teacher_dim, start, data, use_teacher, resuming)
        if resuming:
            self._resume()
        self._wrap_model()

    # -- setup pieces --
    def _join_processes(self) -> None:
        """Rank, world and device; under torchrun, the process group."""
        self.rank, self.world, local_rank = dist_info()
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() and self.cfg.device != "cpu" else "gloo")
        self.device = run_device(self.cfg.device, local_rank)
        if self.cfg.threads:
            torch.set_num_threads(self.cfg.threads)

    def _open_run_dir(self, resume: bool) -> None:
        """The run directory, with what a kill left there finished or dropped, and its log."""
        self.out = Path(self.cfg.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        if self.rank == 0:  # the only writer of its run directory: finish or drop what a kill left
            for name in ("checkpoint", "best", "bundle"):
                recover_dir(self.out / name, clean_tmp=True)
        if resume and not (self.out / "checkpoint").exists() and (self.out / "metrics.jsonl").exists():
            raise LwxError(f"--resume: {self.out} holds a run but no checkpoint/ to resume from "
                           "(set save_every, or drop --resume to start again)")
        self.log = RunLog(self.out, self.rank == 0)

    def _train_and_dev(self, pairs: list):
        """The tokenized training and dev pairs; without ``dev_pairs``, dev pairs held out from training, as the
        paper does."""
        cfg = self.cfg
        data = tokenize_pairs(pairs, self.tokenizer, cfg.train_max_len)
        dev_pairs = read_pairs(cfg.dev_pairs, self.log, "dev.*.tsv*") if cfg.dev_pairs else []
        if not dev_pairs:  # hold out pairs from train, as the paper does
            rng = np.random.default_rng(cfg.seed)
            hold = set(rng.choice(len(pairs), size=min(cfg.dev_holdout, len(pairs) // 10), replace=False).tolist())
            dev_pairs = [p for i, p in enumerate(pairs) if i in hold]
            data = tokenize_pairs([p for i, p in enumerate(pairs) if i not in hold], self.tokenizer,
                                  cfg.train_max_len)
        return data, tokenize_pairs(dev_pairs[:cfg.dev_holdout], self.tokenizer, cfg.train_max_len)

    def _batchers(self, data, dev, mono_texts: list[str], use_teacher: bool) -> int | None:
        """The training, dev and monolingual batchers (with the teacher's vectors); returns the teacher's
        dimension (None without one)."""
        cfg = self.cfg
        maskable = self.tokenizer.is_maskable()
        teacher_vecs = mono_vecs = None
        teacher_dim = None
        if use_teacher:
            teacher_vecs, mono_vecs, teacher_dim = self._teacher_vectors(data.src_text, mono_texts)
        groups, clusters, said = batch_groups(cfg.batch_group, data, teacher_vecs, cfg.batch_clusters or cfg.bucket,
                                              cfg.seed, cfg.cluster_run)
        clusters = from_rank0(clusters, self.world)  # seeded k-means, but threaded sums may differ in the last bit
        self.log(said)
        cap = min(cfg.train_max_len, cfg.model.max_len)  # fixed lengths (pad_to) never past the position table
        self.batcher = PairBatcher(data, cfg.batch_size, maskable, cfg.seed, teacher_vecs, cfg.bucket, groups,
                                   cfg.pad_to, cap, clusters, cfg.cluster_run)
        self.dev_batcher = (PairBatcher(dev, min(cfg.batch_size, len(dev)), maskable, cfg.seed + 1)
                            if len(dev) >= 2 else None)
        self.mono = None
        if mono_vecs is not None and len(mono_texts):
            ids = [np.asarray(x[:cfg.train_max_len], np.int32) for x in self.tokenizer.encode(mono_texts).ids]
            self.mono = MonoBatcher(ids, mono_vecs, cfg.mono_batch_size, cfg.seed, cfg.bucket, cfg.pad_to, cap)
        return teacher_dim

    def _build_model(self, teacher_dim: int | None, start, data, use_teacher: bool, resuming: bool) -> None:
        """The model (unless resuming: from ``init_from``'s weights, or its token table from the teacher), its
        optimizer and the divergence guard."""
        cfg = self.cfg
        if cfg.kd_space == "output" and teacher_dim and teacher_dim != cfg.model.d_model:
            raise LwxError(f"kd_space=output needs the teacher's dimension ({teacher_dim}) to be the model's "
                           f"d_model ({cfg.model.d_model}); use kd_space=projection")
        self.model = DualEncoderModel(cfg.model, teacher_dim if cfg.kd_space == "projection" else None
                                      ).to(self.device)
        if start is not None and not resuming:
            load_start(self.model, start, cfg, self.tokenizer, data, self.log)
        elif use_teacher and cfg.token_init == "teacher" and not resuming:
            self._init_from_teacher()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                          amsgrad=True)
        self.step, self.elapsed, self.best, self.lr_scale = 0, 0.0, -math.inf, 1.0
        self.guard = (DivergenceGuard(cfg.guard_rollbacks, cfg.guard_lr_factor, batch_size=cfg.batch_size)
                      if cfg.guard else None)

    def _resume(self) -> None:
        """Model, optimizer and counters from the run's checkpoint; the metrics of later steps are forgotten."""
        meta = load_checkpoint(self.out / "checkpoint", self.model, self.optimizer)
        self.step, self.elapsed, self.best = meta["step"], meta["elapsed"], meta["best"]
        self.lr_scale = meta.get("lr_scale", 1.0)
        self.log.drop_after(self.step)
        self.log(f"resumed from {self.out / 'checkpoint'} at step {self.step}")

    def _wrap_model(self) -> None:
        """DDP around the model under torchrun, ``torch.compile`` if asked, bf16 autocast (``precision``)."""
        cfg = self.cfg
        self.ddp = self.model
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.ddp = DDP(self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                           find_unused_parameters=self._has_unused_parameters())
        self.forward = torch.compile(self.ddp) if cfg.compile else self.ddp
        bf16 = cfg.precision == "bf16" or (cfg.precision == "auto" and self.device.type == "cuda")
        self.autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16)

    @functools.cached_property
    def teacher(self):
        """The teacher, built once on first use (loading its model takes seconds and memory)."""
        from ..data.teacher import USETeacher

        return USETeacher(self.cfg.threads)

    def _barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def _start_weights(self) -> dict[str, np.ndarray]:
        """The encoder weights of ``init_from``; its architecture and tokenizer become the run's (the tokenizer
        is copied into the run directory, so a resumed run reads the same one). With a ``tokenizer`` of
        its own the run keeps that one and the token table is transferred to it."""
        from ..atomic import atomic_file
        from ..bundle import TOKENIZER
        from .transfer import encoder_weights

        state, config, bundle = encoder_weights(self.cfg.init_from)
        self.started_from = {"bundle": str(self.cfg.init_from), "training": bundle.manifest.get("training")}
        theirs = Tokenizer(bundle.file(TOKENIZER))
        if self.cfg.tokenizer and Tokenizer(self.cfg.tokenizer).sha256 != theirs.sha256:
            teacher = self.teacher if self.cfg.teacher != "none" else None
            return transferred(self.cfg, state, config, theirs, teacher, self.log)
        check_architecture(self.cfg, config)
        path = self.out / TOKENIZER
        if self.rank == 0 and not (path.exists() and Tokenizer(path).sha256 == theirs.sha256):
            with atomic_file(path) as tmp:
                tmp.write_bytes(bundle.file(TOKENIZER).read_bytes())
        self._barrier()
        self.cfg.tokenizer = str(path)
        return state

    def _tokenizer(self, pairs, mono_texts) -> Path:
        if self.cfg.tokenizer:
            return Path(self.cfg.tokenizer)
        path = self.out / "tokenizer.model"
        if self.rank == 0 and not path.exists():
            self.log(f"training a {self.cfg.vocab_size}-piece SentencePiece BPE model -> {path}")
            texts = [t for p in pairs for t in (p.src, p.tgt)] + mono_texts
            train_tokenizer(texts, path, vocab_size=self.cfg.vocab_size, seed=self.cfg.seed, progress=False)
        self._barrier()
        return path

    def _teacher_vectors(self, src_texts, mono_texts):
        from ..data.teacher import TeacherCache

        cache = TeacherCache(self.cfg.teacher_cache, self.teacher)
        if self.rank == 0:  # compute once; other ranks then read the cache
            cache.vectors(src_texts + mono_texts, progress=True, workers=self.cfg.teacher_workers)
        self._barrier()
        if self.rank:
            cache = TeacherCache(self.cfg.teacher_cache, self.teacher)
        vec = cache.vectors(src_texts, progress=False)
        mono = cache.vectors(mono_texts, progress=False) if mono_texts else None
        return vec, mono, vec.shape[1]

    def _init_from_teacher(self) -> None:
        from ..data.teacher import token_vectors

        vectors = token_vectors(self.tokenizer, self.teacher, dim=self.cfg.model.d_model)
        self.model.init_from_token_vectors(torch.from_numpy(vectors))
        batches = [self.batcher.batch(0, i) for i in range(min(8, self.batcher.steps_per_epoch))]
        ids, mask = (torch.from_numpy(stack_padded([b[f"{k}_{side}"] for b in batches for side in "ab"]))
                     for k in ("ids", "mask"))  # both sides of a few seeded training batches
        c = self.model.center_output(ids.to(self.device), mask.to(self.device))
        self.log(f"token table initialised from the teacher's vectors of the {len(vectors):,} pieces; "
                 f"output centred (mean sentence vector of norm {float(c.norm()):.2f} removed)")

    def _has_unused_parameters(self) -> bool:
        """Whether the losses that run leave some parameter without a gradient (DDP must then look for such
        parameters every step): one forward and backward of this rank's first batch, in eval mode (no dropout
        draws), with the trainer's own :func:`compute_losses`."""
        batch = to_device(slice_rows(self._global_batch(0), self.rank, self.world), self.device)
        self.model.eval()
        out = self.model(batch["ids_a"], batch["mask_a"], batch["ids_b"], batch["mask_b"], batch.get("mono_ids"),
                         batch.get("mono_mask"))
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        loss = total_loss(compute_losses(out, batch, self.cfg, 1), self.cfg.weights)
        return any(g is None for g in torch.autograd.grad(loss, params, allow_unused=True))

    # -- training --
    def _global_batch(self, step: int) -> dict[str, np.ndarray]:
        epoch, i = divmod(step, self.batcher.steps_per_epoch)
        batch = self.batcher.batch(epoch, i)
        if self.mono is not None:
            m = self.mono.batch(step)
            batch.update(mono_ids=m["ids"], mono_mask=m["mask"], mono_teacher=m["teacher"])
        return batch

    def train_step(self, step: int) -> dict[str, float]:
        epoch = step // self.batcher.steps_per_epoch
        lr = lr_at(self.cfg, step, epoch, self._progress(), self.batcher.steps_per_epoch) * self.lr_scale
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        self.model.generative_head.alone = step < self.cfg.head_warmup_steps
        g_batch = self._global_batch(step)
        batch = to_device(slice_rows(g_batch, self.rank, self.world) if self.world > 1 else g_batch,
                           self.device)
        self.model.train()
        with self.autocast:
            out = self.forward(batch["ids_a"], batch["mask_a"], batch["ids_b"], batch["mask_b"],
                               batch.get("mono_ids"), batch.get("mono_mask"))
        terms = compute_losses(out, batch, self.cfg, self.world)
        loss = total_loss(terms, self.cfg.weights)
        rec = {k: float(v.detach()) for k, v in terms.items()}
        rec.update(loss=float(loss.detach()), lr=lr, epoch=epoch)
        if not self._agree(not math.isfinite(rec["loss"])):  # a non-finite step is never applied
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grads = [p.grad for p in self.model.parameters() if p.grad is not None]
            rec["grad_norm"] = float(norm := torch.nn.utils.get_total_norm(grads))  # before clipping; equal on all ranks
            if self.cfg.grad_clip:
                torch.nn.utils.clip_grads_with_norm_(self.model.parameters(), self.cfg.grad_clip, norm)
            if math.isfinite(rec["grad_norm"]):
                self.optimizer.step()
        bad = [k for k, v in rec.items() if not math.isfinite(v)]
        if bad and self.guard is None:
            raise LwxError(f"training diverged at step {step}: non-finite {', '.join(bad)} (the step was not "
                           "applied); lower --lr or check the data")
        return rec

    @torch.no_grad()
    def validate(self, full: bool = False) -> dict[str, float]:
        """Dev loss (seeded masks, eval mode), DDTP retrieval P@1 on short descriptions and retrieval P@1 on the
        ``dev_xsr`` pair files (capped at ``dev_max_pairs`` per language)."""
        from ..encoder import Encoder
        from ..evaluate import retrieval
        from ..runtime.torch_backend import TorchBackend

        self.model.eval()
        rec: dict[str, float] = {}
        if self.dev_batcher is not None:
            sums: dict[str, float] = {}
            n = max(1, min(8, self.dev_batcher.steps_per_epoch))
            for i in range(n):
                batch = to_device(self.dev_batcher.batch(0, i), self.device)
                with self.autocast:
                    out = self.model(batch["ids_a"], batch["mask_a"], batch["ids_b"], batch["mask_b"])
                terms = compute_losses(out, batch, self.cfg, 1)
                for k, v in terms.items():
                    sums[f"dev/{k}"] = sums.get(f"dev/{k}", 0.0) + float(v) / n
            rec.update(sums)
            rec["dev/loss"] = sum(getattr(self.cfg.weights, k[4:]) * v for k, v in sums.items())
        enc = Encoder(self.tokenizer, TorchBackend(self.model.encoder, self.device))
        texts, groups = probe_texts()
        rec["dev/unrelated_cos"] = unrelated_cosine(enc.embed(texts, batch_size=128, truncation="ignore"), groups)
        for name in self.cfg.dev_doc_fields if self.cfg.dev_docs else ():
            scores = retrieval(lambda t: enc.embed(t, batch_size=128, truncation="ignore"), self.cfg.dev_docs,
                               field=name, max_pairs=None if full else self.cfg.dev_max_pairs)
            key = "dev/p@1" if name == "short" else f"dev/p@1/{name}"  # short descriptions keep the old keys
            rec.update({f"{key}/{k}": v for k, v in scores.items() if k != "ci95"})
        if self.cfg.dev_xsr:
            from ..evaluate import pair_retrieval

            for i, (name, pairs) in enumerate(dev_sets(self.cfg.dev_xsr)):
                scores = pair_retrieval(lambda t: enc.embed(t, batch_size=128), pairs,
                                        max_pairs=self.cfg.dev_max_pairs)
                key = "dev/xsr@1" if i == 0 else f"dev/xsr@1/{name}"
                rec.update({f"{key}/{k}": v for k, v in scores.items() if k != "ci95"})
        if self.cfg.dev_docs or self.cfg.dev_xsr:
            rec["dev/score"] = self._score(rec)
        self.model.train()
        return rec

    def _score(self, rec: dict) -> float:
        """Selection score: mean dev P@1 of the retrieval sets (each DDTP field of ``dev_doc_fields`` and each
        ``dev_xsr`` entry, weighted equally), else minus the dev loss."""
        p = [v for k, v in rec.items() if k.startswith(("dev/p@1/", "dev/xsr@1/")) and k.endswith("/avg")]
        return sum(p) / len(p) if p else -rec.get("dev/loss", 0.0)

    def _save(self, final: bool = False) -> None:
        if self.rank != 0:
            return
        meta = {"step": self.step, "elapsed": self.elapsed, "best": self.best, "lr_scale": self.lr_scale,
                "config": self.cfg.to_dict()}
        save_checkpoint(self.out / "checkpoint", self.model, self.optimizer, meta)
        if final:
            save_bundle(self.model.encoder, self.tokenizer_path, self.out / "bundle", self._info())

    def _info(self) -> dict:
        """The bundle's training record; a run that started from a bundle keeps that bundle's own record
        (``started_from``), so a chain of continuations is read from the last manifest alone."""
        info = {"step": self.step, "elapsed_s": round(self.elapsed, 1), "device": str(self.device),
                "world_size": self.world, "torch": torch.__version__, "config": self.cfg.to_dict()}
        if getattr(self, "started_from", None):
            info["started_from"] = self.started_from
        return info

    def _progress(self) -> float:
        """How far the run is towards whichever limit stops it first (steps/epochs or max_time)."""
        by_time = self.elapsed / self.cfg.max_time if self.cfg.max_time else 0.0
        return min(1.0, max(self.step / self._max_steps(), by_time))

    def _max_steps(self) -> int:
        steps = self.cfg.epochs * self.batcher.steps_per_epoch
        return min(steps, self.cfg.max_steps) if self.cfg.max_steps else steps

    def fit(self) -> dict:
        cfg, total = self.cfg, self._max_steps()
        kill_at = int(os.environ.get(KILL_ENV, "-1"))
        self.log(f"training: {total:,} steps at global batch {cfg.batch_size} on {self.device} "
                 f"(world {self.world}), {sum(p.numel() for p in self.model.parameters()) / 1e6:.2f}M params")
        by_time = bool(cfg.max_time)  # the bar follows the binding limit: seconds of training, or steps
        bar = tqdm(total=int(cfg.max_time) if by_time else total, initial=int(self.elapsed) if by_time else self.step,
                   disable=self.rank != 0, unit="s" if by_time else "step", dynamic_ncols=True)
        last, t_window, pairs_window = {}, time.perf_counter(), 0
        if cfg.eval_every and self.step == 0:
            last = self._evaluate()  # where the initialisation starts
        if self.guard is not None and self.guard.good is None:
            self._keep_good()
        while self.step < total and not (cfg.max_time and self.elapsed >= cfg.max_time):
            t0 = time.perf_counter()
            rec = self.train_step(self.step)
            sign = self.guard.check_step(rec, tuple(k for k in rec if k not in ("loss", "lr", "epoch", "grad_norm"))) \
                if self.guard is not None else None
            if self._agree(sign is not None):
                self._roll_back(*(sign or ("a divergence on another rank", "unknown")))
                continue
            self.step += 1
            dt = time.perf_counter() - t0
            self.elapsed += dt
            pairs_window += cfg.batch_size
            bar.update(min(int(self.elapsed), int(cfg.max_time)) - bar.n if by_time else 1)  # whole seconds
            if self.step % cfg.log_every == 0 or self.step == total:
                now = time.perf_counter()
                rec.update(step=self.step, pairs_per_s=pairs_window / max(now - t_window, 1e-9),
                           elapsed_s=round(self.elapsed, 2))
                t_window, pairs_window = now, 0
                self.log.metrics(rec)
                bar.set_postfix(step=self.step, loss=f"{rec['loss']:.3f}", pps=f"{rec['pairs_per_s']:.0f}",
                                **({"rollbacks": self.guard.rollbacks} if self.guard and self.guard.rollbacks else {}))
            if cfg.eval_every and self.step % cfg.eval_every == 0:
                last = self._evaluate()
            if cfg.save_every and self.step % cfg.save_every == 0:
                self._save()
            if self.step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        bar.close()
        last = self._evaluate(full=cfg.final_full_eval)  # by default the whole dev pool, not the per-language cap
        self._save(final=True)
        if self.rank == 0:
            write_json_atomic(self.out / "final_metrics.json", last)
        return last

    def _evaluate(self, full: bool = False) -> dict:
        rec = self.validate(full) if self.rank == 0 else {}
        rec["step"] = self.step
        sign = None
        if self.rank == 0:
            self.log.metrics(rec)
            shown = " ".join(f"{k[4:]}={v:.4f}" for k, v in rec.items() if k.startswith("dev/"))
            self.log(f"step {self.step}: {shown}")
            if self.guard is not None:
                sign = self.guard.check_eval(rec["dev/unrelated_cos"], MAX_UNRELATED_COS)
            if sign is None and not full and self._score(rec) > self.best:  # compare like with like (capped pools)
                self.best = self._score(rec)
                save_bundle(self.model.encoder, self.tokenizer_path, self.out / "best", self._info())
        if self.guard is not None:
            if self._agree(sign is not None):
                self._roll_back(*(sign or ("a collapse seen on rank 0", "unknown")))
            else:
                self._keep_good(rec.get("dev/unrelated_cos"))
        return rec

    def _agree(self, flag: bool) -> bool:
        """``flag`` on any rank (every rank must take the same branch)."""
        if self.world == 1:
            return flag
        t = torch.tensor([float(flag)], device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def _keep_good(self, unrelated_cos: float | None = None) -> None:
        self.guard.keep(self.model, self.optimizer, {"step": self.step, "elapsed": self.elapsed}, unrelated_cos)

    def _roll_back(self, what: str, term: str) -> None:
        """Back to the last good state with a lower learning rate (lwx_edge.training.guard); logged as an event."""
        at = self.step
        state = self.guard.roll_back(self.model, self.optimizer, what, term, at)  # DivergenceError at the limit
        self.step, self.elapsed = state["step"], state["elapsed"]
        self.lr_scale *= self.cfg.guard_lr_factor
        event = {"event": "rollback", "step": at, "to_step": self.step, "reason": what, "term": term,
                 "lr_scale": self.lr_scale, "rollbacks": self.guard.rollbacks}
        if self.rank == 0:
            self.log.metrics(event)
            self.log(f"divergence at step {at}: {what}, in {term}; rolled back to step {self.step} with the "
                     f"learning rate x{self.lr_scale:g} (rollback {self.guard.rollbacks} of "
                     f"{self.cfg.guard_rollbacks})")


def train(cfg: TrainConfig, resume: bool = False) -> dict:
    """Train with ``cfg`` (resuming from its checkpoint if ``resume``) and return the run's summary."""
    trainer = Trainer(cfg, resume=resume)
    try:
        return trainer.fit()
    finally:
        if trainer.world > 1 and dist.is_initialized():
            dist.destroy_process_group()
