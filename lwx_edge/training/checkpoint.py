"""Saving and loading torch state without pickle: bundles (encoder weights) and training checkpoints.

A training checkpoint is a directory ``state.safetensors`` (model, optimizer tensors, RNG states) +
``state.json`` (step, epoch, config, optimizer scalars), written atomically (temp dir, then rename).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .. import bundle as B
from ..atomic import atomic_dir, write_json_atomic
from ..errors import BundleError
from .model import ModelConfig, SentenceEncoder


def encoder_state(encoder: SentenceEncoder) -> dict[str, torch.Tensor]:
    """The encoder's weights as contiguous fp32 CPU tensors (what a bundle stores)."""
    return {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in encoder.state_dict().items()}


def save_bundle(encoder: SentenceEncoder, tokenizer_path: str | os.PathLike, out_dir: str | os.PathLike,
                info: dict | None = None) -> Path:
    """Write a complete bundle atomically: config.json, model.safetensors, tokenizer.model, manifest.json."""
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        write_json_atomic(tmp / B.CONFIG, B.make_config(encoder.config.to_dict(), encoder.config.d_model))
        save_file(encoder_state(encoder), str(tmp / B.WEIGHTS), metadata={"format": "pt"})
        shutil.copyfile(tokenizer_path, tmp / B.TOKENIZER)
        B.write_manifest(tmp, {"training": info or {}})
    return out_dir


def load_encoder(bundle: B.Bundle, device: str = "cpu") -> SentenceEncoder:
    """Build the encoder of a verified bundle and load its weights; refuses mismatched weights (checked from the
    weights file's header before anything is allocated: :func:`check_weights`)."""
    check_weights(bundle)
    try:
        config = ModelConfig.from_dict(bundle.config["model"])
    except (TypeError, ValueError) as e:
        raise BundleError(f"{bundle.path}: config.json has an invalid model section ({e})") from None
    path = bundle.file(B.WEIGHTS)
    try:
        state = load_file(str(path), device=device)
    except Exception as e:  # safetensors raises several types for corrupt headers
        raise BundleError(f"{path}: weights cannot be read ({e})") from None
    encoder = SentenceEncoder(config)
    expected = encoder.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    bad_shapes = [k for k, v in expected.items() if k in state and state[k].shape != v.shape]
    if missing or unexpected or bad_shapes:
        raise BundleError(f"{path}: weights do not match config.json "
                          f"(missing {missing[:3]}, unexpected {unexpected[:3]}, wrong shape {bad_shapes[:3]})")
    encoder.load_state_dict(state)
    return encoder.to(device).eval()


def check_weights(bundle: B.Bundle) -> None:
    """Refuse a bundle whose config.json and weights file disagree on a tensor's name or shape, reading only
    the weights file's header and building the model on the ``meta`` device (nothing is allocated)."""
    from safetensors import safe_open

    try:
        config = ModelConfig.from_dict(bundle.config["model"])
    except (TypeError, ValueError) as e:
        raise BundleError(f"{bundle.path}: config.json has an invalid model section ({e})") from None
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in SentenceEncoder(config).state_dict().items()}
    path = bundle.file(B.WEIGHTS)
    try:
        with safe_open(str(path), framework="pt") as f:  # the header alone
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except Exception as e:  # safetensors raises several types for corrupt headers
        first = " ".join(str(e).split())[:300] or type(e).__name__
        raise BundleError(f"{path}: weights cannot be read ({first})") from None
    missing = [k for k in expected if k not in shapes]
    unexpected = [k for k in shapes if k not in expected]
    bad_shapes = [k for k, v in expected.items() if k in shapes and shapes[k] != v]
    if missing or unexpected or bad_shapes:
        raise BundleError(f"{path}: weights do not match config.json "
                          f"(missing {missing[:3]}, unexpected {unexpected[:3]}, wrong shape {bad_shapes[:3]})")


# ---- training checkpoints -------------------------------------------------------------------------

def _flatten_optimizer(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"optim/{pid}/{k}"] = v.detach().cpu().contiguous()
            else:
                scalars[f"{pid}/{k}"] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict) -> dict:
    state: dict[int, dict] = {}
    for key, v in tensors.items():
        if key.startswith("optim/"):
            _, pid, k = key.split("/", 2)
            state.setdefault(int(pid), {})[k] = v
    for key, v in meta["scalars"].items():
        pid, k = key.split("/", 1)
        state.setdefault(int(pid), {})[k] = v
    return {"state": state, "param_groups": meta["param_groups"]}


TIED = ("model/generative_head.token_table.", "model/generative_head.table_proj.")


def _tied(model_state: dict) -> dict:
    """The generative head's entries that are the encoder's token table and ``tok_proj``."""
    return {f"generative_head.{head}.{k.rsplit('.', 1)[1]}": v for k, v in model_state.items()
            for enc, head in (("encoder.tok.", "token_table"), ("encoder.tok_proj.", "table_proj"))
            if k.startswith(enc)}


def save_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    meta: dict) -> None:
    """Save model and optimizer state plus ``meta`` into the checkpoint directory ``path``."""
    tensors = {f"model/{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    # the tied generative head shares the token table (and a factorised table's map): store them once
    tensors = {k: v for k, v in tensors.items() if not k.startswith(TIED)}
    opt_tensors, opt_meta = _flatten_optimizer(optimizer)
    tensors.update(opt_tensors)
    tensors["rng/torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng/cuda"] = torch.cuda.get_rng_state()
    with atomic_dir(path) as tmp:
        save_file(tensors, str(tmp / "state.safetensors"))
        write_json_atomic(tmp / "state.json", {**meta, "optimizer": opt_meta})


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """Restore model and optimizer from a checkpoint directory written by :func:`save_checkpoint`; returns its meta."""
    path = Path(path)
    try:
        tensors = load_file(str(path / "state.safetensors"))
        meta = json.loads((path / "state.json").read_text())
    except Exception as e:
        raise BundleError(f"{path}: checkpoint cannot be read ({e})") from None
    if not isinstance(meta, dict) or not all(k in meta for k in ("step", "elapsed", "best", "optimizer")):
        raise BundleError(f"{path}: checkpoint state.json is damaged (expected step, elapsed, best, optimizer)")
    model_state = {k[len("model/"):]: v for k, v in tensors.items() if k.startswith("model/")}
    try:
        model_state.update(_tied(model_state))
        model.load_state_dict(model_state)
    except (KeyError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise BundleError(f"{path}: the checkpoint does not fit this model config (was the model shape or "
                          f"kd_space changed since it was saved?): {first}") from None
    try:
        optimizer.load_state_dict(_unflatten_optimizer(tensors, meta.pop("optimizer")))
        torch.set_rng_state(tensors["rng/torch"])
    except (KeyError, ValueError, RuntimeError, TypeError) as e:
        raise BundleError(f"{path}: the checkpoint's optimizer or RNG state is damaged ({type(e).__name__})") from None
    if "rng/cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng/cuda"])
    return meta
