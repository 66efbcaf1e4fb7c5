"""Words and short names with their translations: parallel text for the one- and two-word texts that the
student gets wrong most often (torch-free).

Everyday text that apps embed is often a word or two ("Fear", "Weather tomorrow"), and there the student
trails the teacher most (one- and two-word texts are a third of its gap on everyday dev). Sentence corpora
teach single words only in context; these sources pair them directly:

- **CLDR** (the Unicode Common Locale Data Repository, from PyPI, nothing downloaded at run time): the names
  of emoji ("red apple" / "pomme rouge", ``emoji``), of languages, territories and currencies, the weekdays,
  the months and the units ("kilometers" / "kilomètres", ``babel``): the same concept in all five languages.
- **FreeDict** (``dict-freedict-{fra,spa,ita}-eng``): headword and its first English translation.
- **Ding** (``trans-de-en``): the one-word headwords that :func:`lwx_edge.data.everyday.ding_pairs` skips,
  the most frequent English ones first (``wordfreq``), at most ``max_per_lang``.

Pairs whose two sides are the same word are dropped. Written as ``train.en-xx.tsv`` (English first) and
``summary.json``. Everything goes to train: no evaluation task draws on these sources, and none of them is a
man page or a public evaluation set.
"""
from __future__ import annotations

import gzip
import logging
import re
import unicodedata
from pathlib import Path
from typing import Iterable, Iterator

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError
from .everyday import _DING_NOTES, DING
from .gettext import deb_files, download_debs

log = logging.getLogger(__name__)

LANGS = ("fr", "de", "es", "it")
FREEDICT = {"fr": "dict-freedict-fra-eng", "es": "dict-freedict-spa-eng", "it": "dict-freedict-ita-eng"}
_SKIN_TONES = {chr(c) for c in range(0x1F3FB, 0x1F400)}
# country and region flags (letter pairs, tag sequences): their English name lacks "flag", the others don't
_FLAG_LETTERS = {chr(c) for c in [*range(0x1F1E6, 0x1F200), *range(0xE0020, 0xE0080)]}
_WORDS = re.compile(r"[^\W\d_][\w' -]*")
_DICTD_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _need(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise CorpusError(f"the lexicon needs {module}: pip install 'lwx-edge[data]'") from None


def _clean(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).replace("\u2010", "-").split())


def emoji_names(langs: Iterable[str] = LANGS) -> dict[str, list[tuple[str, str]]]:
    """(English, translated) CLDR short names of every fully qualified emoji without a skin-tone modifier;
    no flags (their country names come from :func:`cldr_names`)."""
    emoji = _need("emoji")
    out: dict[str, list[tuple[str, str]]] = {lang: [] for lang in langs}
    for char, info in emoji.EMOJI_DATA.items():
        if info.get("status") != emoji.STATUS["fully_qualified"] or (_SKIN_TONES | _FLAG_LETTERS) & set(char):
            continue
        en = _clean(info["en"].strip(":").replace("_", " "))
        for lang in out:
            name = emoji.demojize(char, language=lang)
            if name != char:
                out[lang].append((en, _clean(name.strip(":").replace("_", " "))))
    return out


def cldr_names(langs: Iterable[str] = LANGS) -> dict[str, list[tuple[str, str]]]:
    """(English, translated) CLDR display names: languages, territories, currencies, weekdays, months, units."""
    babel = _need("babel")
    en = babel.Locale("en")

    def tables(loc) -> list[dict]:
        units = {k: v.get("long") for k, v in loc._data["unit_display_names"].items()}
        return [dict(loc.languages), dict(loc.territories), dict(loc.currencies),
                dict(loc.days["format"]["wide"]), dict(loc.months["format"]["wide"]), units]

    en_tables = tables(en)
    out: dict[str, list[tuple[str, str]]] = {}
    for lang in langs:
        pairs = []
        for en_t, xx_t in zip(en_tables, tables(babel.Locale(lang))):
            for key, en_name in en_t.items():
                xx_name = xx_t.get(key)
                if en_name and xx_name and not any(c in en_name + xx_name for c in "{}"):
                    pairs.append((_clean(en_name), _clean(xx_name)))
        out[lang] = pairs
    return out


def dictd_entries(index: str, data: bytes) -> Iterator[tuple[str, str]]:
    """(headword, first translation) of a FreeDict dictd dictionary: the ``.index`` text and the unpacked
    ``.dict``. An entry is "headword /ipa/ <pos>" then its senses ("1. a, b" or "a, b"); the first
    comma-separated alternative of the first sense is kept."""
    def number(s: str) -> int:
        n = 0
        for c in s:
            n = n * 64 + _DICTD_B64.index(c)
        return n

    for line in index.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0] or parts[0].startswith("00database"):
            continue
        start, length = number(parts[1]), number(parts[2])
        lines = data[start:start + length].decode("utf-8", errors="replace").splitlines()
        if len(lines) < 2:
            continue
        head = _clean(re.sub(r"\s*(/[^/]*/|<[^>]*>).*$", "", lines[0]))
        sense = re.sub(r"^\d+\.\s*", "", lines[1]).split(",")[0]
        sense = _clean(_DING_NOTES.sub(" ", sense))
        if head and sense:
            yield head, sense


def ding_words(text: str) -> Iterator[tuple[str, str]]:
    """(English, German) one-word senses of the Ding dictionary ("Furcht {f} :: fear"), the part that
    :func:`lwx_edge.data.everyday.ding_pairs` (phrases and sentences) leaves out."""
    for line in text.splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        de, en = line.split(" :: ", 1)
        d = _clean(_DING_NOTES.sub(" ", de.split(" | ")[0].split("; ")[0]))
        e = _clean(_DING_NOTES.sub(" ", en.split(" | ")[0].split("; ")[0]))
        if len(d.split()) == 1 and 1 <= len(e.split()) <= 2 and d.isalpha() and _WORDS.fullmatch(e):
            yield e, d


def most_frequent(pairs: Iterable[tuple[str, str]], n: int, lang: str = "en") -> list[tuple[str, str]]:
    """The ``n`` pairs whose English side is most frequent (``wordfreq``), each English text once."""
    wordfreq = _need("wordfreq")
    best: dict[str, tuple[str, str]] = {}
    for en, xx in pairs:
        best.setdefault(en.lower(), (en, xx))
    ranked = sorted(best.values(), key=lambda p: -wordfreq.zipf_frequency(p[0], lang))
    return ranked[:n]


def build_lexicon(out_dir: str | Path = "data/corpus/lexicon", work_dir: str | Path = "data/debs",
                  max_per_lang: int = 20000, progress: bool = True) -> dict:
    """Write ``train.en-{fr,de,es,it}.tsv`` and ``summary.json`` (pairs per source and language)."""
    out_dir = Path(out_dir)
    debs, missing = download_debs([DING, *FREEDICT.values()], Path(work_dir), progress=progress)
    if missing:
        raise CorpusError(f"apt-get download failed for {', '.join(missing)}: is the apt cache up to date "
                          "(apt-get update)?")
    sources: dict[str, dict[str, list[tuple[str, str]]]] = {"emoji": emoji_names(), "cldr": cldr_names()}
    sources["freedict"] = {}
    for lang, pkg in FREEDICT.items():
        files = dict(deb_files(debs[pkg], lambda n: n.endswith((".index", ".dict.dz"))))
        index = next((v for k, v in files.items() if k.endswith(".index")), None)
        packed = next((v for k, v in files.items() if k.endswith(".dict.dz")), None)
        if index is None or packed is None:
            raise CorpusError(f"{pkg}: no dictd .index/.dict.dz in the package")
        data = gzip.decompress(packed)                     # dictzip is gzip with a random-access index
        sources["freedict"][lang] = [(en, xx) for xx, en in dictd_entries(index.decode("utf-8"), data)]
    ding = [p for _, text in deb_files(debs[DING], lambda n: n.endswith("/trans/de-en"))
            for p in ding_words(text.decode("utf-8", errors="replace"))]
    sources["ding"] = {"de": most_frequent(ding, max_per_lang)}
    summary: dict = {"sources": {}, "pairs": {}}
    for lang in LANGS:
        pairs = [p for src in sources.values() for p in src.get(lang, [])]
        pairs = list(dict.fromkeys((en, xx) for en, xx in pairs if en.lower() != xx.lower()))
        write_text_atomic(out_dir / f"train.en-{lang}.tsv", "".join(f"{en}\t{xx}\n" for en, xx in pairs))
        summary["pairs"][lang] = len(pairs)
        for name, src in sources.items():
            summary["sources"].setdefault(name, {})[lang] = len(src.get(lang, []))
    write_json_atomic(out_dir / "summary.json", summary)
    if progress:
        log.info("lexicon: pairs per language %s", summary["pairs"])
    return summary


__all__ = ["build_lexicon", "cldr_names", "dictd_entries", "ding_words", "emoji_names", "most_frequent"]
