"""The README's and docs/'s sections, code blocks and command lines, as the tests read them (tests/docs/test_readme.py,
tests/training/test_recipes.py)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def section(title: str, path: str | None = None) -> str:
    """The ``## title...`` section of ``path`` (relative to the repository root), or, without one, of the first of
    README.md and docs/*.md that has it (tests/training/test_recipes.py reads "Train a model", in docs/TRAINING.md)."""
    files = [REPO / path] if path else [README, *sorted((REPO / "docs").glob("*.md"))]
    for file in files:
        text = file.read_text(encoding="utf-8")
        start = text.find(f"\n## {title}")
        if start >= 0:
            end = text.find("\n## ", start + 1)
            return text[start:end if end > 0 else None]
    raise ValueError(f"no section '## {title}' in {', '.join(str(f.relative_to(REPO)) for f in files)}")


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def commands(block: str) -> list[list[str]]:
    """Shell lines (continuations joined, comments dropped) as argument lists."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]
