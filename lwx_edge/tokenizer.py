"""SentencePiece BPE tokenizer: training and encoding (docs/METHOD.md §2). Torch-free.

Layout of every lwx-edge tokenizer model: ``pad`` = 0, ``unk`` = 1, ``<mask>`` = 2 (a CONTROL symbol, so
the literal text "<mask>" typed by a user is never encoded as id 2), no BOS/EOS, no CLS/SEP.
Text is normalised with :func:`lwx_edge.text.normalize` (NFKC, ASCII quotes, lowercase) before both
training and encoding.
"""
from __future__ import annotations

import hashlib
import io
import os
import random
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import sentencepiece as spm

from .atomic import atomic_file
from .errors import InputError, LwxError
from .text import blank, normalize

# Up to this many texts are encoded one call each: SentencePiece's list call runs a thread pool, which costs
# more than it saves below about 16 texts (65 µs against 5 µs for one short text; equal at 32). On one thread
# (``Tokenizer(threads=1)``) every text is its own call: as fast as a one-thread list call (11.2-11.7 against
# 12.0-12.1 µs per app text here) without starting a thread each time.
_ONE_BY_ONE = 16

__all__ = [
    "PAD_ID", "UNK_ID", "MASK_ID", "MASK_PIECE", "NON_MASKABLE_STRINGS",
    "Encoded", "Tokenizer", "train_tokenizer",
]

PAD_ID, UNK_ID, MASK_ID = 0, 1, 2
MASK_PIECE = "<mask>"

# docs/METHOD.md §3.1 / [R] dataset.py: SMLM never masks a piece that decodes to one of these (or to a bare space).
NON_MASKABLE_STRINGS = frozenset(
    [".", "?", "!", ",", '"', ":", ";", "<", ">", "-", "+", "=", "_", "'", "%", "&", "#", "@", "*",
     "(", ")", "~", "`", " "])

_TOO_HIGH = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")


# --------------------------------------------------------------------------------------------- training

def _collect(texts: Iterable[str], max_sentences: int, seed: int, progress: bool) -> tuple[list[str], int]:
    """Normalise texts, drop empty ones, reservoir-sample at most ``max_sentences`` (deterministic for a
    fixed input order and seed), then shuffle deterministically. Returns (sentences, number seen)."""
    from tqdm import tqdm

    if isinstance(texts, (str, bytes)):
        raise InputError("train_tokenizer expects an iterable of strings, got a single str")
    if max_sentences < 1:
        raise InputError(f"max_sentences must be >= 1, got {max_sentences}")
    rng = random.Random(seed)
    kept: list[str] = []
    seen = 0
    for i, text in enumerate(tqdm(texts, desc="tokenizer corpus", unit="sent", disable=not progress)):
        if not isinstance(text, str):
            raise InputError(f"tokenizer training text {i} is {type(text).__name__}, expected str")
        t = normalize(text, lower=True)
        if not t:
            continue
        if len(kept) < max_sentences:
            kept.append(t)
        else:  # reservoir sampling (Algorithm R)
            j = rng.randint(0, seen)
            if j < max_sentences:
                kept[j] = t
        seen += 1
    rng.shuffle(kept)
    return kept, seen


def _sp_train(sentences: list[str], vocab_size: int, model_type: str, character_coverage: float,
              seed: int, progress: bool, hard_vocab_limit: bool) -> bytes:
    buf = io.BytesIO()
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(seed)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        pad_id=PAD_ID, unk_id=UNK_ID, bos_id=-1, eos_id=-1,
        pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=[MASK_PIECE],
        # we sample and shuffle ourselves; SentencePiece must see every sentence, in our order
        input_sentence_size=0, shuffle_input_sentence=False,
        hard_vocab_limit=hard_vocab_limit,
        minloglevel=0 if progress else 2,
    )
    return buf.getvalue()


def train_tokenizer(texts: Iterable[str], out_path: str | os.PathLike, vocab_size: int = 16000,
                    model_type: str = "bpe", character_coverage: float = 0.9999,
                    max_sentences: int = 2_000_000, seed: int = 0, progress: bool = True,
                    strict_vocab: bool = False) -> Path:
    """Train a SentencePiece model on raw ``texts`` and write it atomically to ``out_path`` (a ``.model``).

    Texts are normalised (lowercased) first; empty ones are dropped. If there are more than
    ``max_sentences`` texts a deterministic reservoir sample (``seed``) is used. The result is
    deterministic for a fixed input.

    If the corpus is too small to learn ``vocab_size`` pieces, SentencePiece refuses; then, by default,
    training is retried with a soft limit and a warning names the smaller vocabulary actually learned.
    With ``strict_vocab=True`` an :class:`InputError` is raised instead.
    """
    out_path = Path(out_path)
    if not isinstance(vocab_size, int) or vocab_size < 4:
        raise InputError(f"vocab_size must be an integer >= 4, got {vocab_size!r}")
    if model_type not in ("bpe", "unigram", "char", "word"):
        raise InputError(f"model_type must be one of bpe, unigram, char, word; got {model_type!r}")
    sentences, seen = _collect(texts, max_sentences, seed, progress)
    if not sentences:
        raise InputError("cannot train a tokenizer: the corpus has no non-empty text")
    try:
        data = _sp_train(sentences, vocab_size, model_type, character_coverage, seed, progress, True)
    except RuntimeError as e:
        m = _TOO_HIGH.search(str(e))
        if not m:
            raise LwxError(f"SentencePiece training failed: {e}") from None
        limit = int(m.group(2))
        if strict_vocab:
            raise InputError(
                f"the tokenizer corpus ({len(sentences)} sentences) is too small for a vocabulary of "
                f"{vocab_size} pieces: at most {limit} can be learned. Use a smaller --vocab-size "
                f"(<= {limit}) or a larger corpus.") from None
        try:
            data = _sp_train(sentences, vocab_size, model_type, character_coverage, seed, progress, False)
        except RuntimeError as e2:
            raise LwxError(f"SentencePiece training failed: {e2}") from None
        got = spm.SentencePieceProcessor(model_proto=data).get_piece_size()
        warnings.warn(
            f"the tokenizer corpus ({len(sentences)} sentences) is too small for a vocabulary of "
            f"{vocab_size} pieces; learned {got} instead. Pass a smaller --vocab-size to silence this.",
            stacklevel=2)
    _check_layout(spm.SentencePieceProcessor(model_proto=data), "<trained model>")
    with atomic_file(out_path) as tmp:
        tmp.write_bytes(data)
    return out_path


# --------------------------------------------------------------------------------------------- encoding

@dataclass
class Encoded:
    """Result of :meth:`Tokenizer.encode`."""
    ids: list[list[int]]                                        # token ids per text (after truncation)
    truncated: list[int] = field(default_factory=list)          # indices of the inputs cut at max_len
    lengths_before: list[int] = field(default_factory=list)     # token counts before truncation
    empty: list[int] = field(default_factory=list)              # indices of the inputs with nothing to embed


def _check_layout(sp: spm.SentencePieceProcessor, where: str) -> None:
    problems = []
    if sp.pad_id() != PAD_ID:
        problems.append(f"pad id is {sp.pad_id()}, expected {PAD_ID}")
    if sp.unk_id() != UNK_ID:
        problems.append(f"unk id is {sp.unk_id()}, expected {UNK_ID}")
    if sp.get_piece_size() <= MASK_ID or sp.id_to_piece(MASK_ID) != MASK_PIECE or not sp.is_control(MASK_ID):
        problems.append(f"id {MASK_ID} is not the control symbol {MASK_PIECE!r}")
    if sp.bos_id() != -1 or sp.eos_id() != -1:
        problems.append("BOS/EOS must be disabled")
    if problems:
        raise InputError(f"{where} is a SentencePiece model but not an lwx-edge tokenizer: " + "; ".join(problems))


class Tokenizer:
    """Loads a trained SentencePiece model; encodes normalised text to ids (head kept at ``max_len``)."""

    def __init__(self, model_path: str | os.PathLike, max_len: int = 200, lower: bool = True,
                 threads: int | None = None):
        self.model_path = Path(model_path)
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise InputError(f"max_len must be a positive integer, got {max_len!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InputError(f"threads must be a positive integer or None, got {threads!r}")
        self.max_len = max_len
        self.threads = threads  # of SentencePiece's list call (None: one per hardware thread, its default)
        self.lower = bool(lower)
        try:
            data = self.model_path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"tokenizer model not found: {self.model_path}") from None
        except IsADirectoryError:
            raise InputError(f"tokenizer model path is a directory, not a SentencePiece model: "
                             f"{self.model_path}") from None
        except OSError as e:
            raise InputError(f"cannot read tokenizer model {self.model_path}: {e}") from None
        self._load(data)

    def _load(self, data: bytes) -> None:
        self._bytes = data
        sp = spm.SentencePieceProcessor()
        try:
            if not data:
                raise RuntimeError("empty file")
            sp.load_from_serialized_proto(data)
            n = sp.get_piece_size()
        except Exception:  # sentencepiece raises RuntimeError/OSError/TypeError depending on the damage
            raise InputError(f"{self.model_path} is not a SentencePiece model (corrupt or wrong file)") from None
        if n <= MASK_ID:
            raise InputError(f"{self.model_path} is not a SentencePiece model (corrupt or wrong file)")
        _check_layout(sp, str(self.model_path))
        self._sp = sp
        self._maskable: np.ndarray | None = None

    # Picklable (DataLoader workers with spawn): ship the model bytes, rebuild the processor.
    def __getstate__(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "max_len": self.max_len, "lower": self.lower, "bytes": self._bytes,
                "threads": self.threads}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.model_path, self.max_len, self.lower = state["model_path"], state["max_len"], state["lower"]
        self.threads = state.get("threads")
        self._load(state["bytes"])

    def __copy__(self) -> "Tokenizer":
        """A copy with its own ``max_len`` that shares the (read-only) SentencePiece processor."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __repr__(self) -> str:
        return f"Tokenizer({str(self.model_path)!r}, vocab_size={self.vocab_size}, max_len={self.max_len})"

    @property
    def vocab_size(self) -> int:
        return self._sp.get_piece_size()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self._bytes).hexdigest()

    @property
    def sp(self) -> spm.SentencePieceProcessor:
        """The underlying SentencePiece processor (no normalisation/truncation applied by it)."""
        return self._sp

    # ---------------------------------------------------------------- encode
    def _normalize_all(self, texts: Sequence[str], empty: str = "raise",
                       prefix: str = "") -> tuple[list[str], list[int]]:
        """(normalised texts, indices of those with nothing to embed). With ``empty="keep"`` such a text
        becomes "" and is listed; with "raise" it is an ``InputError`` naming it. A non-string always is."""
        if isinstance(texts, str):
            raise InputError("expected a list of strings, got str")
        if not isinstance(texts, (list, tuple)):
            raise InputError(f"expected a list of strings, got {type(texts).__name__}")
        if len(texts) == 0:
            raise InputError("expected a non-empty list of strings, got an empty list")
        if empty not in ("raise", "keep"):
            raise InputError(f"empty must be 'raise' or 'keep', got {empty!r}")
        if not isinstance(prefix, str):
            raise InputError(f"prefix must be a string, got {type(prefix).__name__}")
        out, empties = [], []
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text {i} is {type(t).__name__}, expected str")
            n = normalize(t, self.lower)
            why = blank(n)
            if why is not None:
                if empty == "raise":
                    raise InputError(f"text {i} is empty or whitespace-only" if not n else
                                     f"text {i} has no tokens after normalisation ({why})")
                empties.append(i)
                n = ""
            elif prefix:  # the text decides whether there is anything to embed, not its prompt
                n = normalize(prefix + t, self.lower)
            out.append(n)
        return out, empties

    def check(self, texts: Sequence[str], empty: str = "raise") -> None:
        """Raise ``InputError`` for a text ``encode`` would refuse (not a str; empty, unless ``empty="keep"``),
        tokenizing nothing."""
        self._normalize_all(texts, empty)

    def encode(self, texts: Sequence[str], empty: str = "raise", prefix: str = "") -> Encoded:
        """Normalise each text and encode it; texts longer than ``max_len`` tokens keep their head.

        A text with nothing to embed (empty, whitespace, only control or invisible characters, or no
        tokens) is an ``InputError`` naming its index with ``empty="raise"``; with ``empty="keep"`` its row
        of ids is empty and its index is listed in ``Encoded.empty`` (a non-string is always an error).
        ``prefix`` (a prompt such as "query: ") is prepended to every text that has something to embed; its
        tokens count towards ``max_len``."""
        norm, empties = self._normalize_all(texts, empty, prefix)
        part = [n for n in norm if n] if empties else norm  # SentencePiece sees only texts with something
        try:
            if len(part) <= _ONE_BY_ONE or self.threads == 1:  # one thread: a list call's pool buys nothing
                got = [self._sp.encode(t, out_type=int) for t in part]
            else:
                pool: dict[str, Any] = {"num_threads": self.threads} if self.threads else {}
                got = self._sp.encode(part, out_type=int, **pool)
        except (TypeError, UnicodeError, RuntimeError):  # a list call raises TypeError, one text RuntimeError
            _raise_on_invalid_unicode(norm)
            raise
        if empties:
            rows = iter(got)
            got = [next(rows) if n else [] for n in norm]
        ids, truncated, before, known = [], [], [], set(empties)
        for i, row in enumerate(got):
            if not row and i not in known:
                if empty == "raise":
                    raise InputError(f"text {i} has no tokens after normalisation")
                empties.append(i)
            before.append(len(row))
            if len(row) > self.max_len:
                truncated.append(i)
                row = row[: self.max_len]
            ids.append(list(row))
        return Encoded(ids=ids, truncated=truncated, lengths_before=before, empty=sorted(empties))

    def encode_one(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise InputError(f"expected a string, got {type(text).__name__}")
        return self.encode([text]).ids[0]

    def decode(self, ids: Sequence[int]) -> str:
        return self._sp.decode([int(i) for i in ids])

    # ---------------------------------------------------------------- batches
    @staticmethod
    def pad(batch: Sequence[Sequence[int]], pad_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Right-pad with PAD_ID. Returns (ids int64 [n, T], attention_mask int64 [n, T]),
        T = ``pad_to`` or the longest row."""
        if len(batch) == 0:
            raise InputError("cannot pad an empty batch")
        lengths = [len(r) for r in batch]
        longest = max(lengths)
        if pad_to is None:
            T = longest
        else:
            if pad_to < longest:
                raise InputError(f"pad_to={pad_to} is shorter than the longest row ({longest} tokens)")
            T = pad_to
        ids = np.full((len(batch), T), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(batch), T), dtype=np.int64)
        for i, (row, n) in enumerate(zip(batch, lengths)):
            if n:
                ids[i, :n] = np.asarray(row, dtype=np.int64)
                mask[i, :n] = 1
        return ids, mask

    # ---------------------------------------------------------------- vocabulary
    def id_to_piece(self, i: int) -> str:
        i = int(i)
        if not 0 <= i < self.vocab_size:
            raise InputError(f"token id {i} is outside the vocabulary [0, {self.vocab_size})")
        return self._sp.id_to_piece(i)

    def piece_to_id(self, p: str) -> int:
        """Id of piece ``p``; UNK_ID if it is not in the vocabulary."""
        return self._sp.piece_to_id(p)

    def is_maskable(self) -> np.ndarray:
        """bool [vocab]: ids SMLM may mask (docs/METHOD.md §3.1). Excludes pad/unk/<mask> and every piece that
        decodes to a punctuation character of the reference list or to a bare space. A lone "▁" piece
        decodes to "" and stays maskable."""
        if self._maskable is None:
            m = np.ones(self.vocab_size, dtype=bool)
            for i in range(self.vocab_size):
                if self._sp.is_control(i) or self._sp.is_unknown(i) or i in (PAD_ID, UNK_ID, MASK_ID):
                    m[i] = False
                    continue
                s = self._sp.decode([i])
                if s in NON_MASKABLE_STRINGS or (s != "" and s.isspace()):
                    m[i] = False
            m.flags.writeable = False
            self._maskable = m
        return self._maskable


def _raise_on_invalid_unicode(texts: Sequence[str]) -> None:
    """Name the first text that cannot be UTF-8 encoded (lone surrogates, e.g. from undecodable bytes)."""
    for i, t in enumerate(texts):
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InputError(f"text {i} is not valid Unicode (a lone surrogate at character {e.start}; "
                             "decode its bytes with errors='replace')") from None
