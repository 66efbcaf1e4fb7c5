"""The hostile-bundle corpus (``tests/hostile.py``): every broken or crafted bundle and head is refused through the
public API with the right ``LwxError`` and a message naming the problem (the CLI: ``error:`` and exit 2), never
another exception or a crash, and nothing outside the bundle is read or written."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faults import run_cli
from hostile import CASES, copy_edge, rehash
from lwx_edge import Encoder
from lwx_edge.bundle import Bundle
from lwx_edge.errors import BundleError, LwxError
from lwx_edge.heads import LogisticHead, load_head
from lwx_edge.runtime import executorch_backend

HAS_ET = executorch_backend.available()[0]

# ------------------------------------------------------------------------------------------ file watch

_watch: dict | None = None
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITES = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "shutil.rmtree", "os.symlink", "os.link",
           "os.chmod", "os.truncate", "shutil.move", "shutil.copyfile"}


def _audit(event, args):
    w = _watch
    if w is None or not (event == "open" or event in _WRITES) or not args:
        return
    path = args[0]
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    real = os.path.realpath(os.fsdecode(path))
    writing = event in _WRITES or (event == "open" and isinstance(args[2], int) and args[2] & _WRITE_FLAGS)
    if writing and real.startswith(w["root"]):
        w["writes"].append((event, real))
    elif real.startswith(w["outside"]) or real == "/etc/passwd":
        w["reads_outside"].append(real)


sys.addaudithook(_audit)


@contextlib.contextmanager
def watch(root, outside):
    """Record the files opened under ``outside`` (and /etc/passwd) and the writes under ``root`` (the bundle, and
    ``outside`` beside it), while the block runs. (A runtime's own scratch files, e.g. torch's in /tmp, are not
    the bundle's doing.)"""
    global _watch
    _watch = {"root": os.path.realpath(root) + os.sep, "outside": os.path.realpath(outside) + os.sep,
              "reads_outside": [], "writes": []}
    try:
        yield _watch
    finally:
        _watch = None


def snapshot(root):
    return {p.relative_to(root).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in root.rglob("*")}


# ------------------------------------------------------------------------------------------ bases

@pytest.fixture(scope="module")
def bases(tiny_bundle, tmp_path_factory, default_pte):
    """The valid originals every case damages a copy of: tiny (torch), edge (int8 ONNX + .pte), head."""
    root = tmp_path_factory.mktemp("hostile")
    edge = copy_edge(root / "edge", default_pte)
    enc = Encoder.load(tiny_bundle, backend="torch")
    texts = ["the cat", "the dog", "a red car", "a green car", "le chat", "le chien", "music", "la musique"]
    LogisticHead(encoder=enc, C=1.0).fit(texts, ["a", "a", "b", "b", "a", "a", "c", "c"]).save(root / "head")
    return {"tiny": tiny_bundle, "edge": edge, "head": root / "head", "encoder": enc}


def make_case(case, bases, tmp_path):
    root = tmp_path / "case"
    outside = root / "outside"
    outside.mkdir(parents=True)
    (outside / "secret").write_text("secret, must not be read")
    target = root / ("head" if case.base == "head" else "bundle")
    shutil.copytree(bases[case.base], target, symlinks=True)
    case.mutate(target, outside)
    return root, outside, target


ISOLATED = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a load that allocates without bound fails, alone
sys.path[:0] = {paths!r}  # this file's folder, and tests/ (the shared helpers it imports)
from test_hostile import watch  # its audit hook watches this process too
from lwx_edge import Encoder
from lwx_edge.errors import LwxError
with watch({root!r}, {outside!r}) as seen:
    try:
        Encoder.load({target!r}, backend={backend!r}, verify={verify!r}).embed(["the cat"])
        error = None
    except LwxError as e:
        error = {{"type": type(e).__name__, "message": str(e)}}
print("RESULT " + json.dumps({{"error": error, "seen": seen}}))
"""


def use_isolated(case, root, outside, target):
    """``use`` in a child process (4 GiB of address space), for a bundle whose damage would crash the native runtime
    or allocate without bound if a check regressed: a crash, a hang or a MemoryError fails this test instead of
    killing pytest or the machine. Returns (error type name or None, message, seen)."""
    here = Path(__file__).resolve()
    code = ISOLATED.format(paths=[str(here.parent), str(here.parents[1])], root=str(root), outside=str(outside),
                           target=str(target), backend=case.backend, verify=case.verify)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"the load crashed or failed (exit {r.returncode}): {r.stderr[-3000:]}"
    result = json.loads(next(line[7:] for line in r.stdout.splitlines() if line.startswith("RESULT ")))
    error = result["error"] or {}
    return error.get("type"), error.get("message", ""), result["seen"]


def use(case, target, bases):
    """Load ``target`` the way an app would and use it."""
    if case.base == "head":
        head = load_head(target, encoder=bases["encoder"])
        assert head.predict(["the cat"]).tolist() == load_head(bases["head"]).predict(
            bases["encoder"].embed(["the cat"])).tolist()
    else:
        Encoder.load(target, backend=case.backend, verify=case.verify).embed(["the cat"])


# ------------------------------------------------------------------------------------------ the corpus

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_hostile_bundle_or_head_is_refused_clearly(case, bases, tmp_path):
    if case.backend == "executorch" and not HAS_ET:
        pytest.skip("ExecuTorch runtime not installed")
    root, outside, target = make_case(case, bases, tmp_path)
    before = snapshot(root)
    if case.isolate:
        kind, message, seen = use_isolated(case, root, outside, target)
        assert kind == (case.error.__name__ if case.error else None), (kind, message)
    else:
        with watch(root, outside) as seen:
            if case.error is None:
                use(case, target, bases)
            else:
                with pytest.raises(LwxError) as info:  # any other exception fails the test with its traceback
                    use(case, target, bases)
        if case.error is not None:
            assert isinstance(info.value, case.error), (type(info.value), info.value)
            message = str(info.value)
    assert seen["reads_outside"] == [] and seen["writes"] == [], seen
    assert snapshot(root) == before
    if case.error is None:
        return
    assert re.search(case.match, message), message
    assert "\n" not in message.strip() and len(message) < 600, message


def test_the_corpus_is_large_and_its_bases_are_valid(bases):
    assert len(CASES) >= 100 and len({c.name for c in CASES}) == len(CASES)
    Encoder.load(bases["tiny"]).embed(["the cat"])
    Encoder.load(bases["edge"], backend="onnx").embed(["the cat"])
    load_head(bases["head"], encoder=bases["encoder"]).predict(["the cat"])


CLI = {  # case -> command (BUNDLE, HEAD: the damaged copy)
    "entry-dotdot": ["embed", "BUNDLE", "the cat"],
    "config-model-a-list": ["embed", "BUNDLE", "the cat"],
    "weights-flipped": ["info", "BUNDLE"],
    "manifest-deeply-nested": ["info", "BUNDLE"],
    "head-kind-a-list": ["predict", "TINY", "HEAD", "the cat"],
    "head-nan-weights": ["predict", "TINY", "HEAD", "the cat"],
    "manifest-huge-int": ["info", "BUNDLE"],  # was a ValueError traceback (issue 37)
    "config-huge-int": ["embed", "BUNDLE", "the cat"],
    "entry-symlink-loop": ["info", "BUNDLE"],  # was a RuntimeError traceback
    "head-json-huge-int": ["predict", "TINY", "HEAD", "the cat"],
}


@pytest.mark.parametrize("name", CLI)
def test_the_cli_gives_one_error_line_and_exit_2(name, bases, tmp_path, monkeypatch, capsys):
    from lwx_edge.cli import main

    case = next(c for c in CASES if c.name == name)
    _, _, target = make_case(case, bases, tmp_path)
    args = [str(target) if a in ("BUNDLE", "HEAD") else str(bases["tiny"]) if a == "TINY" else a for a in CLI[name]]
    monkeypatch.setattr(sys, "argv", ["lwx-edge", *args])
    with pytest.raises(SystemExit) as e:
        main()
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, (e.value.code, err)
    assert re.search(case.match, err), err


def test_the_cli_process_exits_2(bases, tmp_path):
    case = next(c for c in CASES if c.name == "link-weights")
    _, _, target = make_case(case, bases, tmp_path)
    r = run_cli(["embed", target, "the cat"])
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "points outside" in r.stderr, r.stderr[-2000:]


# ------------------------------------------------------------------------------------------ what is checked when

def test_encoder_load_checks_the_files_it_reads_and_bundle_load_checks_all(bases, tmp_path, monkeypatch, capsys):
    """The README's promise: ``Encoder.load`` verifies the files it reads (config, tokenizer, the model file it
    runs); ``Bundle.load`` and ``lwx-edge info`` verify every file the manifest lists."""
    from lwx_edge.cli import main

    b = tmp_path / "b"
    shutil.copytree(bases["tiny"], b)
    (b / "notes.txt").write_text("notes")
    rehash_listing(b, "notes.txt")
    (b / "notes.txt").write_text("NOTES")  # damaged, but not a file the encoder reads
    Encoder.load(b).embed(["the cat"])
    with pytest.raises(BundleError, match="notes.txt is corrupt"):
        Bundle.load(b)
    monkeypatch.setattr(sys, "argv", ["lwx-edge", "info", str(b)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2 and "notes.txt is corrupt" in capsys.readouterr().err


def rehash_listing(d, name):
    m = json.loads((d / "manifest.json").read_text())
    m["files"][name] = {"sha256": "", "bytes": 0}
    (d / "manifest.json").write_text(json.dumps(m))
    rehash(d)
