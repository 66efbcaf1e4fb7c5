"""The README's quickstart runs as written: every snippet of "Use it (the SDK)", against examples/."""
from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def commands(block: str) -> list[list[str]]:
    """Shell lines (continuations joined, comments dropped) as argument lists."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def run_commands(block: str, workdir) -> list[str]:
    """Run every ``lwx-edge`` line of a shell block in ``workdir``; their standard outputs, in order."""
    out = []
    for args in commands(block):
        assert args[0] == "lwx-edge", args
        r = subprocess.run([sys.executable, "-m", "lwx_edge", *args[1:]], cwd=workdir, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, (args, r.stderr[-2000:])
        out.append(r.stdout)
    return out


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    return tmp_path


def test_the_sdk_snippet_runs_and_its_head_transfers_across_languages(workdir):
    (code,) = blocks(section("Use it (the SDK)"), "python")
    ast.parse(code)
    r = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    similarity, hits, predicted, accuracy = r.stdout.strip().splitlines()[-4:]
    assert 0.5 < float(similarity) <= 1.0  # a question and its German translation
    assert "Die Heizung im Bad" in hits  # English query, German note
    labels = ast.literal_eval(predicted.replace("' '", "', '"))
    assert len(labels) == 2 and labels[1] == "shopping"  # the default model reads the French one as shopping too
    assert float(accuracy) >= 0.75  # 12 French requests, 4 intents: chance is 0.25
    assert (workdir / "my-head" / "head.json").is_file()


def test_the_cli_snippet_runs(workdir):
    (block,) = [b for b in blocks(section("Use it (the SDK)"), "bash") if "lwx-edge fit" in b]
    out = run_commands(block, workdir)
    assert len(out) == 5 and (workdir / "vecs.npy").is_file()
    assert "Pay the electricity bill" in out[3].splitlines()[1]  # search
    assert out[2].startswith("music\t")  # predict


def test_the_index_snippets_run(workdir):
    python, bash = blocks(section("Search your own texts"), "python"), blocks(section("Search your own texts"), "bash")
    r = subprocess.run([sys.executable, "-c", python[0]], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 4 and any(line.startswith("note12 ") and "passeport" in line for line in lines[:3])
    assert lines[-1].startswith("22 ") and "wifi password" in lines[-1]
    out = run_commands(bash[0], workdir)
    assert len(out) == 4
    assert "Pay the electricity bill" in out[1].splitlines()[1]  # index search
    assert "22 items, 512-d int8 vectors" in out[2]  # index info
