"""The training run's configuration: :class:`TrainConfig` (the paper's defaults), the objective's
:class:`LossWeights`, their checks, and the learning-rate schedule."""
from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..atomic import under_a_file
from ..errors import LwxError
from .model import TABLE_GROUP, ModelConfig


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
           "schedule": ("paper", "linear"), "sim_form": ("paper", "cosine"),
           "rel_form": ("mse", "softmax"),
           "precision": ("auto", "bf16", "fp32"), "device": ("auto", "cpu", "cuda")}


@dataclass
class TrainConfig:
    """Everything a run needs. Defaults follow [R] (docs/METHOD.md §4): batch 128, Adam(amsgrad) lr 1e-3
    with L2 1e-5, linear warm-up over 1,999 steps, ×0.1 from epoch 3, no clipping (``grad_clip`` adds it)."""

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
    batch_group: str = "none"                             # none | lang, source, cluster joined by "+": harder negatives
    batch_clusters: int = 0                               # k-means clusters of batch_group=cluster (0: bucket's)
    cluster_run: int = 0                                  # a cluster's pairs share batches in runs of this many (0: whole)
    pad_to: int = 0                                       # pad batches to a multiple of this (0: the longest): compile
    lr: float = 1e-3
    weight_decay: float = 1e-5
    warmup_steps: int = 1999
    head_warmup_steps: int = 0                            # steps the generative head trains alone (a fresh one)
    decay_epoch: int = 3
    decay_factor: float = 0.1
    schedule: str = "paper"                               # paper: ×decay_factor from decay_epoch; linear: to 0 at the limit
    grad_clip: float = 0.0                                # clip the gradient's global L2 norm to this (0: off, as [R])
    epochs: int = 12
    max_steps: int | None = None
    max_time: float | None = None                         # seconds of training (resumes included)
    gen_mode: str = "ugt"                                 # ugt | xtr | smlm
    sim_form: str = "cosine"                              # cosine: scale-free (docs/METHOD.md §3.4) | paper: Eq. 6
    sim_temperature: float = 0.05                         # the cosine form's softmax temperature
    rel_form: str = "mse"                                 # relational KD: mse of all cosines | softmax: rows' rankings
    rel_temperature: float = 0.05                         # the softmax form's temperature
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
    precision: str = "auto"                               # auto: bf16 autocast on CUDA, fp32 on CPU | bf16 | fp32
    guard: bool = True                                    # roll back on divergence (lwx_edge.training.guard)
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
            except (OSError, ValueError) as e:  # ValueError: bad JSON, or text that is not UTF-8
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

    def check_dev_sets(self) -> None:
        """Refuse dev sets that do not exist now: they are read at the first evaluation, after the run started."""
        missing = [f"{key} {path}" for key in ("dev_docs", "dev_xsr", "dev_pairs")
                   for path in ([getattr(self, key)] if isinstance(getattr(self, key), str) else getattr(self, key) or [])
                   if not Path(path).exists()]
        if missing:
            raise LwxError("missing dev set: " + "; ".join(f"{m} does not exist" for m in missing))

    def validate(self) -> None:
        """Refuse values no run can use, with the field's name (before any work starts)."""
        bad = []
        for key in ("batch_size", "mono_batch_size", "train_max_len", "epochs", "log_every", "dev_max_pairs",
                    "vocab_size", "teacher_workers", "guard_rollbacks"):
            if getattr(self, key) < 1:
                bad.append(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("warmup_steps", "head_warmup_steps", "eval_every", "save_every", "bucket", "dev_holdout",
                    "decay_epoch", "pad_to", "seed"):
            if getattr(self, key) < 0:
                bad.append(f"{key} must be >= 0, got {getattr(self, key)}")
        for key in ("max_steps", "threads", "mono_max_per_lang"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                bad.append(f"{key} must be >= 1 (or null), got {getattr(self, key)}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            bad.append(f"lr must be a positive number, got {self.lr}")
        if not (math.isfinite(self.guard_lr_factor) and 0 < self.guard_lr_factor < 1):
            bad.append(f"guard_lr_factor must lie in (0, 1), got {self.guard_lr_factor}")
        for key in ("sim_temperature", "rel_temperature"):
            if not (math.isfinite(getattr(self, key)) and getattr(self, key) > 0):
                bad.append(f"{key} must be a positive number, got {getattr(self, key)}")
        if self.max_time is not None and not (math.isfinite(self.max_time) and self.max_time > 0):
            bad.append(f"max_time must be a positive number of seconds, got {self.max_time}")
        for key in ("weight_decay", "decay_factor", "grad_clip"):
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
        bad += _batch_group_problems(self)
        bad += _model_problems(self.model)
        bad += _path_problems(self)
        if bad:
            raise LwxError("invalid training config: " + "; ".join(bad))


def table_form(rank: int) -> str:
    """How a token table of ``rank`` is stored, in words."""
    return f"rank {rank}" if rank else "full width"


def _batch_group_problems(cfg: "TrainConfig") -> list[str]:
    """What is wrong with ``batch_group``, ``batch_clusters`` and ``cluster_run``."""
    from ..data.batches import NEEDS_TEACHER, group_key_problems

    bad = group_key_problems(cfg.batch_group)
    if cfg.batch_group != "none" and not cfg.bucket:
        bad.append("batch_group needs bucket > 0 (batches are grouped inside each bucket)")
    if "cluster" in cfg.batch_group.split("+") and (cfg.teacher == "none" or not (cfg.weights.kd or cfg.weights.mono)):
        bad.append(NEEDS_TEACHER)
    if cfg.cluster_run < 0:
        bad.append(f"cluster_run must be >= 0, got {cfg.cluster_run}")
    if cfg.batch_clusters < 0 or cfg.batch_clusters == 1:
        bad.append(f"batch_clusters must be 0 (as many as bucket) or >= 2, got {cfg.batch_clusters}")
    return bad


def _path_problems(cfg: "TrainConfig") -> list[str]:
    """The run directory must be one a run can write."""
    bad = []
    out = Path(cfg.out_dir)
    if not cfg.out_dir.strip():
        bad.append("out_dir is empty (give the run directory)")
    elif out.exists() and not out.is_dir():
        bad.append(f"out_dir {cfg.out_dir} is a file, not a directory")
    elif under_a_file(out):
        bad.append(f"out_dir {cfg.out_dir} lies under a file")
    return bad


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


def lr_at(cfg: TrainConfig, step: int, epoch: int, progress: float = 0.0, steps_per_epoch: int = 0) -> float:
    """Learning rate after linear warm-up. ``paper``: lr · decay^[e ≥ decay_epoch] (docs/METHOD.md §4), the
    warm-up ending by the decay at the latest (the paper warms up for the epochs before it: with
    ``steps_per_epoch`` given, at most decay_epoch · steps_per_epoch steps); ``linear``: lr · (1 − progress),
    where progress ∈ [0, 1] is how far the run is towards its binding limit (steps, epochs or ``max_time``),
    so a time-budgeted run ends annealed."""
    warmup = cfg.warmup_steps
    if cfg.schedule == "paper" and steps_per_epoch and cfg.decay_epoch:
        warmup = min(warmup, cfg.decay_epoch * steps_per_epoch)
    warm = min(1.0, (step + 1) / max(1, warmup))
    if cfg.schedule == "linear":
        return cfg.lr * warm * max(0.0, 1.0 - progress)
    decay = cfg.decay_factor if epoch >= cfg.decay_epoch else 1.0
    return cfg.lr * decay * warm
