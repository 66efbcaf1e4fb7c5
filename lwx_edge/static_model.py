"""A static-embedding model distilled from an encoder the way Model2Vec does it: the reference users weigh
against a transformer (one table lookup per piece, no attention).

Every vocabulary piece is embedded alone by the encoder (a one-token text), the vectors are reduced by PCA and
weighted by Zipf's law (``log(1 + rank)``: SentencePiece numbers its pieces roughly by frequency, so frequent
pieces weigh less); a text is the mean of its pieces' rows. ``lwx-edge eval --refs static`` scores the one
distilled from the first bundle it evaluates, in the same run as the others. Nothing here is shipped.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .tokenizer import MASK_ID, PAD_ID, UNK_ID

if TYPE_CHECKING:
    from .encoder import Encoder
    from .tokenizer import Tokenizer


class StaticModel:
    """``table[i]``: the static vector of piece ``i``; ``embed`` averages a text's rows (L2-normalised)."""

    def __init__(self, table: np.ndarray, tokenizer: Tokenizer):
        self.table, self.tokenizer = table, tokenizer

    @classmethod
    def distil(cls, encoder: Encoder, dims: int = 256, batch: int = 4096) -> StaticModel:
        """The static model of ``encoder``: its pieces' vectors, PCA to ``dims``, Zipf weights."""
        from sklearn.decomposition import PCA

        n = encoder.tokenizer.vocab_size
        ids = np.arange(n, dtype=np.int64)[:, None]
        ones = np.ones_like(ids)
        raw = np.concatenate([np.asarray(encoder.backend.run(ids[s:s + batch], ones[s:s + batch]), np.float32)
                              for s in range(0, n, batch)])
        table = PCA(n_components=min(dims, raw.shape[1]), random_state=0).fit_transform(raw).astype(np.float32)
        table *= np.log1p(np.arange(n, dtype=np.float32))[:, None]
        table[[PAD_ID, UNK_ID, MASK_ID]] = 0.0  # special pieces carry no meaning of their own
        return cls(table, encoder.tokenizer)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 [n, dims]: the mean of each text's piece rows, L2-normalised (zeros for a text with none)."""
        out = np.zeros((len(texts), self.table.shape[1]), np.float32)
        for i, ids in enumerate(self.tokenizer.encode(list(texts), empty="keep").ids):
            if len(ids):
                out[i] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
