"""The model bundle: one directory a user can copy (torch-free). This module owns its layout.

    config.json        architecture, embedding size, pooling, and the text contract (``tokenizer``: the
                       normalisation rules and casing the texts get before SentencePiece)
    model.safetensors  encoder weights (never pickle)
    tokenizer.model    the SentencePiece model
    parity.json        the export's parity report (``lwx_edge.export``)
    model.*            exported models: the names each backend declares (``lwx_edge.runtime``)
    manifest.json      sha256 and size of every other file, versions, how the model was trained,
                       one entry per exported model under ``artifacts``

``FORMAT_VERSION`` rises when this contract changes. Version 1 bundles (their text contract was implied, not
read) are upgraded when read (:func:`upgrade`), in memory; a rewrite of their manifest writes the upgraded
config.json too. Any other version is refused with a ``BundleError``.
Writes are atomic (:mod:`lwx_edge._io`).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import text
from ._io import atomic_dir, atomic_file, recover_dir, sha256_file, write_json_atomic, write_text_atomic  # noqa: F401
from ._version import __version__
from .errors import BundleError, InputError

FORMAT = "lwx-edge-bundle"
FORMAT_VERSION = 2
CONFIG = "config.json"
MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.model"
PARITY = "parity.json"
POOLING = "mean"
# What a manifest says about its own layout; the rest (training, artifacts, source, results) describes the model.
LAYOUT_KEYS = ("format", "format_version", "lwx_edge_version", "created", "files")


def text_contract(lowercase: bool = True) -> dict:
    """config.json's ``tokenizer`` section: how texts are turned into the tokenizer's input."""
    return {"type": "sentencepiece", "file": TOKENIZER, "normalization": text.RULES, "lowercase": lowercase}


def make_config(model: dict, embedding_dim: int) -> dict:
    """The config.json of a new bundle."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "model": dict(model),
            "tokenizer": text_contract(), "embedding_dim": embedding_dim, "pooling": POOLING}


def upgrade(config: dict, version: int) -> dict:
    """The config of a bundle of format ``version`` in the current format. Version 1 wrote a tokenizer
    section but never read it: its texts were always normalised by the rules now called ``nfkc`` and
    lowercased, with mean pooling, so that is its contract."""
    if version == 1:
        return {**config, "format_version": FORMAT_VERSION, "tokenizer": text_contract(lowercase=True),
                "pooling": POOLING}
    return config


def build_manifest(bundle_dir: str | os.PathLike, info: dict | None = None) -> dict:
    """sha256 and size of every file in the bundle (recursively), except the manifest itself."""
    root = Path(bundle_dir)
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != MANIFEST and not p.name.startswith("."):
            files[rel] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "lwx_edge_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
        **(info or {}),
    }


def write_manifest(bundle_dir: str | os.PathLike, info: dict | None = None) -> dict:
    """Write ``manifest.json`` for the files of ``bundle_dir`` (atomically) and return it."""
    manifest = build_manifest(bundle_dir, info)
    write_json_atomic(Path(bundle_dir) / MANIFEST, manifest)
    return manifest


def inside(root: str | os.PathLike, rel, what: str = "file") -> Path:
    """``root / rel`` for a listed file name, refusing names that could leave ``root`` (absolute paths, ``..``,
    links out of it): a crafted manifest or head must not make us read, copy or overwrite files elsewhere."""
    root = Path(root)
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise BundleError(f"{root}: invalid {what} name {rel!r}")
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    p = root / rel
    if not p.resolve().is_relative_to(root.resolve()):
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    return p


def _read_json(path: Path, what: str) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path.parent}: not a model bundle ({what} {path.name} is missing)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise BundleError(f"{path}: {what} is corrupt (not valid JSON: {e})") from None
    except OSError as e:
        raise BundleError(f"{path}: {what} cannot be read ({e.strerror or e})") from None
    if not isinstance(obj, dict):
        raise BundleError(f"{path}: {what} is corrupt (expected a JSON object)")
    return obj


def _check_config(root: Path, config: dict) -> None:
    """Refuse a config.json whose model section has the wrong shape (before any runtime sees it)."""
    model = config.get("model")
    if model is None:
        raise BundleError(f"{root}: config.json has no 'model' section")
    if not isinstance(model, dict):
        raise BundleError(f"{root}: config.json's model section is not an object (got {type(model).__name__})")
    for key in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
        v = model.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BundleError(f"{root}: config.json's model section: {key} must be a positive integer, got {v!r}")
    dim = config.get("embedding_dim", model.get("d_model"))
    if dim != model.get("d_model", dim):
        raise BundleError(f"{root}: config.json says embedding_dim {dim!r} but the model's d_model is "
                          f"{model.get('d_model')!r}")


@dataclass
class Bundle:
    """A bundle on disk. ``Bundle.load`` refuses a missing, corrupt, truncated or mismatched one; ``config`` is
    in the current format (``format_version`` is the one on disk)."""

    path: Path
    config: dict
    manifest: dict = field(repr=False)
    format_version: int = FORMAT_VERSION

    @classmethod
    def load(cls, path: str | os.PathLike, verify: bool = True) -> "Bundle":
        """Read and check the layout; ``verify`` also checks the size and sha256 of every listed file
        (``Encoder.load`` checks only the files it reads: :meth:`verify`)."""
        root = Path(path)
        if not root.exists():
            recover_dir(root)  # a write killed between its two renames
        if not root.exists():
            raise BundleError(f"{root}: no such bundle directory")
        if not root.is_dir():
            raise BundleError(f"{root}: a bundle is a directory, got a file")
        manifest = _read_json(inside(root, MANIFEST, "manifest"), "manifest")
        if manifest.get("format") != FORMAT:
            raise BundleError(f"{root}: manifest.json is not an lwx-edge bundle manifest")
        version = manifest.get("format_version")
        if isinstance(version, bool) or version not in (1, FORMAT_VERSION):
            newer = isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION
            raise BundleError(
                f"{root}: bundle format version {version!r} is not supported (this lwx-edge reads versions 1 to "
                f"{FORMAT_VERSION})" + ("; it was written by a newer lwx-edge: upgrade lwx-edge" if newer else ""))
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise BundleError(f"{root}: manifest.json has no file list")
        for required in (CONFIG, TOKENIZER):
            if required not in files:
                raise BundleError(f"{root}: bundle has no {required}")
        for rel, entry in files.items():
            p = inside(root, rel, "manifest entry")
            if not isinstance(entry, dict):
                raise BundleError(f"{root}: manifest entry {rel!r} is malformed (expected an object)")
            sha, size = entry.get("sha256"), entry.get("bytes")
            if not (isinstance(sha, str) and re.fullmatch("[0-9a-f]{64}", sha) and isinstance(size, int)
                    and not isinstance(size, bool) and size >= 0):
                raise BundleError(f"{root}: manifest entry {rel!r} has no valid sha256 and size "
                                  f"(sha256 {sha!r}, bytes {size!r}): the manifest is damaged or edited")
            if not p.is_file():
                raise BundleError(f"{root}: {rel} is listed in the manifest but missing")
        bundle = cls(root, {}, manifest, version)
        if verify:
            bundle.verify()
        config = _read_json(root / CONFIG, "config")
        _check_config(root, config)
        bundle.config = upgrade(config, version)
        return bundle

    def verify(self, names=None) -> None:
        """Check the size and sha256 of ``names`` (default: every listed file) against the manifest."""
        files = self.manifest["files"]
        for rel in files if names is None else names:
            entry = files.get(rel)
            if entry is None:
                raise BundleError(f"{self.path}: bundle has no {rel}")
            p = self.path / rel
            size = p.stat().st_size
            if size != entry.get("bytes"):
                raise BundleError(f"{self.path}: {rel} is truncated or changed "
                                  f"({size} bytes, manifest says {entry.get('bytes')})")
            if sha256_file(p) != entry.get("sha256"):
                raise BundleError(f"{self.path}: {rel} is corrupt (sha256 does not match the manifest)")

    def file(self, name: str) -> Path:
        if name not in self.manifest["files"]:
            raise BundleError(f"{self.path}: bundle has no {name}")
        return self.path / name

    def has(self, name: str) -> bool:
        return name in self.manifest["files"]

    def sha256(self, name: str) -> str:
        return self.manifest["files"][self.file(name).relative_to(self.path).as_posix()]["sha256"]

    def artifact(self, name: str) -> dict:
        """The manifest's record of an exported model (empty when it has none)."""
        arts = self.manifest.get("artifacts")
        entry = arts.get(name) if isinstance(arts, dict) else None
        return entry if isinstance(entry, dict) else {}

    def max_len(self, artifact: str | None = None) -> int:
        """The longest token sequence: the one ``artifact`` was exported for, else the model's."""
        try:
            return int(self.artifact(artifact).get("max_len") or self.config["model"]["max_len"])
        except (KeyError, TypeError, ValueError):
            raise BundleError(f"{self.path}: config.json has no valid model.max_len") from None

    def tokenizer(self, max_len: int | None = None, artifact: str | None = None, threads: int | None = None):
        """The bundle's :class:`~lwx_edge.tokenizer.Tokenizer` under its text contract (config.json), cut at
        ``max_len`` (default: :meth:`max_len` of ``artifact``), encoding lists on ``threads`` threads (None:
        SentencePiece's default, one per hardware thread). Refuses a contract this lwx-edge does not apply
        and a tokenizer with more pieces than the model's vocabulary."""
        from .tokenizer import Tokenizer

        tok, pooling = self.config.get("tokenizer"), self.config.get("pooling")
        if not isinstance(tok, dict):
            raise BundleError(f"{self.path}: config.json has no tokenizer section (the text contract)")
        if tok.get("type") != "sentencepiece" or tok.get("file") != TOKENIZER:
            raise BundleError(f"{self.path}: config.json names a tokenizer this lwx-edge cannot read "
                              f"(type {tok.get('type')!r}, file {tok.get('file')!r})")
        if tok.get("normalization") != text.RULES or not isinstance(tok.get("lowercase"), bool):
            raise BundleError(f"{self.path}: the bundle's texts are normalised by rules {tok.get('normalization')!r}"
                              f" (lowercase {tok.get('lowercase')!r}); this lwx-edge applies {text.RULES!r}: "
                              "use the lwx-edge version the bundle was made with")
        if pooling != POOLING:
            raise BundleError(f"{self.path}: config.json says pooling {pooling!r}; this lwx-edge pools {POOLING!r}")
        try:
            tokenizer = Tokenizer(self.file(TOKENIZER), max_len=max_len or self.max_len(artifact),
                                  lower=tok["lowercase"], threads=threads)
        except InputError as e:
            raise BundleError(f"{self.path}: {e}") from None
        vocab = self.config["model"].get("vocab_size")
        if isinstance(vocab, int) and tokenizer.vocab_size > vocab:
            raise BundleError(f"{self.path}: tokenizer.model has {tokenizer.vocab_size} pieces but the model's "
                              f"vocabulary is {vocab}: tokenizer and model do not belong together")
        return tokenizer


def update_manifest(bundle_dir: str | os.PathLike, artifacts: dict | None = None, **info) -> dict:
    """Rewrite the manifest of a bundle whose files changed: hashes anew, keeps what it said about the model
    (``info`` replaces sections), drops artefact entries whose file is gone and adds ``artifacts``. A version-1
    config.json is rewritten upgraded first, so the bundle is whole in the current format."""
    root = Path(bundle_dir)
    old = _read_json(root / MANIFEST, "manifest")
    kept = {k: v for k, v in old.items() if k not in LAYOUT_KEYS}
    kept.setdefault("training", {})
    kept.update(info)
    arts = {n: e for n, e in (kept.get("artifacts") or {}).items() if (root / n).is_file()}
    arts.update(artifacts or {})
    kept["artifacts"] = arts
    if old.get("format_version") != FORMAT_VERSION:
        config = _read_json(root / CONFIG, "config")
        write_json_atomic(root / CONFIG, upgrade(config, old.get("format_version")))
    return write_manifest(root, kept)
