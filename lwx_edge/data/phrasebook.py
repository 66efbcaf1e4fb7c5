"""A phrasebook written for this project: everyday conversational sentences in five languages, as parallel
train pairs (torch-free).

No source reachable offline holds everyday French, Spanish or Italian at the scale Ding gives German (issue 35;
docs/HISTORY.md, "The conversation test"), and the student trails the teacher on exactly the forms such text is
made of: the second person, questions, clitic pronouns, polite requests, exclamations. The phrasebook is written
for the project, in three files under ``lwx_edge/data/phrasebook/`` (tab-separated, ``#`` comments, columns
``en fr de es it``):

- ``phrases.tsv``: whole sentences, one row each (``en fr de es it``).
- ``frames.tsv``: ``frame SLOT en fr de es it``: a sentence with one ``{}`` per language ("Do you want to {}?" /
  "Tu veux {} ?"), ``-`` where a language cannot take the slot's fillers.
- ``fillers.tsv``: ``fill SLOT en fr de es it``: what goes into a slot ("come with us" / "venir avec nous"),
  grammatical in every frame of its slot.

:func:`expand` puts ``fillers_per_frame`` fillers of its slot (a seeded sample, all when fewer) into each frame
and applies French elision ("de appeler" → "d'appeler"). Pairs whose English or translation is a sentence of any
``dev*``/``test*`` pair file under ``eval_dirs`` (compared as :func:`conversation.sentence_key`) are dropped, so a
test built before it (``data all`` builds the conversation test first) keeps all its sentences. Written as
``train.en-xx.tsv`` and ``summary.json``.
"""
from __future__ import annotations

import logging
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Iterable

from ..atomic import write_json_atomic, write_text_atomic
from ..errors import CorpusError
from .conversation import sentence_key

log = logging.getLogger(__name__)

LANGS = ("fr", "de", "es", "it")
COLUMNS = ("en", *LANGS)
SOURCE_DIR = Path(__file__).with_name("phrasebook")
# French words that lose their vowel before a vowel or a mute h ("je aime" → "j'aime"), not after a hyphen
# ("donne-le à"); the few h aspiré words a phrase may hold are listed
_ELIDE = re.compile(r"(?<![\w'-])([djlmnst]e|que|la|ce)\s+(?=[aeiouyàâäéèêëîïôöûùüh])", re.IGNORECASE)
_H_ASPIRE = ("haricot", "hâte", "haut", "hasard", "héros", "honte", "hors", "huit", "hibou", "hamac", "hockey")


def elide_french(text: str) -> str:
    """French elision at word boundaries: de/je/le/la/me/ne/se/te/que/ce + vowel or mute h → d'/j'/l'/…"""
    def cut(m: re.Match) -> str:
        rest = text[m.end():m.end() + 8].lower()
        if rest.startswith(_H_ASPIRE):
            return m.group(0)
        word = m.group(1)
        return word[:-1] + "'"
    return _ELIDE.sub(cut, text)


def read_rows(path: Path, kind: str | None = None) -> list[list[str]]:
    """The rows of a phrasebook file: ``en fr de es it`` (``kind`` None) or ``KIND SLOT en fr de es it``. A row
    of the wrong shape is a :class:`CorpusError` naming the file and line."""
    width = len(COLUMNS) + (0 if kind is None else 2)
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cells = [c.strip() for c in line.split("\t")]
            if len(cells) != width or not all(cells):
                raise CorpusError(f"{path}:{n}: expected {width} non-empty tab-separated cells, got "
                                  f"{sum(map(bool, cells))} of {len(cells)}")
            if kind is not None and cells[0] != kind:
                raise CorpusError(f"{path}:{n}: the first cell must be {kind!r}, got {cells[0]!r}")
            rows.append(cells if kind is None else cells[1:])
    return rows


def _check_grammar(frames: list[list[str]], fillers: list[list[str]], where: Path) -> None:
    for slot, *texts in frames:
        bad = [c for c, t in zip(COLUMNS, texts) if t != "-" and t.count("{}") != 1]
        if texts[0] == "-" or bad:
            raise CorpusError(f"{where}: frame {texts[0]!r} ({slot}): every language but '-' needs one {{}} "
                              f"and English is required ({', '.join(bad) or 'en'})")
    for slot, *texts in fillers:
        if any("{}" in t or t == "-" for t in texts):
            raise CorpusError(f"{where}: filler {texts[0]!r} ({slot}) must be filled in every language, no {{}}")
    unused = {s for s, *_ in fillers} ^ {s for s, *_ in frames}
    if unused:
        raise CorpusError(f"{where}: slots with frames but no fillers or fillers but no frames: "
                          f"{', '.join(sorted(unused))}")


def expand(frames: list[list[str]], fillers: list[list[str]], fillers_per_frame: int | None = None,
           seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """English–xx pairs of every frame with (a seeded sample of ``fillers_per_frame`` of) its slot's fillers."""
    rng = random.Random(seed)
    by_slot: dict[str, list[list[str]]] = defaultdict(list)
    for slot, *texts in fillers:
        by_slot[slot].append(texts)
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for slot, *frame in frames:
        fills = by_slot[slot]
        if fillers_per_frame is not None and len(fills) > fillers_per_frame:
            fills = rng.sample(fills, fillers_per_frame)
        for fill in fills:
            en = frame[0].replace("{}", fill[0])
            for i, lang in enumerate(LANGS, 1):
                if frame[i] != "-":
                    xx = frame[i].replace("{}", fill[i])
                    pairs[lang].append((en, elide_french(xx) if lang == "fr" else xx))
    return dict(pairs)


def eval_sentences(dirs: Iterable[str | Path]) -> set[str]:
    """:func:`sentence_key` of both sides of every ``dev*``/``test*`` pair file under ``dirs`` (recursively)."""
    keys: set[str] = set()
    for root in map(Path, dirs):
        for f in sorted(root.rglob("*.en-*.tsv")) if root.is_dir() else []:
            if f.name.startswith(("dev", "test")):
                with open(f, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        keys.update(sentence_key(part) for part in line.rstrip("\n").split("\t"))
    return keys


def build_phrasebook(out_dir: str | Path = "data/corpus/phrasebook", eval_dirs: Iterable[str | Path] = ("data/corpus",),
                     fillers_per_frame: int | None = 5, source_dir: str | Path = SOURCE_DIR, seed: int = 0) -> dict:
    """Write ``out_dir/train.en-{xx}.tsv`` (the phrases, then the expanded frames; duplicates and evaluation
    sentences dropped) and ``summary.json``, atomically; return the summary."""
    src = Path(source_dir)
    missing = [n for n in ("phrases.tsv", "frames.tsv", "fillers.tsv") if not (src / n).is_file()]
    if missing:
        raise CorpusError(f"{src}: phrasebook files missing: {', '.join(missing)}")
    phrases = read_rows(src / "phrases.tsv")
    frames, fillers = read_rows(src / "frames.tsv", "frame"), read_rows(src / "fillers.tsv", "fill")
    _check_grammar(frames, fillers, src)
    expanded = expand(frames, fillers, fillers_per_frame, seed)
    eval_dirs = list(eval_dirs)
    held = eval_sentences(eval_dirs)
    if not held:
        log.warning("no dev/test pair files under %s: nothing is held out (build the phrasebook after the corpora "
                    "and the conversation test, or a test built later loses the sentences it shares with it)",
                    ", ".join(map(str, eval_dirs)) or "(no directories)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"phrases": len(phrases), "frames": len(frames), "fillers": len(fillers),
                     "fillers_per_frame": fillers_per_frame, "eval_sentences_checked": len(held), "pairs": {},
                     "dropped": {"in_eval": 0, "duplicate": 0}}
    for i, lang in enumerate(LANGS, 1):
        candidates = [(row[0], row[i]) for row in phrases] + expanded.get(lang, [])
        summary["pairs"][lang] = write_pairs(out / f"train.en-{lang}.tsv", candidates, held, summary["dropped"])
    write_json_atomic(out / "summary.json", summary)
    return summary


def write_pairs(path: Path, candidates: Iterable[tuple[str, str]], held: set[str], dropped: dict) -> int:
    """Write ``en<TAB>xx`` lines atomically, each pair once and none with a side in ``held`` (as
    :func:`sentence_key`); count what is left out in ``dropped["in_eval"]`` and ``dropped["duplicate"]``."""
    seen, kept = set(), []
    for en, xx in candidates:
        if sentence_key(en) in held or sentence_key(xx) in held:
            dropped["in_eval"] += 1
        elif (en, xx) in seen:
            dropped["duplicate"] += 1
        else:
            seen.add((en, xx))
            kept.append(f"{en}\t{xx}\n")
    write_text_atomic(path, "".join(kept))
    return len(kept)


__all__ = ["LANGS", "build_phrasebook", "elide_french", "eval_sentences", "expand", "read_rows", "write_pairs"]
