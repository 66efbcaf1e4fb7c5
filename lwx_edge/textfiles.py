"""Strict readers of the text files users hand to lwx-edge: texts one per line, labelled examples (text, label)
and index items (id, text and metadata). ``lwx-edge embed/predict/search`` read texts with :func:`read_lines`,
``lwx-edge fit`` and :func:`lwx_edge.heads.read_labelled` labelled files with :func:`read_labelled`,
``lwx-edge index add`` items with :func:`read_items`.

    texts, labels = read_labelled("train.csv")                  # or .tsv, .jsonl
    items = read_items("notes.csv", id_col="id", text_col="text")

The format follows the file's extension: ``.csv`` comma-separated and ``.tsv``/``.tab`` tab-separated, with a
header row naming the columns (quoting as in RFC 4180: a field holding the separator, a quote or a line break is
quoted, a quote inside it doubled); ``.jsonl``/``.json`` one JSON object per line. A labelled file with another
extension is read as CSV; an items file with another extension (``.txt``) holds a text per line, its id the line
number.

Nothing is guessed: the first thing wrong is one :class:`~lwx_edge.errors.InputError` naming the file and the
1-based line ("data.csv line 13: ..."; the line where a record starts when a quoted field spans lines):

- bytes that are not UTF-8 (a leading byte-order mark is dropped);
- a header row that is missing, names a column twice, leaves one unnamed, or lacks a column asked for;
- a row with more or fewer fields than the header (an unquoted comma in a text, a missing label), a quote that
  never closes, text after a closing quote;
- a line that is not a JSON object, an object naming a key twice, NaN or Infinity, a missing key, a text that is
  not a string, a label or id that is not a string or an integer;
- an empty text or label (after stripping spaces), an empty or repeated item id;
- a file with no row at all.

Blank lines (only spaces) are not rows and are skipped, but still counted in line numbers.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from .errors import InputError

__all__ = ["LabelledFile", "ItemsFile", "read_labelled", "read_items", "read_lines", "read_text", "decode"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_JSON_SUFFIXES = (".jsonl", ".json")
_TSV_SUFFIXES = (".tsv", ".tab")


# --------------------------------------------------------------------------------------------- bytes and lines

def decode(data: bytes, name: str) -> str:
    """UTF-8 text of ``data`` (a leading byte-order mark dropped), or an InputError naming file ``name`` and the
    line and byte of the first byte that is not UTF-8."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{name} line 1: UTF-16 text (it starts with a UTF-16 byte-order mark); save the file "
                         "as UTF-8")
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        start = skip + e.start
        line = data[:start].count(b"\n") + data[:start].replace(b"\r\n", b"").count(b"\r") + 1
        column = start - (max(data.rfind(b"\n", 0, start), data.rfind(b"\r", 0, start)) + 1) + 1
        raise InputError(f"{name} line {line}: not valid UTF-8 (byte 0x{data[start]:02x}, byte {column} of the "
                         "line); save the file as UTF-8") from None


def read_text(path: str | os.PathLike[str], what: str = "file") -> tuple[str, str]:
    """(name, text): the UTF-8 text of file ``path`` ('-' reads standard input, named "stdin"); an InputError
    when it is missing ("no such WHAT"), unreadable or not UTF-8."""
    if str(path) == "-":
        if sys.stdin is None:  # started with standard input closed (<&-)
            raise InputError("standard input is closed: give the text as a file or pipe it in")
        stream = getattr(sys.stdin, "buffer", None)
        return "stdin", (decode(stream.read(), "stdin") if stream is not None else sys.stdin.read())
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    return str(path), decode(data, str(path))


def split_lines(text: str) -> list[str]:
    r"""The lines of ``text`` as an editor counts them: ``\n``, ``\r\n`` or ``\r`` ends one."""
    return _LINE_BREAK.split(text)


def read_lines(path: str | os.PathLike[str], what: str = "file") -> list[tuple[int, str]]:
    """(line number, text) for each non-blank line of a UTF-8 text file ('-': standard input), spaces stripped;
    line numbers count every line from 1, blank ones included."""
    _, text = read_text(path, what)
    return [(n, line.strip()) for n, line in enumerate(split_lines(text), 1) if line.strip()]


# --------------------------------------------------------------------------------------------- records

@dataclass
class _Record:
    line: int
    values: dict[str, Any]


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    return "jsonl" if suffix in _JSON_SUFFIXES else "tsv" if suffix in _TSV_SUFFIXES else "csv"


def _table(name: str, text: str, delimiter: str, required: Sequence[str], hint: str) -> Iterator[_Record]:
    """The rows of CSV/TSV ``text`` as {column: stripped value}, each with the line it starts on."""
    sep = "tab" if delimiter == "\t" else "comma"
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            why = ("a quoted field never closes (its closing quote is missing)" if "end of data" in str(e) else
                   f"malformed {'TSV' if sep == 'tab' else 'CSV'}: {e}")
            raise InputError(f"{name} line {start}: {why}; quote a field that holds a {sep}, a quote or a line "
                             'break as "..." and double each quote inside it') from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line
        if header is None:
            header = [c.strip() for c in row]
            for i, col in enumerate(header):
                if not col:
                    raise InputError(f"{name} line {start}: column {i + 1} of the header row has no name "
                                     f"(header: {', '.join(map(repr, header))})")
                if col in header[:i]:
                    raise InputError(f"{name} line {start}: the header row names column {col!r} twice")
            for col in required:
                if col not in header:
                    raise InputError(f"{name} line {start}: no column {col!r} (columns: {', '.join(header)}); "
                                     + hint)
            continue
        if len(row) != len(header):
            more = len(row) > len(header)
            raise InputError(
                f"{name} line {start}: {len(row)} fields, but the header has {len(header)} "
                f"({', '.join(header)})"
                + (f"; a {sep} inside a text must be quoted: \"...\"" if more else "; a field is missing"))
        yield _Record(start, {col: value.strip() for col, value in zip(header, row)})
    if header is None:
        raise InputError(f"{name}: empty file (expected a header row naming the columns: {', '.join(required)})")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _json_lines(name: str, text: str, required: Sequence[str], hint: str) -> Iterator[_Record]:
    """The objects of JSON-lines ``text``, each with its line number."""
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_no_constants)
        except json.JSONDecodeError as e:
            raise InputError(f"{name} line {n}: not valid JSON ({e.msg} at character {e.colno})") from None
        except ValueError as e:
            raise InputError(f"{name} line {n}: not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{name} line {n}: expected a JSON object, got {_json_type(obj)}")
        for key in required:
            if key not in obj:
                raise InputError(f"{name} line {n}: no key {key!r} (keys: {', '.join(obj) or 'none'}); {hint}")
        yield _Record(n, obj)


def _json_type(v: Any) -> str:
    return ("null" if v is None else "a boolean" if isinstance(v, bool) else "a number" if isinstance(v, (int, float))
            else "a string" if isinstance(v, str) else "a list" if isinstance(v, list) else "an object")


def _records(path: Path, name: str, text: str, required: Sequence[str], hint: str) -> Iterator[_Record]:
    kind = _kind(path)
    if kind == "jsonl":
        return _json_lines(name, text, required, hint)
    return _table(name, text, "\t" if kind == "tsv" else ",", required, hint)


def _string(rec: _Record, key: str, name: str, what: str, ints: bool = False) -> str | int:
    """The non-empty string (or, with ``ints``, integer) value of ``key``; an InputError naming the line."""
    v = rec.values[key]
    if isinstance(v, str):
        v = v.strip()
        if not v:
            raise InputError(f"{name} line {rec.line}: empty {what}")
        return v
    if ints and isinstance(v, int) and not isinstance(v, bool):
        return v
    if v is None:
        raise InputError(f"{name} line {rec.line}: empty {what} (null)")
    raise InputError(f"{name} line {rec.line}: the {what} ({key!r}) must be a string"
                     + (" or an integer" if ints else "") + f", got {_json_type(v)}")


# --------------------------------------------------------------------------------------------- labelled files

@dataclass
class LabelledFile:
    """Texts and labels read from a labelled file, and the line each example starts on; unpacks as
    ``texts, labels``."""
    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def __iter__(self) -> Iterator[list[str]]:  # texts, labels = read_labelled(...)
        return iter((self.texts, self.labels))

    def __len__(self) -> int:
        return len(self.texts)


def read_labelled(path: str | os.PathLike[str], text_col: str = "text", label_col: str = "label") -> LabelledFile:
    """Texts and labels (labels as strings; an integer label in JSON lines too) of a labelled CSV, TSV or JSON
    lines file, read strictly (module docstring): a malformed row, an empty text or label is an InputError
    naming the file and line, never skipped."""
    path = Path(path)
    name, text = read_text(path, "labelled file")
    hint = "choose the columns with --text-col / --label-col"
    out = LabelledFile()
    for rec in _records(path, name, text, (text_col, label_col), hint):
        out.texts.append(str(_string(rec, text_col, name, "text")))
        out.labels.append(str(_string(rec, label_col, name, "label", ints=True)))
        out.lines.append(rec.line)
    if not out.texts:
        raise InputError(f"{name}: no labelled rows (columns {text_col!r}, {label_col!r})")
    return out


# --------------------------------------------------------------------------------------------- item files

@dataclass
class ItemsFile:
    """Ids, texts and metadata (the other columns or keys, None when there are none) read from an items file,
    and the line each item is on; unpacks as ``ids, texts, metadata``."""
    ids: list[str | int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    metadata: list[dict[str, Any] | None] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def __iter__(self) -> Iterator[list[Any]]:  # ids, texts, metadata = read_items(...)
        return iter((self.ids, self.texts, self.metadata))

    def __len__(self) -> int:
        return len(self.ids)


def read_items(path: str | os.PathLike[str], id_col: str = "id", text_col: str = "text") -> ItemsFile:
    """Items for an index: a ``.csv``/``.tsv`` file with a header row (``id_col``, ``text_col``; the other
    columns become each item's metadata, as strings), ``.jsonl`` objects (the other keys become metadata) or any
    other text file, a text per line, its id the line number. Read strictly (module docstring); an id repeated
    in the file is an InputError too."""
    path = Path(path)
    name, text = read_text(path, "items file")
    out = ItemsFile()
    if path.suffix.lower() not in (*_JSON_SUFFIXES, *_TSV_SUFFIXES, ".csv"):
        for n, line in enumerate(split_lines(text), 1):
            if line.strip():
                out.ids.append(n)
                out.texts.append(line.strip())
                out.metadata.append(None)
                out.lines.append(n)
    else:
        hint = "choose the columns with --id-col / --text-col"
        first: dict[str | int, int] = {}
        for rec in _records(path, name, text, (id_col, text_col), hint):
            item_id = _string(rec, id_col, name, "id", ints=True)
            if item_id in first:
                raise InputError(f"{name} line {rec.line}: id {item_id!r} again (first on line {first[item_id]}); "
                                 "ids must be unique")
            first[item_id] = rec.line
            out.ids.append(item_id)
            out.texts.append(str(_string(rec, text_col, name, "text")))
            out.metadata.append({k: v for k, v in rec.values.items() if k not in (id_col, text_col)} or None)
            out.lines.append(rec.line)
    if not out.ids:
        raise InputError(f"{name}: no items")
    return out
