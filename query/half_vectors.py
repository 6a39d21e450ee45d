"""How a vector is stored: float16, its bits held in DuckDB as SMALLINT[d] and in the vectors file as
`<f2`.

Why float16: at a million memories the vectors were 1.5 GB twice over (the store, the source of truth,
and the file a recall reads), most of the store and index on disk (issue 15). MiniLM's vectors are
unit length; float16 keeps 11 bits of each coordinate, so a stored vector moves by at most 2^-11 of
each coordinate and a cosine by ~1e-5 (7e-5 at most on 200 random queries against 100k rows; 197 of
200 top-10 lists unchanged). DuckDB has no float16 type, so the bits go in a SMALLINT: the same two
bytes, read back exactly. Query vectors stay float32; every product is taken in float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HALF_SQL = "SMALLINT"  # the DuckDB element type of a stored vector (its float16 bits)
HALF = np.dtype("<f2")


def half_bits(matrix: np.ndarray) -> np.ndarray:
    """Rows of float vectors -> their float16 bits as int16 (what DuckDB stores), shape kept."""
    return np.ascontiguousarray(np.asarray(matrix, dtype=np.float32).astype(HALF).view(np.int16))


def rounded(matrix: np.ndarray) -> np.ndarray:
    """The float32 values a vector has once stored (rounded to float16 and back)."""
    return np.asarray(matrix, dtype=np.float32).astype(HALF).astype(np.float32)


def from_stored(values: Sequence[np.ndarray] | np.ndarray, dim: int, *, half: bool) -> np.ndarray:
    """Stored vectors (DuckDB's per-row arrays, SMALLINT bits or, in a store not yet migrated, FLOAT)
    -> a float32 matrix (n, dim)."""
    if len(values) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    stacked = np.stack(list(values))
    if stacked.ndim != 2 or stacked.shape[1] != dim:
        raise ValueError(f"stored vectors of shape {stacked.shape}, expected (n, {dim})")
    if half:
        return np.ascontiguousarray(stacked.astype(np.int16).view(HALF).astype(np.float32))
    return np.ascontiguousarray(stacked, dtype=np.float32)
