"""Every citation in the code resolves to the shipped notes: ``docs/METHOD.md §N`` and ``docs/EXPORT.md §N`` to a
section heading, ``[X]`` to a key of ``docs/REFERENCES.md``."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SOURCES = sorted([*(REPO / "lwx_edge").rglob("*.py"), *(REPO / "tools").rglob("*.py")])

# "docs/METHOD.md §3.2", "docs/EXPORT.md §2, §8", "docs/METHOD.md §3.5 and §3.6"
CITATION = re.compile(r"(?:docs/)?(METHOD|EXPORT)\.md((?:(?:\s*,|\s+and)?\s*§\d+(?:\.\d+)*)+)")
BARE = re.compile(r"(?<!docs/)\b(METHOD|EXPORT)(?:\.md)?\s*§")  # a citation that does not name the shipped file
KEY = re.compile(r"\[([A-Z])\]")


def sections(name: str) -> set[str]:
    """Numbers of the headings of docs/NAME.md ("## 3. Objective" -> "3", "### 3.2 ..." -> "3.2")."""
    out, fenced = set(), False
    for line in (DOCS / f"{name}.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#+\s+(\d+(?:\.\d+)*)\.?\s", line)
        if m:
            out.add(m.group(1))
    return out


def reference_keys() -> set[str]:
    return set(re.findall(r"^- \*\*\[([A-Z])\]\*\*", (DOCS / "REFERENCES.md").read_text(encoding="utf-8"), re.M))


def prose(path: Path) -> str:
    """The docstrings, other strings and comments of a module (where citations live; ``x[C]`` is code)."""
    toks = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return "\n".join(t.string for t in toks if t.type in (tokenize.STRING, tokenize.COMMENT))


def citations():
    for path in SOURCES:
        text = prose(path)
        for m in CITATION.finditer(text):
            for number in re.findall(r"§(\d+(?:\.\d+)*)", m.group(2)):
                yield path, "section", m.group(1), number
        for m in BARE.finditer(text):
            yield path, "bare", m.group(1), m.group(0)
        for key in KEY.findall(text):
            yield path, "key", key, key


def test_the_notes_and_the_references_are_shipped():
    assert {"1", "2", "3", "3.1", "3.6", "4", "5", "5.1", "7"} <= sections("METHOD")
    assert {str(i) for i in range(1, 10)} <= sections("EXPORT")
    assert {"P", "R", "O", "T", "C"} <= reference_keys()


def test_every_citation_in_the_code_resolves():
    found = list(citations())
    assert sum(kind == "section" for _, kind, _, _ in found) >= 30  # the scan sees the citations
    assert sum(kind == "key" for _, kind, _, _ in found) >= 20
    known = {"METHOD": sections("METHOD"), "EXPORT": sections("EXPORT")}
    keys = reference_keys()
    bad = []
    for path, kind, what, detail in found:
        where = path.relative_to(REPO)
        if kind == "section" and detail not in known[what]:
            bad.append(f"{where}: docs/{what}.md §{detail} is not a section heading")
        elif kind == "bare":
            bad.append(f"{where}: {detail!r} does not name the shipped file (write docs/{what}.md §N)")
        elif kind == "key" and what not in keys:
            bad.append(f"{where}: [{what}] is not a key of docs/REFERENCES.md")
    assert not bad, "\n".join(bad)


def test_the_check_catches_a_dangling_citation(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text('"""See docs/METHOD.md §6.3 and [Z]."""\nQ = 0\ny = [1][Q]  # [Z] again\n')
    text = prose(bad)
    assert [m.group(2).strip() for m in CITATION.finditer(text)] == ["§6.3"]
    assert "6.3" not in sections("METHOD")
    assert KEY.findall(text) == ["Z", "Z"]  # the docstring and the comment, not the code
    assert "Z" not in reference_keys()
