"""The ranking columns (rows.LIGHT_COLUMNS) of every row of a table, held in memory per open store.

Recall reads these columns for every candidate, some 300-600 rows per query. DuckDB fetches rows by
rid column by column (about 7 ms for 500 rids at 100k memories, most of a lexical recall's load), and
the per-row LRU in query/rows.py only helps when queries meet the same rows again. Memory rows are
immutable (a change is a new row, with a higher rid), so a table's columns can be read once, in one
scan, and extended with the rows above the highest rid read so far when newer rids are asked for.

Held as columns (Python lists beside a sorted numpy array of rids), with repeated strings (kind,
session, tags) shared: about 35 MB at 100k memories, against some 80 MB as per-row tuples. Tables
above HOT_MAX_ROWS are not held; their rows take the per-row path.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.derived import store_state
from recallfs.query.shared_values import shared as shared_value
from recallfs.query.store import Store

HOT_MAX_ROWS = 250_000  # per table: above it, the table's rows are loaded per recall (query/rows.py)
# All tables held together (every open store and partition): past it the least recently used table
# goes, so a process that opens many stores or serves many workspaces stays bounded (~100 MB).
HOT_TOTAL_ROWS = 300_000


@dataclass(frozen=True, slots=True)
class _Columns:
    """One table's rows up to `upto`, each column aligned with `rids` (sorted)."""

    rids: np.ndarray
    values: tuple[list[Any], ...]  # one list per column after rid, in the order asked for
    upto: int


class HotRows:
    """Columns of every row, per (open store, schema, table); thread-safe, replaced whole when extended."""

    def __init__(self, columns: tuple[str, ...], max_rows: int = HOT_MAX_ROWS,
                 total_rows: int = HOT_TOTAL_ROWS) -> None:
        assert columns[0] == "rid"
        self.columns = columns
        self.max_rows = max_rows
        self.total_rows = total_rows
        self._lock = threading.Lock()
        # least recently used first; None: too large to hold
        self._tables: OrderedDict[tuple[int, str, str], _Columns | None] = OrderedDict()

    def lookup(self, store: Store, schema: str, table: str, rids: Iterable[int]) -> tuple[dict[int, tuple[Any, ...]],
                                                                                        list[int]]:
        """({rid: values in `columns` order} of the rids held, the rids not held (absent, or in a table
        too large to hold): the caller loads those itself)."""
        wanted = np.fromiter((int(r) for r in rids), dtype=np.int64)
        if not len(wanted):
            return {}, []
        cols = self._current(store, schema, table, int(wanted.max()))
        if cols is None:
            return {}, wanted.tolist()
        pos = np.searchsorted(cols.rids, wanted)
        pos[pos >= len(cols.rids)] = 0
        held = cols.rids[pos] == wanted if len(cols.rids) else np.zeros(len(wanted), dtype=bool)
        rids_held, at = wanted[held].tolist(), pos[held].tolist()
        # column by column (one C-level gather each), then zipped: 0.09 ms for 500 rows where a tuple
        # built element by element per row took 0.29
        gather = operator.itemgetter(*at) if len(at) > 1 else (lambda col: (col[at[0]],) if at else ())
        columns = [gather(col) for col in cols.values]
        found = dict(zip(rids_held, zip(rids_held, *columns, strict=True), strict=True))
        return found, wanted[~held].tolist()

    def _current(self, store: Store, schema: str, table: str, top: int) -> _Columns | None:
        key = (store_state(store)[0], schema, table)
        with self._lock:
            cols = self._tables.get(key, _UNREAD)
            if key in self._tables:
                self._tables.move_to_end(key)
        if cols is None or (isinstance(cols, _Columns) and cols.upto >= top):
            return cols
        with self._lock:  # one reader extends; the others wait for it rather than scan as well
            cols = self._tables.get(key, _UNREAD)
            if cols is None or (isinstance(cols, _Columns) and cols.upto >= top):
                return cols
            cols = self._extended(store, schema, table, cols if isinstance(cols, _Columns) else None)
            self._tables[key] = cols
            self._tables.move_to_end(key)
            self._evict(keep=key)
            return cols

    def _evict(self, keep: tuple[int, str, str]) -> None:
        """Drop the least recently used tables until the rows held fit total_rows (never `keep`)."""
        held = sum(len(c.rids) for c in self._tables.values() if c is not None)
        for key in list(self._tables):
            if held <= self.total_rows:
                return
            cols = self._tables[key]
            if key != keep and cols is not None:
                del self._tables[key]
                held -= len(cols.rids)

    def tables_held(self) -> int:
        with self._lock:
            return sum(1 for c in self._tables.values() if c is not None)

    def _extended(self, store: Store, schema: str, table: str, old: _Columns | None) -> _Columns | None:
        cur = store.cursor()
        after = old.upto if old is not None else -1
        if old is None:
            row = cur.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()
            if row is None or int(row[0]) > self.max_rows:
                return None
        rows = cur.execute(f"SELECT {', '.join(self.columns)} FROM {schema}.{table} WHERE rid > ? ORDER BY rid",
                           [after]).fetchall()
        if old is not None and len(old.rids) + len(rows) > self.max_rows:
            return None
        shared: dict[Any, Any] = {}
        fresh = [[_share(shared, row[i]) for row in rows] for i in range(1, len(self.columns))]
        rids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        upto = int(rids[-1]) if len(rids) else after
        if old is None:
            return _Columns(rids, tuple(fresh), max(upto, 0))
        return _Columns(np.concatenate([old.rids, rids]), tuple(o + f for o, f in zip(old.values, fresh, strict=True)),
                        upto)


_UNREAD = object()


def _share(shared: dict[Any, Any], value: Any) -> Any:
    """One object for repeated short values (kind, session, a tag list): rows repeat them thousands of
    times. Long text (content, ids) is kept as it is."""
    if isinstance(value, list):
        value = tuple(value)
        return shared.setdefault(("tags", value), value)
    if isinstance(value, str) and len(value) <= 64:
        return shared_value(value)  # the catalog's object for it too (query/shared_values.py)
    return value
