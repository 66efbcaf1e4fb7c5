r"""The Debian DDTP corpus: package descriptions and their fr/de/es/it translations, from the apt lists.

Run ``apt-get update -o Acquire::Languages=en,fr,de,es,it`` first; it puts ``*_i18n_Translation-xx``
files next to the ``*_binary-*_Packages`` indexes under /var/lib/apt/lists (plain, .gz, .xz, .bz2, .lz4
or .zst). Translation records align by ``Description-md5``. The ``Packages`` index gives each description
its binary package, source package and section; when it has no ``Description-md5`` field the md5 is
computed as apt does: md5 of the English description text plus "\n" (checked on bookworm: it matches
99.97% of the Translation-en records).

The split hashes the *source* package name (docs/METHOD.md §5.1), so binary packages of one source, which repeat
whole paragraphs, never straddle train and test. Debian man-page translations (packages ``manpages-*``)
are reserved for independent evaluation and are never read into the corpus.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Iterator

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
LABELS = ("games", "sound", "graphics", "science", "mail", "net", "editors", "text")
RESERVED_PREFIX = "manpages-"  # man-page translations: evaluation only
APT_HELPER = "/usr/lib/apt/apt-helper"
COMPRESSED = (".lz4", ".gz", ".xz", ".bz2", ".zst")


def split_of(source_package: str) -> str:
    """h = int(md5(source), 16) % 10: "test" if h ∈ {0, 1}, "dev" if h ∈ {2, 3}, else "train"."""
    h = int(hashlib.md5(source_package.encode("utf-8")).hexdigest(), 16) % 10
    return "test" if h < 2 else "dev" if h < 4 else "train"


def _decompress_lz4(path: Path) -> bytes:
    try:
        out = subprocess.run([APT_HELPER, "cat-file", str(path)], capture_output=True, check=True)
        return out.stdout
    except (FileNotFoundError, subprocess.CalledProcessError) as e:
        helper_error = e
    try:
        import lz4.frame  # optional
    except ImportError:
        raise CorpusError(f"{path}: cannot decompress .lz4 ({APT_HELPER} failed: {helper_error}; "
                          "and the python lz4 module is not installed)") from None
    return lz4.frame.decompress(path.read_bytes())


def read_index(path: str | Path) -> str:
    """Text of an apt list file, whatever its compression: plain, .gz, .xz and .bz2 with the standard
    library; .lz4 (and .zst) with ``apt-helper cat-file``, falling back to the python ``lz4`` module."""
    import bz2
    import gzip
    import lzma

    path = Path(path)
    try:
        if path.suffix == ".gz":
            data = gzip.decompress(path.read_bytes())
        elif path.suffix == ".xz":
            data = lzma.decompress(path.read_bytes())
        elif path.suffix == ".bz2":
            data = bz2.decompress(path.read_bytes())
        elif path.suffix in (".lz4", ".zst"):
            data = _decompress_lz4(path) if path.suffix == ".lz4" else subprocess.run(
                [APT_HELPER, "cat-file", str(path)], capture_output=True, check=True).stdout
        else:
            data = path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such apt list file") from None
    except (OSError, EOFError, lzma.LZMAError, subprocess.CalledProcessError) as e:
        raise CorpusError(f"{path}: cannot read the apt list file ({e})") from None
    return data.decode("utf-8", errors="replace")


def stanzas(text: str | Iterable[str]) -> Iterator[dict[str, str]]:
    r"""RFC 822 stanzas. A field's value is its first line (stripped) plus its continuation lines, each
    after a "\n" and with its leading space kept, exactly as apt hashes a description."""
    lines = text.split("\n") if isinstance(text, str) else (line.rstrip("\n") for line in text)
    rec: dict[str, str] = {}
    key = None
    for line in lines:
        if not line.strip():
            if rec:
                yield rec
            rec, key = {}, None
        elif line[0] in " \t":
            if key:
                rec[key] += "\n" + line
        elif ":" in line:
            key, _, value = line.partition(":")
            rec[key] = value.strip()
    if rec:
        yield rec


def description_md5(description: str) -> str:
    """apt's Description-md5: md5 of the description field's text (short line, then the long lines with
    their leading space) plus a final newline."""
    return hashlib.md5((description + "\n").encode("utf-8")).hexdigest()


def _clean(text: str) -> str:
    return " ".join(text.split())  # tabs, newlines and runs of spaces -> one space


def parse_description(raw: str) -> tuple[str, list[str]]:
    """Short description and the long description's paragraphs. The long lines lose their leading space;
    a line " ." separates paragraphs; the lines of a paragraph are joined with a space. Empty paragraphs
    are dropped (paragraph counts of two languages still line up, since " ." lines are kept by both)."""
    lines = raw.split("\n")
    paras: list[str] = []
    cur: list[str] = []
    for line in lines[1:]:
        body = line[1:] if line.startswith(" ") else line
        if body.strip() == ".":
            paras.append(_clean(" ".join(cur)))
            cur = []
        else:
            cur.append(body)
    paras.append(_clean(" ".join(cur)))
    return _clean(lines[0]), [p for p in paras if p]


def is_prose(paragraph: str) -> bool:
    """False for a paragraph of only list bullets, punctuation or blanks (no letters at all)."""
    return sum(c.isalpha() for c in paragraph) >= 2


def _list_name(path: Path) -> str:
    name = path.name
    for ext in COMPRESSED:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def find_lists(lists_dir: Path, kind: str) -> list[Path]:
    """apt list files of one kind ("Packages" or "Translation-fr"), one file per list: when a list is
    present both compressed and not, the uncompressed one is taken."""
    if kind == "Packages":
        pattern = re.compile(r"_binary-[^_]+_Packages$")
    else:
        pattern = re.compile(r"_i18n_" + re.escape(kind) + r"$")
    best: dict[str, Path] = {}
    for path in sorted(lists_dir.iterdir()) if lists_dir.is_dir() else []:
        base = _list_name(path)
        if not pattern.search(base) or not path.is_file():
            continue
        if base not in best or path.name == base:
            best[base] = path
    return [best[b] for b in sorted(best)]


def _progress(it, desc: str, progress: bool):
    if not progress:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, unit=" records", mininterval=1.0, file=sys.stderr)


def build_ddtp(lists_dir: str | Path = "/var/lib/apt/lists", out_dir: str | Path = "data/corpus/ddtp",
               langs: tuple[str, ...] = ("fr", "de", "es", "it"), progress: bool = True) -> dict:
    r"""Build the DDTP corpus from apt lists. Writes, each atomically:

    - ``{split}.en-{xx}.tsv``: en<TAB>xx training pairs: the short descriptions, plus the long
      description's paragraphs when both sides have the same number of paragraphs (bullet-only
      paragraphs skipped). Each distinct Description-md5 once; identical rows within a file once.
    - ``{split}.docs.jsonl``: one record per Description-md5 with an English text:
      {"md5", "package", "source", "section", "short": {lang: text}, "long": {lang: paragraphs joined
      by "\n"}} (languages present only when translated). ``section`` (e.g. "games") is the label.
    - ``summary.json``: docs, section counts of the labels and pair counts per split and language pair.

    Returns the summary.
    """
    t0 = time.time()
    lists_dir, out_dir = Path(lists_dir), Path(out_dir)
    packages = find_lists(lists_dir, "Packages")
    if not packages:
        raise CorpusError(f"{lists_dir}: no *_binary-*_Packages lists; run "
                          "apt-get update -o Acquire::Languages=en,fr,de,es,it")
    skipped: Counter = Counter()
    meta, english_fallback = _read_packages(packages, skipped, progress)
    texts = _read_translations(lists_dir, langs, meta, english_fallback, skipped, progress)
    docs, pairs, summary = _collect(texts, meta, langs, skipped)
    for split in SPLITS:
        write_text_atomic(out_dir / f"{split}.docs.jsonl", "".join(d + "\n" for d in docs[split]))
        for lang in langs:
            write_text_atomic(out_dir / f"{split}.en-{lang}.tsv", "".join(r + "\n" for r in pairs[(split, lang)]))
    summary["skipped"] = dict(sorted(skipped.items()))
    summary["seconds"] = round(time.time() - t0, 1)
    write_json_atomic(out_dir / "summary.json", summary)
    if progress:
        line = ", ".join(f"en-{lang} {summary['train'][f'en-{lang}']['pairs']:,}" for lang in langs)
        log.info("ddtp: train pairs %s; written to %s in %ss", line, out_dir, summary["seconds"])
    return summary


def _read_packages(packages: list[Path], skipped: Counter,
                   progress: bool) -> tuple[dict[str, tuple[str, str, str]], dict[str, str]]:
    """md5 -> (package, source, section), the first binary package seen naming it (lists in sorted order); and
    md5 -> the English Description from Packages (used where there is no Translation-en)."""
    meta: dict[str, tuple[str, str, str]] = {}
    english_fallback: dict[str, str] = {}
    for path in packages:
        for rec in _progress(stanzas(read_index(path)), path.name, progress):
            pkg = rec.get("Package")
            if not pkg:
                continue
            if pkg.startswith(RESERVED_PREFIX):
                skipped["manpages_packages"] += 1
                continue
            desc = rec.get("Description")
            md5 = rec.get("Description-md5") or (description_md5(desc) if desc else None)
            if not md5 or md5 in meta:
                continue
            source = (rec.get("Source") or pkg).split()[0]
            section = (rec.get("Section") or "unknown").split("/")[-1]
            meta[md5] = (pkg, source, section)
            if desc and "\n" in desc:
                english_fallback[md5] = desc
    return meta, english_fallback


def _read_translations(lists_dir: Path, langs: tuple[str, ...], meta: dict[str, tuple[str, str, str]],
                       english_fallback: dict[str, str], skipped: Counter,
                       progress: bool) -> dict[str, dict[str, tuple[str, list[str]]]]:
    """md5 -> lang -> (short, long paragraphs), from the Translation lists (English falling back to Packages)."""
    texts: dict[str, dict[str, tuple[str, list[str]]]] = defaultdict(dict)
    for lang in ("en", *langs):
        field = f"Description-{lang}"
        files = find_lists(lists_dir, f"Translation-{lang}")
        if lang == "en" and not files and not english_fallback:
            raise CorpusError(f"{lists_dir}: no *_i18n_Translation-en list; run "
                              "apt-get update -o Acquire::Languages=en,fr,de,es,it")
        for path in files:
            for rec in _progress(stanzas(read_index(path)), path.name, progress):
                md5, raw = rec.get("Description-md5"), rec.get(field)
                if not md5 or not raw:
                    continue
                if rec.get("Package", "").startswith(RESERVED_PREFIX):
                    skipped[f"manpages_{lang}"] += 1
                    continue
                if md5 not in meta:
                    skipped[f"no_package_{lang}"] += 1  # no source/section: cannot split it safely
                    continue
                texts[md5].setdefault(lang, parse_description(raw))
    for md5, desc in english_fallback.items():
        texts[md5].setdefault("en", parse_description(desc))
    return texts


def _collect(texts: dict[str, dict[str, tuple[str, list[str]]]], meta: dict[str, tuple[str, str, str]],
             langs: tuple[str, ...], skipped: Counter) -> tuple[dict, dict, dict]:
    """Each description with an English text into its split: (split -> doc records as JSON lines, (split, lang)
    -> ordered set of pair rows, the summary's per-split counts)."""
    pairs: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)  # ordered set of rows
    docs: dict[str, list[str]] = defaultdict(list)
    summary: dict = {s: {"docs": 0, "labels": {k: 0 for k in LABELS}} for s in SPLITS}
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for md5 in sorted(texts):
        by_lang = texts[md5]
        if "en" not in by_lang:
            skipped["no_english"] += 1
            continue
        pkg, source, section = meta[md5]
        split = split_of(source)
        docs[split].append(json.dumps({
            "md5": md5, "package": pkg, "source": source, "section": section,
            "short": {lang: by_lang[lang][0] for lang in ("en", *langs) if lang in by_lang},
            "long": {lang: "\n".join(by_lang[lang][1]) for lang in ("en", *langs)
                     if lang in by_lang and by_lang[lang][1]},
        }, ensure_ascii=False))
        summary[split]["docs"] += 1
        if section in summary[split]["labels"]:
            summary[split]["labels"][section] += 1
        for lang in langs:
            if lang in by_lang:
                _add_pairs(by_lang["en"], by_lang[lang], pairs[(split, lang)], counts[(split, lang)])
    for split in SPLITS:
        for lang in langs:
            c = counts[(split, lang)]
            summary[split][f"en-{lang}"] = {"pairs": len(pairs[(split, lang)]), "descriptions": c["descriptions"],
                                            "aligned_long": c["aligned_long"],
                                            "unaligned_long": c["unaligned_long"]}
    return docs, pairs, summary


def _add_pairs(en: tuple[str, list[str]], xx: tuple[str, list[str]], rows: dict[str, None], c: Counter) -> None:
    """One description's pair rows: the short descriptions, and the long paragraphs when both sides have as many
    (bullet-only paragraphs skipped)."""
    (en_short, en_long), (xx_short, xx_long) = en, xx
    c["descriptions"] += 1
    if en_short and xx_short:
        rows.setdefault(f"{en_short}\t{xx_short}", None)
    if len(en_long) == len(xx_long):
        c["aligned_long"] += 1
        for a, b in zip(en_long, xx_long):
            if is_prose(a) and is_prose(b):
                rows.setdefault(f"{a}\t{b}", None)
    elif en_long or xx_long:
        c["unaligned_long"] += 1
