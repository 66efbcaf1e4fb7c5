"""Parallel-text readers and filters (torch-free).

Readers take ``src<TAB>tgt`` TSV files or a pair of line-aligned files, plain or gzip-compressed. The
bytes of each line are decoded on their own, so one bad line never loses the file. A bad line (wrong field
count, invalid UTF-8, an empty side) is counted in :class:`CorpusStats` and skipped, with its ``file:line``
kept for the report; ``strict=True`` raises ``CorpusError("file:line: reason")`` instead. A missing or
unreadable file is a ``CorpusError`` naming the path.

Filters test the normalised text (``lwx_edge.text.normalize``: NFKC, ASCII quotes and dashes, lowercase)
but yield the pairs with their original cased text: the teacher reads cased text, the student normalises
at tokenization.

Counting convention: the readers count ``read`` and the bad lines, :func:`filter_pairs` counts ``kept``
and its own drops, so one ``CorpusStats`` passed to both gives read = kept + dropped. When
``filter_pairs`` gets pairs that no reader counted, the report uses kept + dropped as the number read.
"""
from __future__ import annotations

import gzip
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import CorpusError, open_input
from ..text import LANGUAGES, normalize

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Pair:
    """One parallel pair: English source, its translation, both language codes, and where it came from (the
    corpus a run read it from; ``batch_group=source`` batches pairs of one source together)."""
    src: str
    tgt: str
    src_lang: str
    tgt_lang: str
    source: str = ""


@dataclass
class CorpusStats:
    """What was read, kept and dropped (reason -> count), with the first few bad lines for the report.

    Drop reasons: ``bad_line`` (wrong field count, invalid UTF-8), ``empty`` (an empty side),
    ``too_short``, ``too_long``, ``ratio``, ``no_words``, ``charset``, ``duplicate``. Stats add up with
    ``+`` and ``+=`` (one per file, merged for the whole corpus).
    """

    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    first_bad: list = field(default_factory=list)

    def bad(self, where: str, reason: str, kind: str = "bad_line") -> None:
        """Count one dropped line of kind ``kind`` and keep ``where: reason`` among the first examples."""
        self.dropped[kind] += 1
        if len(self.first_bad) < MAX_EXAMPLES:
            self.first_bad.append(f"{where}: {reason}")

    @property
    def total(self) -> int:
        """Pairs seen: ``read``, or kept + dropped when the pairs did not come through a reader."""
        return max(self.read, self.kept + sum(self.dropped.values()))

    def __iadd__(self, other: "CorpusStats") -> "CorpusStats":
        if not isinstance(other, CorpusStats):
            return NotImplemented
        self.read += other.read
        self.kept += other.kept
        self.dropped.update(other.dropped)
        self.first_bad.extend(other.first_bad[:max(0, MAX_EXAMPLES - len(self.first_bad))])
        return self

    def __add__(self, other: "CorpusStats") -> "CorpusStats":
        if not isinstance(other, CorpusStats):
            return NotImplemented
        out = CorpusStats(self.read, self.kept, Counter(self.dropped), list(self.first_bad))
        out += other
        return out

    def report(self) -> str:
        """``read 12,034 pairs, kept 11,502 (95.6%); dropped: charset 300, duplicate 200; first bad line:
        x.tsv:17: ...``, then one line per further bad-line example."""
        total = self.total
        share = f" ({100 * self.kept / total:.1f}%)" if total else ""
        text = f"read {total:,} pairs, kept {self.kept:,}{share}"
        if self.dropped:
            text += "; dropped: " + ", ".join(f"{k} {v:,}" for k, v in self.dropped.most_common() if v)
        if self.first_bad:
            text += "; first bad line: " + self.first_bad[0]
            text += "".join(f"\n  also: {x}" for x in self.first_bad[1:])
        return text


_PAIR_NAME = re.compile(r"(?:^|[._-])([a-z]{2,3})-([a-z]{2,3})(?:\.(?:tsv|txt))?(?:\.gz)?$")


def _check_lang(lang: str, where: str | Path) -> str:
    if lang not in LANGUAGES:
        raise CorpusError(f"{where}: language {lang!r} is not supported (supported: {', '.join(LANGUAGES)})")
    return lang


def langs_from_name(path: str | Path) -> tuple[str, str]:
    """``train.en-fr.tsv``, ``train.en-fr.tsv.gz`` (or a Moses prefix ``train.en-fr``) -> ("en", "fr")."""
    m = _PAIR_NAME.search(Path(path).name)
    if not m:
        raise CorpusError(f"{path}: cannot tell the languages from the file name "
                          "(expected NAME.en-fr.tsv, NAME.en-de.tsv.gz, ...)")
    return _check_lang(m.group(1), path), _check_lang(m.group(2), path)


def _lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, raw bytes without the line ending), gunzipped when the file is gzip (by name or
    magic bytes); CorpusError naming the path for a missing, unreadable or corrupt file."""
    path = Path(path)
    with open_input(path, "corpus file", CorpusError, "rb") as f:
        try:
            gz = path.suffix == ".gz" or f.peek(2)[:2] == b"\x1f\x8b"
            stream = gzip.GzipFile(fileobj=f, mode="rb") if gz else f
            for i, raw in enumerate(stream, 1):
                yield i, raw.rstrip(b"\r\n")
        except (OSError, EOFError) as e:  # a truncated or corrupt .gz, a read error
            raise CorpusError(f"{path}: cannot read the corpus file ({e})") from None


def _count_lines(path: str | Path) -> int:
    return sum(1 for _ in _lines(path))


def _decode(raw: bytes, where: str, stats: CorpusStats, strict: bool) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if strict:
            raise CorpusError(f"{where}: not valid UTF-8") from None
        stats.bad(where, "not valid UTF-8")
        return None


def _clean_side(text: str) -> str:
    return " ".join(text.split())


def _pair(src: str, tgt: str, where: str, langs: tuple[str, str], stats: CorpusStats,
          strict: bool) -> Pair | None:
    src, tgt = _clean_side(src), _clean_side(tgt)
    if not src or not tgt:
        if strict:
            raise CorpusError(f"{where}: empty {'source' if not src else 'target'} side")
        stats.bad(where, f"empty {'source' if not src else 'target'} side", "empty")
        return None
    return Pair(src, tgt, *langs)


def read_tsv(path: str | Path, src_lang: str | None = None, tgt_lang: str | None = None,
             stats: CorpusStats | None = None, strict: bool = False) -> Iterator[Pair]:
    """``src<TAB>tgt`` per line (gzip transparently); languages from the file name unless both are given.
    Blank lines are skipped without counting; whitespace inside a side is collapsed."""
    if src_lang and tgt_lang:
        langs = (_check_lang(src_lang, path), _check_lang(tgt_lang, path))
    else:
        langs = langs_from_name(path)
    stats = stats if stats is not None else CorpusStats()
    name = Path(path).name
    for i, raw in _lines(path):
        if not raw.strip():
            continue
        where = f"{name}:{i}"
        stats.read += 1
        line = _decode(raw, where, stats, strict)
        if line is None:
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            reason = f"expected 2 tab-separated fields, got {len(fields)}"
            if strict:
                raise CorpusError(f"{where}: {reason}")
            stats.bad(where, reason)
            continue
        pair = _pair(fields[0], fields[1], where, langs, stats, strict)
        if pair is not None:
            yield pair


def read_aligned(src_path: str | Path, tgt_path: str | Path, src_lang: str, tgt_lang: str,
                 stats: CorpusStats | None = None, strict: bool = False) -> Iterator[Pair]:
    """Two line-aligned files (line i of one translates line i of the other), gzip transparently.

    Different line counts mean a broken alignment: ``CorpusError`` naming both files and counts, raised
    before any pair is yielded (the files are counted first, then streamed). Lines blank on both sides
    are skipped; blank on one side counts as ``empty``."""
    langs = (_check_lang(src_lang, src_path), _check_lang(tgt_lang, tgt_path))
    stats = stats if stats is not None else CorpusStats()
    n_src, n_tgt = _count_lines(src_path), _count_lines(tgt_path)
    if n_src != n_tgt:
        raise CorpusError(f"{src_path} has {n_src:,} lines but {tgt_path} has {n_tgt:,}: "
                          "the files are not line-aligned")
    src_name, tgt_name = Path(src_path).name, Path(tgt_path).name
    for (i, ra), (_, rb) in zip(_lines(src_path), _lines(tgt_path)):
        if not ra.strip() and not rb.strip():
            continue
        stats.read += 1
        sa = _decode(ra, f"{src_name}:{i}", stats, strict)
        if sa is None:
            continue
        sb = _decode(rb, f"{tgt_name}:{i}", stats, strict)
        if sb is None:
            continue
        pair = _pair(sa, sb, f"{src_name}:{i}", langs, stats, strict)
        if pair is not None:
            yield pair


def read_parallel(path: str | Path, stats: CorpusStats | None = None, strict: bool = False) -> Iterator[Pair]:
    """Dispatch by name, languages from the name: ``NAME.en-fr.tsv[.gz]`` is a TSV file; a Moses prefix
    ``NAME.en-fr`` reads the line-aligned ``NAME.en-fr.en`` and ``NAME.en-fr.fr``."""
    path = Path(path)
    if not path.exists() and not _PAIR_NAME.search(path.name):
        raise CorpusError(f"{path}: no such file or directory")
    src, tgt = langs_from_name(path)
    if not path.name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz")) and not path.exists():
        a, b = path.with_name(f"{path.name}.{src}"), path.with_name(f"{path.name}.{tgt}")
        if a.exists() or b.exists():
            return read_aligned(a, b, src, tgt, stats=stats, strict=strict)
    return read_tsv(path, src, tgt, stats=stats, strict=strict)


# Accented letters of each language, after normalize() (lowercase NFKC). English has none of its own.
ACCENTS = {"en": "", "fr": "àâæçéèêëîïôœùûüÿ", "de": "äöüß", "es": "áéíñóúü¿¡", "it": "àèéìíîòóùú"}
# Widening (measured on the DDTP train split, where the strict rule dropped 0.2-0.5% of pairs, all of
# them ordinary prose): (1) the accented letters of all five project languages are allowed on every side,
# since names and loanwords (José, Gödel, café, ...) occur in any language's text; (2) a short list of
# harmless symbols of Debian prose and UI text. Wrong-script text (Cyrillic, Greek words, CJK, ...),
# control characters and mojibake are still dropped.
PROJECT_LETTERS = "".join(sorted(set("".join(ACCENTS.values()))))
SYMBOLS = "©®°±×÷§¶·•→←↔⇒≤≥≠≈∼μ€£¥¢‒―⁄√∞"
_ASCII = string.ascii_lowercase + string.digits + string.punctuation + " "


def allowed_chars(lang: str) -> frozenset[str]:
    """Characters allowed in normalised text of ``lang``: a-z, digits, ASCII punctuation, space, the
    language's accented letters, and (widened, see ``SYMBOLS``/``PROJECT_LETTERS``) the accented letters of
    the other project languages plus a few common symbols."""
    if lang not in ACCENTS:
        raise CorpusError(f"language {lang!r} is not supported (supported: {', '.join(LANGUAGES)})")
    return frozenset(_ASCII + ACCENTS[lang] + PROJECT_LETTERS + SYMBOLS)


@dataclass
class PairFilter:
    """Sentence-level filters (docs/METHOD.md §5.1), tested on normalised text. Defaults suit Debian text.

    - ``min_chars`` / ``max_chars``: either side shorter than 2 or longer than 2000 characters is dropped
      (``too_short`` / ``too_long``).
    - ``max_ratio``: the longer side over the shorter one, in characters, at most 3.0; checked only when
      both sides are longer than ``ratio_min_chars`` (20), since short UI strings vary a lot (``ratio``).
    - a side without any letter is dropped (``no_words``).
    - ``charset``: a side with a character outside :func:`allowed_chars` of its language (``charset``).
    - ``dedupe``: the second and later copies of a normalised (src, tgt) are dropped (``duplicate``).
    """

    min_chars: int = 2
    max_chars: int = 2000
    max_ratio: float = 3.0
    ratio_min_chars: int = 20
    charset: bool = True
    dedupe: bool = True


class _Checker:
    """Per-text checks shared by the pair filter and the monolingual builder."""

    def __init__(self, filt: PairFilter):
        self.filt = filt
        self.charsets: dict[str, frozenset[str]] = {}

    def text_reason(self, norm: str, lang: str) -> str | None:
        f = self.filt
        if len(norm) < f.min_chars:
            return "too_short"
        if len(norm) > f.max_chars:
            return "too_long"
        if not any(c.isalpha() for c in norm):
            return "no_words"
        if f.charset:
            allowed = self.charsets.get(lang)
            if allowed is None:
                allowed = self.charsets[lang] = allowed_chars(lang)
            if not allowed.issuperset(norm):
                return "charset"
        return None

    def pair_reason(self, a: str, b: str, src_lang: str, tgt_lang: str) -> str | None:
        f = self.filt
        if min(len(a), len(b)) < f.min_chars:
            return "too_short"
        if max(len(a), len(b)) > f.max_chars:
            return "too_long"
        short, long_ = sorted((len(a), len(b)))
        if short > f.ratio_min_chars and long_ > f.max_ratio * short:
            return "ratio"
        return self.text_reason(a, src_lang) or self.text_reason(b, tgt_lang)


def text_drop_reason(text: str, lang: str, filt: PairFilter | None = None) -> str | None:
    """Why one text of ``lang`` fails the per-side filters (length, letters, charset), or None."""
    return _Checker(filt or PairFilter()).text_reason(normalize(text), lang)


def filter_pairs(pairs: Iterable[Pair], filt: PairFilter | None = None,
                 stats: CorpusStats | None = None) -> Iterator[Pair]:
    """Yield the pairs that pass ``filt`` (original casing kept); count kept and drop reasons in ``stats``."""
    checker = _Checker(filt or PairFilter())
    stats = stats if stats is not None else CorpusStats()
    seen: set[tuple[str, str]] = set()
    for p in pairs:
        a, b = normalize(p.src), normalize(p.tgt)
        reason = checker.pair_reason(a, b, p.src_lang, p.tgt_lang)
        if reason is None and checker.filt.dedupe:
            key = (a, b)
            if key in seen:
                reason = "duplicate"
            else:
                seen.add(key)
        if reason:
            stats.dropped[reason] += 1
            continue
        stats.kept += 1
        yield p
