"""The background a query's cosines are compared with: an evenly spread sample of the vectors of the
rows a caller may read, across every table (query/vectors.VectorIndexes.background caches it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recallfs.query.window_index import TableIndex

BACKGROUND_SAMPLE = 512  # vectors sampled per partition for the query's background similarity
BACKGROUND_MIN = 32  # below this a partition has no meaningful background: only the cosine floor applies


def spread_sample(entries: Sequence[TableIndex], readable: Sequence[np.ndarray]) -> np.ndarray | None:
    """Up to BACKGROUND_SAMPLE vectors picked evenly over the readable rows of every table in turn
    (`readable[i]`: first-window positions in `entries[i]`), or None below BACKGROUND_MIN rows."""
    total = sum(len(p) for p in readable)
    if total < BACKGROUND_MIN:
        return None
    picks = np.unique(np.linspace(0, total - 1, min(total, BACKGROUND_SAMPLE)).astype(np.int64))
    parts, start = [], 0
    for entry, positions in zip(entries, readable, strict=True):
        mine = picks[(picks >= start) & (picks < start + len(positions))] - start
        if len(mine):
            parts.append(entry.vectors_at(positions[mine]))
        start += len(positions)
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
