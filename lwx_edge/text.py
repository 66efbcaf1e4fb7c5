"""Text normalisation shared by the corpus, the tokenizer and the runtime (torch-free)."""
from __future__ import annotations

import re
import unicodedata

LANGUAGES = ("en", "fr", "de", "es", "it")
# The name of the rules ``normalize`` applies. A bundle records it (config.json ``tokenizer.normalization``) and
# is refused by an lwx-edge that applies other rules: rename it whenever the rules change.
RULES = "nfkc"

_TYPOGRAPHIC = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2039": "'", "\u203a": "'", "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2026": "...",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u22c5": " ", "\u2010": "-", "\u2011": "-",
})
_SPACES = re.compile(r"\s+")
# What is left of a text that has nothing to embed: control, format (zero-width, BOM) and separator characters
# (SentencePieceBpe.java agrees).
_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def normalize(text: str, lower: bool = True) -> str:
    """NFKC, typographic quotes and dashes to ASCII, collapsed whitespace, lowercase (docs/METHOD.md §2)."""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC)
    text = _SPACES.sub(" ", text).strip()
    return text.lower() if lower else text


def blank(normalized: str) -> str | None:
    """Why a :func:`normalize`-d text has nothing to embed, or None when it has some: ``"empty or
    whitespace-only"`` or ``"only control or invisible characters"`` (NUL, zero-width space, BOM...)."""
    if not normalized:
        return "empty or whitespace-only"
    if all(unicodedata.category(c) in _INVISIBLE for c in normalized):
        return "only control or invisible characters"
    return None
