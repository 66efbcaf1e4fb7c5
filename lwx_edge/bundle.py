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
Writes are atomic (:mod:`lwx_edge.atomic`).
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import text
from ._version import __version__
from .atomic import read_json, recover_dir, sha256_file, under_a_file, write_json_atomic
from .errors import BundleError, InputError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

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
# The largest model a config.json may describe (checked before any runtime builds it: a crafted config must not
# make the torch backend allocate without bound). The shipped model is 128000 x 512, 2 layers.
MODEL_LIMITS = {"vocab_size": 10_000_000, "d_model": 8192, "n_heads": 256, "d_ff": 65536, "n_layers": 64,
                "max_len": 65536}


def text_contract(lowercase: bool = True) -> dict:
    """config.json's ``tokenizer`` section: how texts are turned into the tokenizer's input."""
    return {"type": "sentencepiece", "file": TOKENIZER, "normalization": text.RULES, "lowercase": lowercase}


def make_config(model: dict, embedding_dim: int) -> dict:
    """The config.json of a new bundle."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "model": dict(model),
            "tokenizer": text_contract(), "embedding_dim": embedding_dim, "pooling": POOLING}


def upgrade(config: dict, version: int | None) -> dict:
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


def inside(root: str | os.PathLike, rel: object, what: str = "file") -> Path:
    """``root / rel`` for a listed file name, refusing names that could leave ``root`` (absolute paths, ``..``,
    links out of it): a crafted manifest or head must not make us read, copy or overwrite files elsewhere."""
    root = Path(root)
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise BundleError(f"{root}: invalid {what} name {rel!r}")
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    p = root / rel
    try:
        outside = not p.resolve().is_relative_to(root.resolve())
    except (RuntimeError, OSError) as e:  # a symbolic link loop: RuntimeError before Python 3.13, OSError since
        why = "a symbolic link loop" if isinstance(e, RuntimeError) else (e.strerror or str(e))
        raise BundleError(f"{root}: {what} {rel!r} cannot be resolved ({why})") from None
    if outside:
        raise BundleError(f"{root}: {what} {rel!r} points outside the directory")
    return p


def check_new_bundle_dir(path: str | os.PathLike, option: str = "--out") -> Path:
    """``path`` as a place to write a new bundle: missing, empty, or a bundle (replaced whole). Anything else is
    refused before any work starts: a file, a path under a file, or a folder holding other things."""
    if not str(path).strip():
        raise BundleError(f"{option} is empty (give the directory to write the bundle to)")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BundleError(f"{option} {path} is a file, not a directory; refusing to replace it")
    if under_a_file(path):
        raise BundleError(f"{option} {path} lies under a file")
    if path.is_dir() and any(path.iterdir()) and not (path / CONFIG).is_file():
        raise BundleError(f"{option} {path} is not empty and holds no bundle; refusing to replace it (give a new "
                          "or empty directory)")
    return path


def _read_json(path: Path, what: str) -> dict:
    obj = read_json(path, what, BundleError,
                    missing=f"{path.parent}: not a model bundle ({what} {path.name} is missing)")
    if not isinstance(obj, dict):
        raise BundleError(f"{path}: {what} is corrupt (expected a JSON object)")
    return obj


def shown(value: object, width: int = 40) -> str:
    """``repr(value)`` cut to about ``width`` characters, for messages about crafted values (a 4000-digit
    integer, a megabyte of text)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** width:
        digits = len(str(abs(value)))
        return f"{str(value)[:20]}... ({digits} digits)"
    text = repr(value)
    return text if len(text) <= width else text[:width] + "..."


def _check_config(root: Path, config: dict) -> None:
    """Refuse a config.json whose model section has the wrong shape (before any runtime sees it)."""
    model = config.get("model")
    if model is None:
        raise BundleError(f"{root}: config.json has no 'model' section")
    if not isinstance(model, dict):
        raise BundleError(f"{root}: config.json's model section is not an object (got {type(model).__name__})")
    for key, limit in MODEL_LIMITS.items():
        v = model.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BundleError(f"{root}: config.json's model section: {key} must be a positive integer, "
                              f"got {shown(v)}")
        if v > limit:
            raise BundleError(f"{root}: config.json's model section: {key} is {shown(v)}, more than any model this "
                              f"lwx-edge runs ({limit}): the config is damaged or edited")
    if "d_model" in model and "n_heads" in model and model["d_model"] % model["n_heads"]:
        raise BundleError(f"{root}: config.json's model section: d_model {model['d_model']} is not a multiple "
                          f"of n_heads {model['n_heads']}")
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
    # listed file -> (its state on disk: device, inode, size, times; the sha256 of its bytes in that state)
    _hashes: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, path: str | os.PathLike, verify: bool = True) -> "Bundle":
        """Read and check the layout; ``verify`` also checks the size and sha256 of every listed file
        (``Encoder.load`` checks only the files it reads: :meth:`verify`).

        ``verify=False`` skips the size and sha256 checks of the files that only parsers which refuse damaged
        input read (config.json, tokenizer.model, an ONNX model, the safetensors weights: a damaged one gives a
        ``BundleError``, or an encoder that computes other vectors). The layout and manifest checks stay. It
        never skips a check that keeps the process alive or an identity true: an ExecuTorch program (.pte),
        which the native runtime trusts, is always checked against its sha256 in the manifest and its
        structure verified before the runtime loads it; and the identity that heads and indexes check
        (:meth:`identity`) is computed from the model file as it is on disk, hashed when first asked, never
        taken from the manifest alone."""
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

    def verify(self, names: Iterable[str] | None = None, *, reuse: bool = False) -> None:
        """Check the size and sha256 of ``names`` (default: every listed file) against the manifest. ``reuse``:
        a file hashed before (by this object) and unchanged since (same inode, size and times) is not hashed
        again."""
        files = self.manifest["files"]
        for rel in files if names is None else names:
            entry = files.get(rel)
            if entry is None:
                raise BundleError(f"{self.path}: bundle has no {rel}")
            size = self._state(rel)[2]
            if size != entry.get("bytes"):
                raise BundleError(f"{self.path}: {rel} is truncated or changed "
                                  f"({size} bytes, manifest says {entry.get('bytes')})")
            if self.file_sha256(rel, reuse=reuse) != entry.get("sha256"):
                raise BundleError(f"{self.path}: {rel} is corrupt (sha256 does not match the manifest)")

    def _state(self, rel: str) -> tuple:
        try:
            st = (self.path / rel).stat()
        except OSError as e:
            raise BundleError(f"{self.path}: {rel} cannot be read ({e.strerror or e})") from None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def file_sha256(self, rel: str, reuse: bool = True) -> str:
        """The sha256 of listed file ``rel`` as it is on disk now (not the manifest's record of it). With
        ``reuse``, a file this object hashed before and that is unchanged since is not hashed again."""
        self.file(rel)
        state = self._state(rel)
        known = self._hashes.get(rel)
        if reuse and known is not None and known[0] == state:
            return known[1]
        try:
            sha = sha256_file(self.path / rel)
        except OSError as e:
            raise BundleError(f"{self.path}: {rel} cannot be read ({e.strerror or e})") from None
        if self._state(rel) == state:  # not changed while being read
            self._hashes[rel] = (state, sha)
        return sha

    def identity(self, artifact: str | None) -> dict:
        """Which model ``artifact`` (a listed model file: an exported model, or the weights) is, for heads and
        indexes to record and check. Bound to the bytes on disk: the file's sha256 is the one :meth:`verify`
        computed, else it is hashed now (once per file state), so a file changed or swapped after the manifest
        was written (a bundle loaded with ``verify=False``) never passes as the model the manifest names.

        ``sha256`` names the model by its provenance: the sha256 of the fp32 weights it came from. For the
        weights that is their own sha256; for an exported model, the source weights that parity.json records
        for an export whose sha256 is this file's (so a training bundle and its own exports share one
        identity); failing that, the file's own sha256. Also: ``artifact_sha256`` (the file's), ``model_files``
        (the manifest's model files; the loaded one as hashed), ``identity_from`` ("weights", "export" or
        "file") and ``matches_manifest`` (False: the file is not the one the manifest lists; its identity is
        then its own sha256 alone)."""
        from . import runtime

        files = self.manifest.get("files") or {}
        model_files = {n: files[n].get("sha256") for _, n, _ in runtime.artifacts() if n in files}
        if not artifact or artifact not in files:
            return {"sha256": None, "artifact_sha256": None, "model_files": model_files, "identity_from": None,
                    "matches_manifest": True}
        actual = self.file_sha256(artifact)
        if actual != files[artifact].get("sha256"):
            return {"sha256": actual, "artifact_sha256": actual, "model_files": {artifact: actual},
                    "identity_from": "file", "matches_manifest": False}
        model_files[artifact] = actual
        source: str | None
        if artifact == WEIGHTS:
            source, origin = actual, "weights"
        else:
            source = self._export_source(artifact, actual)
            source, origin = (source, "export") if source else (actual, "file")
        return {"sha256": source, "artifact_sha256": actual, "model_files": model_files, "identity_from": origin,
                "matches_manifest": True}

    def _export_source(self, artifact: str, sha: str) -> str | None:
        """The sha256 of the weights that parity.json says the export with file sha256 ``sha`` came from
        (None when it does not say, or parity.json is not the file the manifest lists)."""
        if not self.has(PARITY):
            return None
        try:
            if self.file_sha256(PARITY) != self.manifest["files"][PARITY].get("sha256"):
                return None
            parity = read_json(self.file(PARITY), "parity report", BundleError)
        except BundleError:
            return None
        arts, source = parity.get("artifacts"), parity.get("bundle")
        entry = arts.get(artifact) if isinstance(arts, dict) else None
        weights = source.get("weights_sha256") if isinstance(source, dict) else None
        if (isinstance(entry, dict) and entry.get("sha256") == sha and isinstance(weights, str)
                and re.fullmatch("[0-9a-f]{64}", weights)):
            return weights
        return None

    def file(self, name: str) -> Path:
        if name not in self.manifest["files"]:
            raise BundleError(f"{self.path}: bundle has no {name}")
        return self.path / name

    def has(self, name: str) -> bool:
        return name in self.manifest["files"]

    def sha256(self, name: str) -> str:
        return self.manifest["files"][self.file(name).relative_to(self.path).as_posix()]["sha256"]

    def artifact(self, name: str | None) -> dict:
        """The manifest's record of an exported model (empty when it has none)."""
        arts = self.manifest.get("artifacts")
        entry = arts.get(name) if isinstance(arts, dict) else None
        return entry if isinstance(entry, dict) else {}

    def max_len(self, artifact: str | None = None) -> int:
        """The longest token sequence: the one ``artifact`` was exported for, else the model's."""
        model = self.config.get("model")
        limit = model.get("max_len") if isinstance(model, dict) else None
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BundleError(f"{self.path}: config.json has no valid model.max_len")
        value = self.artifact(artifact).get("max_len")
        if value is None:
            return limit
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise BundleError(f"{self.path}: manifest.json's artifacts entry for {artifact}: max_len must be an "
                              f"integer from 1 to the model's max_len ({limit}), got {shown(value)}")
        return value

    def tokenizer(self, max_len: int | None = None, artifact: str | None = None,
                  threads: int | None = None) -> Tokenizer:
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


def update_manifest(bundle_dir: str | os.PathLike, artifacts: dict | None = None, **info: Any) -> dict:
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


_WRITERS = ("atomic_dir", "atomic_file", "write_text_atomic", "remove_stale", "is_stream", "parse_json")


def __getattr__(name: str) -> Any:
    """The atomic writers this module used to re-export: still here for one release, from :mod:`lwx_edge.atomic`."""
    if name in _WRITERS:
        import warnings

        from . import atomic

        warnings.warn(f"lwx_edge.bundle.{name} is deprecated and will be removed in the next release: import it "
                      "from lwx_edge.atomic", DeprecationWarning, stacklevel=2)
        return getattr(atomic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
