"""Whether each table's full-text index covers its rows, and rebuilding the ones that do not.

The FTS index does not see inserts: an ingest commits its rows, then rebuilds the index of the tables it
wrote in a second transaction (query/ingest_file.py). A large table's index is rebuilt only once the rows
above it pass a share of it (query/fts_delta.needs_rebuild): until then the lexical arm scores them with
BM25 from an in-memory delta. A process killed between the two transactions leaves rows above the
watermark too; they are served the same way, and a rebuild is due only under the same rule.
`main.fts_state` records the highest rid each index covers, so a behind index costs one cheap count
per table to find.

Every open for writing rebuilds what is behind: the mount daemon at start, every ingest (an unchanged
re-ingest included) and `recallfs reindex`, each saying what it repaired (a warning in the log, and
query/repairs.py for health reports). A read-only recall cannot rebuild; it says so in a note.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb

from recallfs.query.caches import LruCache
from recallfs.query.derived import by_generation, store_state
from recallfs.query.fts_delta import needs_rebuild
from recallfs.query.lexical import build_fts, fts_schema
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.repairs import REPAIRS, Repair
from recallfs.query.store import Store

log = logging.getLogger("recallfs.fts")


@dataclass(frozen=True, slots=True)
class StaleIndex:
    """A table whose FTS index is missing rows (or missing altogether while the table has rows)."""

    schema: str
    table: str
    rows_behind: int
    workspace: str  # org/workspace, for messages
    indexed: int = 0  # rows the index holds (0: no index)

    @property
    def due(self) -> bool:
        """Whether to rebuild now; else its rows are served from the delta (query/fts_delta.py)."""
        return needs_rebuild(self.indexed, self.rows_behind)

    @property
    def key(self) -> str:
        return f"{self.schema}.{self.table}"

    def describe(self) -> str:
        return f"{self.workspace} {self.table} ({_rows(self.rows_behind)} behind)"

    def as_dict(self) -> dict[str, object]:
        return {"workspace": self.workspace, "table": self.table, "rows_behind": self.rows_behind}


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def stale_fts(store: Store, *, schemas: Iterable[str] | None = None, deferred: bool = False) -> list[StaleIndex]:
    """Every (partition, table) whose FTS index is due for a rebuild (StaleIndex.due): rows above the
    index's watermark past what its delta serves, or rows and no index; with `deferred`, every one
    behind at all. One query over all tables; works on a read-only store."""
    cur = store.cursor()
    wanted = None if schemas is None else set(schemas)
    partitions = [(str(s), f"{o}/{w}") for s, o, w in cur.execute(
        "SELECT schema_name, org, workspace FROM main.partitions ORDER BY schema_name").fetchall()
        if wanted is None or s in wanted]
    if not partitions:
        return []
    marks = {(str(s), str(t)): int(w) for s, t, w in cur.execute(
        "SELECT schema_name, tbl, built_max_rid FROM main.fts_state").fetchall()}
    built = {str(s) for (s,) in cur.execute("SELECT DISTINCT schema_name FROM duckdb_schemas()").fetchall()}
    selects: list[str] = []
    params: list[object] = []
    for schema, _ in partitions:
        for table in MEMORY_TABLES:
            # An index recorded but absent (dropped by hand, say) covers nothing.
            mark = marks.get((schema, table), 0) if fts_schema(schema, table) in built else 0
            selects.append(f"SELECT ?::VARCHAR, ?::VARCHAR, count(*) FILTER (WHERE rid > ?), "
                           f"count(*) FILTER (WHERE rid <= ?) FROM {schema}.{table}")
            params += [schema, table, mark, mark]
    names = dict(partitions)
    rows = cur.execute(" UNION ALL ".join(selects), params).fetchall()
    behind = [StaleIndex(str(s), str(t), int(n), names[str(s)], int(i)) for s, t, n, i in rows if n]
    return behind if deferred else [s for s in behind if s.due]


def rebuild_fts(store: Store, stale: Iterable[StaleIndex]) -> None:
    """Rebuild these indexes in one transaction (raises what DuckDB raises)."""
    rebuild_tables(store, sorted({(s.schema, s.table) for s in stale}))


def rebuild_tables(store: Store, tables: Iterable[tuple[str, str]]) -> None:
    """Rebuild the indexes of these (schema, table) pairs in one transaction that names them."""
    todo = list(tables)
    if not todo:
        return
    with store.transaction(touches={f"{schema}.{table}" for schema, table in todo}) as cur:
        for schema, table in todo:
            build_fts(cur, schema, table)


def record_failed_rebuilds(store: Store, tables: Iterable[tuple[str, str]], problem: str) -> None:
    """An ingest committed its rows but could not rebuild these tables' indexes (a full disk): recorded
    as failed repairs, so that a mount's health says so until one succeeds (record_rebuilt)."""
    wanted = set(tables)
    behind = [s for s in stale_fts(store, schemas={schema for schema, _ in wanted}, deferred=True)
              if (s.schema, s.table) in wanted]
    record_repairs(behind, ok=False, problem=problem, logged=False)  # the ingest's own error says it


def record_rebuilt(store: Store, tables: Iterable[tuple[str, str]]) -> None:
    """These tables' indexes were rebuilt: those whose last rebuild had failed are recorded as repaired."""
    failed = {r.what for r in REPAIRS.latest_failed("fts")}
    if not failed:
        return
    names = {str(s): f"{o}/{w}" for s, o, w in store.cursor().execute(
        "SELECT schema_name, org, workspace FROM main.partitions").fetchall()}
    for schema, table in tables:
        what = f"{names.get(schema, schema)} {table}"
        if what in failed:
            log.warning("the full-text index of %s, whose rebuild had failed, is rebuilt", what)
            REPAIRS.record(Repair("fts", what, "rebuilt after a rebuild that had failed", ok=True))


def record_repairs(repaired: Iterable[StaleIndex], *, ok: bool = True, problem: str = "",
                   logged: bool = True) -> None:
    """Log and record indexes that were found behind (and rebuilt, unless `ok` is False)."""
    for s in repaired:
        if logged:
            _log_repair(s, ok, problem)
        why = f"{_rows(s.rows_behind)} behind" + ("" if ok else f"; rebuild failed: {problem}")
        REPAIRS.record(Repair("fts", f"{s.workspace} {s.table}", why, ok=ok))


def _log_repair(s: StaleIndex, ok: bool, problem: str) -> None:
    if ok:
        log.warning("the full-text index of %s %s was %s behind its table (an ingest stopped before "
                    "rebuilding it?); rebuilt", s.workspace, s.table, _rows(s.rows_behind))
    else:
        log.error("the full-text index of %s %s is %s behind its table and could not be rebuilt: %s",
                  s.workspace, s.table, _rows(s.rows_behind), problem)


def repair_fts(store: Store) -> list[StaleIndex]:
    """At an open for writing: rebuild every index found behind, and say so. Returns what was rebuilt.

    A rebuild that fails is logged and recorded, not raised: the rows stay findable by substring, and
    the next open for writing tries again."""
    stale = stale_fts(store)
    if not stale:
        return []
    try:
        rebuild_fts(store, stale)
    except duckdb.Error as exc:
        record_repairs(stale, ok=False, problem=str(exc).splitlines()[0])
        return []
    record_repairs(stale)
    return stale


_BEHIND: LruCache[tuple[Any, ...], tuple[StaleIndex, ...]] = LruCache(256, generation=by_generation)


def behind_note(store: Store, schema: str) -> str | None:
    """For a recall on a read-only store, which cannot rebuild: a note when this partition's index is
    behind. (A writable store is repaired when it is opened and at every ingest.)"""
    if not store.read_only:
        return None

    def compute() -> tuple[StaleIndex, ...]:
        return tuple(stale_fts(store, schemas=[schema]))

    stale = _BEHIND.get_or_compute((str(store.path), *store_state(store), schema), compute)
    if not stale:
        return None
    parts = ", ".join(f"{s.table} by {_rows(s.rows_behind)}" for s in stale)
    return (f"the full-text index is behind ({parts}; an ingest stopped before rebuilding it?): those rows "
            "are scored from an in-memory delta meanwhile; `recallfs reindex` (or the next ingest, or a "
            "mount) rebuilds it")


def rebuild_all_fts(store: Store) -> tuple[int, list[StaleIndex]]:
    """`recallfs reindex`: rebuild every table's index (a sure repair, whatever the watermarks say), and
    record those that were behind. Returns (indexes rebuilt, those that were behind)."""
    stale = stale_fts(store)
    cur = store.cursor()
    schemas = [str(s) for (s,) in cur.execute("SELECT schema_name FROM main.partitions ORDER BY 1").fetchall()]
    with store.transaction() as tx:
        for schema in schemas:
            for table in MEMORY_TABLES:
                build_fts(tx, schema, table)
    record_repairs(stale)
    return len(schemas) * len(MEMORY_TABLES), stale
