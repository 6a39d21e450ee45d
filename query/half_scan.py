"""A half-precision copy of a large flat index, scanned first: the exact top k for half the bytes.

A flat scan of float32 vectors is memory-bound: 65k turns x 384 dimensions is 100 MB read per query,
3.7 ms on one core of the development machine, and a hybrid recall scans every table at once, so two
scans share the memory bus. The same vectors in float16 are half the bytes (2.4 ms alone).

Exact all the same. Each float16 component is within 2^-11 of its float32 value (relative), so for unit
vectors the scanned inner product is within HALF_ERROR of the true one (Cauchy-Schwarz), with margin
for float rounding. The scan keeps a shortlist larger than k; its members are rescored exactly from
the float32 index; and the answer is taken only when the k-th exact score beats the shortlist's cut-off
by more than HALF_ERROR, which proves that no window left out could have ranked. Otherwise the
shortlist widens, and past a quarter of the index the caller scans the float32 index itself.

Only tables of HALF_SCAN_MIN windows or more get the copy (smaller ones scan in well under a
millisecond), so small partitions, the eval stores among them, search exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

HALF_SCAN_MIN = 20_000
HALF_ERROR = 1e-3  # bound on |float16 inner product - float32 inner product| for unit vectors: 2^-11 + rounding
_WIDEST = 0.25  # past this share of the index a shortlist saves nothing over the float32 scan


class HalfScan:
    """The float16 copy of a flat inner-product index, in the same window positions."""

    def __init__(self, faiss: Any, dim: int) -> None:
        self._faiss = faiss
        self.index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def add(self, matrix: np.ndarray) -> None:
        if len(matrix):
            self.index.add(np.ascontiguousarray(matrix, dtype=np.float32))

    def search(self, q: np.ndarray, k: int, sel: Any) -> tuple[np.ndarray, np.ndarray]:
        """(approximate scores, positions) of the best k selected windows, best first."""
        scores, pos = self.index.search(q, k, params=self._faiss.SearchParameters(sel=sel))
        keep = pos[0] >= 0
        return scores[0][keep], pos[0][keep]


def exact_top(
    half: HalfScan, q: np.ndarray, k: int, sel: Any, exact: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """(positions, exact inner products) of the k best selected windows, best first (ties by position),
    the same set a float32 scan finds; None when proving it would take a shortlist wider than _WIDEST
    of the index (the caller then scans float32). `exact(positions)` gives the float32 inner products."""
    total = half.ntotal
    want = min(total, max(2 * k, k + 64))
    while True:
        approx, positions = half.search(q, want, sel)
        scores = exact(positions)
        order = np.lexsort((positions, -scores))
        if len(positions) < want or proven(approx, scores[order], k):
            return positions[order][:k], scores[order][:k]
        if want >= total or want > _WIDEST * total:
            return None
        want = min(total, 4 * want)


def proven(approx: np.ndarray, exact_sorted: np.ndarray, k: int) -> bool:
    """Whether a full shortlist surely holds the exact top k: every window left out scanned at or below
    the shortlist's lowest approximate score, so its exact score is at most that plus HALF_ERROR, which
    must fall below the k-th best exact score found."""
    if len(exact_sorted) < k:
        return False
    return float(approx.min()) + HALF_ERROR < float(exact_sorted[k - 1])
