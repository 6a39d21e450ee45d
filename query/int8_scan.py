"""An int8 copy of a large flat index, scanned first: the exact top k for a quarter of the bytes.

A flat scan of float32 vectors is memory-bound: 65k turns x 384 dimensions is 100 MB read per query,
and a hybrid recall scans every table at once, so the scans share the memory bus. The same vectors as
signed bytes are a quarter of that, and FAISS scans them with integer dot products, the query
quantised too (60k windows: 0.9 ms against 2.5 ms in float16 and 4.8 ms in float32, one core of the
development machine).

Exact all the same. Each window is stored as x^ = round(x * s) / s, one scale s per copy, and the
copy keeps the largest residual ||x - x^|| and the largest ||x^|| of any window it holds; the query
is quantised as q^ = round(q * t) / t with its own scale. The scanned score q^.x^ differs from q.x by
q.(x - x^) + (q - q^).x^, so by Cauchy-Schwarz by at most ||q|| * residual + ||q - q^|| * norm: the
copy's `error(q)`. The integer sums are exact. The scan keeps a shortlist larger than k (3k); its members
are rescored exactly from the float32 index; and the answer is taken only when the k-th exact score
beats the shortlist's cut-off by more than that error, which proves that no window left out could
have ranked. Otherwise the shortlist widens, and past a quarter of the index the caller scans the
float32 index itself.

Only tables of INT8_SCAN_MIN windows or more get the copy (smaller ones scan in well under a
millisecond), so small partitions, the eval stores among them, search exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

INT8_SCAN_MIN = 20_000
# float32 rounding in the exact rescoring and the float32 scan it stands for (~2e-5 at most for 384
# dimensions), with margin; the scan's integer sums are exact
ROUNDING = 1e-4
_LEVELS = 127.0  # codes in [-127, 127]: symmetric, so a window and its negation quantise alike
_DECODE_CHUNK = 8192  # windows decoded at once when measuring residuals (bounds the temporary copy)
_WIDEST = 0.25  # past this share of the index a shortlist saves nothing over the float32 scan


class Int8Scan:
    """The int8 copy of a flat inner-product index, in the same window positions. `scale` is fixed
    by the first vectors added: later ones beyond its range are clipped, which only widens the
    residual (and so the error bound), never breaks it."""

    def __init__(self, faiss: Any, dim: int) -> None:
        self._faiss = faiss
        self.index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit_direct_signed,
                                                faiss.METRIC_INNER_PRODUCT)
        self.scale = 0.0  # set by the first add
        self.residual = 0.0  # the largest ||x - code / scale|| of any window held
        self.norm = 0.0  # the largest ||code / scale|| of any window held

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def add(self, matrix: np.ndarray) -> None:
        if not len(matrix):
            return
        x = np.asarray(matrix, dtype=np.float32)
        if self.scale == 0.0:
            peak = max(float(np.abs(x[at: at + _DECODE_CHUNK]).max()) for at in range(0, len(x), _DECODE_CHUNK))
            self.scale = _LEVELS / peak if peak > 0 else 1.0
        start = self.ntotal
        # round here: FAISS's encoder truncates, and the residual is measured on what it holds anyway;
        # a block at a time (the whole of a large table at once took several times its size in temporaries)
        for at in range(0, len(x), _DECODE_CHUNK):
            self.index.add(np.clip(np.rint(x[at: at + _DECODE_CHUNK] * self.scale), -_LEVELS, _LEVELS))
        for at in range(0, len(x), _DECODE_CHUNK):
            part = x[at: at + _DECODE_CHUNK]
            held = self.index.reconstruct_n(start + at, len(part)) / self.scale
            self.residual = max(self.residual, float(np.linalg.norm(part - held, axis=1).max()))
            self.norm = max(self.norm, float(np.linalg.norm(held, axis=1).max()))

    def error(self, q: np.ndarray) -> float:
        """The most a scanned inner product with `q` can differ from the float32 one."""
        codes, scale = quantised(q)
        off = float(np.linalg.norm(q - codes / scale))
        return float(np.linalg.norm(q)) * self.residual + off * self.norm + ROUNDING

    def search(self, q: np.ndarray, k: int, sel: Any) -> tuple[np.ndarray, np.ndarray]:
        """(approximate scores, positions) of the best k selected windows, best first."""
        codes, scale = quantised(q)
        scores, pos = self.index.search(codes, k, params=self._faiss.SearchParameters(sel=sel))
        keep = pos[0] >= 0
        return scores[0][keep] / (scale * self.scale), pos[0][keep]


def quantised(q: np.ndarray) -> tuple[np.ndarray, float]:
    """(integer codes as float32, scale) of a query: FAISS quantises the query of an int8 index itself,
    by truncation, so it is given codes it keeps as they are."""
    peak = float(np.abs(q).max())
    scale = _LEVELS / peak if peak > 0 else 1.0
    return np.clip(np.rint(q * scale), -_LEVELS, _LEVELS).astype(np.float32), scale


def exact_top(
    coarse: Int8Scan, q: np.ndarray, k: int, sel: Any, exact: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """(positions, exact inner products) of the k best selected windows, best first (ties by position),
    the same set a float32 scan finds; None when proving it would take a shortlist wider than _WIDEST
    of the index (the caller then scans float32). `exact(positions)` gives the float32 inner products."""
    total = coarse.ntotal
    error = coarse.error(q)
    # 3k: the widths proofs needed on the bench stores (k = 100: p90 170-230, max 405 where many rows
    # share a vector); a second scan costs more than a wider first one
    want = min(total, max(3 * k, k + 128))
    while True:
        approx, positions = coarse.search(q, want, sel)
        scores = exact(positions)
        order = np.lexsort((positions, -scores))
        if len(positions) < want or proven(approx, scores[order], k, error):
            return positions[order][:k], scores[order][:k]
        if want >= total or want > _WIDEST * total:
            return None
        want = min(total, 4 * want)


def proven(approx: np.ndarray, exact_sorted: np.ndarray, k: int, error: float) -> bool:
    """Whether a full shortlist surely holds the exact top k: every window left out scanned at or below
    the shortlist's lowest approximate score, so its exact score is at most that plus `error`, which
    must fall below the k-th best exact score found."""
    if len(exact_sorted) < k:
        return False
    return float(approx.min()) + error < float(exact_sorted[k - 1])
