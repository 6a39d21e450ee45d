"""The DuckDB store: opening, migrations, partitions and per-thread cursors.

DuckDB lets one process hold a file for writing; inside that process every thread takes its own
cursor (a DuckDB connection sharing the database), which is what `cursor()` hands out.

A fatal DuckDB error (an internal error) invalidates the database for every connection of the
process. The store then reopens it (`recover`): it waits until no thread is inside DuckDB, closes every
connection it handed out (DuckDB keeps serving the invalidated instance while any is open), connects
again and bumps the generation so every derived cache is rebuilt. `consistent` runs a read once more
when that happened under it. `health` says what happened, for `recallfs status` and index.md.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import duckdb

from recallfs.query.cursor import Cursor, Hooks, is_fatal
from recallfs.query.duckdb_client import spare_the_pandas_search
from recallfs.query.fts_extension import DUCKDB_CONFIG, load_fts
from recallfs.query.migrations import MEMORY_TABLES, create_partition, migrate_store
from recallfs.query.store_file import FileIdentity
from recallfs.query.wal_guard import fold_wal
from recallfs.scope.partition import partition_schema
from recallfs.scope.principal import Principal

T = TypeVar("T")

# Compression DuckDB may not choose when it writes a segment (developer-notes/storage.md, measured on
# the 100k bench store). ALPRD stores the embeddings in 229 MiB where raw float32 takes 146 MiB. FSST
# packs the id and text columns into segments that a fetch of a few hundred rows by rid must decode
# whole: light rows of 350 turns took 5.8 ms with it, 3.6 ms without; full rows 12.8 ms vs 5.3 ms.
# Without both the store took 191 MiB instead of 257 (both compacted). Segments already written keep
# their compression until DuckDB rewrites them.
DISABLED_COMPRESSION = "alprd,fsst"


class StoreError(RuntimeError):
    """A store that cannot be opened or used, with a message meant for the user."""


class StoreLockedError(StoreError):
    """Another process holds the store (usually a mounted daemon)."""


class StoreReadOnlyError(StoreError):
    """The store can only be opened read-only (its file system is read-only, or the file is not writable)."""


class StoreBrokenError(StoreError):
    """DuckDB invalidated the database and it could not be opened again."""


@dataclass(slots=True)
class StoreHealth:
    """What befell the open database: fatal DuckDB errors seen, reopens done, and a reopen that failed."""

    fatal_errors: int = 0
    last_fatal: str | None = None
    last_fatal_at: float | None = None  # time.time()
    reopens: int = 0
    failed: str | None = None  # set while the database is invalidated and could not be reopened
    wal_stuck: str | None = None  # why the write-ahead log is not being checkpointed (query/wal_guard.py)

    def as_dict(self) -> dict[str, object]:
        return {"fatal_errors": self.fatal_errors, "last_fatal": self.last_fatal,
                "last_fatal_at": self.last_fatal_at, "reopens": self.reopens, "failed": self.failed,
                "wal_stuck": self.wal_stuck}


class _Connections(Hooks):
    """The store's side of every Cursor: counts calls inside DuckDB and records fatal errors."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.inside = 0
        self.broken: str | None = None  # the first line of the fatal error, until the store reopens

    def on_enter(self) -> None:
        with self.cond:
            self.inside += 1

    def on_exit(self) -> None:
        with self.cond:
            self.inside -= 1
            if self.inside == 0:
                self.cond.notify_all()

    def on_error(self, exc: BaseException) -> None:
        if is_fatal(exc):
            with self.cond:
                if self.broken is None:
                    self.broken = str(exc).strip().splitlines()[0][:300]


def _file_backed(conn: duckdb.DuckDBPyConnection) -> bool:
    """DuckDB 1.5 opens an existing JSON file (`--store notes.jsonl`) as an empty in-memory database: an
    ingest would report success and keep nothing, and a mount would serve nothing."""
    row = conn.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return bool(row and row[0])


class Store:
    def __init__(self, path: str | Path, *, read_only: bool = False, create: bool = True,
                 memory_limit: str | None = None, threads: int | None = None) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self.memory_limit = memory_limit  # DuckDB's memory_limit ('512MB'); None: DuckDB's default
        self.threads = threads  # DuckDB's threads (RECALLFS_SERVE_THREADS for a serving process); None or 0: every core
        if not self.path.exists():
            if not create or read_only:
                raise StoreError(f"no store at {self.path}; create one with `recallfs init --store {self.path}`")
            if not self.path.parent.is_dir():  # a typo in a path must not become a new directory
                raise StoreError(f"cannot create the store {self.path}: no directory {self.path.parent}")
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._reopen_lock = threading.Lock()
        self._conns = _Connections()
        # Every connection handed out, to close them all on reopen; a thread that ends drops its own.
        self._opened: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
        self.epoch = 0  # bumped on every reopen: a thread's cursor from an older epoch is replaced
        self.generation = 0  # bumped on every committed change (and reopen); caches key on it
        # The generation of the last commit that may have changed what is derived from one table (its
        # rows, heads, index or vectors), for caches of one table: a write of one fact keeps the turns'.
        self._table_changed: dict[str, int] = {}  # "schema.table" -> generation
        self._all_changed = 0  # the last commit (or reopen) that did not say which tables it touched
        self.health = StoreHealth()
        # Why this store may lack the newest writes, for recall to say so: set by whoever keeps it in step
        # (a replica whose lake is unreachable, query/backend.py); None when it is current. `stale_probe`
        # answers live, for what no one is left to set: a lake whose every query hangs.
        self._stale: str | None = None
        self.stale_probe: Callable[[], str | None] | None = None
        self._partitions: dict[tuple[str, str], str] = {}
        self._root_opened = False
        self._root = self._connect()
        self._root_opened = True
        self.file = FileIdentity(self.path)  # checked before every write (store_file.py)
        if not read_only:
            with self.transaction() as cur:
                migrate_store(cur)

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if self._root_opened and not self.path.exists():
            # DuckDB would create an empty database in its place: reopening must find the same store
            raise StoreError(f"the store file {self.path} is gone")
        spare_the_pandas_search()
        try:
            root = duckdb.connect(str(self.path), read_only=self.read_only, config=dict(DUCKDB_CONFIG))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the store {self.path} is held by another process (a mounted recallfs daemon?): "
                    "`recallfs recall` and `recallfs ingest` go through a mount's daemon; for anything else, "
                    "unmount it first (`recallfs umount MOUNTPOINT`; `recallfs status` lists the mounts)"
                ) from None
            if not self.read_only and any(why in str(exc) for why in ("Read-only file system", "Permission denied")):
                raise StoreReadOnlyError(f"cannot open store {self.path} for writing: {exc}") from None
            raise StoreError(f"cannot open store {self.path}: {exc}") from None
        except duckdb.Error as exc:  # DuckDB's own refusal of a file that is not a store
            if "in-memory database" in str(exc):
                raise self._not_a_store() from None
            if "replaying WAL" in str(exc):
                raise self._wal_unreadable(exc) from None
            raise StoreError(f"cannot open store {self.path}: {str(exc).splitlines()[0]}") from None
        if not _file_backed(root):
            root.close()
            raise self._not_a_store()
        load_fts(root)
        self._configure(root)
        self._opened = weakref.WeakSet([root])
        return root

    def _wal_unreadable(self, exc: duckdb.Error) -> StoreError:
        # Said in full because the way out loses data: recallfs never moves the log itself.
        return StoreError(
            f"cannot open store {self.path}: DuckDB cannot replay its write-ahead log {self.path}.wal "
            f"({str(exc).splitlines()[0]}). The store file holds every write up to its last checkpoint; "
            f"to open it, move {self.path}.wal aside (the writes since that checkpoint stay in the moved "
            "file)")

    def _not_a_store(self) -> StoreError:
        return StoreError(f"{self.path} is not a DuckDB store (DuckDB took it for another kind of file, to be "
                          "kept in memory); choose another store path")

    def _configure(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Database-wide settings, applied at every (re)open."""
        conn.execute(f"SET disabled_compression_methods = '{DISABLED_COMPRESSION}'")
        if self.memory_limit is not None:
            conn.execute(f"SET memory_limit = '{self.memory_limit}'")
        if self.threads is not None and self.threads > 0:
            conn.execute(f"SET threads = {int(self.threads)}")

    # -- connections -----------------------------------------------------------------------------
    def cursor(self) -> Cursor:
        """This thread's cursor. DuckDB connections must not be shared across threads.

        A database DuckDB has invalidated is reopened here first, so whoever asks next is served."""
        if self._conns.broken is not None:
            self.recover()
        local = self._local
        if getattr(local, "epoch", None) != self.epoch:
            with self._reopen_lock:
                conn = self._root.cursor()
                self._opened.add(conn)
                epoch = self.epoch
            load_fts(conn)
            local.cursor, local.epoch = Cursor(conn, self._conns), epoch
        cursor: Cursor = local.cursor
        return cursor

    @property
    def broken(self) -> str | None:
        """The fatal error that invalidated the database, until it is reopened."""
        return self._conns.broken

    def recover(self) -> None:
        """Reopen a database DuckDB has invalidated. Raises StoreBrokenError if that fails."""
        with self._reopen_lock:
            reason = self._conns.broken
            if reason is None:
                return  # another thread has reopened it
            self.health.fatal_errors += 1
            self.health.last_fatal, self.health.last_fatal_at = reason, time.time()
            with self._conns.cond:  # no thread may be inside DuckDB while its connections close
                self._conns.cond.wait_for(lambda: self._conns.inside == 0, timeout=30)
                for conn in list(self._opened):
                    try:
                        conn.close()
                    except duckdb.Error:
                        pass
            try:
                self._root = self._connect()
            except StoreError as exc:
                self.health.failed = f"the database was invalidated ({reason}) and could not be reopened: {exc}"
                raise StoreBrokenError(self.health.failed) from None
            self._conns.broken = None
            self.health.failed = None
            self.health.reopens += 1
            self._partitions.clear()
            self.epoch += 1
            self.generation += 1
            self._all_changed = self.generation

    def consistent(self, fn: Callable[[], T]) -> T:
        """Run `fn` (a read, or an idempotent write); if the database was invalidated while it ran,
        reopen it and run `fn` once more. Its first answer may hold errors that it swallowed (an arm
        that failed is empty), so even a result that came back is not kept."""
        epoch = self.epoch
        try:
            result = fn()
        except Exception:
            if not self._reopened_since(epoch):
                raise
            return fn()
        if self._reopened_since(epoch):
            return fn()
        return result

    def _reopened_since(self, epoch: int) -> bool:
        if self._conns.broken is not None:
            self.recover()
        return self.epoch != epoch

    def table_generation(self, schema: str, table: str) -> int:
        """The generation of the last commit that may have changed what derives from `schema.table`."""
        return max(self._all_changed, self._table_changed.get(f"{schema}.{table}", 0))

    @contextmanager
    def transaction(self, touches: Collection[str] | None = None) -> Iterator[Cursor]:
        """One writer at a time inside this process; all or nothing. Refused (StoreError) once the path
        no longer names the file this store opened. `touches`: the "schema.table" names whose rows,
        heads, full-text index or vectors the transaction may change, read at the commit (a writer may
        add to it as it goes); None (the default, and the safe answer): it may change anything, policies
        included."""
        with self._write_lock:
            gone = self.file.problem()
            if gone is not None:
                raise StoreError(gone)
            cur = self.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                try:
                    cur.execute("ROLLBACK")
                except duckdb.Error:
                    if self._conns.broken is None:
                        raise
                    # An invalidated database has already discarded the transaction; the caller's
                    # error is the one to report.
                raise
            cur.execute("COMMIT")
            self.generation += 1
            if touches is None:
                self._all_changed = self.generation
            else:
                self._table_changed.update((name, self.generation) for name in touches)
            self.health.wal_stuck = fold_wal(cur, self.path)

    def close(self) -> None:
        with self._reopen_lock:
            for conn in [*self._opened, self._root]:
                try:
                    conn.close()
                except duckdb.Error:
                    pass
            self._opened = weakref.WeakSet()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- partitions ------------------------------------------------------------------------------
    def schema_for(self, principal: Principal) -> str | None:
        """The principal's partition schema, or None when the workspace holds nothing yet."""
        return self.partition(principal.org, principal.workspace)

    @property
    def stale(self) -> str | None:
        if self._stale is not None:
            return self._stale
        probe = self.stale_probe
        return probe() if probe is not None else None

    @stale.setter
    def stale(self, value: str | None) -> None:
        self._stale = value

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

    def ensure_partition(self, cur: Cursor, org: str, workspace: str) -> str:
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
