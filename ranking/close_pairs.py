"""The candidate pairs whose embeddings are at least a threshold similar: the near-duplicate collapse's
first test (ranking/collapse.py), found with one banded product over the candidates' unit vectors.

At some 500 candidates the product is most of the collapse stage (about 3 ms of 5 at 100k memories).
Finding it on a worker beside the stages before collapse was tried and gained nothing: those stages
are pure Python and keep the GIL, so the worker could start only when collapse waited for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from recallfs.ranking.similarity import Vector, common_dim

_BAND = 64  # rows per product: smaller bands waste less above the diagonal, larger ones call BLAS less


def lower_pairs(unit: npt.NDArray[np.float32], threshold: float) -> tuple[npt.NDArray[np.intp], ...]:
    """(rows, cols) of every pair with col < row and cosine >= threshold, in row-major order (each row's
    earlier columns ascending: the order seeds are made in). Only the lower triangle is wanted, so each
    band of rows is multiplied by the columns up to its last row: about half the full product's work."""
    rows: list[npt.NDArray[np.intp]] = []
    cols: list[npt.NDArray[np.intp]] = []
    for start in range(0, len(unit), _BAND):
        stop = min(start + _BAND, len(unit))
        r, c = np.nonzero(unit[start:stop] @ unit[:stop].T >= threshold)
        below = c < r + start  # the diagonal and the band's upper corner are not earlier candidates
        rows.append(r[below] + start)
        cols.append(c[below])
    return np.concatenate(rows), np.concatenate(cols)


def usable_rows(
    rids: Sequence[int], vectors: Mapping[int, Vector] | None
) -> tuple[list[int], npt.NDArray[np.float32]]:
    """(indexes of the rids with a usable vector, those vectors stacked as float32 rows):
    similarity.usable's test (the common dimension, every value finite), made on one matrix rather
    than vector by vector."""
    dim = common_dim(vectors)
    empty = np.zeros((0, 0), dtype=np.float32)
    if not vectors or dim is None:
        return [], empty
    index, rows = [], []
    for i, rid in enumerate(rids):
        vec = vectors.get(rid)
        if vec is None:
            continue
        arr = vec if isinstance(vec, np.ndarray) else np.asarray(vec, dtype=np.float32)
        if arr.size == dim:
            index.append(i)
            rows.append(arr.reshape(dim))
    if not rows:
        return [], empty
    matrix = np.stack(rows).astype(np.float32, copy=False)
    finite = np.asarray(np.isfinite(matrix).all(axis=1))
    if finite.all():
        return index, matrix
    oks: list[bool] = finite.tolist()
    return [i for i, ok in zip(index, oks, strict=True) if ok], matrix[finite]
