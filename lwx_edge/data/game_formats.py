"""The file formats of game translations (torch-free), read by :mod:`lwx_edge.data.games`: gettext .po files,
Hedgewars Lua locale tables and ``key=value`` files, FreeOrion stringtables with their ``[[KEY]]`` references,
and the alignment of key-aligned tables into (English, translation) pairs."""
from __future__ import annotations

import io
import re
from collections import Counter
from typing import Callable, Iterator

from ..errors import CorpusError

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
