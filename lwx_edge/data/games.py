"""More game text for training: dialogue, quests and story of games, mostly from translation files that
are not gettext catalogues under /usr/share/locale (torch-free).

``build_games_extra`` downloads the packages of :data:`SOURCES` (``apt-get download``; nothing is
installed), reads their translation files out of each .deb and writes ``train.en-{xx}.tsv`` and
``summary.json``, each atomically. All of it is train: these games are not in any dev or test split, and
an English sentence of another corpus's dev or test split (``exclude_dirs``) is dropped here.

- Hedgewars (``hedgewars-data``): the Lua locale tables of the missions and campaigns
  (``Data/Locale/fr.lua``: ``["English"] = "French"``) and the key-aligned ``Data/Locale/{en,fr}.txt`` and
  ``missions_{en,fr}.txt`` (weapon descriptions, game messages, mission blurbs).
- FLARE (``flare-game``): the .po files of the campaign mods (``mods/*/languages/data.fr.po``): NPC
  dialogue, quests, books, maps; item names and engine labels left out (by their ``#:`` references).
- FreeOrion (``freeorion-data``): the stringtables (``default/stringtables/en.txt``, ``fr.txt``, ...)
  aligned by key; ``[[KEY]]`` references resolved in each language's own table, markup stripped, format
  strings (``%1%``) dropped, multi-line entries paired line by line where both sides have as many lines.
- Warzone 2100 (``warzone2100-data``): its gettext catalogue (``usr/share/locale/fr_FR/...``), of which
  entries of 5+ English words are kept: campaign briefings and messages, but also some interface
  sentences (the catalogue mixes both); most unit and research names are shorter.
- Pingus (``pingus-data``): level titles and descriptions and the story (``data/po/fr.po``; not the
  program's interface strings).

Every pair goes through :func:`lwx_edge.data.gettext.clean_entry` and the corpus
:class:`~lwx_edge.data.corpus.PairFilter` (length, ratio, charset, duplicates), and keeps only text of at
least ``MIN_EN_WORDS`` English and ``MIN_XX_WORDS`` translated words (sentences, not labels).
FreeDroid RPG (the everyday test source) and man pages are refused.
"""
from __future__ import annotations

import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError
from ..text import normalize
from .corpus import Pair, PairFilter, filter_pairs
from .game_formats import (
    FREEORION_UI_KEYS,
    align_keyed,
    freeorion_pairs,
    parse_keyed,
    parse_lua_locale,
    parse_po,
    parse_stringtable,
    resolve_refs,
    split_aligned,
)
from .gettext import clean_entry, deb_files, deb_source, download_debs, parse_mo

log = logging.getLogger(__name__)

LANGS = ("fr", "de", "es", "it")
MIN_EN_WORDS, MIN_XX_WORDS = 3, 2
# never trained on: the held-out everyday test source (see everyday.HELD_OUT) and man-page translations
REFUSED = ("freedroidrpg", "fillets-ng", "freedink", "adonthell", "renpy-thequestion")  # + the conversation test's


# ------------------------------------------------------------------------------------------------ sources

@dataclass(frozen=True)
class GameSource:
    """A Debian package and how to read its pairs: ``wanted(member name)`` picks the files of the .deb to
    read; ``pairs(files, lang)`` yields raw (English, translation) pairs from {member name: bytes}, raising
    CorpusError when the package's layout is not the expected one. Kept pairs have at least
    ``min_en_words`` English words."""
    package: str
    wanted: Callable[[str], bool]
    pairs: Callable[[dict[str, bytes], str], Iterator[tuple[str, str]]]
    min_en_words: int = MIN_EN_WORDS


def _pick(files: dict[str, bytes], pattern: str) -> str | None:
    """The text (UTF-8, a BOM dropped) of the first file whose name matches ``pattern``, or None."""
    hits = sorted(n for n in files if re.search(pattern, n))
    return files[hits[0]].decode("utf-8-sig", errors="replace") if hits else None


def _need(files: dict[str, bytes], pattern: str, what: str) -> str:
    text = _pick(files, pattern)
    if text is None:
        raise CorpusError(f"no {what} in the package (unexpected layout: nothing matches {pattern!r})")
    return text


def _hedgewars(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    loc = r"/Data/Locale/"
    _need(files, loc + r"en\.txt$", "Data/Locale/en.txt")
    lua = _pick(files, loc + lang + r"\.lua$")
    if lua is not None:
        yield from parse_lua_locale(lua)
    for stem in ("", "missions_", "campaigns_"):
        en, xx = (_pick(files, f"{loc}{stem}{code}\\.txt$") for code in ("en", lang))
        if en is not None and xx is not None:
            yield from align_keyed(parse_keyed(en), parse_keyed(xx), sep="|")


def _flare(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    if not files:
        raise CorpusError("no mods/*/languages/data.*.po in the package (unexpected layout)")
    for name in sorted(n for n in files if n.endswith(f"/data.{lang}.po")):
        # item names and engine labels out: NPC dialogue, quests, books, powers, maps and cutscenes stay
        yield from parse_po(files[name].decode("utf-8", errors="replace"), keep=lambda refs: not refs or any(
            not re.search(r"(?:^|/)(?:items|engine)/", r) for r in refs))


def _freeorion(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    st = r"/default/stringtables/"
    en = parse_stringtable(_need(files, st + r"en\.txt$", "default/stringtables/en.txt"), "en.txt")
    xx = _pick(files, st + lang + r"\.txt$")
    if xx is not None:
        yield from freeorion_pairs(en, parse_stringtable(xx, f"{lang}.txt"))


def _pingus(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    if not files:
        raise CorpusError("no data/po/*.po in the package (unexpected layout)")
    po = _pick(files, rf"/data/po/{lang}\.po$")
    if po is not None:  # the levels, level sets and stories, not the program's interface (src/)
        yield from parse_po(po, keep=lambda refs: not refs or any(r.startswith("data/") for r in refs))


def _mo_catalog(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    """A gettext catalogue under usr/share/locale: the bare language's (fr/) or else its main country's
    (fr_FR/); other regional variants are not read."""
    if not files:
        raise CorpusError("no usr/share/locale/*/LC_MESSAGES/*.mo in the package (unexpected layout)")
    for code in (lang, f"{lang}_{lang.upper()}"):
        hits = sorted(n for n in files if f"/locale/{code}/LC_MESSAGES/" in n)
        if hits:
            yield from parse_mo(files[hits[0]], hits[0])
            return


_QM_MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")


def parse_qm(data: bytes, name: str = "<qm>") -> Iterator[tuple[str, str]]:
    """(source, translation) of a compiled Qt translation file (.qm): the messages block's items (source
    text in UTF-8, translation in UTF-16BE; the first plural form), untranslated messages skipped."""
    if data[:16] != _QM_MAGIC:
        raise CorpusError(f"{name}: not a Qt .qm file (bad magic)")
    pos, messages = 16, b""
    while pos + 5 <= len(data):  # blocks: tag (1 byte), length (4), body
        tag, length = data[pos], int.from_bytes(data[pos + 1:pos + 5], "big")
        if tag == 0x69:
            messages = data[pos + 5:pos + 5 + length]
        pos += 5 + length
    p, source, translation = 0, None, None
    while p < len(messages):
        tag = messages[p]
        p += 1
        if tag == 1:  # end of a message
            if source and translation:
                yield source, translation
            source = translation = None
        elif tag in (2, 3, 4, 5, 6, 7, 8):  # items with a 4-byte length (0xFFFFFFFF: null)
            length = int.from_bytes(messages[p:p + 4], "big")
            p += 4
            if length == 0xFFFFFFFF:
                continue
            body = messages[p:p + length]
            p += length
            if tag == 3 and translation is None:
                translation = body.decode("utf-16-be", errors="replace")
            elif tag == 6:
                source = body.decode("utf-8", errors="replace")
        elif tag != 9:  # 9 (obsolete) has no body; anything else is a layout we do not know
            raise CorpusError(f"{name}: unknown .qm message item {tag:#x}")


def _po_named(pattern: str) -> Callable[[dict[str, bytes], str], Iterator[tuple[str, str]]]:
    """A reader of every .po file whose name matches ``pattern`` with ``{lang}`` filled in."""
    def pairs(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
        if not files:
            raise CorpusError("no .po files in the package (unexpected layout)")
        for name in sorted(n for n in files if re.search(pattern.format(lang=lang), n)):
            yield from parse_po(files[name].decode("utf-8", errors="replace"))
    return pairs


def _gcompris(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    _need_name(files, r"/gcompris_\w+\.qm$", "translations/gcompris_*.qm")
    for name in sorted(n for n in files if n.endswith(f"/gcompris_{lang}.qm")):
        yield from parse_qm(files[name], name)


def _need_name(files: dict[str, bytes], pattern: str, what: str) -> str:
    hits = sorted(n for n in files if re.search(pattern, n))
    if not hits:
        raise CorpusError(f"no {what} in the package (unexpected layout: nothing matches {pattern!r})")
    return hits[0]


def _tuxpaint(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    """A stamp's description: the English on the first line, then ``fr.utf8=...`` lines."""
    if not files:
        raise CorpusError("no stamps/**/*.txt in the package (unexpected layout)")
    for name in sorted(files):
        lines = files[name].decode("utf-8", errors="replace").splitlines()
        for line in lines[1:]:
            if line.startswith(f"{lang}.utf8="):
                yield lines[0], line.split("=", 1)[1]


def _megaglest(files: dict[str, bytes], lang: str) -> Iterator[tuple[str, str]]:
    """The .lng tables (``key=value``) of each language aligned by key with their English file."""
    names = {"fr": "french", "de": "german", "es": "spanish", "it": "italian"}
    _need_name(files, r"english\.lng$", "*english.lng")
    for name in sorted(n for n in files if n.endswith(f"{names[lang]}.lng")):
        en = files.get(name[:-len(f"{names[lang]}.lng")] + "english.lng")
        if en is not None:
            yield from align_keyed(*(_lng(b) for b in (en, files[name])))


def _lng(data: bytes) -> dict[str, str]:
    out = {}
    for line in data.decode("utf-8", errors="replace").splitlines():
        if "=" in line and not line.startswith(";"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip().replace("\\n", "\n")
    return out


_LOCALE_FILE = r"[a-z]{2}(?:_[A-Z]{2})?"
SOURCES = (
    GameSource("hedgewars-data", lambda n: bool(re.search(rf"/Data/Locale/(?:{_LOCALE_FILE}\.lua|(?:missions_|"
                                                          rf"campaigns_)?{_LOCALE_FILE}\.txt)$", n)), _hedgewars),
    GameSource("flare-game", lambda n: bool(re.search(r"/mods/[^/]+/languages/data\.[A-Za-z_]+\.po$", n)), _flare),
    GameSource("freeorion-data", lambda n: bool(re.search(r"/default/stringtables/[a-z]{2}\.txt$", n)), _freeorion),
    GameSource("pingus-data", lambda n: bool(re.search(r"/data/po/[A-Za-z_]+\.po$", n)), _pingus),
    # one catalogue of campaign briefings, unit and research names and interface text: 5+ English words
    # keeps the briefings and messages (and some interface sentences), not most names and labels
    GameSource("warzone2100-data", lambda n: bool(re.search(r"/locale/[^/]+/LC_MESSAGES/warzone2100\.mo$", n)),
               _mo_catalog, min_en_words=5),
)

# Everyday and children's text of games and education packages (issue 35): GCompris' activity instructions and
# words, Tux Paint's stamp captions ("A red apple."), SuperTux's level stories, Unknown Horizons' messages,
# SuperTuxKart's story and tips, MegaGlest's hints and scenarios, LordsAWar's messages, Endgame: Singularity's
# story. A survey of 23 packages for translated conversational lines found these beside the four games the
# conversation test is built from (lwx_edge.data.conversation), which are refused here.
MORE_SOURCES = (
    GameSource("gcompris-qt-data", lambda n: bool(re.search(r"/translations/gcompris_\w+\.qm$", n)), _gcompris,
               min_en_words=2),
    GameSource("tuxpaint-stamps-default", lambda n: bool(re.search(r"/stamps/.+\.txt$", n)), _tuxpaint,
               min_en_words=2),
    GameSource("supertux-data", lambda n: bool(re.search(r"/supertux2/levels/.+\.po$", n)),
               _po_named(r"/{lang}\.po$")),
    GameSource("unknown-horizons", lambda n: bool(re.search(r"/locale/[^/]+/LC_MESSAGES/unknown-horizons\.mo$", n)),
               _mo_catalog),
    GameSource("supertuxkart-data", lambda n: bool(re.search(r"/data/po/[A-Za-z_]+\.po$", n)),
               _po_named(r"/data/po/{lang}\.po$")),
    GameSource("megaglest-data", lambda n: n.endswith(".lng"), _megaglest),
    GameSource("lordsawar-data", lambda n: bool(re.search(r"/locale/[^/]+/LC_MESSAGES/lordsawar\.mo$", n)),
               _mo_catalog),
    GameSource("singularity", lambda n: bool(re.search(r"/singularity/i18n/lang_\w+/\w+\.po$", n)),
               _po_named(r"/lang_{lang}(?:_[A-Z]{{2}})?/\w+\.po$")),
)


# ------------------------------------------------------------------------------------------------ building

def _words(text: str) -> int:
    """Space-separated tokens with a letter in them ("Aidez !" has one)."""
    return sum(any(c.isalpha() for c in t) for t in text.split())


def clean_pair(en: str, xx: str, min_en_words: int = MIN_EN_WORDS) -> tuple[str, str] | None:
    """:func:`lwx_edge.data.gettext.clean_entry`, then at least ``min_en_words`` English and MIN_XX_WORDS
    translated words (tokens with a letter): sentences and phrases, not labels. None when dropped."""
    pair = clean_entry(en, xx)
    if pair is None or _words(pair[0]) < min_en_words or _words(pair[1]) < MIN_XX_WORDS:
        return None
    return pair


def eval_english(dirs) -> set[str]:
    """Normalised English side of every ``dev.*`` and ``test.*`` pair file (``*.en-*.tsv``) in ``dirs``
    (missing directories are skipped): sentences no training pair may share."""
    seen: set[str] = set()
    for d in map(Path, dirs):
        for p in sorted(d.glob("dev*.en-*.tsv")) + sorted(d.glob("test*.en-*.tsv")):
            with open(p, encoding="utf-8", errors="replace") as f:
                seen.update(normalize(line.split("\t", 1)[0]) for line in f if "\t" in line)
    return seen


def _check_sources(sources) -> None:
    bad = [s.package for s in sources if "manpages" in s.package or any(r in s.package for r in REFUSED)]
    if bad:
        raise CorpusError(f"{', '.join(bad)}: man pages and the held-out test sources (FreeDroid RPG; the "
                          "conversation test's games) are never trained on")


def build_games_extra(out_dir: str | Path = "data/corpus/games-extra", work_dir: str | Path = "data/debs",
                      langs: tuple[str, ...] = LANGS, sources=SOURCES, exclude_dirs=(),
                      progress: bool = True) -> dict:
    """Download the packages of ``sources`` into ``work_dir`` (kept), read their pairs and write
    ``out_dir/train.en-{xx}.tsv`` (en<TAB>xx, cleaned, each pair once) and ``summary.json``, atomically.
    English sentences of the dev/test files in ``exclude_dirs`` are dropped. Returns the summary."""
    t0 = time.time()
    sources = tuple(sources)
    _check_sources(sources)
    debs, missing = download_debs([s.package for s in sources], Path(work_dir), progress=progress)
    if missing:
        raise CorpusError(f"apt-get download failed for {', '.join(missing)}: is the apt cache up to date "
                          "(apt-get update)?")
    held = eval_english(exclude_dirs)
    rows: dict[str, list[str]] = {lang: [] for lang in langs}
    per_source: dict[str, dict] = {}
    dropped: Counter = Counter()
    items = sources
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(sources, desc="game text", unit=" pkg", file=sys.stderr)
    for src in items:
        per_source[src.package] = _read_source(src, debs[src.package], langs, held, rows, dropped)
    summary: dict = {"train": {}}
    out_dir = Path(out_dir)
    for lang in langs:
        uniq = list(dict.fromkeys(rows[lang]))
        dropped["duplicate"] += len(rows[lang]) - len(uniq)
        write_text_atomic(out_dir / f"train.en-{lang}.tsv", "".join(r + "\n" for r in uniq))
        summary["train"][f"en-{lang}"] = {"pairs": len(uniq)}
    summary.update({"sources": per_source, "dropped": dict(dropped), "excluded_eval_sentences": len(held),
                    "seconds": round(time.time() - t0, 1)})
    write_json_atomic(out_dir / "summary.json", summary)
    if progress:
        line = ", ".join(f"en-{lang} {summary['train'][f'en-{lang}']['pairs']:,}" for lang in langs)
        log.info("%s: train pairs %s; written to %s in %ss", out_dir.name, line, out_dir, summary["seconds"])
    return summary


def _read_source(src: GameSource, deb: Path, langs: tuple[str, ...], held: set[str], rows: dict[str, list[str]],
                 dropped: Counter) -> dict:
    """Append a downloaded source's kept en<TAB>xx rows to ``rows[lang]``; its summary entry. A source built from
    a refused package, or with an unexpected layout, is an error naming the .deb."""
    _, source = deb_source(deb)
    if "manpages" in source or any(r in source for r in REFUSED):
        raise CorpusError(f"{deb}: built from {source}, which is never trained on")
    files = dict(deb_files(deb, src.wanted))
    if not files:
        raise CorpusError(f"{deb}: no translation files found (unexpected layout for {src.package})")
    info = {"source": source, "raw": {}, "pairs": {}, "mb": round(deb.stat().st_size / 1e6, 1)}
    for lang in langs:
        try:
            raw = list(src.pairs(files, lang))
        except CorpusError as e:
            raise CorpusError(f"{deb}: {e}") from None
        kept = _kept_rows(raw, lang, src.min_en_words, held, dropped)
        info["raw"][lang], info["pairs"][lang] = len(raw), len(kept)
        rows[lang].extend(kept)
    return info


def _kept_rows(raw: list[tuple[str, str]], lang: str, min_en_words: int, held: set[str],
               dropped: Counter) -> list[str]:
    """The en<TAB>xx rows of the raw pairs that pass :func:`clean_pair`, are not in an eval split (``held``) and
    pass the corpus filter; what is dropped is counted in ``dropped``."""
    cleaned = []
    for en, xx in raw:
        pair = clean_pair(en, xx, min_en_words)
        if pair is None:
            dropped["cleaning"] += 1
        elif normalize(pair[0]) in held:
            dropped["in_eval_split"] += 1
        else:
            cleaned.append(Pair(pair[0], pair[1], "en", lang))
    kept = [f"{p.src}\t{p.tgt}" for p in filter_pairs(cleaned, PairFilter(dedupe=False))]
    dropped["filter"] += len(cleaned) - len(kept)
    return kept


__all__ = ["FREEORION_UI_KEYS", "LANGS", "SOURCES", "GameSource", "align_keyed", "build_games_extra", "clean_pair",
           "eval_english", "freeorion_pairs", "parse_keyed", "parse_lua_locale", "parse_po", "parse_stringtable",
           "resolve_refs", "split_aligned"]
