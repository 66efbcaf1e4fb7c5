"""Everyday text: game dialogue and story catalogs, a German-English phrase dictionary, sayings, usage
examples and word lists, all from Debian packages (torch-free).

Parallel (``{split}.en-xx.tsv``, :func:`lwx_edge.data.gettext.build_gettext` split by gettext domain):
the Wesnoth campaigns (the dialogue corpus's split, campaign by campaign), the Widelands scenarios and
help (one domain per scenario), Freeciv's help, and the FreeDroid RPG dialogues, held out whole for the
test split so the everyday evaluation has a source that no training domain shares. Plus
``train.ding.en-de.tsv``: the example phrases and sentences of the Ding German-English dictionary.

Monolingual (``mono/train.{lang}.txt``, for distillation): both sides of every train pair above, the
fortune cookies of ``fortunes-min`` and ``fortunes`` (en), ``fortunes-de``, ``fortunes-es`` and ``fortunes-it`` (never the
``off/`` collections), WordNet's English usage examples, and a seeded sample of each language's word list
(``wamerican``, ``wfrench``, ``wngerman``, ``wspanish``, ``witalian``) for token-level coverage.

Nothing here is a man page or a public evaluation set (shared rule: those are never trained on).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import CorpusError
from .gettext import DIALOGUE_PACKAGES, build_gettext, deb_files, download_debs
from .mono import build_mono

log = logging.getLogger(__name__)

PARALLEL_PACKAGES = DIALOGUE_PACKAGES + ("widelands-data", "freeciv-data", "freedroidrpg-data")
HELD_OUT = ("freedroidrpg-data",)
# the narrative and dialogue of games whose catalogue has no domains to split by: `lwx-edge data games`
GAME_PACKAGES = ("cataclysm-dda-data",)
FORTUNES = {"fortunes-min": "en", "fortunes": "en", "fortunes-de": "de", "fortunes-es": "es", "fortunes-it": "it"}
WORDLISTS = {"wamerican": "en", "wfrench": "fr", "wngerman": "de", "wspanish": "es", "witalian": "it"}
DING, WORDNET = "trans-de-en", "wordnet-base"

_ATTRIBUTION = re.compile(r"^\s*(--|—|~~)\s")
_DING_NOTES = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")


def fortune_cookies(text: str, min_words: int = 3, max_words: int = 60) -> Iterator[str]:
    """The cookies of a fortune file ("%" lines separate them) as one line each, attribution lines
    ("-- Author") dropped; ASCII art and cookies outside [min_words, max_words] words are skipped."""
    for cookie in re.split(r"^%\s*$", text, flags=re.MULTILINE):
        lines = [ln for ln in cookie.splitlines() if ln.strip() and not _ATTRIBUTION.match(ln)]
        line = " ".join(" ".join(lines).split())
        n_words = len(line.split())
        letters = sum(c.isalpha() or c.isspace() for c in line)
        if min_words <= n_words <= max_words and letters >= 0.8 * len(line):
            yield line


def ding_pairs(text: str, min_words: int = 2) -> Iterator[tuple[str, str]]:
    """(English, German) example phrases of the Ding dictionary ("de :: en" lines; "|" separates senses,
    aligned one to one; "; " alternatives, of which the first is kept). Grammar notes ({n}, [coll.]) are
    removed; only multi-word senses (phrases and sentences, not headwords) are kept."""
    for line in text.splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        de, en = line.split(" :: ", 1)
        de_senses, en_senses = de.split(" | "), en.split(" | ")
        if len(de_senses) != len(en_senses):
            continue
        for d, e in zip(de_senses, en_senses):
            d, e = (" ".join(_DING_NOTES.sub(" ", s.split("; ")[0]).split()) for s in (d, e))
            if len(d.split()) >= min_words and len(e.split()) >= min_words + 1:
                yield e, d


def wordnet_examples(text: str) -> Iterator[str]:
    """The quoted usage examples in the glosses of a WordNet ``data.*`` file ("able to swim")."""
    for line in text.splitlines():
        if line.startswith(" ") or "|" not in line:
            continue
        for example in re.findall(r'"([^"]+)"', line.split("|", 1)[1]):
            if len(example.split()) >= 3:
                yield example.strip()


def word_sample(text: str, n: int, seed: int = 0) -> list[str]:
    """A seeded sample of ``n`` words of a word list (letters only, no possessives, 3+ letters), in list order."""
    words = [w for w in text.split("\n") if len(w) >= 3 and w.isalpha()]
    if len(words) > n:
        keep = np.sort(np.random.default_rng(seed).choice(len(words), n, replace=False))
        words = [words[i] for i in keep]
    return words


def _read_deb(deb: Path, wanted) -> Iterator[tuple[str, str]]:
    for name, data in deb_files(deb, wanted):
        yield name, data.decode("utf-8", errors="replace")


def build_everyday(out_dir: str | Path = "data/corpus/everyday", work_dir: str | Path = "data/debs",
                   words_per_lang: int = 20000, seed: int = 0, progress: bool = True) -> dict:
    """Write the everyday corpus (module docstring) to ``out_dir``; the .deb files are kept in
    ``work_dir``. Returns the summary: pairs per split and language, monolingual sentences per language."""
    out_dir, work_dir = Path(out_dir), Path(work_dir)
    summary = build_gettext(out_dir, packages=PARALLEL_PACKAGES, work_dir=work_dir, split_by="domain",
                            held_out=HELD_OUT, progress=progress)
    debs, missing = download_debs([DING, WORDNET, *FORTUNES, *WORDLISTS], work_dir, progress=progress)
    if missing:
        raise CorpusError(f"apt-get download failed for {', '.join(missing)}: is the apt cache up to date "
                          "(apt-get update)?")
    ding = [p for _, text in _read_deb(debs[DING], lambda n: n.endswith("/trans/de-en")) for p in ding_pairs(text)]
    from ..atomic import write_text_atomic

    write_text_atomic(out_dir / "train.ding.en-de.tsv", "".join(f"{e}\t{d}\n" for e, d in dict.fromkeys(ding)))
    extra: dict[str, list[str]] = {lang: [] for lang in ("en", "fr", "de", "es", "it")}
    for pkg, lang in FORTUNES.items():
        for _, text in _read_deb(debs[pkg], lambda n: "/fortunes" in n and "/off/" not in n
                                 and not n.endswith((".dat", ".u8")) and not n.endswith("/")):
            extra[lang].extend(fortune_cookies(text))
    for _, text in _read_deb(debs[WORDNET], lambda n: re.search(r"/wordnet/data\.(noun|verb|adj|adv)$", n)):
        extra["en"].extend(wordnet_examples(text))
    for pkg, lang in WORDLISTS.items():
        for _, text in _read_deb(debs[pkg], lambda n: "/share/dict/" in n and not n.endswith("/README.select-wordlist")):
            extra[lang].extend(word_sample(text, words_per_lang, seed))
    mono = build_mono(out_dir / "mono", [out_dir], extra=extra)
    summary = {"pairs": {s: summary[s] for s in ("train", "dev", "test")}, "ding_pairs": len(set(ding)),
               "extra_mono": {k: len(v) for k, v in extra.items()}, "mono": mono}
    if progress:
        log.info("everyday: mono sentences %s; Ding pairs %s", mono, f"{len(set(ding)):,}")
    return summary


__all__ = ["GAME_PACKAGES", "HELD_OUT", "PARALLEL_PACKAGES", "build_everyday", "ding_pairs", "fortune_cookies",
           "word_sample", "wordnet_examples"]
