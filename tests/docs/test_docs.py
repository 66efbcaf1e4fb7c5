"""Every citation in the code resolves to the shipped notes: ``docs/METHOD.md §N`` and ``docs/EXPORT.md §N`` to a
section heading, ``[X]`` to a key of ``docs/REFERENCES.md``. Every link of the README and of docs/ resolves to a
file, and an anchor to a heading of it; the README links every file of docs/."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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


# ---- links of the README and docs/ --------------------------------------------------------------------------------

PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^()\s]+)\)")


def _outside_code(text: str) -> str:
    """The text without fenced blocks and inline code spans (a ``](x)`` there is not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings of a markdown file: lower case, punctuation dropped, spaces to hyphens,
    ``-1``, ``-2`` ... after repeats."""
    out, seen = set(), {}
    for line in _outside_code(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link in a heading: its text
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    bad = []
    for target in LINK.findall(_outside_code(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            bad.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{page.relative_to(root)}: {target} (no heading with that anchor)")
    return bad


def test_every_link_of_the_readme_and_the_docs_resolves():
    assert len(LINK.findall((REPO / "README.md").read_text(encoding="utf-8"))) >= 15  # the scan sees the links
    bad = [b for page in PAGES for b in broken_links(page)]
    assert not bad, "\n".join(bad)


def test_the_readme_links_every_doc():
    linked = {(REPO / t.partition("#")[0]).resolve() for t in LINK.findall((REPO / "README.md").read_text("utf-8"))}
    orphans = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert not orphans, f"docs/ files the README does not link: {orphans}"


def test_the_link_check_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Where we differ from METHOD.md, and why\n\n## Notes\n\n## Notes\n")
    page.write_text("[a](other.md#where-we-differ-from-methodmd-and-why) [b](other.md#notes-1) [c](missing.md)\n"
                    "[d](other.md#nowhere) [e](#top) `[f](in-code.md)`\n\n```\n[g](fenced.md)\n```\n# Top\n")
    assert broken_links(page, root=tmp_path) == ["page.md: missing.md (no such file)", "page.md: other.md#nowhere (no heading with that anchor)"]
