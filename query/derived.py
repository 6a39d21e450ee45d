"""Caches derived from an open store, each valid for one (store object, generation).

A long-lived daemon answers many recalls between two ingests; recomputing what only an ingest can change
(which rows a principal may read, an FTS index's postings) on every request would dominate recall
latency at 100k memories. Every entry is keyed on `store_state`, so the first request after a commit
recomputes it.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Hashable
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.store import Store

__all__ = ["allowed_rids", "store_state", "table_state"]

_STORE_TOKENS: weakref.WeakKeyDictionary[Store, int] = weakref.WeakKeyDictionary()
_NEXT_TOKEN = itertools.count(1)
_TOKEN_LOCK = threading.Lock()


def store_state(store: Store) -> tuple[int, int]:
    """(token, generation): what a cache entry derived from this open store is valid for. The token is
    unique per Store object (unlike id(), never reused), because a store reopened after another process
    wrote to it starts again at generation 0."""
    with _TOKEN_LOCK:
        token = _STORE_TOKENS.get(store)
        if token is None:
            token = _STORE_TOKENS[store] = next(_NEXT_TOKEN)
    return token, store.generation


def by_generation(key: tuple[Any, ...]) -> tuple[Hashable, int]:
    """LruCache's `generation` for keys that start `(str(store.path), *store_state(store), ...)`."""
    return (key[0], key[1]), int(key[2])


def table_state(store: Store, schema: str, table: str) -> tuple[int, int]:
    """(token, generation) as `store_state`, for what derives from `schema.table` alone: the generation
    of the last commit that touched that table (Store.table_generation), so that a write elsewhere
    leaves it valid."""
    return store_state(store)[0], store.table_generation(schema, table)


def by_table_generation(key: tuple[Any, ...]) -> tuple[Hashable, int]:
    """LruCache's `generation` for keys that start `(str(store.path), *table_state(store, schema, table),
    schema, table, ...)`: each table's entries are superseded by its own newer generation only."""
    return (key[0], key[1], key[3], key[4]), int(key[2])


_ALLOWED: LruCache[tuple[Any, ...], np.ndarray] = LruCache(128, generation=by_table_generation)


def allowed_rids(store: Store, schema: str, table: str, where: str, params: list[object]) -> np.ndarray:
    """The sorted rids of `schema.table` that satisfy `where` (the gate's scope clause over alias `m`).
    Both arms restrict their search to these before ranking, so a filter never empties a top-k."""
    def compute() -> np.ndarray:
        res = store.cursor().execute(f"SELECT m.rid FROM {schema}.{table} m WHERE {where}", params).fetchnumpy()
        rids = np.sort(np.asarray(res["rid"], dtype=np.int64))
        rids.setflags(write=False)  # shared between threads and callers
        return rids

    # The clause reads this table's rows and heads, and the policies (a commit that may change those
    # touches every table): a write to another table leaves the answer as it was.
    key = (str(store.path), *table_state(store, schema, table), schema, table, where, repr(params))
    return _ALLOWED.get_or_compute(key, compute)
