"""An out-of-domain everyday test: short conversational lines of games no corpus trains on (torch-free).

What users type into a phone is short and spoken: questions, requests, second person, clitics ("Are you
waiting for someone?", "Ti sta bene."). The everyday corpus's dev/test splits come from the same kinds of
catalogues as its train split, so they cannot show how the model does on such text. This corpus is built
only from games whose translated dialogue no training corpus reads, and split **by source**:

- test: Fish Fillets NG (``fillets-ng-data``; two fish talking, ``script/*/dialogs_{xx}.lua``:
  ``dialogId("id", "voice", "English")`` followed by ``dialogStr("translation")``), fr/de/es/it.
- dev: FreeDink (``freedink-data``, villagers' small talk, ``dink/l10n/{xx}.po``; fr/de/es), Adonthell's
  Waste's Edge (``adonthell-data``, a polite whodunit, ``wastesedge.mo``; fr/es/it) and Ren'Py's
  The Question (``renpy-thequestion``, ``game/tl/{language}/script.rpy``; fr/es).

A line is kept when it is one conversational sentence: 2 to 12 English words, one line, starting with a
capital and ending with . ? ! or …, no placeholder or markup, not all capitals, no interface vocabulary, a
plausible length ratio; one translation per English sentence. An English sentence of a test source is
dropped from dev, and :func:`drop_seen` removes any pair whose normalised English or translation occurs
in a training file. Nothing here is a man page or a public evaluation set.
"""
from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import CorpusError
from ..text import normalize
from .gettext import deb_files, download_debs, parse_mo

log = logging.getLogger(__name__)

LANGS = ("fr", "de", "es", "it")
_LANG_NAMES = {"fr": "fr", "french": "fr", "de": "de", "german": "de", "es": "es", "spanish": "es",
               "it": "it", "italian": "it"}
_LUA_STR = r'"((?:[^"\\]|\\.)*)"'
_FILLETS = re.compile(rf'dialogId\(\s*{_LUA_STR}\s*,\s*{_LUA_STR}\s*,\s*{_LUA_STR}\s*\)\s*'
                      rf'dialogStr\(\s*{_LUA_STR}\s*\)')
_RENPY_EN = re.compile(r'^    #\s*(?:\w+\s+)?"(.*)"\s*$')
_RENPY_XX = re.compile(r'^\s*(?:\w+\s+)?"(.*)"\s*$')
_MARKUP = re.compile(r"%[-+ #0-9.*]*[sdifuxXlcgep]|%\(\w+\)|%\d|\{[^}]*\}|\$\{?\w+|\[[^\]]*\]|<[^>]+>|[`|\\_#@~]|&\w")
_UI = re.compile(r"\b(click|press|menu|button|settings?|options?|configur\w*|file|folder|server|download|"
                 r"install\w*|error|enable|disable|fullscreen|keyboard|mouse|joystick|savegame|save game|"
                 r"load game|network|version|password|username|login|checkbox|stats?|hit points?|"
                 r"level up|megapotion)\b", re.I)
_SENTENCE_END = re.compile(r"[.?!…][\"'”’)»]*$")


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": " "}.get(m.group(1), m.group(1)), s)


def fillets_lines(text: str) -> Iterator[tuple[str, str]]:
    """(English, translation) of a Fish Fillets NG ``dialogs_{xx}.lua`` file."""
    for m in _FILLETS.finditer(text):
        yield _unescape(m.group(3)), _unescape(m.group(4))


def renpy_lines(text: str) -> Iterator[tuple[str, str]]:
    """(English, translation) of a Ren'Py translation file: the English as a comment line (``    # e "Hi!"``)
    followed by the translated line (``    e "Salut !"``)."""
    pending = None
    for line in text.splitlines():
        m = _RENPY_EN.match(line)
        if m:
            pending = m.group(1)
            continue
        m = _RENPY_XX.match(line)
        if m and pending is not None:
            yield pending.replace('\\"', '"'), m.group(1).replace('\\"', '"')
            pending = None


def po_lines(text: str) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a .po file (fuzzy and untranslated entries skipped)."""
    from .games import parse_po

    yield from parse_po(text)


def conversational(en: str, xx: str, max_words: int = 12) -> tuple[str, str] | None:
    """The pair as single-spaced text if it is one conversational sentence (module docstring), else None."""
    if "\n" in en.strip() or "\n" in xx.strip():
        return None
    en, xx = " ".join(en.split()), " ".join(xx.split())
    words = en.split()
    if not (2 <= len(words) <= max_words) or not xx or en == xx:
        return None
    if not en[0].isupper() or en.isupper() or not _SENTENCE_END.search(en):
        return None
    if _MARKUP.search(en) or _MARKUP.search(xx) or _UI.search(en):
        return None
    if not 0.4 <= len(xx) / len(en) <= 2.5 or not any(c.isalpha() for c in xx):
        return None
    return en, xx


def _lang(name: str) -> str | None:
    return _LANG_NAMES.get(name.lower())


def _fillets(files: dict[str, bytes]) -> Iterator[tuple[str, str, str]]:
    for path, data in files.items():
        lang = _lang(re.search(r"dialogs_(\w+)\.lua$", path).group(1))
        if lang:
            for en, xx in fillets_lines(data.decode("utf-8", "replace")):
                yield lang, en, xx


def _freedink(files: dict[str, bytes]) -> Iterator[tuple[str, str, str]]:
    for path, data in files.items():
        lang = _lang(Path(path).stem)
        if lang:
            for en, xx in po_lines(data.decode("utf-8", "replace")):
                yield lang, en, xx


def _adonthell(files: dict[str, bytes]) -> Iterator[tuple[str, str, str]]:
    for path, data in files.items():
        lang = _lang(path.split("/locale/")[1].split("/")[0])
        if lang:
            for en, xx in parse_mo(data, path):
                yield lang, en, xx


def _renpy(files: dict[str, bytes]) -> Iterator[tuple[str, str, str]]:
    for path, data in files.items():
        lang = _lang(path.split("/")[-2])
        if lang:
            for en, xx in renpy_lines(data.decode("utf-8-sig", "replace")):
                yield lang, en, xx


# package: (split, the files it reads, their reader, licence of the text)
SOURCES: dict[str, tuple[str, Callable[[str], bool], Callable, str]] = {
    "fillets-ng-data": ("test", lambda n: bool(re.search(r"/script/.+/dialogs_\w+\.lua$", n)), _fillets,
                        "GPL-2 (ALTAR interactive; volunteer translators)"),
    "freedink-data": ("dev", lambda n: bool(re.search(r"/dink/l10n/\w+\.po$", n)), _freedink,
                      "zlib-style (RTsoft; Translation Project teams)"),
    "adonthell-data": ("dev", lambda n: bool(re.search(r"/wastesedge/locale/\w+/LC_MESSAGES/wastesedge\.mo$", n)),
                       _adonthell, "GPL-2+ (Kai Sterker and translators)"),
    "renpy-thequestion": ("dev", lambda n: bool(re.search(r"/the_question/game/tl/\w+/script\.rpy$", n)), _renpy,
                          "Expat (Tom Rothamel and translators)"),
}


def source_pairs(package: str, files: dict[str, bytes]) -> dict[str, list[tuple[str, str]]]:
    """{lang: conversational (English, translation) pairs} of one source's files, one translation per
    English sentence (the first), in file order."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen: dict[str, set[str]] = defaultdict(set)
    for lang, en, xx in SOURCES[package][2](dict(sorted(files.items()))):
        pair = conversational(en, xx)
        if pair and normalize(pair[0]) not in seen[lang]:
            seen[lang].add(normalize(pair[0]))
            out[lang].append(pair)
    return dict(out)


def sentence_key(text: str) -> str:
    """A sentence as compared across corpora: :func:`lwx_edge.text.normalize` (case, Unicode, spaces), then
    punctuation and symbols removed ("Are you OK?" and "are you ok" are one sentence)."""
    return " ".join(re.sub(r"[^\w\s]", " ", normalize(text)).split())


def training_sentences(paths: Iterable[str | Path]) -> set[str]:
    """:func:`sentence_key` of the sentences of training files: both sides of ``train*.tsv`` pair files and every line of
    ``train*.txt`` monolingual files, in the given directories (recursively) or files."""
    seen: set[str] = set()
    for root in map(Path, paths):
        files = [root] if root.is_file() else sorted(f for f in root.rglob("train*") if f.suffix in (".tsv", ".txt"))
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    seen.update(sentence_key(part) for part in line.rstrip("\n").split("\t"))
    return seen


def drop_seen(pairs: list[tuple[str, str]], seen: set[str]) -> tuple[list[tuple[str, str]], int]:
    """The pairs neither side of which is in ``seen`` (:func:`sentence_key`), and how many were dropped."""
    kept = [p for p in pairs if sentence_key(p[0]) not in seen and sentence_key(p[1]) not in seen]
    return kept, len(pairs) - len(kept)


def build_conversation(out_dir: str | Path = "data/corpus/conversation", work_dir: str | Path = "data/debs",
                       train_dirs: Iterable[str | Path] = (), progress: bool = True) -> dict:
    """Download the :data:`SOURCES` packages into ``work_dir`` (kept), write ``out_dir/{dev,test}.en-{xx}.tsv``
    and ``summary.json`` (pairs per source, language and split; what was dropped and why), atomically.
    Pairs whose English or translation occurs in a training file under ``train_dirs`` are dropped."""
    from ..atomic import write_json_atomic, write_text_atomic

    t0 = time.time()
    debs, missing = download_debs(list(SOURCES), work_dir, progress=progress)
    if missing:
        raise CorpusError(f"apt-get download failed for {', '.join(missing)} (run apt-get update first?)")
    seen = training_sentences(train_dirs)
    splits: dict[str, dict[str, list[tuple[str, str]]]] = {"dev": defaultdict(list), "test": defaultdict(list)}
    summary: dict = {"sources": {}, "dropped": {"in_training": 0, "in_test_source": 0}}
    per_source = {}
    for package, (split, wanted, _, licence) in SOURCES.items():
        files = dict(deb_files(debs[package], wanted))
        if not files:
            raise CorpusError(f"{debs[package]}: no translation files found (unexpected layout for {package})")
        per_source[package] = source_pairs(package, files)
        summary["sources"][package] = {"split": split, "licence": licence, "deb": debs[package].name}
    test_english = {normalize(en) for package, (split, *_) in SOURCES.items() if split == "test"
                    for pairs in per_source[package].values() for en, _ in pairs}
    for package, (split, *_) in SOURCES.items():
        counts = {}
        for lang, pairs in per_source[package].items():
            if split == "dev":
                n = len(pairs)
                pairs = [p for p in pairs if normalize(p[0]) not in test_english]
                summary["dropped"]["in_test_source"] += n - len(pairs)
            pairs, n_seen = drop_seen(pairs, seen)
            summary["dropped"]["in_training"] += n_seen
            splits[split][lang].extend(pairs)
            counts[lang] = len(pairs)
        summary["sources"][package]["pairs"] = counts
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for split, by_lang in splits.items():
        for lang in LANGS:
            pairs = by_lang.get(lang, [])
            if pairs:
                write_text_atomic(out / f"{split}.en-{lang}.tsv", "".join(f"{en}\t{xx}\n" for en, xx in pairs))
    summary["pairs"] = {split: {lang: len(by_lang.get(lang, [])) for lang in LANGS} for split, by_lang in splits.items()}
    summary["training_sentences_checked"] = len(seen)
    summary["seconds"] = round(time.time() - t0, 1)
    write_json_atomic(out / "summary.json", summary)
    return summary


__all__ = ["LANGS", "SOURCES", "build_conversation", "conversational", "drop_seen", "fillets_lines",
           "renpy_lines", "sentence_key", "source_pairs", "training_sentences"]
