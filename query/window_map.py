"""The chunk map of a table's vector index: which row each window belongs to, and the stamp saying what
an index was built from. Pure helpers over numpy arrays (query/window_index.py holds the index).

Windows go in ordered by (rid, chunk) and only higher rids are appended, so the map is non-decreasing
and a row's windows sit next to one another, its first window first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

LAYOUT = "windows-1"  # in the stamp: index files written before windows (ids were rids) are stale


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a persisted index was built from; any difference means stale. `count` counts windows."""

    store_uuid: str
    model: str
    dim: int
    epoch: int
    count: int
    max_rid: int
    layout: str = LAYOUT


def rid_bitmap(rids: np.ndarray) -> np.ndarray:
    """Bit r set for every r in `rids` (little-endian within bytes), as faiss.IDSelectorBitmap reads it."""
    bits = np.zeros(int(rids.max()) + 1 if len(rids) else 1, dtype=bool)
    bits[rids] = True
    return np.packbits(bits, bitorder="little")


def window_mask(window_rids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """For each window position, whether its row is in `allowed` (sorted rids)."""
    if len(window_rids) == 0 or len(allowed) == 0:
        return np.zeros(len(window_rids), dtype=bool)
    size = int(max(window_rids.max(), allowed.max())) + 1
    rows = np.zeros(size, dtype=bool)
    rows[allowed] = True
    out: np.ndarray = rows[window_rids]
    return out


def best_per_row(rids: np.ndarray, scores: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Max-pool windows into rows: (rids, scores) of the first `limit` distinct rows of a best-first
    list of windows, each with its best window's score."""
    _, first = np.unique(rids, return_index=True)
    keep = np.sort(first)[:limit]  # a row's first appearance in a best-first list is its best window
    return rids[keep], scores[keep]


def is_window_map(rids: Any, count: int) -> TypeGuard[np.ndarray]:
    """A chunk map that can belong to an index of `count` windows: int64, that long, non-decreasing."""
    return (isinstance(rids, np.ndarray) and rids.dtype == np.int64 and rids.ndim == 1
            and len(rids) == count and bool(np.all(rids[1:] >= rids[:-1])))
