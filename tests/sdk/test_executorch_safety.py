"""The ExecuTorch runtime trusts its input and its process-wide thread pool (issue 37, defects 2 and 4): no thread
count asked for later and no damaged program, verified or not, may crash or hang the process. What could crash runs
in a child process, so a regression fails the test instead of killing pytest."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

from hostile import copy_edge
from lwx_edge import Encoder
from lwx_edge.errors import InputError
from lwx_edge.runtime import executorch_backend

pytestmark = pytest.mark.skipif(not executorch_backend.available()[0], reason="ExecuTorch runtime not installed")


def run_child(code: str, *args, timeout: int = 240) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter; a hang is a failure, like a crash."""
    try:
        return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"hung for {timeout} s (a deadlock in the runtime?); last output: {out[-500:]}")


@pytest.fixture
def edge(tmp_path, default_pte):
    """A copy of the shipped default with its int8 programs (the hostile corpus' "edge" base)."""
    return copy_edge(tmp_path / "edge", default_pte)


# ------------------------------------------------------------------------------------------ the thread pool

POOL = """
import warnings
from lwx_edge import Encoder
from lwx_edge.runtime.executorch_backend import _native_runtime

a = Encoder.load(backend="executorch")  # threads=None: the runtime's default pool, now in use
a.embed(["x"])
size = _native_runtime()._threadpool_get_thread_count()
other = 1 if size != 1 else 2  # another size within the CPUs (more would be capped first): must share the pool
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    b = Encoder.load(backend="executorch", threads=other)
    b.embed(["x"] * 20)
    a.embed(["x"] * 20)
    c = Encoder.load(backend="executorch", threads=other)
    c.embed(["a few more words"] * 3)
    a.embed(["x"] * 20)
    b.embed(["x"] * 20)
assert _native_runtime()._threadpool_get_thread_count() == size
print("ok", sum("shares it" in str(w.message) for w in caught))
"""


@pytest.mark.parametrize("attempt", range(3))
def test_a_later_thread_count_never_resets_the_pool_in_use(attempt, default_pte):
    """Issue 37: ``a = load(); a.embed; b = load(threads=4); b.embed; a.embed`` crashed (SIGSEGV) or hung: the
    first load passed threads=None and was not recorded, so the second reset the pool ``a`` runs on."""
    r = run_child(POOL)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert r.stdout.split()[-2:] == ["ok", "2"], r.stdout[-500:]


# ------------------------------------------------------------------------------------------ damaged programs

FLIPS = """
import json, random, sys
from pathlib import Path
from lwx_edge import Encoder
from lwx_edge.atomic import sha256_file
from lwx_edge.errors import LwxError

bundle = Path(sys.argv[1])
pte = bundle / "model.int8.pte"
good = pte.read_bytes()
program = int.from_bytes(good[16:24], "little")  # the FlatBuffer before the segments (extended header eh00)
rng = random.Random(37)
known = [(15535, 2), (7233, 128)]  # in the shipped program: a SIGSEGV, and an abort (an op name not UTF-8)
flips = [f for f in known if f[0] < program] + [(rng.randrange(64, program), 1 << rng.randrange(8)) for _ in range(14)]
manifest = json.loads((bundle / "manifest.json").read_text())
for at, bit in flips:
    data = bytearray(good)
    data[at] ^= bit
    pte.write_bytes(bytes(data))
    for vouched in (False, True):  # the manifest as it was, or re-hashed to match (a bad tool, an attacker)
        m = json.loads(json.dumps(manifest))
        if vouched:
            m["files"]["model.int8.pte"].update(sha256=sha256_file(pte))
        (bundle / "manifest.json").write_text(json.dumps(m))
        print("TRY", at, bit, vouched, flush=True)
        try:
            Encoder.load(bundle, backend="executorch", verify=False).embed(["the cat", "le chat"] * 9)
            outcome = "ok"
        except LwxError as e:
            outcome = type(e).__name__ + ": " + str(e).replace(chr(10), " ")[:200]
        print("GOT", at, bit, vouched, outcome, flush=True)
"""


def test_bit_flips_in_a_program_never_crash_even_unverified(edge):
    """Issue 37: 4 of 14 bit flips in the program region of the shipped model.int8.pte crashed the process under
    verify=False. Now the program's sha256 is checked whatever ``verify`` says, and a program the manifest vouches
    for (re-hashed) is walked and verified before the runtime loads it: an LwxError, never a signal."""
    r = run_child(FLIPS, edge)
    tried = [line for line in r.stdout.splitlines() if line.startswith("TRY")]
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, (
        f"exit {r.returncode} at {tried[-1:]}: {r.stderr[-2000:]}")
    got = [line.split(" ", 5)[1:] for line in r.stdout.splitlines() if line.startswith("GOT")]
    assert len(got) == len(tried) >= 28
    for at, bit, vouched, outcome in ((g[0], g[1], g[2], " ".join(g[3:])) for g in got):
        if vouched == "False":
            assert outcome.startswith("BundleError: ") and "model.int8.pte is corrupt" in outcome, (at, outcome)
        else:
            assert outcome == "ok" or outcome.startswith(("BundleError: ", "LwxError: ")), (at, outcome)
    known = [g for g in got if (g[0], g[1]) in (("15535", "2"), ("7233", "128")) and g[2] == "True"]
    assert all(g[3] == "BundleError:" for g in known), known


def test_the_runtime_verifies_the_program_and_the_hash_is_computed_once(edge, monkeypatch):
    """The runtime loads with its FlatBuffer verifier on; verify=True hashes the program once (Encoder.load's check
    is reused), verify=False hashes it too (the one check it never skips) but not the ONNX model."""
    from lwx_edge import bundle as bundle_module

    native = executorch_backend._native_runtime()
    seen, hashed = [], []
    load = native._load_program
    monkeypatch.setattr(native, "_load_program", lambda *a, **k: (seen.append(k), load(*a, **k))[1])
    real = bundle_module.sha256_file
    monkeypatch.setattr(bundle_module, "sha256_file", lambda p: (hashed.append(p.name), real(p))[1])
    Encoder.load(edge, backend="executorch").embed(["the cat"])
    assert seen[-1]["program_verification"] == native.Verification.InternalConsistency
    assert hashed.count("model.int8.pte") == 1
    hashed.clear()
    Encoder.load(edge, backend="executorch", verify=False).embed(["the cat"])
    assert hashed == ["model.int8.pte"]
    hashed.clear()
    Encoder.load(edge, backend="onnx", verify=False).embed(["the cat"])
    assert hashed == []


def test_the_default_program_passes_the_structure_walk(default_pte):
    from lwx_edge.runtime.executorch_backend import _bad_name, _FlatBuffer, check_program

    path = default_pte / "model.int8.pte"
    check_program(path)
    data = path.read_bytes()
    fb = _FlatBuffer(data[:int.from_bytes(data[16:24], "little")])
    plans = fb.tables(fb.root(), 1)
    assert [fb.string(p, 0) for p in plans] == [b"forward", b"get_max_batch", b"get_max_seq_len",
                                                 b"get_embedding_dim"]
    assert b"quantized_decomposed::embedding_byte" in [fb.string(op, 0) for op in fb.tables(plans[0], 6)]
    assert _bad_name(fb) is None


def test_max_batch_is_checked_and_never_above_the_programs(edge):
    """``max_batch`` as an argument: a positive integer or None; the program's own bound wins over a larger one."""
    path = edge / "model.int8.pte"
    for bad in ("abc", -4, [1], 0, True, 2.5):
        with pytest.raises(InputError, match="max_batch must be a positive integer or None"):
            executorch_backend.ExecuTorchBackend(path, max_batch=bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shared pool's note when an earlier test asked for other threads
        big = executorch_backend.ExecuTorchBackend(path, max_batch=1000)
        small = executorch_backend.ExecuTorchBackend(path, max_batch=3)
    assert (big.max_batch, small.max_batch) == (16, 3)
    ids, mask = np.ones((40, 5), dtype=np.int64), np.ones((40, 5), dtype=np.int64)
    assert np.allclose(big.run(ids, mask), small.run(ids, mask), atol=1e-5)
