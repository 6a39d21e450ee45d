"""The DuckDB store: opening, migrations, partitions and per-thread cursors.

DuckDB lets one process hold a file for writing; inside that process every thread takes its own
cursor (a DuckDB connection sharing the database), which is what `cursor()` hands out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb

from recallfs.query.fts_extension import DUCKDB_CONFIG, load_fts
from recallfs.query.migrations import MEMORY_TABLES, create_partition, migrate_store
from recallfs.scope.partition import partition_schema
from recallfs.scope.principal import Principal


class StoreError(RuntimeError):
    """A store that cannot be opened or used, with a message meant for the user."""


class StoreLockedError(StoreError):
    """Another process holds the store (usually a mounted daemon)."""


class Store:
    def __init__(self, path: str | Path, *, read_only: bool = False, create: bool = True) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        if not self.path.exists():
            if not create or read_only:
                raise StoreError(f"no store at {self.path}; create one with `recallfs init --store {self.path}`")
            if not self.path.parent.is_dir():  # a typo in a path must not become a new directory
                raise StoreError(f"cannot create the store {self.path}: no directory {self.path.parent}")
        try:
            self._root = duckdb.connect(str(self.path), read_only=read_only, config=dict(DUCKDB_CONFIG))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the store {self.path} is held by another process (a mounted recallfs daemon?): "
                    "use the mount's control channel or unmount it first"
                ) from None
            raise StoreError(f"cannot open store {self.path}: {exc}") from None
        load_fts(self._root)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self.generation = 0  # bumped on every committed change; caches key on it
        self._partitions: dict[tuple[str, str], str] = {}
        if not read_only:
            with self.transaction() as cur:
                migrate_store(cur)

    # -- connections -----------------------------------------------------------------------------
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor. DuckDB connections must not be shared across threads."""
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._root.cursor()
            load_fts(cur)
            self._local.cursor = cur
        return cur

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One writer at a time inside this process; all or nothing."""
        with self._write_lock:
            cur = self.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
            self.generation += 1

    def close(self) -> None:
        self._root.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- partitions ------------------------------------------------------------------------------
    def schema_for(self, principal: Principal) -> str | None:
        """The principal's partition schema, or None when the workspace holds nothing yet."""
        return self.partition(principal.org, principal.workspace)

    def partition(self, org: str, workspace: str) -> str | None:
        # A partition's schema never changes once created, so a found one is cached for good (every
        # recall asks, and in a store of many workspaces the catalog makes each query dearer).
        known = self._partitions.get((org, workspace))
        if known is not None:
            return known
        row = (
            self.cursor()
            .execute("SELECT schema_name FROM main.partitions WHERE org = ? AND workspace = ?", [org, workspace])
            .fetchone()
        )
        if row:
            self._partitions[(org, workspace)] = str(row[0])
        return row[0] if row else None

    def ensure_partition(self, cur: duckdb.DuckDBPyConnection, org: str, workspace: str) -> str:
        """Create the partition inside the caller's transaction if it is new."""
        row = cur.execute(
            "SELECT schema_name FROM main.partitions WHERE org = ? AND workspace = ?", [org, workspace]
        ).fetchone()
        if row:
            return str(row[0])
        from recallfs.query.migrations import PARTITION_VERSION

        schema = partition_schema(org, workspace)
        create_partition(cur, schema)
        cur.execute(
            "INSERT INTO main.partitions VALUES (?, ?, ?, ?, ?)",
            [org, workspace, schema, PARTITION_VERSION, datetime.now()],
        )
        return schema

    def workspaces(self) -> list[tuple[str, str]]:
        rows = self.cursor().execute("SELECT org, workspace FROM main.partitions ORDER BY org, workspace")
        return [(str(o), str(w)) for o, w in rows.fetchall()]

    def table_counts(self, schema: str) -> dict[str, int]:
        """Current memories per table (heads only)."""
        rows = self.cursor().execute(f"SELECT tbl, count(*) FROM {schema}.heads GROUP BY tbl").fetchall()
        counts = {t: 0 for t in MEMORY_TABLES}
        counts.update({str(t): int(n) for t, n in rows})
        return counts
