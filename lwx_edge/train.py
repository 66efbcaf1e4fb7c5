"""The training loop: config dataclass with the paper's defaults, single process or torchrun DDP.

    lwx-edge train --corpus data/corpus/ddtp/train.en-fr.tsv ... --out runs/demo

Objective (docs/METHOD.md §3; distillation §3.6): L = w_gen·L_gen + w_align·L_align + w_sim·L_sim + w_kd·L_KD
+ w_mono·L_KD(mono) [+ w_distance·L_cT-LASER + w_ranking·L_rank]. Every weight can be 0 (ablations).

The terms are the registry :data:`lwx_edge.losses.LOSSES`: adding one is its function, a registry entry and
a :class:`LossWeights` field.

DDP and in-batch negatives: ``batch_size`` is the *global* batch. Every rank cuts its contiguous slice
of the same global batch, all-gathers the inputs of the batch-level losses (align, sim, distance, ranking,
rel: u, v, the teacher vectors) with autograd (``torch.distributed.nn``) and computes them over the whole
global batch, so their negatives are exactly those of a single process. Per-pair losses (generative,
distillation) are means over the local slice; DDP's gradient averaging turns both into the single-process
gradient.
"""
from __future__ import annotations

import json
import logging
import math
import os
import signal
import time
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from . import losses as L
from .bundle import recover_dir, write_json_atomic, write_text_atomic
from .checkpoint import load_checkpoint, save_bundle, save_checkpoint
from .collapse import MAX_UNRELATED_COS, probe_texts, unrelated_cosine
from .data.batches import MonoBatcher, PairBatcher, slice_rows, tokenize_pairs
from .errors import LwxError
from .guard import DivergenceGuard
from .losses.registry import active, gathered
from .model import TABLE_GROUP, DualEncoderModel, ModelConfig
from .tokenizer import Tokenizer, train_tokenizer

log = logging.getLogger(__name__)

KILL_ENV = "LWX_EDGE_KILL_AFTER_STEP"  # test hook: SIGKILL this process after that step


@dataclass
class LossWeights:
    """Weights of the objective; the paper's (1, 2, 2) plus distillation (docs/METHOD.md §3.5, §3.6)."""

    gen: float = 1.0
    align: float = 2.0
    sim: float = 2.0
    kd: float = 1.0
    mono: float = 1.0
    distance: float = 0.0
    ranking: float = 0.0
    rel: float = 0.0        # relational KD: cosine matrices of u, v against the teacher's (batch-level)


CHOICES = {"teacher": ("use", "none"), "token_init": ("teacher", "random"), "kd_space": ("projection", "output"),
           "schedule": ("paper", "linear"), "batch_group": ("none", "lang"), "sim_form": ("paper", "cosine")}


@dataclass
class TrainConfig:
    """Everything a run needs. Defaults follow [R] (docs/METHOD.md §4): batch 128, Adam(amsgrad) lr 1e-3
    with L2 1e-5, linear warm-up over 1,999 steps, ×0.1 from epoch 3, no clipping."""

    corpus: list[str] = field(default_factory=list)       # parallel files *.en-xx.tsv[.gz]
    mono: list[str] = field(default_factory=list)         # monolingual files train.{lang}.txt
    dev_pairs: list[str] = field(default_factory=list)    # parallel files for the dev loss
    dev_docs: str | None = None                           # DDTP {split}.docs.jsonl for retrieval P@1
    dev_doc_fields: list[str] = field(default_factory=lambda: ["short"])  # + "doc": whole descriptions too
    dev_xsr: list[str] = field(default_factory=list)      # parallel dev sets (dirs of dev.*.tsv, or files): P@1 each, capped
    out_dir: str = "runs/lwx"
    tokenizer: str | None = None                          # reuse a SentencePiece model; else train one
    init_from: str | None = None                          # start from this bundle's encoder (and tokenizer)
    vocab_size: int = 16000
    model: ModelConfig = field(default_factory=ModelConfig)
    train_max_len: int = 200                              # tokens per side while training
    batch_size: int = 128                                 # global batch (all ranks)
    mono_batch_size: int = 64
    mono_max_per_lang: int | None = None                  # seeded sample of each monolingual file (None: all)
    bucket: int = 50                                      # sort runs of this many batches by length (0 = off)
    batch_group: str = "none"                             # none | lang: one language pair per batch (harder negatives)
    lr: float = 1e-3
    weight_decay: float = 1e-5
    warmup_steps: int = 1999
    head_warmup_steps: int = 0                            # steps the generative head trains alone (a fresh one)
    decay_epoch: int = 3
    decay_factor: float = 0.1
    schedule: str = "paper"                               # paper: ×decay_factor from decay_epoch; linear: to 0 at the limit
    epochs: int = 12
    max_steps: int | None = None
    max_time: float | None = None                         # seconds of training (resumes included)
    gen_mode: str = "ugt"                                 # ugt | xtr | smlm
    sim_form: str = "cosine"                              # cosine: scale-free (docs/METHOD.md §3.4) | paper: Eq. 6
    sim_temperature: float = 0.05                         # the cosine form's softmax temperature
    weights: LossWeights = field(default_factory=LossWeights)
    teacher: str = "use"                                  # use | none
    teacher_cache: str = "data/teacher-cache"
    kd_space: str = "projection"  # projection: g(u) ≈ t̃, output: û ≈ t̂ (docs/METHOD.md §3.6)
    token_init: str = "teacher"                           # teacher (Model2Vec-style, with a teacher) | random
    dev_holdout: int = 1000                               # pairs held out for the dev loss if no dev_pairs
    dev_max_pairs: int = 2000                             # per language, retrieval during training
    final_full_eval: bool = True                          # last validation on the whole DDTP dev pool (minutes)
    eval_every: int = 500
    save_every: int = 500
    log_every: int = 10
    seed: int = 0
    device: str = "auto"                                  # auto | cpu | cuda
    compile: bool = False
    guard: bool = True                                    # roll back on divergence (lwx_edge.guard)
    guard_rollbacks: int = 3                              # then stop with an error naming the term
    guard_lr_factor: float = 0.5                          # learning rate scale after each rollback
    threads: int | None = None                            # torch and the teacher (None: their defaults)
    teacher_workers: int = 1                              # processes computing uncached teacher vectors

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        return cls().update(d)

    @classmethod
    def from_files(cls, paths: list) -> "TrainConfig":
        """The defaults overlaid with each JSON file in turn (a recipe, then overlays such as an ablation's)."""
        cfg = cls()
        for path in paths:
            try:
                d = json.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as e:
                raise LwxError(f"{path}: cannot read the config file ({e})") from None
            cfg.update(d)
        return cfg

    def update(self, d: dict) -> "TrainConfig":
        """Overlay the fields of ``d`` (sections ``model`` and ``weights`` field by field), type-checked."""
        if not isinstance(d, dict):
            raise LwxError(f"a training config is a JSON object, got {type(d).__name__}")
        for key, value in d.items():
            if key in ("model", "weights") and isinstance(value, dict):
                for k, v in value.items():
                    self.set_value(f"{key}.{k}", v)
            else:
                self.set_value(key, value)
        return self

    def set(self, key: str, value: str) -> None:
        """Override one field from a ``key=value`` string, e.g. ``weights.sim=0`` or ``model.n_layers=1``
        (the value is read as JSON when it parses, else as a string)."""
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        self.set_value(key, parsed)

    def set_value(self, key: str, value) -> None:
        """Set one (dotted) field, checking the key and the value's type against the field's declaration."""
        obj, name = self, key
        if "." in key:
            head, name = key.split(".", 1)
            obj = getattr(self, head, None)
            if obj is None or not hasattr(obj, "__dataclass_fields__"):
                raise LwxError(f"unknown config section {head!r} in {key!r}")
        if name not in {f.name for f in fields(obj)}:
            raise LwxError(f"unknown config key {key!r}")
        setattr(obj, name, _typed(key, typing.get_type_hints(type(obj))[name], value))

    def validate(self) -> None:
        """Refuse values no run can use, with the field's name (before any work starts)."""
        bad = []
        for key in ("batch_size", "mono_batch_size", "train_max_len", "epochs", "log_every", "dev_max_pairs",
                    "vocab_size", "teacher_workers", "guard_rollbacks"):
            if getattr(self, key) < 1:
                bad.append(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("warmup_steps", "head_warmup_steps", "eval_every", "save_every", "bucket", "dev_holdout",
                    "decay_epoch"):
            if getattr(self, key) < 0:
                bad.append(f"{key} must be >= 0, got {getattr(self, key)}")
        for key in ("max_steps", "threads", "mono_max_per_lang"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                bad.append(f"{key} must be >= 1 (or null), got {getattr(self, key)}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            bad.append(f"lr must be a positive number, got {self.lr}")
        if not (math.isfinite(self.guard_lr_factor) and 0 < self.guard_lr_factor < 1):
            bad.append(f"guard_lr_factor must lie in (0, 1), got {self.guard_lr_factor}")
        if not (math.isfinite(self.sim_temperature) and self.sim_temperature > 0):
            bad.append(f"sim_temperature must be a positive number, got {self.sim_temperature}")
        if self.max_time is not None and not (math.isfinite(self.max_time) and self.max_time > 0):
            bad.append(f"max_time must be a positive number of seconds, got {self.max_time}")
        for key in ("weight_decay", "decay_factor"):
            if not (math.isfinite(getattr(self, key)) and getattr(self, key) >= 0):
                bad.append(f"{key} must be a number >= 0, got {getattr(self, key)}")
        for f in fields(self.weights):
            w = getattr(self.weights, f.name)
            if not (math.isfinite(w) and w >= 0):
                bad.append(f"weights.{f.name} must be a number >= 0, got {w}")
        if not self.dev_doc_fields or set(self.dev_doc_fields) - {"short", "doc"}:
            bad.append(f"dev_doc_fields takes 'short' and/or 'doc', got {self.dev_doc_fields}")
        for key, allowed in CHOICES.items():
            if getattr(self, key) not in allowed:
                bad.append(f"unknown {key} {getattr(self, key)!r} (use {' or '.join(map(repr, allowed))})")
        if self.batch_group != "none" and not self.bucket:
            bad.append("batch_group needs bucket > 0 (batches are grouped inside each bucket)")
        bad += _model_problems(self.model)
        if bad:
            raise LwxError("invalid training config: " + "; ".join(bad))


def _table_form(rank: int) -> str:
    return f"rank {rank}" if rank else "full width"


def _model_problems(m: ModelConfig) -> list[str]:
    """What is wrong with a model config (set field by field, so its own checks have not run)."""
    bad = []
    for key in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
        if getattr(m, key) < 1:
            bad.append(f"model.{key} must be >= 1, got {getattr(m, key)}")
    if m.table_bits not in (4, 8):
        bad.append(f"model.table_bits must be 4 or 8, got {m.table_bits}")
    if not 0 <= m.table_rank < m.d_model:
        bad.append(f"model.table_rank must be 0 (full width) or in [1, {m.d_model - 1}], got {m.table_rank}")
    elif m.table_bits == 4 and m.table_width % TABLE_GROUP:
        bad.append(f"a 4-bit token table needs model.table_rank divisible by {TABLE_GROUP}, got {m.table_rank}")
    if m.n_heads >= 1 and m.d_model % m.n_heads:
        bad.append(f"model.d_model ({m.d_model}) must be divisible by model.n_heads ({m.n_heads})")
    if not 0 <= m.dropout < 1:
        bad.append(f"model.dropout must be in [0, 1), got {m.dropout}")
    return bad


def _typed(key: str, hint, value):
    """``value`` as the declared type ``hint`` (int → float is allowed), or an LwxError naming the key."""
    args = typing.get_args(hint)
    optional = type(None) in args
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if value is None and optional:
            return None
        hint = next(a for a in args if a is not type(None))
    origin = typing.get_origin(hint) or hint
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          str: lambda v: isinstance(v, str),
          list: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)}.get(origin)
    if ok is None or not ok(value):
        want = getattr(hint, "__name__", str(hint)) + (" (or null)" if optional else "")
        raise LwxError(f"config key {key!r} expects {want}, got {value!r}")
    return float(value) if origin is float else value


def lr_at(cfg: TrainConfig, step: int, epoch: int, progress: float = 0.0) -> float:
    """Learning rate after linear warm-up. ``paper``: lr · decay^[e ≥ decay_epoch] (docs/METHOD.md §4);
    ``linear``: lr · (1 − progress), where progress ∈ [0, 1] is how far the run is towards its binding
    limit (steps, epochs or ``max_time``), so a time-budgeted run ends annealed."""
    warm = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
    if cfg.schedule == "linear":
        return cfg.lr * warm * max(0.0, 1.0 - progress)
    decay = cfg.decay_factor if epoch >= cfg.decay_epoch else 1.0
    return cfg.lr * decay * warm


# ---- setup helpers -----------------------------------------------------------------------------------

def _dist_info() -> tuple[int, int, int]:
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    return 0, 1, 0


def _device(cfg: TrainConfig, local_rank: int) -> torch.device:
    if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise LwxError("--device cuda was asked for but no CUDA device is available")
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def expand(paths: list[str], pattern: str) -> list[str]:
    """Files as given; a directory stands for its files matching ``pattern`` (sorted)."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob(pattern))
            if not found:
                raise LwxError(f"{p}: no {pattern} files in this directory")
            out.extend(str(f) for f in found)
        else:
            out.append(str(p))
    return out


def dev_sets(entries: list[str]) -> list[tuple[str, dict[str, tuple[list[str], list[str]]]]]:
    """The retrieval sets of ``dev_xsr``: one per entry (a directory's ``dev.*.tsv*`` files, or one file), named
    after it, {lang: (English texts, translations)}. Scored apart, so a small set is not cut off by a large one's
    per-language cap."""
    from .data.corpus import langs_from_name
    from .evaluate import tsv_pairs

    sets = []
    for entry in entries:
        pairs: dict[str, tuple[list[str], list[str]]] = {}
        for path in expand([entry], "dev.*.tsv*"):
            src, tgt = tsv_pairs(path)
            lang = langs_from_name(path)[1]
            prev = pairs.get(lang, ([], []))
            pairs[lang] = (prev[0] + src, prev[1] + tgt)
        sets.append((Path(entry).name if Path(entry).is_dir() else Path(entry).stem, pairs))
    return sets


def _read_pairs(paths: list[str], say, pattern: str = "train.*.tsv*") -> list:
    from .data.corpus import CorpusStats, PairFilter, filter_pairs, read_parallel

    stats, pairs = CorpusStats(), []
    for p in expand(paths, pattern):
        pairs.extend(filter_pairs(read_parallel(p, stats=stats), PairFilter(), stats=stats))
    say(f"corpus: {stats.report()}")
    return pairs


def _read_mono(paths: list[str], max_per_file: int | None = None, seed: int = 0) -> list[str]:
    """Lines of the monolingual files; with ``max_per_file``, a seeded sample of that many from each
    (in file order), which bounds the teacher-caching time."""
    from .data.mono import read_mono

    out = []
    for p in expand(paths, "train.*.txt"):
        lines = list(read_mono(p))
        if max_per_file is not None and len(lines) > max_per_file:
            keep = np.random.default_rng(seed).choice(len(lines), max_per_file, replace=False)
            lines = [lines[i] for i in np.sort(keep)]
        out.extend(lines)
    return out


class _Log:
    """Rank-0 progress messages (the module's logger, INFO) and the JSONL metrics file."""

    def __init__(self, out_dir: Path, enabled: bool):
        self.enabled = enabled
        self.path = out_dir / "metrics.jsonl"

    def __call__(self, msg: str) -> None:
        if self.enabled:
            log.info(msg)

    def metrics(self, record: dict) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def drop_after(self, step: int) -> None:
        """Forget the records of steps after ``step``: a resumed run repeats them from its checkpoint."""
        if not (self.enabled and self.path.exists()):
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(line).get("step", 0) > step:
                    continue
            except (ValueError, AttributeError):
                continue  # a line cut by the kill
            kept.append(line + "\n")
        write_text_atomic(self.path, "".join(kept))


# ---- the step ---------------------------------------------------------------------------------------

def loss_inputs(out: dict, batch: dict, cfg: TrainConfig) -> dict:
    """What the losses read (docs/METHOD.md §3.6): batch fields, the forward outputs (u, v in fp32), and the distilled
    vectors ``kd_a``, ``kd_b``, ``kd_mono``: g(·) with the training-only projection, or the output itself
    (unit length, √d scale)."""
    x = {**batch, **out, "u": out["u"].float(), "v": out["v"].float()}
    if cfg.kd_space == "projection":
        x.update({f"kd_{k}": out[f"proj_{k}"] for k in ("a", "b", "mono") if f"proj_{k}" in out})
    else:
        x.update({f"kd_{k}": L.output_targets(out[name]) for k, name in (("a", "u"), ("b", "v"), ("mono", "mono"))
                  if name in out})
    return x


def compute_losses(out: dict, batch: dict, cfg: TrainConfig, world: int) -> dict[str, torch.Tensor]:
    """Every loss of the registry (:data:`lwx_edge.losses.LOSSES`) that runs on this (local) batch; under DDP the
    batch-level ones read all-gathered inputs, so they see the global batch."""
    x = loss_inputs(out, batch, cfg)
    losses = active(cfg.weights, x)
    glob = x
    if world > 1:
        from torch.distributed.nn.functional import all_gather

        glob = {**x, **{k: torch.cat(all_gather(x[k])) for k in gathered(losses)}}
    return {loss.name: loss(glob if loss.batch_level else x, cfg) for loss in losses}


def total_loss(terms: dict[str, torch.Tensor], weights: LossWeights) -> torch.Tensor:
    """Σ_k weight_k · term_k over the computed loss terms."""
    return sum(getattr(weights, k) * v for k, v in terms.items())


def _to_device(batch: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v).to(device, non_blocking=True) for k, v in batch.items() if k != "index"}


def _stack_padded(arrays: list[np.ndarray]) -> np.ndarray:
    """Stack [n_i, T_i] arrays into one [Σn, max T], right-padded with zeros."""
    t = max(a.shape[1] for a in arrays)
    return np.concatenate([np.pad(a, ((0, 0), (0, t - a.shape[1]))) for a in arrays])


# ---- the trainer ------------------------------------------------------------------------------------

class Trainer:
    """Builds tokenizer, data, teacher targets and model from a TrainConfig, then trains."""

    def __init__(self, cfg: TrainConfig, resume: bool = False):
        cfg.validate()
        self.cfg = cfg
        self.rank, self.world, local_rank = _dist_info()
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() and cfg.device != "cpu" else "gloo")
        self.device = _device(cfg, local_rank)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.out = Path(cfg.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        if self.rank == 0:  # the only writer of its run directory: finish or drop what a kill left
            for name in ("checkpoint", "best", "bundle"):
                recover_dir(self.out / name, clean_tmp=True)
        if resume and not (self.out / "checkpoint").exists() and (self.out / "metrics.jsonl").exists():
            raise LwxError(f"--resume: {self.out} holds a run but no checkpoint/ to resume from "
                           "(set save_every, or drop --resume to start again)")
        self.log = _Log(self.out, self.rank == 0)
        if cfg.batch_size % self.world:
            raise LwxError(f"batch size {cfg.batch_size} is not divisible by the world size {self.world}")
        if not cfg.corpus:
            raise LwxError("no training corpus given (--corpus FILE, a *.en-xx.tsv file)")
        use_teacher = cfg.teacher != "none" and (cfg.weights.kd or cfg.weights.mono)
        torch.manual_seed(cfg.seed)

        start = self._start_weights() if cfg.init_from else None
        pairs = _read_pairs(cfg.corpus, self.log)
        mono_texts = _read_mono(cfg.mono, cfg.mono_max_per_lang, cfg.seed) if (cfg.mono and use_teacher and cfg.weights.mono) else []
        self.tokenizer_path = self._tokenizer(pairs, mono_texts)
        self.tokenizer = Tokenizer(self.tokenizer_path, max_len=cfg.model.max_len)
        cfg.model.vocab_size = self.tokenizer.vocab_size
        maskable = self.tokenizer.is_maskable()

        data = tokenize_pairs(pairs, self.tokenizer, cfg.train_max_len)
        dev_pairs = _read_pairs(cfg.dev_pairs, self.log, "dev.*.tsv*") if cfg.dev_pairs else []
        if not dev_pairs:  # hold out pairs from train, as the paper does
            rng = np.random.default_rng(cfg.seed)
            hold = set(rng.choice(len(pairs), size=min(cfg.dev_holdout, len(pairs) // 10), replace=False).tolist())
            dev_pairs = [p for i, p in enumerate(pairs) if i in hold]
            data = tokenize_pairs([p for i, p in enumerate(pairs) if i not in hold], self.tokenizer,
                                  cfg.train_max_len)
        dev = tokenize_pairs(dev_pairs[:cfg.dev_holdout], self.tokenizer, cfg.train_max_len)
        self.log(f"data: {len(data):,} training pairs ({data.dropped} without a maskable token dropped), "
                 f"{len(dev):,} dev pairs, {len(mono_texts):,} monolingual sentences")

        teacher_vecs = mono_vecs = None
        teacher_dim = None
        if use_teacher:
            teacher_vecs, mono_vecs, teacher_dim = self._teacher_vectors(data.src_text, mono_texts)
        groups = np.unique(data.pair_lang, return_inverse=True)[1] if cfg.batch_group == "lang" else None
        self.batcher = PairBatcher(data, cfg.batch_size, maskable, cfg.seed, teacher_vecs, cfg.bucket, groups)
        self.dev_batcher = (PairBatcher(dev, min(cfg.batch_size, len(dev)), maskable, cfg.seed + 1)
                            if len(dev) >= 2 else None)
        self.mono = None
        if mono_vecs is not None and len(mono_texts):
            ids = [np.asarray(x[:cfg.train_max_len], np.int32) for x in self.tokenizer.encode(mono_texts).ids]
            self.mono = MonoBatcher(ids, mono_vecs, cfg.mono_batch_size, cfg.seed, cfg.bucket)

        if cfg.kd_space == "output" and teacher_dim and teacher_dim != cfg.model.d_model:
            raise LwxError(f"kd_space=output needs the teacher's dimension ({teacher_dim}) to be the model's "
                           f"d_model ({cfg.model.d_model}); use kd_space=projection")
        self.model = DualEncoderModel(cfg.model, teacher_dim if cfg.kd_space == "projection" else None
                                      ).to(self.device)
        resuming = resume and (self.out / "checkpoint").exists()
        if start is not None and not resuming:
            self._load_start(start, data)
        elif use_teacher and cfg.token_init == "teacher" and not resuming:
            self._init_from_teacher()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                          amsgrad=True)
        self.step, self.elapsed, self.best, self.lr_scale = 0, 0.0, -math.inf, 1.0
        self.guard = (DivergenceGuard(cfg.guard_rollbacks, cfg.guard_lr_factor, batch_size=cfg.batch_size)
                      if cfg.guard else None)
        if resume and (self.out / "checkpoint").exists():
            meta = load_checkpoint(self.out / "checkpoint", self.model, self.optimizer)
            self.step, self.elapsed, self.best = meta["step"], meta["elapsed"], meta["best"]
            self.lr_scale = meta.get("lr_scale", 1.0)
            self.log.drop_after(self.step)
            self.log(f"resumed from {self.out / 'checkpoint'} at step {self.step}")
        self.ddp = self.model
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.ddp = DDP(self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                           find_unused_parameters=self._has_unused_parameters())
        self.forward = torch.compile(self.ddp) if cfg.compile else self.ddp
        self.autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if self.device.type == "cuda"
                         else torch.autocast("cpu", enabled=False))

    # -- setup pieces --
    def _barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def _load_start(self, start: dict[str, np.ndarray], data) -> None:
        """The encoder from ``init_from``'s weights; a table of another form than the config's ``table_rank`` is
        re-stored (rows weighted by their pieces' counts in the training pairs)."""
        cfg = self.cfg
        theirs = start["tok.weight"].shape[1] if "tok_proj.weight" in start else 0
        weights = None
        if theirs != cfg.model.table_rank and cfg.model.table_rank:  # re-stored: rows weigh by their counts
            from .warmstart import piece_weights

            counts = np.bincount(np.concatenate(data.src + data.tgt).astype(np.int64),
                                 minlength=self.tokenizer.vocab_size)
            weights = torch.from_numpy(piece_weights(self.tokenizer, counts))
        kept = self.model.encoder.load_weights(start, weights)
        self.log(f"encoder initialised from {cfg.init_from}" + (
            "" if theirs == cfg.model.table_rank else
            f" (its token table of {_table_form(theirs)} stored at {_table_form(cfg.model.table_rank)}, as the "
            f"config's model.table_rank says: {100 * kept:.1f}% of its weighted energy kept)"))

    def _start_weights(self) -> dict[str, np.ndarray]:
        """The encoder weights of ``init_from``; its architecture and tokenizer become the run's (the tokenizer
        is copied into the run directory, so a resumed run reads the same one). With a ``tokenizer`` of
        its own the run keeps that one and the token table is transferred to it."""
        from .bundle import TOKENIZER, atomic_file
        from .warmstart import encoder_weights

        state, config, bundle = encoder_weights(self.cfg.init_from)
        self.started_from = {"bundle": str(self.cfg.init_from), "training": bundle.manifest.get("training")}
        theirs = Tokenizer(bundle.file(TOKENIZER))
        if self.cfg.tokenizer and Tokenizer(self.cfg.tokenizer).sha256 != theirs.sha256:
            return self._transfer_vocabulary(state, config, theirs)
        self._check_architecture(config)
        path = self.out / TOKENIZER
        if self.rank == 0 and not (path.exists() and Tokenizer(path).sha256 == theirs.sha256):
            with atomic_file(path) as tmp:
                tmp.write_bytes(bundle.file(TOKENIZER).read_bytes())
        self._barrier()
        self.cfg.tokenizer = str(path)
        return state

    def _check_architecture(self, config) -> None:
        mine = {k: v for k, v in self.cfg.model.to_dict().items() if k not in ("vocab_size", "dropout", "table_bits", "table_rank")}
        other = {k: v for k, v in config.to_dict().items() if k in mine}
        if mine != other:
            diff = {k: (mine[k], other[k]) for k in mine if mine[k] != other[k]}
            raise LwxError(f"init_from {self.cfg.init_from}: its architecture differs from the config's "
                           f"(config vs bundle: {diff})")

    def _transfer_vocabulary(self, state, config, theirs: Tokenizer) -> dict[str, np.ndarray]:
        """init_from with another tokenizer (``--tokenizer``): the token table moves to the new vocabulary
        (:func:`lwx_edge.warmstart.transfer_vocabulary`; with a teacher, new pieces start from the teacher's
        vectors of them), every other weight is kept."""
        from .warmstart import full_table, transfer_vocabulary

        self._check_architecture(config)
        mine = Tokenizer(self.cfg.tokenizer)
        vectors = None
        if self.cfg.teacher != "none":
            from .data.teacher import USETeacher, token_vectors

            vectors = token_vectors(mine, USETeacher(self.cfg.threads))
        table, copied = transfer_vocabulary(full_table(state), theirs, mine, vectors)
        state = {k: v for k, v in state.items() if not k.startswith("tok_proj.")}
        state["tok.weight"] = table
        how = "the teacher's vectors of them, mapped" if vectors is not None else "the mean of their old pieces"
        self.log(f"vocabulary transfer from {self.cfg.init_from}: {copied:,} of {mine.vocab_size:,} pieces "
                 f"kept their row, the rest start from {how}")
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
        from .data.teacher import TeacherCache, USETeacher

        cache = TeacherCache(self.cfg.teacher_cache, USETeacher(self.cfg.threads))
        if self.rank == 0:  # compute once; other ranks then read the cache
            cache.vectors(src_texts + mono_texts, progress=True, workers=self.cfg.teacher_workers)
        self._barrier()
        if self.rank:
            cache = TeacherCache(self.cfg.teacher_cache, USETeacher(self.cfg.threads))
        vec = cache.vectors(src_texts, progress=False)
        mono = cache.vectors(mono_texts, progress=False) if mono_texts else None
        return vec, mono, vec.shape[1]

    def _init_from_teacher(self) -> None:
        from .data.teacher import USETeacher, token_vectors

        vectors = token_vectors(self.tokenizer, USETeacher(self.cfg.threads), dim=self.cfg.model.d_model)
        self.model.init_from_token_vectors(torch.from_numpy(vectors))
        batches = [self.batcher.batch(0, i) for i in range(min(8, self.batcher.steps_per_epoch))]
        ids, mask = (torch.from_numpy(_stack_padded([b[f"{k}_{side}"] for b in batches for side in "ab"]))
                     for k in ("ids", "mask"))  # both sides of a few seeded training batches
        c = self.model.center_output(ids.to(self.device), mask.to(self.device))
        self.log(f"token table initialised from the teacher's vectors of the {len(vectors):,} pieces; "
                 f"output centred (mean sentence vector of norm {float(c.norm()):.2f} removed)")

    def _has_unused_parameters(self) -> bool:
        """Whether the losses that run leave some parameter without a gradient (DDP must then look for such
        parameters every step): one forward and backward of this rank's first batch, in eval mode (no dropout
        draws), with the trainer's own :func:`compute_losses`."""
        batch = _to_device(slice_rows(self._global_batch(0), self.rank, self.world), self.device)
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
        lr = lr_at(self.cfg, step, epoch, self._progress()) * self.lr_scale
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        self.model.generative_head.alone = step < self.cfg.head_warmup_steps
        g_batch = self._global_batch(step)
        batch = _to_device(slice_rows(g_batch, self.rank, self.world) if self.world > 1 else g_batch,
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
            self.optimizer.step()
        elif self.guard is None:
            bad = [k for k, v in rec.items() if not math.isfinite(v)]
            raise LwxError(f"loss became {rec['loss']} at step {step} (non-finite: {', '.join(bad)}); lower --lr "
                           "or check the data")
        return rec

    @torch.no_grad()
    def validate(self, full: bool = False) -> dict[str, float]:
        """Dev loss (seeded masks, eval mode), DDTP retrieval P@1 on short descriptions and retrieval P@1 on the
        ``dev_xsr`` pair files (capped at ``dev_max_pairs`` per language)."""
        from .encoder import Encoder
        from .evaluate import retrieval
        from .runtime.torch_backend import TorchBackend

        self.model.eval()
        rec: dict[str, float] = {}
        if self.dev_batcher is not None:
            sums: dict[str, float] = {}
            n = max(1, min(8, self.dev_batcher.steps_per_epoch))
            for i in range(n):
                batch = _to_device(self.dev_batcher.batch(0, i), self.device)
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
            from .evaluate import pair_retrieval

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
            sign = self.guard.check_step(rec, tuple(k for k in rec if k not in ("loss", "lr", "epoch"))) \
                if self.guard is not None else None
            if self._agree(sign is not None):
                self._roll_back(*(sign or ("a divergence on another rank", "unknown")))
                continue
            self.step += 1
            dt = time.perf_counter() - t0
            self.elapsed += dt
            pairs_window += cfg.batch_size
            bar.update(max(0.0, min(dt, cfg.max_time - bar.n)) if by_time else 1)
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
        """Back to the last good state with a lower learning rate (lwx_edge.guard); logged as an event."""
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
