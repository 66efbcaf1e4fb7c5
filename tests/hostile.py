"""A corpus of hostile bundles and heads, generated from a tiny valid one (no binary fixtures).

Each ``Case`` damages a copy of a valid bundle (``base="tiny"``: config, safetensors weights, tokenizer; ``"edge"``:
the shipped default's int8 ONNX + ExecuTorch programs) or of a valid head, and names the error its loading must
give: ``(error class, regex on the message)``. ``tests/sdk/test_hostile.py`` loads each through the public API.
Every case gets a directory ``outside/`` beside the bundle holding ``secret`` files that must never be read.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from lwx_edge.bundle import BundleError
from lwx_edge.heads.persistence import HeadError


@dataclass
class Case:
    name: str
    mutate: Callable[[Path, Path], None]     # (target directory, outside directory)
    match: str                               # regex the error message must match
    error: type | None = BundleError         # None: loads and works (the damage is harmless)
    base: str = "tiny"                       # tiny | edge | head
    backend: str = "auto"
    verify: bool = True                      # Encoder.load(..., verify=)
    isolate: bool = False                    # load in a child process, its memory capped: a regression would
                                             # crash the native runtime or allocate without bound


# ------------------------------------------------------------------------------------------ helpers

def copy_edge(d: Path, source: Path) -> Path:
    """``d``: a copy of ``source`` (the default's copy with its ExecuTorch program, fixture ``default_pte``) with
    its int8 programs only (the "edge" base), manifest to match."""
    d.mkdir()
    keep = ("config.json", "tokenizer.model", "model.int8.onnx", "model.int8.pte", "manifest.json")
    for name in keep:
        shutil.copyfile(source / name, d / name)
    m = json.loads((d / "manifest.json").read_text())
    m["files"] = {k: v for k, v in m["files"].items() if k in keep}
    (d / "manifest.json").write_text(json.dumps(m))
    return d


def read(d: Path, name: str):
    return json.loads((d / name).read_text(encoding="utf-8"))


def write(d: Path, name: str, obj) -> None:
    (d / name).write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")


def rehash(d: Path) -> None:
    """Make the manifest vouch for the files as they are now (the damage is then only in their content)."""
    from lwx_edge.atomic import sha256_file

    m = read(d, "manifest.json")
    for rel, e in m["files"].items():
        if (d / rel).is_file() and isinstance(e, dict):
            e.update(sha256=sha256_file(d / rel), bytes=(d / rel).stat().st_size)
    write(d, "manifest.json", m)


def manifest(fn):
    def mutate(d, out):
        m = read(d, "manifest.json")
        fn(m)
        write(d, "manifest.json", m)
    return mutate


def entry(rel, value=None):
    """A manifest entry ``rel`` (default: a plausible sha256 and size)."""
    return manifest(lambda m: m["files"].__setitem__(rel, value or {"sha256": "0" * 64, "bytes": 6}))


def config(fn):
    """Edit config.json and re-vouch for it: the content, not the hash, is what is wrong."""
    def mutate(d, out):
        c = read(d, "config.json")
        fn(c)
        write(d, "config.json", c)
        rehash(d)
    return mutate


def raw(name: str, fn, vouch: bool = False):
    """Replace the bytes of ``name`` by ``fn(old bytes)``; ``vouch``: and make the manifest agree."""
    def mutate(d, out):
        data = fn((d / name).read_bytes())
        (d / name).unlink()
        (d / name).write_bytes(data)
        if vouch:
            rehash(d)
    return mutate


def flip(b: bytes, at: int = -5) -> bytes:
    b = bytearray(b)
    b[at] ^= 0xFF
    return bytes(b)


def link_out(name: str, target: str = "secret", listed: bool = True):
    """``name`` in the bundle becomes a link to ``outside/target`` (a copy of the real file when it exists, so
    only the link check can stop the read)."""
    def mutate(d, out):
        src = d / name
        if src.is_file():
            shutil.copyfile(src, out / target)
            src.unlink()
        src.parent.mkdir(parents=True, exist_ok=True)
        src.symlink_to(out / target)
        if listed:
            rehash(d) if name in read(d, "manifest.json")["files"] else entry(name)(d, out)
    return mutate


def replace_with(name: str, kind: str):
    def mutate(d, out):
        (d / name).unlink()
        os.mkfifo(d / name) if kind == "fifo" else (d / name).mkdir()
    return mutate


def both(*fns):
    def mutate(d, out):
        for fn in fns:
            fn(d, out)
    return mutate


def deep(n: int = 100_000) -> str:
    return "[" * n + "]" * n


HUGE_INT = "7" * 5000  # more digits than Python converts (sys.get_int_max_str_digits(): 4300)


def huge_int(name: str, vouch: bool = False):
    """Add a key holding a 5000-digit integer to the JSON object in ``name`` (``json.loads`` raises ValueError)."""
    def mutate(d, out):
        text = (d / name).read_text(encoding="utf-8").rstrip()
        write(d, name, text[:-1].rstrip() + ', "big": ' + HUGE_INT + "}")
        if vouch:
            rehash(d)
    return mutate


def loop(name: str, via: str | None = None):
    """``name`` becomes a symbolic link to itself (or to ``via``, a link back to it), listed in the manifest."""
    def mutate(d, out):
        (d / name).unlink(missing_ok=True)
        if via:
            (d / via).symlink_to(d / name)
            (d / name).symlink_to(d / via)
        else:
            (d / name).symlink_to(d / name)
        if name not in read(d, "manifest.json")["files"]:
            entry(name)(d, out)
    return mutate


def artifact_entry(name: str, key: str, value):
    """Set ``key`` of the manifest's artifacts entry for ``name``."""
    return manifest(lambda m: m["artifacts"][name].__setitem__(key, value))


def pte_program(fn):
    """Rewrite the program part of model.int8.pte (its FlatBuffer, before the segments) with ``fn(bytearray)``
    and make the manifest vouch for the result: only the runtime's and our own structure checks can stop it."""
    def mutate(d, out):
        data = bytearray((d / "model.int8.pte").read_bytes())
        fn(data)
        (d / "model.int8.pte").unlink()
        (d / "model.int8.pte").write_bytes(bytes(data))
        rehash(d)
    return mutate


def not_text(data: bytearray) -> None:
    """An operator name of the program made invalid UTF-8 (the runtime logs it; the bindings abort on it)."""
    at = data.index(b"embedding_byte", 0, int.from_bytes(data[16:24], "little"))
    data[at] = 0xF5


def root_outside(data: bytearray) -> None:
    """The FlatBuffer's root offset points past the program, into the segments."""
    data[:4] = (int.from_bytes(data[16:24], "little") + 64).to_bytes(4, "little")


def vtable_outside(data: bytearray) -> None:
    """The root table's vtable offset points far outside the program."""
    root = int.from_bytes(data[:4], "little")
    data[root:root + 4] = (-(1 << 30)).to_bytes(4, "little", signed=True)


def setdefault_path(keys, value):
    """Set ``obj[k1][k2]... = value`` (creating nothing)."""
    def fn(obj):
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value
    return fn


def delete(keys):
    def fn(obj):
        for k in keys[:-1]:
            obj = obj[k]
        del obj[keys[-1]]
    return fn


# ------------------------------------------------------------------------------------------ bundle cases

OUT = "points outside the directory"
PTE = dict(base="edge", backend="executorch", isolate=True)  # a damaged program the native runtime must not see
BUNDLE_CASES = [
    # names that leave the bundle
    Case("entry-dotdot", entry("../outside/secret"), OUT),
    Case("entry-nested-dotdot", entry("sub/../../outside/secret"), OUT),
    Case("entry-absolute", entry("/etc/passwd"), OUT),
    Case("entry-backslash", entry("..\\outside\\secret"), "invalid manifest entry name"),
    Case("entry-empty-name", entry(""), "invalid manifest entry name"),
    Case("entry-nul", entry("config.json\0.txt"), "invalid manifest entry name"),
    Case("link-unused-file", link_out("notes.txt"), OUT),
    Case("link-weights", link_out("model.safetensors"), OUT),        # same bytes: the hash would pass
    Case("link-tokenizer", link_out("tokenizer.model"), OUT),
    Case("link-config", link_out("config.json"), OUT),
    Case("link-manifest", link_out("manifest.json", listed=False), "manifest.json.*points outside"),
    Case("link-directory", both(lambda d, o: (d / "sub").symlink_to(o, target_is_directory=True),
                                entry("sub/secret")), OUT),
    # damaged or swapped files
    Case("weights-truncated", raw("model.safetensors", lambda b: b[: len(b) // 2]), "model.safetensors is truncated"),
    Case("weights-flipped", raw("model.safetensors", flip), "model.safetensors is corrupt"),
    Case("weights-garbage-vouched", raw("model.safetensors", lambda b: b"\xff" * 64, vouch=True),
         "weights cannot be read"),
    Case("weights-header-vouched", raw("model.safetensors", lambda b: flip(b, 12), vouch=True),
         "weights cannot be read"),
    Case("weights-empty-vouched", raw("model.safetensors", lambda b: b"", vouch=True), "weights cannot be read"),
    Case("weights-of-another-shape", config(setdefault_path(["model", "d_ff"], 96)), "weights do not match"),
    Case("tokenizer-truncated", raw("tokenizer.model", lambda b: b[:100]), "tokenizer.model is truncated"),
    Case("tokenizer-garbage-vouched", raw("tokenizer.model", lambda b: b"not sentencepiece", vouch=True),
         "tokenizer"),
    Case("tokenizer-bigger-than-vocab", config(setdefault_path(["model", "vocab_size"], 100)),
         "do not belong together"),
    Case("tokenizer-is-fifo", replace_with("tokenizer.model", "fifo"), "tokenizer.model is listed .* but missing"),
    Case("weights-is-directory", replace_with("model.safetensors", "dir"), "listed in the manifest but missing"),
    Case("weights-missing", lambda d, o: (d / "model.safetensors").unlink(), "listed in the manifest but missing"),
    # manifest.json of the wrong shape
    Case("manifest-missing", lambda d, o: (d / "manifest.json").unlink(), "not a model bundle"),
    Case("manifest-is-directory", lambda d, o: ((d / "manifest.json").unlink(), (d / "manifest.json").mkdir()),
         "manifest"),
    Case("manifest-not-json", lambda d, o: write(d, "manifest.json", "{nope"), "not valid JSON"),
    Case("manifest-not-utf8", lambda d, o: (d / "manifest.json").write_bytes(b"\xff\xfe{}"), "not valid JSON"),
    Case("manifest-deeply-nested", lambda d, o: write(d, "manifest.json", deep()), "manifest"),
    Case("manifest-a-list", lambda d, o: write(d, "manifest.json", []), "expected a JSON object"),
    Case("manifest-wrong-format", manifest(setdefault_path(["format"], "zip")), "not an lwx-edge bundle manifest"),
    Case("format-version-future", manifest(setdefault_path(["format_version"], 99)), "newer lwx-edge"),
    Case("format-version-string", manifest(setdefault_path(["format_version"], "2")), "version '2' is not supported"),
    Case("format-version-bool", manifest(setdefault_path(["format_version"], True)), "not supported"),
    Case("format-version-missing", manifest(delete(["format_version"])), "not supported"),
    Case("files-missing", manifest(delete(["files"])), "no file list"),
    Case("files-a-list", manifest(setdefault_path(["files"], ["config.json"])), "no file list"),
    Case("files-without-config", manifest(delete(["files", "config.json"])), "no config.json"),
    Case("files-without-tokenizer", manifest(delete(["files", "tokenizer.model"])), "no tokenizer.model"),
    Case("entry-a-string", manifest(setdefault_path(["files", "config.json"], "abc")), "malformed"),
    Case("entry-no-sha256", manifest(delete(["files", "model.safetensors", "sha256"])),
         "model.safetensors.*sha256"),
    Case("entry-sha256-a-number", manifest(setdefault_path(["files", "tokenizer.model", "sha256"], 7)),
         "tokenizer.model.*sha256"),
    Case("entry-no-size", manifest(delete(["files", "config.json", "bytes"])), "config.json.*size"),
    Case("entry-size-a-string", manifest(setdefault_path(["files", "config.json", "bytes"], "12")),
         "config.json.*size"),
    # config.json of the wrong shape (re-vouched: the content is what is wrong)
    Case("config-not-json", both(lambda d, o: write(d, "config.json", "{"), lambda d, o: rehash(d)),
         "config is corrupt"),
    Case("config-deeply-nested", both(lambda d, o: write(d, "config.json", deep()), lambda d, o: rehash(d)),
         "config"),
    Case("config-a-list", both(lambda d, o: write(d, "config.json", [1]), lambda d, o: rehash(d)),
         "expected a JSON object"),
    Case("config-no-model", config(delete(["model"])), "no 'model' section"),
    Case("config-model-a-list", config(setdefault_path(["model"], [1, 2])), "model section"),
    Case("config-model-a-string", config(setdefault_path(["model"], "big")), "model section"),
    Case("config-max-len-text", config(setdefault_path(["model", "max_len"], "long")), "max_len"),
    Case("config-max-len-negative", config(setdefault_path(["model", "max_len"], -3)), "max_len"),
    Case("config-d-model-text", config(setdefault_path(["model", "d_model"], "wide")), "model section"),
    Case("config-vocab-a-list", config(setdefault_path(["model", "vocab_size"], [160])), "model section"),
    Case("config-no-tokenizer", config(delete(["tokenizer"])), "no tokenizer section"),
    Case("config-tokenizer-a-string", config(setdefault_path(["tokenizer"], "spm")), "no tokenizer section"),
    Case("config-tokenizer-type", config(setdefault_path(["tokenizer", "type"], "wordpiece")), "cannot read"),
    Case("config-tokenizer-file-outside", config(setdefault_path(["tokenizer", "file"], "../outside/secret")),
         "cannot read"),
    Case("config-normalization", config(setdefault_path(["tokenizer", "normalization"], "nfd")), "normalised"),
    Case("config-lowercase-text", config(setdefault_path(["tokenizer", "lowercase"], "yes")), "normalised"),
    Case("config-pooling", config(setdefault_path(["pooling"], "max")), "pooling"),
    Case("config-embedding-dim", config(setdefault_path(["embedding_dim"], 64)), "embedding_dim 64"),
    # the runtimes' files (the shipped default's int8 programs)
    Case("onnx-truncated", raw("model.int8.onnx", lambda b: b[: len(b) // 3]), "model.int8.onnx is truncated",
         base="edge", backend="onnx"),
    Case("onnx-garbage-vouched", raw("model.int8.onnx", lambda b: b"\x08\x07garbage" * 50, vouch=True),
         "onnxruntime cannot read", base="edge", backend="onnx"),
    Case("onnx-link-out", link_out("model.int8.onnx"), OUT, base="edge", backend="onnx"),
    Case("pte-header-vouched", raw("model.int8.pte", lambda b: b[:4] + b"XXXX" + b[8:], vouch=True),
         "not an ExecuTorch program", **PTE),
    Case("pte-truncated-vouched", raw("model.int8.pte", lambda b: b[: len(b) // 2], vouch=True),
         "ExecuTorch program is truncated", **PTE),
    Case("pte-empty-vouched", raw("model.int8.pte", lambda b: b"", vouch=True), "ExecuTorch", **PTE),
    # verify=False never lets a damaged program reach the native runtime (issue 37)
    Case("pte-flipped-unverified", raw("model.int8.pte", lambda b: flip(b, 15535)),
         "model.int8.pte is corrupt \\(sha256 does not match", verify=False, **PTE),
    Case("pte-name-not-text-vouched", pte_program(not_text), "program is damaged \\(operator .* is not text",
         verify=False, **PTE),
    Case("pte-root-outside-vouched", pte_program(root_outside), "program is damaged \\(its structure is broken",
         verify=False, **PTE),
    Case("pte-vtable-outside-vouched", pte_program(vtable_outside), "program is damaged \\(its structure is broken",
         **PTE),
    # JSON that Python's json refuses with a bare ValueError: an integer over 4,300 digits (issue 37)
    Case("manifest-huge-int", huge_int("manifest.json"), "manifest.json: manifest is corrupt .*4300 digits"),
    Case("config-huge-int", huge_int("config.json", vouch=True), "config.json: config is corrupt .*4300 digits"),
    Case("config-huge-int-unverified", huge_int("config.json"), "config.json: config is corrupt .*digits",
         base="edge", backend="onnx", verify=False),
    # symbolic link loops listed in the manifest (RuntimeError from Path.resolve)
    Case("entry-symlink-loop", loop("notes.txt"), "manifest entry 'notes.txt' cannot be resolved"),
    Case("entry-symlink-loop-of-two", loop("notes.txt", via="other.txt"), "'notes.txt' cannot be resolved"),
    Case("weights-symlink-loop", loop("model.safetensors"), "'model.safetensors' cannot be resolved"),
    # an artefact's max_batch / max_len in the manifest
    Case("pte-max-batch-text", artifact_entry("model.int8.pte", "max_batch", "abc"),
         "artifacts entry for model.int8.pte: max_batch must be a positive integer, got 'abc'", base="edge",
         backend="executorch"),
    Case("pte-max-batch-negative", artifact_entry("model.int8.pte", "max_batch", -4),
         "max_batch must be a positive integer, got -4", base="edge", backend="executorch"),
    Case("pte-max-batch-a-list", artifact_entry("model.int8.pte", "max_batch", [1]),
         "max_batch must be a positive integer, got \\[1\\]", base="edge", backend="executorch"),
    Case("pte-max-batch-bool", artifact_entry("model.int8.pte", "max_batch", True),
         "max_batch must be a positive integer, got True", base="edge", backend="executorch"),
    Case("onnx-max-len-text", artifact_entry("model.int8.onnx", "max_len", "abc"),
         "artifacts entry for model.int8.onnx: max_len must be an integer", base="edge", backend="onnx"),
    Case("onnx-max-len-negative", artifact_entry("model.int8.onnx", "max_len", -4), "max_len .*got -4",
         base="edge", backend="onnx"),
    Case("onnx-max-len-a-list", artifact_entry("model.int8.onnx", "max_len", [1]), "max_len .*got \\[1\\]",
         base="edge", backend="onnx"),
    Case("onnx-max-len-beyond-model", artifact_entry("model.int8.onnx", "max_len", 10**6),
         "max_len must be an integer from 1 to the model's max_len \\(200\\)", base="edge", backend="onnx"),
    # absurd model shapes: bounded before any runtime builds the model, then checked against the weights' header
    Case("config-n-layers-ten-million", config(setdefault_path(["model", "n_layers"], 10**7)),
         "n_layers is 10000000, more than any model", isolate=True),
    Case("config-n-layers-huge", config(setdefault_path(["model", "n_layers"], int("9" * 4000))),
         "n_layers is 9{20}\\.\\.\\. \\(4000 digits\\), more than", isolate=True),
    Case("config-max-len-long-text", config(setdefault_path(["model", "max_len"], "x" * 5000)),
         "max_len must be a positive integer, got 'x+\\.\\.\\."),
    Case("config-d-model-huge", config(lambda c: (c["model"].update(d_model=10**6), c.update(embedding_dim=10**6))),
         "d_model is 1000000, more than", isolate=True),
    Case("config-vocab-huge", config(setdefault_path(["model", "vocab_size"], 10**9)), "vocab_size is 1000000000",
         isolate=True),
    Case("config-max-len-huge", config(setdefault_path(["model", "max_len"], 10**8)), "max_len is 100000000",
         isolate=True),
    Case("config-heads-do-not-divide", config(setdefault_path(["model", "n_heads"], 5)),
         "d_model 32 is not a multiple of n_heads 5"),
    Case("config-n-layers-64", config(setdefault_path(["model", "n_layers"], 64)),
         "model.safetensors: weights do not match config.json \\(missing \\['blocks.2"),
    Case("config-unknown-model-key", config(setdefault_path(["model", "n_experts"], 8)),
         "invalid model section \\(unknown model config keys"),
]


# ------------------------------------------------------------------------------------------ head cases

def head_meta(fn):
    def mutate(d, out):
        m = read(d, "head.json")
        fn(m)
        write(d, "head.json", m)
    return mutate


def npz(fn):
    """Rewrite head.npz with ``fn(arrays)`` and record its new sha256 in head.json (only the content is bad)."""
    def mutate(d, out):
        from lwx_edge.atomic import sha256_file

        with np.load(d / "head.npz", allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        fn(arrays)
        (d / "head.npz").unlink()
        np.savez(d / "head.npz", **arrays)
        head_meta(setdefault_path(["weights", "sha256"], sha256_file(d / "head.npz")))(d, out)
    return mutate


def npz_bytes(data: bytes):
    """head.npz replaced by ``data``, its sha256 recorded in head.json."""
    def mutate(d, out):
        import hashlib

        (d / "head.npz").write_bytes(data)
        head_meta(setdefault_path(["weights", "sha256"], hashlib.sha256(data).hexdigest()))(d, out)
    return mutate


def head_link_out(d, out):
    shutil.copyfile(d / "head.npz", out / "secret.npz")
    (d / "head.npz").unlink()
    (d / "head.npz").symlink_to(out / "secret.npz")


def head_json_link_out(d, out):
    shutil.copyfile(d / "head.json", out / "head.json")
    (d / "head.json").unlink()
    (d / "head.json").symlink_to(out / "head.json")


H = dict(error=HeadError, base="head")
HEAD_CASES = [
    Case("head-weights-dotdot", head_meta(setdefault_path(["weights", "file"], "../outside/secret.npz")), OUT, **H),
    Case("head-weights-absolute", head_meta(setdefault_path(["weights", "file"], "/etc/passwd")), OUT, **H),
    Case("head-weights-link-out", head_link_out, OUT, **H),
    Case("head-json-link-out", head_json_link_out, "head.json.*points outside", **H),
    Case("head-weights-file-a-list", head_meta(setdefault_path(["weights", "file"], ["head.npz"])),
         "invalid weights file name", **H),
    Case("head-weights-a-list", head_meta(setdefault_path(["weights"], ["head.npz"])), "weights", **H),
    Case("head-weights-no-sha256", head_meta(delete(["weights", "sha256"])), "records no sha256", **H),
    Case("head-weights-wrong-sha256", head_meta(setdefault_path(["weights", "sha256"], "0" * 64)), "corrupt", **H),
    Case("head-weights-missing", lambda d, o: (d / "head.npz").unlink(), "weights file head.npz is missing", **H),
    Case("head-npz-garbage", npz_bytes(b"PK\x03\x04junk"), "cannot be read as .npz", **H),
    Case("head-npz-pickled", npz(lambda a: a.__setitem__("W0", np.array([{"x": 1}], dtype=object))),
         "cannot be read as .npz", **H),
    Case("head-nan-weights", npz(lambda a: a["W0"].__setitem__((0, 0), np.nan)), "NaN", **H),
    Case("head-inf-bias", npz(lambda a: a["b0"].__setitem__(0, np.inf)), "NaN, infinite", **H),
    Case("head-zero-scale", npz(lambda a: a["scale"].__setitem__(0, 0.0)), "'scale'", **H),
    Case("head-text-weights", npz(lambda a: a.__setitem__("W0", np.array(["x"]))), "non-numeric", **H),
    Case("head-wrong-shape", npz(lambda a: a.__setitem__("W0", a["W0"][:5])), "do not chain", **H),
    Case("head-missing-array", npz(lambda a: a.pop("b0")), "do not fit together", **H),
    Case("head-json-missing", lambda d, o: (d / "head.json").unlink(), "head.json is missing", **H),
    Case("head-json-not-json", lambda d, o: write(d, "head.json", "{"), "not valid JSON", **H),
    Case("head-json-deeply-nested", lambda d, o: write(d, "head.json", deep()), "head.json", **H),
    Case("head-json-a-list", lambda d, o: write(d, "head.json", []), "not an lwx-edge head", **H),
    Case("head-json-huge-int", huge_int("head.json"), "head.json: head.json is corrupt .*4300 digits", **H),
    Case("head-json-symlink-loop", lambda d, o: ((d / "head.json").unlink(), (d / "head.json").symlink_to(
        d / "head.json")), "head.json' cannot be resolved", **H),
    Case("head-format-version-future", head_meta(setdefault_path(["format_version"], 2)), "not supported", **H),
    Case("head-kind-unknown", head_meta(setdefault_path(["kind"], "forest")), "unknown head kind", **H),
    Case("head-kind-a-list", head_meta(setdefault_path(["kind"], ["mlp"])), "unknown head kind", **H),
    Case("head-no-encoder", head_meta(delete(["encoder"])), "no 'encoder' entry", **H),
    Case("head-encoder-a-string", head_meta(setdefault_path(["encoder"], "tiny")), "malformed", **H),
    Case("head-encoder-no-sha256", head_meta(delete(["encoder", "sha256"])), "malformed", **H),
    Case("head-another-encoder", head_meta(lambda m: m["encoder"].update(
        sha256="f" * 64, model_files={k: "f" * 64 for k in m["encoder"].get("model_files") or {}})),
        "fitted on another encoder", **H),
    Case("head-model-files-a-list", head_meta(setdefault_path(["encoder", "model_files"], ["x"])), "encoder", **H),
    Case("head-another-tokenizer", head_meta(setdefault_path(["encoder", "tokenizer_sha256"], "e" * 64)),
         "tokenizer differs", **H),
    Case("head-classes-a-number", head_meta(setdefault_path(["classes"], 4)), "classes", **H),
    Case("head-classes-too-few", head_meta(lambda m: m["classes"].pop()), "classes", **H),
    Case("head-n-features-text", head_meta(setdefault_path(["n_features"], "many")), "do not fit together", **H),
    Case("head-layers-a-string", head_meta(setdefault_path(["layers"], "W0")), "'layers' is not a JSON list", **H),
    Case("head-layer-no-weight", head_meta(delete(["layers", 0, "weight"])), "do not fit together", **H),
    Case("head-activation-unknown", head_meta(setdefault_path(["layers", 0, "activation"], "gelu")),
         "unknown activation", **H),
    Case("head-input-a-list", head_meta(setdefault_path(["input"], [True])), "input", **H),
    Case("head-params-a-list", head_meta(setdefault_path(["params"], [1])), "params", **H),
    Case("head-training-a-list", head_meta(setdefault_path(["training"], [1])), "training", **H),
    # accepted, but harmless: an edited training record cannot replace the weights
    Case("head-training-overrides-layers", head_meta(lambda m: m["training"].update(layers="boom", classes=[1])),
         "", error=None, base="head"),
]
CASES = BUNDLE_CASES + HEAD_CASES
