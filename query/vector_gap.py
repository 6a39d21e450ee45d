"""Readable rows the semantic arm cannot see, because they have no vector yet.

An ingest embeds after its commit, in batches of their own transactions, so one killed (or out of
power) between its commit and its last batch leaves a table part-embedded; an ingest run while the
model was missing leaves its rows without any. The lexical arm still finds those rows, but hybrid
recall would look whole while the semantic arm searched only part of the scope. So each search counts
the readable rows its table's index lacks (cached per store generation, scope and index), and recall
adds a note naming them and what embeds them: the next ingest, `recallfs reindex`, or a mount, which
embeds them at start (mount/vector_backlog.py). Only readable rows are counted, so the note tells a
principal nothing about memories it may not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.derived import allowed_rids, by_table_generation, table_state
from recallfs.query.store import Store
from recallfs.query.window_index import TableIndex


@dataclass(frozen=True, slots=True)
class VectorGap:
    missing: int  # readable rows of the table with no vector from the stored model
    readable: int  # readable rows of the table (in the recall's scope)


_GAPS: LruCache[tuple[Any, ...], VectorGap] = LruCache(256, generation=by_table_generation)


def vector_gap(store: Store, schema: str, table: str, where: str, params: list[object],
               index: TableIndex) -> VectorGap:
    """How many of the rows this scope may read in `table` the index has no vector for."""
    def compute() -> VectorGap:
        allowed = allowed_rids(store, schema, table, where, params)
        embedded = index.embedded_rids()
        if len(allowed) == 0:
            return VectorGap(0, 0)
        pos = np.minimum(np.searchsorted(embedded, allowed), max(len(embedded) - 1, 0))
        held = embedded[pos] == allowed if len(embedded) else np.zeros(len(allowed), dtype=bool)
        return VectorGap(int(len(allowed) - np.count_nonzero(held)), len(allowed))

    key = (str(store.path), *table_state(store, schema, table), schema, table, where, repr(params), index.ntotal)
    return _GAPS.get_or_compute(key, compute)


def gap_note(gaps: Mapping[str, VectorGap]) -> str | None:
    """The recall note for the tables with readable rows the semantic arm cannot see; None when none."""
    parts = [f"{g.missing:,} of {g.readable:,} {table}" for table, g in sorted(gaps.items()) if g.missing]
    if not parts:
        return None
    # A mount's own writes show here for the moment between their commit and their embedding (found by a
    # soak: 11 of 299 recalls beside a writer said so), so the common cause comes first, not damage.
    return (f"the semantic arm cannot see {', '.join(parts)}: they have no vectors yet (a write still being "
            "embedded, or an ingest or a `recallfs reindex` that stopped before embedding them or ran while "
            "the model was missing), so only the lexical arm finds them; a mount embeds them in parts (after "
            "a write, and at start), and on an unmounted store the next ingest or `recallfs reindex` does")
