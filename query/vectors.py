"""Vectors: stored in DuckDB (the source of truth), searched through FAISS indexes (derived caches).

- Each partition holds `vectors (rid, chunk, tbl, model, embedding SMALLINT[d])` (float16 bits:
  query/half_vectors.py); `main.meta` records the
  store's model and dimension. A model whose identity or dimension differs from the stored one is
  refused with a message that names `recallfs reindex`.
- One flat FAISS index of windows per (partition, table) (query/window_index.py), persisted under
  `<store>.faiss/` with its chunk map and a stamp (store uuid, model, epoch, count, max rid, and the
  files' sha256: query/index_files.py, query/faiss_files.py). A missing or stale index is rebuilt from
  DuckDB; rows appended since the stamp are added without a rebuild. A damaged file (checksum, size,
  unreadable, missing beside its stamp) is rebuilt too, logged as a warning and recorded
  (`VectorIndexes.repairs`, query/repairs.py).
- A table of 20,000 windows or more also gets inverted lists (query/ivf_lists.py), kept beside it
  (query/ivf_files.py).
- Searches are restricted to the rids the gate allows (query/window_index.TableIndex.search).
- Cosine (inner product of unit vectors) is reported as (1 + cos) / 2, in 0..1.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from recallfs.query.background_sample import spread_sample
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids, store_state
from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.index_files import index_dir, load_index, save_index
from recallfs.query.ivf_files import attach_lists
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.repairs import REPAIRS, Repair
from recallfs.query.store import Store
from recallfs.query.vector_meta import VECTORS, StoredModel, stored_model
from recallfs.query.vector_rows import current_stamp, load_vectors
from recallfs.query.window_index import NO_WINDOWS, RowWindows, Stamp, TableIndex

__all__ = ["VectorIndexes", "cos01", "current_stamp", "ensure_indexes", "index_dir", "shared_indexes"]

log = logging.getLogger("recallfs.vectors")

REPAIRS_KEPT = 20


# -- FAISS indexes ----------------------------------------------------------------------------------
def cos01(inner: np.ndarray) -> np.ndarray:
    """Inner product of unit vectors (cosine, -1..1) mapped to 0..1."""
    out: np.ndarray = np.clip((np.asarray(inner, dtype=np.float32) + 1.0) / 2.0, 0.0, 1.0)
    return out


# An index extended by an ingest is written again only while its file is small, or once the windows it
# holds beyond its file pass a share of it: writing the whole file (and its checksum) after every small
# ingest took 0.47 s of the first recall after an inbox/ write at 100k memories, under the table's lock.
# A file that lags is extended from DuckDB when it is loaded (`_refresh`), as one another process saved.
SAVE_SMALL_BYTES = 16 << 20
SAVE_TAIL_SHARE = 0.05


def save_due(saved: int, ntotal: int, dim: int) -> bool:
    """Whether an index of `ntotal` windows, `saved` of them in its file, should be written now."""
    tail = ntotal - saved
    if tail <= 0:
        return False
    return ntotal * dim * 4 <= SAVE_SMALL_BYTES or tail > SAVE_TAIL_SHARE * saved


class VectorIndexes:
    """The FAISS indexes of open stores, loaded from disk or rebuilt from DuckDB when stale."""

    def __init__(self, *, persist: bool = True, allowed_cache: int = 64) -> None:
        self.persist = persist
        self._lock = threading.Lock()
        self._indexes: dict[tuple[str, str, str], TableIndex] = {}
        self._loading: dict[tuple[str, str, str], threading.Lock] = {}  # one loader per table index
        # (sample,): a sample may be None (too few rows), which the cache cannot hold on its own
        self._background: LruCache[tuple[Any, ...], tuple[np.ndarray | None]] = LruCache(allowed_cache)
        self._stored: dict[tuple[Any, ...], StoredModel | None] = {}
        self.rebuilds = 0  # full builds from DuckDB (tests read this)
        self.repairs: list[Repair] = []  # damaged index files this object found and rebuilt (the latest)

    # -- index life cycle --------------------------------------------------------------------------
    def stored(self, store: Store) -> StoredModel | None:
        """stored_model(), read once per store generation (the meta only changes with the store)."""
        key = (str(store.path), *store_state(store))
        with self._lock:
            if key in self._stored:
                return self._stored[key]
        value = stored_model(store.cursor())
        with self._lock:
            self._stored = {key: value}
        return value

    def index_for(self, store: Store, schema: str, table: str, stored: StoredModel) -> TableIndex:
        key = (str(store.path), schema, table)
        entry = self._current(key, store, stored)
        if entry is not None:
            return entry
        with self._lock:
            loading = self._loading.setdefault(key, threading.Lock())
        # One thread loads or extends a table's index; the others wait for it rather than load a second
        # copy (at 1M windows, 1.5 GB and seconds each).
        with loading:
            return self._current(key, store, stored) or self._refresh(key, store, schema, table, stored)

    def _current(self, key: tuple[str, str, str], store: Store, stored: StoredModel) -> TableIndex | None:
        """The index held for `key`, when it was checked against this store generation and model."""
        with self._lock:
            entry = self._indexes.get(key)
        if entry is not None and entry.checked == store_state(store) and entry.stamp.model == stored.model \
                and entry.stamp.epoch == stored.epoch and entry.stamp.store_uuid == stored.store_uuid:
            return entry
        return None

    def _refresh(self, key: tuple[str, str, str], store: Store, schema: str, table: str,
                 stored: StoredModel) -> TableIndex:
        """Bring the index for `key` up to the store: as it is, extended by appended rows, loaded from
        disk, or built (a damaged file is rebuilt and recorded)."""
        with self._lock:
            entry = self._indexes.get(key)
        cur = store.cursor()
        stamp = current_stamp(cur, schema, table, stored)
        if entry is not None and entry.stamp == stamp:
            entry.checked = store_state(store)
            return entry
        if entry is not None and self._appendable(entry.stamp, stamp, cur, schema, table):
            self._extend(store, schema, table, entry, stamp)
            entry.checked = store_state(store)
            self._attach_lists(store, schema, table, entry)
            return entry
        loaded, damage = load_index(store, schema, table, stamp) if self.persist else (None, None)
        if loaded is not None:
            loaded.saved = loaded.ntotal
        if loaded is not None and loaded.stamp != stamp:  # saved before rows another process added
            if self._appendable(loaded.stamp, stamp, cur, schema, table):
                self._extend(store, schema, table, loaded, stamp)
            else:
                loaded = None
        if loaded is not None:
            entry = loaded
        elif damage is not None:
            entry = self._repair(store, schema, table, stamp, damage)
        else:
            entry = self._build(store, schema, table, stamp)
        self._attach_lists(store, schema, table, entry)
        entry.checked = store_state(store)
        with self._lock:
            self._indexes[key] = entry
        return entry

    def _attach_lists(self, store: Store, schema: str, table: str, entry: TableIndex) -> None:
        """A large table's inverted lists, loaded, extended or trained (query/ivf_files.py)."""
        base = index_dir(store) / f"{schema}.{table}" if self.persist else None
        with entry.lock:
            damage = attach_lists(entry, base)
        if damage is not None:
            self._record(Repair("faiss", f"{_workspace_of(store, schema)} {table} inverted lists", damage))

    def _extend(self, store: Store, schema: str, table: str, entry: TableIndex, stamp: Stamp) -> None:
        """Add the windows of rows above the entry's highest rid; save it when save_due says so."""
        rids, matrix = load_vectors(store.cursor(), schema, table, stamp.model, stamp.dim, entry.stamp.max_rid)
        with entry.lock:
            entry.add(rids, matrix, stamp)
        if save_due(entry.saved, entry.ntotal, stamp.dim):
            self._save(store, schema, table, entry)

    @staticmethod
    def _appendable(old: Stamp, new: Stamp, cur: Cursor, schema: str, table: str) -> bool:
        """Only rows above the old watermark were added: extend the index instead of rebuilding it."""
        if (old.store_uuid, old.model, old.dim, old.epoch) != (new.store_uuid, new.model, new.dim, new.epoch):
            return False
        if new.count <= old.count or new.max_rid <= old.max_rid:
            return False
        row = cur.execute(
            f"SELECT count(*) FROM {schema}.{VECTORS} WHERE tbl = ? AND model = ? AND rid > ?",
            [table, new.model, old.max_rid],
        ).fetchone()
        return row is not None and old.count + int(row[0]) == new.count

    def _build(self, store: Store, schema: str, table: str, stamp: Stamp) -> TableIndex:
        rids, matrix = load_vectors(store.cursor(), schema, table, stamp.model, stamp.dim)
        # positions are window positions; `rids` maps them to rows
        entry = TableIndex(FlatVectors.in_memory(matrix.reshape(-1, stamp.dim)), rids, stamp)
        self.rebuilds += 1
        log.info("built FAISS index %s.%s: %d vectors", schema, table, len(rids))
        self._save(store, schema, table, entry)
        return entry

    def _repair(self, store: Store, schema: str, table: str, stamp: Stamp, damage: str) -> TableIndex:
        """Rebuild a damaged index from the vectors in DuckDB (the source of truth), and say so. A rebuild
        that fails is recorded and raised: the semantic arm then degrades rather than answer without it."""
        what = f"{_workspace_of(store, schema)} {table}"
        try:
            entry = self._build(store, schema, table, stamp)
        except Exception as exc:
            log.error("the FAISS index of %s is damaged (%s) and could not be rebuilt: %s", what, damage, exc)
            self._record(Repair("faiss", what, f"{damage}; rebuild failed: {exc}", ok=False))
            raise
        log.warning("the FAISS index of %s was damaged (%s); rebuilt from the %d vectors in the store",
                    what, damage, entry.ntotal)
        self._record(Repair("faiss", what, damage))
        return entry

    def _record(self, repair: Repair) -> None:
        with self._lock:
            self.repairs.append(repair)
            del self.repairs[:-REPAIRS_KEPT]
        REPAIRS.record(repair)

    def _save(self, store: Store, schema: str, table: str, entry: TableIndex) -> None:
        if self.persist:
            count = entry.ntotal
            save_index(store, schema, table, entry)
            entry.saved = count

    # -- background --------------------------------------------------------------------------------
    def background(
        self, store: Store, schema: str, stored: StoredModel, where: str, params: list[object]
    ) -> np.ndarray | None:
        """An evenly spread sample of the vectors of the rows this caller may read (all tables), or
        None when they are too few for similarity statistics to mean anything.

        The semantic arm compares a neighbour's cosine with the query's cosines to this sample: one
        that does not stand out from the background is not a match. Drawn from authorized rows only,
        so rows the caller cannot read do not even shift a threshold.
        """
        entries = [self.index_for(store, schema, table, stored) for table in MEMORY_TABLES]
        key = (str(store.path), *store_state(store), schema, where, repr(params),
               tuple(e.stamp for e in entries))
        cached = self._background.get(key)
        if cached is not None:
            return cached[0]
        readable = [entry.positions_of(self.allowed_rids(store, schema, table, where, params))
                    for table, entry in zip(MEMORY_TABLES, entries, strict=True)]
        sample = spread_sample(entries, readable)
        self._background.put(key, (sample,))
        return sample

    # -- search ------------------------------------------------------------------------------------
    def stored_vectors(
        self, store: Store, schema: str, by_table: Mapping[str, Sequence[int]]
    ) -> dict[int, np.ndarray] | None:
        """The stored embeddings of these (authorized) rows, read from the in-memory indexes rather than
        DuckDB (where fetching a few hundred vectors by rid scans the whole vectors table). None when the
        store has no vectors; rows without one are absent from the result."""
        stored = self.stored(store)
        if stored is None:
            return None
        out: dict[int, np.ndarray] = {}
        for table, rids in by_table.items():
            if not rids:
                continue
            entry = self.index_for(store, schema, table, stored)
            if entry.ntotal == 0:
                continue
            found, matrix = entry.vectors_of(np.array(sorted(set(rids)), dtype=np.int64))
            out.update(zip(found.tolist(), matrix, strict=True))
        return out

    def best_cosines(
        self, store: Store, schema: str, table: str, rids: Sequence[int], qvec: np.ndarray
    ) -> dict[int, float]:
        """The query's cosine to the best window of each of these (authorized) rows: a long row is as
        close to the query as its closest part. Rows without a vector are absent."""
        return self.row_windows(store, schema, table, rids).best(qvec)

    def row_windows(self, store: Store, schema: str, table: str, rids: Sequence[int]) -> RowWindows:
        """The window vectors of these (authorized) rows, for best_cosines once the query vector is known."""
        stored = self.stored(store)
        if stored is None or not rids:
            return NO_WINDOWS
        entry = self.index_for(store, schema, table, stored)
        if entry.ntotal == 0:
            return NO_WINDOWS
        return entry.row_windows(np.array(sorted(set(rids)), dtype=np.int64))

    def allowed_rids(
        self, store: Store, schema: str, table: str, where: str, params: list[object]
    ) -> np.ndarray:
        """The rids the gate lets this caller read, sorted; cached per store generation (query/derived.py)."""
        return allowed_rids(store, schema, table, where, params)

    def search(
        self,
        store: Store,
        schema: str,
        table: str,
        qvec: np.ndarray,
        *,
        where: str,
        params: list[object],
        limit: int,
        stored: StoredModel,
        exact: bool = False,
    ) -> tuple[list[tuple[int, float]], str]:
        """([(rid, cos01)] of the `limit` nearest rows the caller may read, best first; which path found
        them: query/window_index.TableIndex.search). `exact`: never the inverted lists."""
        entry = self.index_for(store, schema, table, stored)
        if entry.ntotal == 0:
            return [], "empty"
        allowed = self.allowed_rids(store, schema, table, where, params)
        with entry.lock:
            rids, inner, path = entry.search(qvec, allowed, limit, exact=exact)
        return list(zip((int(r) for r in rids), (float(s) for s in cos01(inner)), strict=True)), path


def _workspace_of(store: Store, schema: str) -> str:
    row = store.cursor().execute(
        "SELECT org || '/' || workspace FROM main.partitions WHERE schema_name = ?", [schema]).fetchone()
    return str(row[0]) if row else schema


_SHARED_INDEXES = VectorIndexes()


def shared_indexes() -> VectorIndexes:
    return _SHARED_INDEXES


def ensure_indexes(store: Store, indexes: VectorIndexes | None = None, *, schemas: Sequence[str] | None = None) -> int:
    """Bring every (partition, table) index up to date (built and persisted if stale), or those of
    `schemas`. Returns how many."""
    indexes = indexes or shared_indexes()
    cur = store.cursor()
    stored = stored_model(cur)
    if stored is None:
        return 0
    count = 0
    every = [str(row[0]) for row in cur.execute("SELECT schema_name FROM main.partitions ORDER BY 1").fetchall()]
    for schema in every if schemas is None else [s for s in every if s in schemas]:
        for table in MEMORY_TABLES:
            indexes.index_for(store, str(schema), table, stored)
            count += 1
    return count
