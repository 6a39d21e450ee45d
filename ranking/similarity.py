"""Cosine similarity over stored embeddings, and a word-overlap fallback when there are none."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from recallfs.ranking.text import words

Vector = npt.NDArray[np.floating]


def unit_rows(vectors: Sequence[Vector]) -> npt.NDArray[np.float32]:
    """Stack vectors into a matrix of unit rows; a zero vector stays zero (similar to nothing)."""
    return unit(np.asarray(np.stack([np.asarray(v, dtype=np.float32).ravel() for v in vectors]), dtype=np.float32))


def unit(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row of `matrix` scaled to unit length; a zero row stays zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = matrix / norms
    return out


def cosine_to(query: Vector, vectors: Sequence[Vector]) -> npt.NDArray[np.float32]:
    """Cosine of `query` against each vector."""
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    q = unit_rows([query])[0]
    cosines: npt.NDArray[np.float32] = unit_rows(vectors) @ q
    return cosines


def usable(vectors: Mapping[int, Vector] | None, rid: int, dim: int | None) -> Vector | None:
    """The vector for `rid` when present, finite and of the expected dimension."""
    if not vectors:
        return None
    vec = vectors.get(rid)
    if vec is None:
        return None
    arr = np.asarray(vec, dtype=np.float32).ravel()
    if (dim is not None and arr.shape[0] != dim) or not np.all(np.isfinite(arr)):
        return None
    return arr


def common_dim(vectors: Mapping[int, Vector] | None) -> int | None:
    """The dimension most vectors share (a stray vector of another size is then ignored)."""
    if not vectors:
        return None
    counts: dict[int, int] = {}
    for vec in vectors.values():
        size = int(np.asarray(vec).size)
        counts[size] = counts.get(size, 0) + 1
    return max(counts.items(), key=lambda item: (item[1], item[0]))[0]


def jaccard(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    """Word-set overlap: the similarity used when a candidate has no embedding."""
    wa = a if isinstance(a, frozenset) else frozenset(words(a))
    wb = b if isinstance(b, frozenset) else frozenset(words(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)
