"""Frequent words per language, for word-level distillation (torch-free).

The everyday sentences the student gets wrong are mostly lexical misses: a word it has never been taught
("Haubitze", "Leistung", "überall"). The teacher knows those words, so each language's most frequent words,
each with its teacher vector, teach the student the everyday vocabulary that software text lacks. Words come
from ``wordfreq``'s frequency lists (word counts over subtitles, Wikipedia, news, books and the web: no
sentences, no evaluation data); they are lower-cased there, so each gets the casing of the Debian word list
of its language where that list knows only a capitalised form ("leistung" -> "Leistung", "paris" -> "Paris").

Written as ``train.{lang}.txt``, one word a line, in frequency order: a monolingual corpus like any other
(``--mono data/corpus/words``).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable

from ..atomic import write_text_atomic
from ..errors import CorpusError
from .everyday import WORDLISTS
from .gettext import deb_files, download_debs

log = logging.getLogger(__name__)

LANGS = ("en", "fr", "de", "es", "it")


def cased_forms(words: Iterable[str]) -> dict[str, str]:
    """Lower-case form -> the form to write: the word itself when a word list has it lower-cased, else its
    capitalised form ("Leistung")."""
    out: dict[str, str] = {}
    for w in words:
        low = w.lower()
        if w == low or low not in out:
            out[low] = w
    return out


def frequent_words(lang: str, n: int, casing: dict[str, str] | None = None) -> list[str]:
    """The ``n`` most frequent alphabetic words of ``lang`` (2+ letters), cased by ``casing``."""
    try:
        import wordfreq
    except ImportError:
        raise CorpusError("the word lists need wordfreq: pip install 'lwx-edge[data]'") from None
    casing = casing or {}
    out: list[str] = []
    for w in wordfreq.top_n_list(lang, 2 * n, wordlist="large"):
        if len(w) >= 2 and w.isalpha():
            out.append(casing.get(w, w))
            if len(out) == n:
                break
    return out  # distinct: wordfreq's words are distinct and lower-cased, and casing maps one to one


def build_words(out_dir: str | Path = "data/corpus/words", work_dir: str | Path = "data/debs",
                per_lang: int = 50000, progress: bool = True) -> dict:
    """Write ``train.{lang}.txt`` (``per_lang`` frequent words each) and ``summary.json`` to ``out_dir``."""
    out_dir = Path(out_dir)
    debs, missing = download_debs(list(WORDLISTS), Path(work_dir), progress=progress)
    if missing:
        raise CorpusError(f"apt-get download failed for {', '.join(missing)}: is the apt cache up to date "
                          "(apt-get update)?")
    summary = {}
    for pkg, lang in WORDLISTS.items():
        listed = [w for _, data in deb_files(debs[pkg], lambda n: "/share/dict/" in n and "README" not in n)
                  for w in data.decode("utf-8", errors="replace").split("\n") if w]
        words = frequent_words(lang, per_lang, cased_forms(listed))
        write_text_atomic(out_dir / f"train.{lang}.txt", "".join(w + "\n" for w in words))
        summary[lang] = {"words": len(words), "cased_from_word_list": sum(w != w.lower() for w in words)}
        if progress:
            log.info("words %s: %s (%s capitalised from %s)", lang, f"{len(words):,}",
                     f"{summary[lang]['cased_from_word_list']:,}", pkg)
    write_text_atomic(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


__all__ = ["LANGS", "build_words", "cased_forms", "frequent_words"]
