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

import io
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
from .gettext import clean_entry, deb_files, deb_source, download_debs, parse_mo

log = logging.getLogger(__name__)

LANGS = ("fr", "de", "es", "it")
MIN_EN_WORDS, MIN_XX_WORDS = 3, 2
# never trained on: the held-out everyday test source (see everyday.HELD_OUT) and man-page translations
REFUSED = ("freedroidrpg", "fillets-ng", "freedink", "adonthell", "renpy-thequestion")  # + the conversation test's

_ESCAPES = {"n": "\n", "t": "\t", "r": "", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")


def _unescape(s: str) -> str:
    r"""C/Lua string escapes (\n, \t, \", \\) resolved; unknown ones keep their character."""
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), s)


# ------------------------------------------------------------------------------------------------ formats

_PO_DATES = re.compile(r'^"(?:POT-Creation|PO-Revision)-Date:.*$', re.MULTILINE)


def parse_po(text: str, keep: Callable[[list[str]], bool] | None = None) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a gettext .po file (read with babel): the header, fuzzy, obsolete (``#~``) and
    untranslated entries are skipped; a context is dropped; a plural entry gives its singular msgid and first
    form. With ``keep``, only entries whose source references (``#: ../npcs/a.txt:12`` -> "../npcs/a.txt:12")
    it accepts."""
    from babel.messages.pofile import read_po

    text = _PO_DATES.sub("", text)  # babel parses the header's dates and fails on malformed ones
    for message in read_po(io.StringIO(text)):
        msgid, msgstr = message.id, message.string
        if isinstance(msgid, (tuple, list)):
            msgid, msgstr = msgid[0], (msgstr[0] if msgstr else "")
        if not msgid or not msgstr or message.fuzzy:
            continue
        refs = [f"{path}:{line}" if line else path for path, line in message.locations]
        if keep is None or keep(refs):
            yield msgid, msgstr


_LUA_ENTRY = re.compile(r'^\s*\["((?:[^"\\]|\\.)*)"\]\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?\s*(?:--.*)?$')


def parse_lua_locale(text: str) -> Iterator[tuple[str, str]]:
    """(English, translation) of a Hedgewars Lua locale table (``["Hello!"] = "Salut !", -- Mission``);
    commented-out (untranslated) entries and empty translations are skipped; "|" line breaks become spaces."""
    for line in text.splitlines():
        m = _LUA_ENTRY.match(line)
        if m and m.group(2):  # "|" is a line break in mission texts, often mid-sentence
            en, xx = (" ".join(_unescape(s).replace("|", " ").split()) for s in m.groups())
            yield en, xx


def parse_keyed(text: str) -> dict[str, str]:
    """``key=value`` lines of a Hedgewars locale file (``01:02=%1 wins!``, ``Mission.desc="..."``) as
    {key: value}; ``;`` comments skipped, surrounding quotes removed. A key given more than once (the
    alternative messages of ``02:xx``) cannot be aligned and is left out."""
    out: dict[str, str] = {}
    seen: Counter = Counter()
    for line in text.lstrip("\ufeff").splitlines():
        if not line.strip() or line.lstrip().startswith(";") or "=" not in line:
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        seen[key] += 1
        out[key] = _unescape(value)
    return {k: v for k, v in out.items() if seen[k] == 1 and v}


_ST_KEY = re.compile(r"^([A-Za-z0-9_]+)\s*(?:#.*)?$")


def parse_stringtable(text: str, name: str = "<stringtable>") -> dict[str, str]:
    """{key: value} of a FreeOrion stringtable: a language-name first line, ``#`` comments and
    ``#include`` lines, then ``KEY`` lines (a trailing ``# comment`` allowed) each followed by a one-line
    value or a ``'''``-quoted multi-line one. CorpusError for an unterminated ``'''`` value."""
    lines = text.lstrip("\ufeff").splitlines()
    out: dict[str, str] = {}
    i = 1  # line 0: the language's name
    while i < len(lines):
        m = _ST_KEY.match(lines[i].strip())
        i += 1
        if not m or lines[i - 1].lstrip().startswith("#") or i >= len(lines):
            continue
        value = lines[i]
        i += 1
        if value.startswith("'''"):
            body = value[3:]
            while not body.rstrip().endswith("'''"):
                if i >= len(lines):
                    raise CorpusError(f"{name}: value of {m.group(1)} never closes its '''")
                body += "\n" + lines[i]
                i += 1
            value = body.rstrip()[:-3]
        out[m.group(1)] = value
    return out


_REF = re.compile(r"\[\[(?:[a-z_]+ )?([A-Z0-9_]+)\]\]")
_FO_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_FO_FORMAT = re.compile(r"%[A-Za-z0-9_:]+%|\{\{|\[\[")
_UNRESOLVED = "\x00"
# interface strings (options, hotkeys, game rules, window labels, tooltips, event reports), not game text
FREEORION_UI_KEYS = re.compile(r"^(?:OPTIONS|HOTKEY|RULE|SITREP|GAME_RULE)_|TOOLTIP|_WND_|_BTN_")


def resolve_refs(value: str, table: dict[str, str], depth: int = 3) -> str:
    """A FreeOrion value with its ``[[KEY]]`` and ``[[type KEY]]`` references replaced by the table's text
    for KEY (up to ``depth`` levels) and markup tags (``<i>``, ``<rgba ...>``, ``<img ...>``) removed; a
    reference that cannot be resolved becomes NUL, so that its line is dropped."""
    for _ in range(depth):
        if "[[" not in value:
            break
        value = _REF.sub(lambda m: table.get(m.group(1), _UNRESOLVED), value)
    return _FO_TAG.sub("", value)


# --------------------------------------------------------------------------------------------- alignment

def split_aligned(en: str, xx: str, sep: str = "\n") -> Iterator[tuple[str, str]]:
    """The segments of a multi-line (or ``sep``-separated) entry paired one to one when both sides have
    as many non-empty segments; otherwise the whole entry as one pair."""
    a = [s for s in en.split(sep) if s.strip()]
    b = [s for s in xx.split(sep) if s.strip()]
    if len(a) == len(b):
        yield from zip(a, b)
    else:
        yield " ".join(en.split(sep)), " ".join(xx.split(sep))


def align_keyed(en: dict[str, str], xx: dict[str, str], sep: str = "\n") -> Iterator[tuple[str, str]]:
    """(English, translation) of the keys in both tables, in the English table's order, each split by
    :func:`split_aligned`."""
    for key, value in en.items():
        if key in xx:
            yield from split_aligned(value, xx[key], sep)


def freeorion_pairs(en: dict[str, str], xx: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Key-aligned pairs of two FreeOrion stringtables, references resolved in each side's own table;
    interface keys (:data:`FREEORION_UI_KEYS`), format strings (``%1%``, ``%empire%``) and lines with an
    unresolved reference are dropped."""
    for key, value in en.items():
        if key not in xx or FREEORION_UI_KEYS.search(key) or _FO_FORMAT.search(_REF.sub("", value + xx[key])):
            continue
        a, b = resolve_refs(value, en), resolve_refs(xx[key], xx)
        for e, x in split_aligned(a, b):
            if _UNRESOLVED not in e + x and not _FO_FORMAT.search(e + x):
                yield e, x


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
        deb = debs[src.package]
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
            cleaned = []
            for en, xx in raw:
                pair = clean_pair(en, xx, src.min_en_words)
                if pair is None:
                    dropped["cleaning"] += 1
                elif normalize(pair[0]) in held:
                    dropped["in_eval_split"] += 1
                else:
                    cleaned.append(Pair(pair[0], pair[1], "en", lang))
            kept = [f"{p.src}\t{p.tgt}" for p in filter_pairs(cleaned, PairFilter(dedupe=False))]
            dropped["filter"] += len(cleaned) - len(kept)
            info["raw"][lang], info["pairs"][lang] = len(raw), len(kept)
            rows[lang].extend(kept)
        per_source[src.package] = info
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


__all__ = ["LANGS", "SOURCES", "GameSource", "align_keyed", "build_games_extra", "clean_pair", "eval_english",
           "freeorion_pairs", "parse_keyed", "parse_lua_locale", "parse_po", "parse_stringtable", "resolve_refs",
           "split_aligned"]
