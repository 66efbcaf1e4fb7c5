"""The integer first pass of :class:`lwx_edge.Index`'s exact search (torch-free, onnxruntime only).

Scoring every stored int8 row in float32 means converting every byte to a float on every query; that
conversion, not the dot products, is what costs (18 ms for 100k rows at one thread). Here the rows stay
int8: onnxruntime's integer GEMM (``int8_scan.onnx``, one MatMulInteger node) multiplies them, as constants
it packed once, by the query quantized to int8. The integer scores only pick candidates; the caller rescores
those in float32, so the hits are the float search's (:meth:`Int8Scan.candidates` says why none can be
missed). Memory: onnxruntime keeps each block twice (its copy and the packed form), about 2.5x the rows.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

TEMPLATE = Path(__file__).with_name("int8_scan.onnx")
DIM, BLOCK_ROWS = 512, 16384  # the template's shape (tools/make_int8_scan.py)
_EPS = 1e-4                   # slack for float32 rounding of the scores compared


class Int8Scan:
    """Stored int8 rows (``row ≈ scale · int8``) in blocks of ``BLOCK_ROWS``, each an onnxruntime session
    holding its block as a pre-packed constant. Rows can be appended; anything else means a new scan."""

    def __init__(self, rows: np.ndarray, scale: np.ndarray):
        self._template = TEMPLATE.read_bytes()
        self._sessions: list = []
        self._tail = np.empty((0, DIM), dtype=np.int8)  # the rows of the last, partly filled block
        self._scale = np.empty(0, dtype=np.float32)
        self.max_norm = 0.0  # the largest ‖scale · int8‖ of a stored row
        self.extend(rows, scale)

    @staticmethod
    def fits(rows: np.ndarray) -> bool:
        """Whether rows of this shape can be scanned (the template's dimension)."""
        return rows.ndim == 2 and rows.shape[1] == DIM

    def __len__(self) -> int:
        return len(self._scale)

    def extend(self, rows: np.ndarray, scale: np.ndarray) -> None:
        """Append rows: only the last, partly filled block and the new ones are (re)built."""
        import onnxruntime as ort

        rows, scale = np.asarray(rows, dtype=np.int8), np.asarray(scale, dtype=np.float32)
        if len(rows):
            norms = scale * np.linalg.norm(rows.astype(np.float32), axis=1)
            self.max_norm = max(self.max_norm, float(norms.max()))
        start = len(self) - len(self._tail)  # the first row of the block to rebuild
        pending = np.concatenate([self._tail, rows])
        self._scale = np.concatenate([self._scale, scale])
        del self._sessions[start // BLOCK_ROWS:]
        for s in range(0, len(pending), BLOCK_ROWS):
            part = pending[s:s + BLOCK_ROWS]
            block = np.zeros((DIM, BLOCK_ROWS), dtype=np.int8)  # transposed; padding rows score 0
            for t in range(0, len(part), 256):  # in tiles that stay in cache: 6x faster than one .T copy
                tile = part[t:t + 256]
                block[:, t:t + len(tile)] = tile.T
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            opts.add_external_initializers(["B"], [ort.OrtValue.ortvalue_from_numpy(block)])
            self._sessions.append(ort.InferenceSession(self._template, opts, providers=["CPUExecutionProvider"]))
        self._tail = pending[len(pending) - len(pending) % BLOCK_ROWS:].copy()

    def scores(self, q8: np.ndarray) -> np.ndarray:
        """int32 [m, n]: every stored int8 row against int8 queries ``q8`` [m, DIM], exactly."""
        a = (q8.astype(np.int16) + 128).astype(np.uint8)
        out = np.concatenate([s.run(None, {"A": a})[0] for s in self._sessions], axis=1)
        return out[:, :len(self)]

    def candidates(self, qv: np.ndarray, q8: np.ndarray, qs: np.ndarray, k: int,
                   keep: np.ndarray | None = None) -> list[np.ndarray]:
        """Per unit query of ``qv`` [m, DIM], quantized as ``qv ≈ qs · q8`` (one scale per query), the
        positions (ascending) of the rows that can be among the ``k`` best by float score; with ``keep`` (a
        boolean mask over the rows) positions count the kept rows only. The int8 query q̃ = qs·q8 differs
        from q by r = q − q̃, so each row x's approximate score a = q̃·x is within δ = ‖r‖·max‖x‖ of its float
        score. If T is the k-th best a, k rows score at least T − δ, so every row of the float top k (ties
        included) has a ≥ T − 2δ: that is the candidate set."""
        ints = self.scores(q8)
        delta = np.linalg.norm(qv - q8.astype(np.float32) * qs[:, None], axis=1) * self.max_norm + _EPS
        scale = self._scale if keep is None else self._scale[keep]
        out = []
        for n in range(len(qv)):
            approx = (ints[n] if keep is None else ints[n, keep]).astype(np.float32)
            approx *= scale
            approx *= qs[n]
            if len(approx) <= k:
                out.append(np.arange(len(approx)))
                continue
            kth = np.partition(approx, len(approx) - k)[len(approx) - k]
            out.append(np.flatnonzero(approx >= kth - 2 * delta[n]))
        return out
