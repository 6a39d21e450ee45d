"""Vectors: stored in DuckDB (the source of truth), searched through FAISS indexes (derived caches).

- Each partition holds `vectors (rid, tbl, model, embedding FLOAT[d])`; `main.meta` records the
  store's model and dimension. A model whose identity or dimension differs from the stored one is
  refused with a message that names `recallfs reindex`.
- One FAISS `IndexIDMap2(IndexFlatIP)` per (partition, table), keyed by rid, persisted under
  `<store>.faiss/` with a stamp (store uuid, model, epoch, count, max rid, and the file's sha256:
  query/faiss_files.py). A missing or stale index is rebuilt from DuckDB; rows appended since the
  stamp are added without a rebuild. A damaged file (checksum, size, unreadable, missing beside its
  stamp) is rebuilt too, logged as a warning and recorded (`VectorIndexes.repairs`, query/repairs.py).
- Searches are restricted to the rids the gate allows, through an IDSelectorBitmap over rids.
- Cosine (inner product of unit vectors) is reported as (1 + cos) / 2, in 0..1.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recallfs.query import faiss_files
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids, store_state
from recallfs.query.ivf_files import attach_lists
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.repairs import REPAIRS, Repair
from recallfs.query.store import Store
from recallfs.query.vector_meta import VECTORS, StoredModel, has_chunk_column, has_vectors_table, stored_model
from recallfs.query.window_index import Stamp, TableIndex, faiss_module, is_window_map

log = logging.getLogger("recallfs.vectors")

REPAIRS_KEPT = 20
BACKGROUND_SAMPLE = 512  # vectors sampled per partition for the query's background similarity
BACKGROUND_MIN = 32  # below this a partition has no meaningful background: only the cosine floor applies


# -- FAISS indexes ----------------------------------------------------------------------------------
_faiss = faiss_module


def cos01(inner: np.ndarray) -> np.ndarray:
    """Inner product of unit vectors (cosine, -1..1) mapped to 0..1."""
    out: np.ndarray = np.clip((np.asarray(inner, dtype=np.float32) + 1.0) / 2.0, 0.0, 1.0)
    return out


def index_dir(store: Store) -> Path:
    return Path(str(store.path) + ".faiss")


def current_stamp(cur: Cursor, schema: str, table: str, stored: StoredModel) -> Stamp:
    if has_vectors_table(cur, schema):
        row = cur.execute(
            f"SELECT count(*), coalesce(max(rid), 0) FROM {schema}.{VECTORS} WHERE tbl = ? AND model = ?",
            [table, stored.model],
        ).fetchone()
    else:
        row = (0, 0)
    assert row is not None
    return Stamp(stored.store_uuid, stored.model, stored.dim, stored.epoch, int(row[0]), int(row[1]))


def _load_vectors(
    cur: Cursor, schema: str, table: str, model: str, dim: int, above_rid: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    if not has_vectors_table(cur, schema):
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    # A store from before windows opened read-only (a mount) is not migrated: one vector per rid.
    order = "rid, chunk" if has_chunk_column(cur, schema) else "rid"
    res = cur.execute(
        f"SELECT rid, embedding FROM {schema}.{VECTORS} WHERE tbl = ? AND model = ? AND rid > ? ORDER BY {order}",
        [table, model, above_rid],
    ).fetchnumpy()
    rids = np.asarray(res["rid"], dtype=np.int64)
    if len(rids) == 0:
        return rids, np.zeros((0, dim), dtype=np.float32)
    return rids, np.ascontiguousarray(np.stack(list(res["embedding"])), dtype=np.float32)


class VectorIndexes:
    """The FAISS indexes of open stores, loaded from disk or rebuilt from DuckDB when stale."""

    def __init__(self, *, persist: bool = True, allowed_cache: int = 64) -> None:
        self.persist = persist
        self._lock = threading.Lock()
        self._indexes: dict[tuple[str, str, str], TableIndex] = {}
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
        with self._lock:
            entry = self._indexes.get(key)
        cur = store.cursor()
        if entry is not None and entry.checked == store_state(store) and entry.stamp.model == stored.model \
                and entry.stamp.epoch == stored.epoch and entry.stamp.store_uuid == stored.store_uuid:
            return entry
        stamp = current_stamp(cur, schema, table, stored)
        if entry is not None and entry.stamp == stamp:
            entry.checked = store_state(store)
            return entry
        if entry is not None and self._appendable(entry.stamp, stamp, cur, schema, table):
            rids, matrix = _load_vectors(cur, schema, table, stamp.model, stamp.dim, entry.stamp.max_rid)
            with entry.lock:
                entry.add(rids, matrix, stamp)
            entry.checked = store_state(store)
            self._save(store, schema, table, entry)
            self._attach_lists(store, schema, table, entry)
            return entry
        loaded, damage = self._load_saved(store, schema, table, stamp)
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
        base = self._paths(store, schema, table)[0].with_suffix("") if self.persist else None
        with entry.lock:
            damage = attach_lists(entry, base)
        if damage is not None:
            self._record(Repair("faiss", f"{_workspace_of(store, schema)} {table} inverted lists", damage))

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
        faiss = _faiss()
        rids, matrix = _load_vectors(store.cursor(), schema, table, stamp.model, stamp.dim)
        index = faiss.IndexFlatIP(stamp.dim)  # ids are window positions; `rids` maps them to rows
        if len(rids):
            index.add(matrix)
        entry = TableIndex(index, rids, stamp)
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

    def _paths(self, store: Store, schema: str, table: str) -> tuple[Path, Path, Path]:
        """The index, its stamp and its chunk map."""
        base = index_dir(store)
        return (base / f"{schema}.{table}.index", base / f"{schema}.{table}.stamp.json",
                base / f"{schema}.{table}.chunks.npy")

    def _load_saved(self, store: Store, schema: str, table: str, stamp: Stamp) -> tuple[TableIndex | None, str | None]:
        """(the persisted index, if it is the one for `stamp` and intact; else why it is damaged, if it is)."""
        if not self.persist:
            return None, None
        index_path, stamp_path, map_path = self._paths(store, schema, table)
        loaded = faiss_files.load(index_path, stamp_path, _stamp_dict(stamp), _faiss().read_index,
                                  map_path, _read_map)
        if loaded.unverified:
            log.info("rebuilding FAISS index %s: written without a checksum (an older recallfs)", index_path)
        if loaded.index is None:
            return None, loaded.damage
        index = loaded.index
        if int(index.ntotal) != stamp.count or int(index.d) != stamp.dim:
            return None, f"the index holds {int(index.ntotal)} {int(index.d)}-d vectors, its stamp says " \
                         f"{stamp.count} {stamp.dim}-d"
        if not is_window_map(loaded.chunk_map, stamp.count):
            return None, f"the chunk map does not fit the index's {stamp.count} vectors"
        return TableIndex(index, loaded.chunk_map, stamp), None

    def _save(self, store: Store, schema: str, table: str, entry: TableIndex) -> None:
        """Write the index, then its stamp with the file's checksum (query/faiss_files.py)."""
        if not self.persist:
            return
        index_path, stamp_path, map_path = self._paths(store, schema, table)
        written: dict[str, Any] = {}  # the stamp, filled while the index is written (save() reads it after)
        maps: list[np.ndarray] = []

        def write_index(tmp: str) -> None:
            with entry.lock:  # the stamp and chunk map that go with exactly the rows written
                _faiss().write_index(entry.cpu, tmp)
                written.update(_stamp_dict(entry.stamp))
                maps.append(entry.rids)  # add() replaces the array, never changes it

        def write_map(tmp: str) -> None:
            with open(tmp, "wb") as fh:
                np.save(fh, maps[0], allow_pickle=False)

        try:
            faiss_files.save(index_path, stamp_path, write_index, written, map_path, write_map)
        except (OSError, RuntimeError) as exc:  # a read-only directory: the index stays in memory
            log.warning("cannot persist FAISS index under %s: %s", index_path.parent, exc)

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
        readable = []
        for table, entry in zip(MEMORY_TABLES, entries, strict=True):
            readable.append(entry.positions_of(self.allowed_rids(store, schema, table, where, params)))
        total = sum(len(p) for p in readable)
        sample: np.ndarray | None = None
        if total >= BACKGROUND_MIN:
            picks = np.unique(np.linspace(0, total - 1, min(total, BACKGROUND_SAMPLE)).astype(np.int64))
            parts, start = [], 0
            for entry, positions in zip(entries, readable, strict=True):
                mine = picks[(picks >= start) & (picks < start + len(positions))] - start
                if len(mine):
                    parts.append(entry.vectors_at(positions[mine]))
                start += len(positions)
            sample = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
        self._background.put(key, (sample,))
        return sample

    # -- search ------------------------------------------------------------------------------------
    def stored_vectors(
        self, store: Store, schema: str, by_table: Mapping[str, Sequence[int]]
    ) -> dict[int, np.ndarray] | None:
        """The stored embeddings of these (authorized) rows, read from the in-memory indexes rather than
        DuckDB (where fetching a few hundred FLOAT[d] rows scans the whole vectors table). None when the
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
        stored = self.stored(store)
        if stored is None or not rids:
            return {}
        entry = self.index_for(store, schema, table, stored)
        if entry.ntotal == 0:
            return {}
        return entry.best_cosines(np.array(sorted(set(rids)), dtype=np.int64), qvec)

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


def _read_map(path: str) -> np.ndarray:
    with open(path, "rb") as fh:  # a /proc/self/fd path has no .npy suffix for np.load to add
        out: np.ndarray = np.load(fh, allow_pickle=False)
    return out


def _stamp_dict(stamp: Stamp) -> dict[str, Any]:
    return {name: getattr(stamp, name) for name in Stamp.__dataclass_fields__}


def _workspace_of(store: Store, schema: str) -> str:
    row = store.cursor().execute(
        "SELECT org || '/' || workspace FROM main.partitions WHERE schema_name = ?", [schema]).fetchone()
    return str(row[0]) if row else schema


_SHARED_INDEXES = VectorIndexes()


def shared_indexes() -> VectorIndexes:
    return _SHARED_INDEXES


def ensure_indexes(store: Store, indexes: VectorIndexes | None = None) -> int:
    """Bring every (partition, table) index up to date (built and persisted if stale). Returns how many."""
    indexes = indexes or shared_indexes()
    cur = store.cursor()
    stored = stored_model(cur)
    if stored is None:
        return 0
    count = 0
    for (schema,) in cur.execute("SELECT schema_name FROM main.partitions ORDER BY 1").fetchall():
        for table in MEMORY_TABLES:
            indexes.index_for(store, str(schema), table, stored)
            count += 1
    return count
