"""CLI and SDK edges (issue 38): more threads than CPUs are capped with a warning at once; embed writes to a
stream and refuses a missing directory."""
import os
import subprocess
import sys

import pytest

from lwx_edge import Encoder
from lwx_edge.errors import InputError

CPUS = len(os.sched_getaffinity(0))


def test_the_sdk_caps_threads_at_the_cpus_with_a_warning():
    with pytest.warns(UserWarning, match=f"threads=100000 is more than the {CPUS} CPU\\(s\\) this process may use; "
                                         f"using {CPUS}"):
        enc = Encoder.load(threads=100_000)
    assert enc.embed(["a short text"]).shape == (1, 512)
    assert enc._load_args["threads"] == CPUS  # the runtimes got the cap (100,000 took 13 minutes and 16.6 GB)
    with pytest.raises(InputError, match="threads must be a positive integer"):
        Encoder.load(threads=0)


def test_the_cli_caps_threads_and_says_so(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "embed", "default", "ein Satz", "--threads", "100000",
                        "-o", str(tmp_path / "v.npy")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"warning: --threads=100000 is more than the {CPUS} CPU(s) this process may use; using {CPUS}" in r.stderr
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "embed", "default", "x", "--threads", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--threads must be >= 1, got 0" in r.stderr and "Traceback" not in r.stderr


def test_embed_writes_jsonl_to_a_stream_and_refuses_a_missing_directory(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "embed", "default", "ein Satz", "-o", "/dev/stdout"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('{"text": "ein Satz", "embedding": [')
    missing = tmp_path / "no" / "such" / "v.npy"
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "embed", "default", "x", "-o", str(missing)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"no such directory {missing.parent}" in r.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_closed_or_full_standard_streams_are_one_clear_line():
    """Standard input or output closed (<&-, >&-), or output to a full disk: one line naming it, no traceback."""
    cli = f"{sys.executable} -m lwx_edge embed default"
    for shell, message in [(f"{cli} -i - <&-", "error: standard input is closed"),
                           (f"{cli} hi >&-", "error: standard output is closed"),
                           (f"{cli} hi >/dev/full", "error: cannot write the output: No space left on device")]:
        r = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (shell, r.stderr)
        assert "Exception ignored" not in r.stderr


def test_search_names_its_empty_corpus_and_warns_in_one_line(tmp_path):
    """An empty corpus file is named as the corpus (not "give them as arguments"); --corpus - with --input - is
    refused; an empty query is one "warning:" line, not Python's warning with its file and source line."""
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "notes.txt").write_text("pay the bills\nwater the plants\n")
    cli = [sys.executable, "-m", "lwx_edge", "search", "default"]
    r = subprocess.run([*cli, "hello", "-c", str(tmp_path / "empty.txt")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"error: no corpus lines in {tmp_path / 'empty.txt'}" in r.stderr, r.stderr
    r = subprocess.run([*cli, "-c", "-", "-i", "-"], input="a\nb\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--corpus - and --input - cannot both read standard input" in r.stderr, r.stderr
    r = subprocess.run([*cli, "", "-c", str(tmp_path / "notes.txt"), "-k", "1"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "warning: 1 of 1 text(s) have nothing to embed" in r.stderr, r.stderr
    assert "EmptyTextWarning" not in r.stderr and "search.py" not in r.stderr


def test_data_mono_names_the_corpora_it_did_not_find(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "data", "mono", "-o", str(tmp_path / "m"),
                        "--ddtp", str(tmp_path / "a"), "--gettext", str(tmp_path / "b"), "--dialogue",
                        str(tmp_path / "c")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"none of the corpora to read exists ({tmp_path / 'a'}, " in r.stderr, r.stderr
    assert "(none given)" not in r.stderr and not (tmp_path / "m").exists()
    (tmp_path / "adir").mkdir()  # the tokenizer's output is checked before the minutes of learning
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "data", "tokenizer", "-o", str(tmp_path / "adir"),
                        "--corpus", str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "adir: is a directory (give a file name)" in r.stderr, r.stderr
