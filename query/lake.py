"""A DuckLake store: the shared log of every ingested record and policy change, with its catalog in
PostgreSQL and its rows in Parquet under the data path.

The lake holds what was ingested, in commit order; each host's daemon replays it into its own replica
(query/lake_replica.py), where the query, ranking and scope code read as from any single-file store.
Why a log and a replica rather than querying the lake: developer-notes/lake.md.

One connection, used under a lock: lake calls are few and small (an append per ingest, a snapshot id per
poll). A connection that failed (PostgreSQL down) is dropped and made again on the next call.
"""

from __future__ import annotations

import json
import os
import random
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import duckdb

from recallfs.query.duckdb_client import spare_the_pandas_search
from recallfs.query.fts_extension import DUCKDB_CONFIG
from recallfs.query.lake_extensions import load_lake_extensions
from recallfs.query.lake_location import LakeLocation, mask_secrets
from recallfs.query.lake_vectors import BatchVector, vector_from_row, vector_row
from recallfs.query.records import TRANSIENT, MemoryRecord
from recallfs.query.store import StoreError

# A record's fields as lake columns ("table" is a keyword: the lake calls it tbl).
_TYPES = {"str": "VARCHAR", "datetime": "TIMESTAMP", "int | None": "INTEGER", "list[str]": "VARCHAR[]",
          "str | None": "VARCHAR"}
_STORED = [f for f in fields(MemoryRecord) if f.name not in TRANSIENT]
RECORD_COLUMNS = {("tbl" if f.name == "table" else f.name): _TYPES[str(f.type)] for f in _STORED}
LOG_COLUMNS = {"batch": "VARCHAR", "item": "INTEGER", "host": "VARCHAR", "appended_at": "TIMESTAMP"}
POLICY_COLUMNS = {"batch": "VARCHAR", "org": "VARCHAR", "workspace": "VARCHAR", "agent": "VARCHAR",
                  "removed": "BOOLEAN", "authors": "VARCHAR[]", "visibilities": "VARCHAR[]",
                  "deny_kinds": "VARCHAR[]", "deny_tags": "VARCHAR[]", "writes": "BOOLEAN",
                  "host": "VARCHAR", "appended_at": "TIMESTAMP"}
# a record's vectors (query/lake_vectors.py): one row per window, its float16 bits
VECTOR_COLUMNS = {"batch": "VARCHAR", "item": "INTEGER", "chunk": "SMALLINT", "model": "VARCHAR",
                  "embedding": "SMALLINT[]"}
TABLES = {"records": {**LOG_COLUMNS, **RECORD_COLUMNS}, "policies": POLICY_COLUMNS, "vectors": VECTOR_COLUMNS}
COMMIT_RETRIES = 20  # on top of DuckLake's own (ducklake_max_retry_count)


class LakeUnavailable(StoreError):
    """The lake's catalog (PostgreSQL) or data path cannot be reached; the message says which and why."""


class CommitUnknown(LakeUnavailable):
    """The connection was lost during a commit: the batch may or may not be in the lake."""


# libpq's words for a connection that went away, which DuckDB raises as a TransactionException at COMMIT,
# the class a conflict with another host also has
_CONNECTION_LOST = ("server closed the connection", "connection to server", "could not send", "could not receive",
                    "terminating connection", "no connection to the server", "connection is closed")


def lost_connection(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(words in text for words in _CONNECTION_LOST)


@dataclass(slots=True)
class LakeBatch:
    """One ingest's records, or one policy change, as committed in one lake snapshot."""

    snapshot: int
    batch: str
    records: list[MemoryRecord]
    policies: list[dict[str, Any]]
    vectors: list[BatchVector] = field(default_factory=list)


def new_batch_id() -> str:
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:16]}"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


def why_unreachable(exc: BaseException) -> str:
    """The reason libpq gave ("No such file or directory", "Connection refused", a timeout), without
    DuckDB's wrapping, which repeats the whole catalog string twice; never a password."""
    text = str(exc)
    if "Unable to connect to Postgres" in text:
        # libpq's own words follow its last "failed: " ("No such file or directory", "Connection refused")
        reason = text.rsplit("failed: ", 1)[-1].strip().splitlines()[0] if "failed: " in text else "no answer"
        return mask_secrets(f"PostgreSQL did not answer ({reason[:200]})")
    return mask_secrets(_first_line(exc))


def _snapshot_id(conn: duckdb.DuckDBPyConnection) -> int:
    """The lake's current snapshot. Read with fetchall: a result left unread keeps the DuckDB transaction
    open, and with it DuckLake's transaction on PostgreSQL ("idle in transaction" between polls, which
    holds back the catalog's vacuum for as long as the replica runs; query/cursor.py says why)."""
    rows = conn.execute("SELECT id FROM lake.current_snapshot()").fetchall()
    return int(rows[0][0]) if rows else 0


class Lake:
    def __init__(self, location: LakeLocation) -> None:
        self.location = location
        self._lock = threading.Lock()
        self._conn: duckdb.DuckDBPyConnection | None = None
        self.busy_since: float | None = None  # monotonic start of the lake call in flight (backend.stalled)

    # -- connection -------------------------------------------------------------------------------
    def _attach_string(self) -> str:
        catalog = self.location.catalog
        if "connect_timeout=" not in catalog:  # an unreachable host must fail fast, not hang a poll
            catalog += " connect_timeout=5"
        return f"ducklake:{catalog}"

    def _connect(self) -> duckdb.DuckDBPyConnection:
        spare_the_pandas_search()
        conn = duckdb.connect(config=dict(DUCKDB_CONFIG))
        try:
            load_lake_extensions(conn, self.location.data_path)
            if "://" not in self.location.data_path:
                os.makedirs(self.location.data_path, exist_ok=True)
            conn.execute(f"ATTACH '{self._attach_string()}' AS lake (DATA_PATH '{self.location.data_path}')")
            for table, columns in TABLES.items():
                cols = ", ".join(f"{name} {kind}" for name, kind in columns.items())
                conn.execute(f"CREATE TABLE IF NOT EXISTS lake.{table} ({cols})")
        except (duckdb.Error, OSError) as exc:
            conn.close()
            raise LakeUnavailable(f"cannot reach the lake's catalog ({self.location.catalog_host()}): "
                                  f"{why_unreachable(exc)}") from None
        return conn

    @contextmanager
    def _connection(self, *, conflicts: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """The lake's connection, one call at a time. `conflicts`: a TransactionException that is not a lost
        connection passes through (a commit retries on a conflict with another host); anywhere else it is
        the catalog failing (found 2026-12-07: PostgreSQL stopped during a replay's read raised it, and the
        ingest that had committed was reported as an internal error)."""
        with self._lock:
            self.busy_since = time.monotonic()
            try:
                if self._conn is None:
                    self._conn = self._connect()
                yield self._conn
            except duckdb.TransactionException as exc:
                if conflicts and not lost_connection(exc):
                    raise
                self._drop()
                raise LakeUnavailable(f"the lake's catalog ({self.location.catalog_host()}) failed: "
                                      f"{why_unreachable(exc)}") from None
            except duckdb.Error as exc:
                self._drop()
                raise LakeUnavailable(f"the lake's catalog ({self.location.catalog_host()}) failed: "
                                      f"{why_unreachable(exc)}") from None
            finally:
                self.busy_since = None

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except duckdb.Error:
                pass
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    # -- reading ----------------------------------------------------------------------------------
    def snapshot(self) -> int:
        with self._connection() as conn:
            return _snapshot_id(conn)

    def changes(self, since: int, upto: int) -> list[LakeBatch]:
        """What was committed after snapshot `since` up to `upto`, batch by batch in commit order."""
        if upto <= since:
            return []
        batches: dict[tuple[int, str], LakeBatch] = {}
        with self._connection() as conn:
            for table in TABLES:
                rel = conn.execute(
                    f"SELECT * FROM lake.table_changes('{table}', {since + 1}, {upto}) "
                    "WHERE change_type = 'insert' ORDER BY snapshot_id, batch"
                    + {"records": ", item", "vectors": ", item, chunk"}.get(table, ""))
                names = [d[0] for d in rel.description]
                for values in rel.fetchall():
                    row = dict(zip(names, values, strict=True))
                    key = (int(row["snapshot_id"]), str(row["batch"]))
                    batch = batches.setdefault(key, LakeBatch(key[0], key[1], [], []))
                    if table == "records":
                        batch.records.append(record_from_row(row))
                    elif table == "vectors":
                        batch.vectors.append(vector_from_row(row))
                    else:
                        batch.policies.append(row)
        return [batches[k] for k in sorted(batches)]

    def policies(self, org: str, workspace: str) -> dict[str, dict[str, Any]]:
        """agent -> the last policy change committed for it in this workspace (`removed` when it was a
        removal): what every replica holds once it has caught up, read without one."""
        with self._connection() as conn:
            upto = _snapshot_id(conn)
            if upto < 1:
                return {}
            rel = conn.execute(
                f"SELECT * FROM lake.table_changes('policies', 1, {upto}) "
                "WHERE change_type = 'insert' AND org = ? AND workspace = ? ORDER BY snapshot_id, batch",
                [org, workspace])
            names = [d[0] for d in rel.description]
            return {str(row["agent"]): row for row in (dict(zip(names, v, strict=True)) for v in rel.fetchall())}

    # -- writing ----------------------------------------------------------------------------------
    def append_records(self, records: Iterable[MemoryRecord], batch: str,
                       vectors: Iterable[BatchVector] = ()) -> int:
        """Commit `records` as one batch, with their vectors when given (all or nothing); returns the
        snapshot that holds it."""
        now = datetime.now()
        host = socket.gethostname()
        with _staged_rows(row_of(rec, batch, i, host, now) for i, rec in enumerate(records)) as path, \
                _staged_rows(vector_row(batch, v) for v in vectors) as vector_path:
            return self._commit({"records": path, "vectors": vector_path})

    def append_policy(self, change: dict[str, Any], batch: str) -> int:
        row = {**{k: None for k in POLICY_COLUMNS}, **change, "batch": batch, "host": socket.gethostname(),
               "appended_at": datetime.now().isoformat(sep=" ")}
        with _staged_rows([row]) as path:
            return self._commit({"policies": path})

    def _commit(self, staged: dict[str, str]) -> int:
        """Insert each table's staged rows in one transaction, retried on a conflict with another host."""
        inserts = []
        for table, path in staged.items():
            if os.path.getsize(path) == 0:
                continue  # read_json refuses an empty file
            columns = TABLES[table]
            spec = ", ".join(f"'{k}': '{v}'" for k, v in columns.items())
            inserts.append((f"INSERT INTO lake.{table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM "
                            f"read_json(?, format='newline_delimited', columns={{{spec}}})", path))
        for attempt in range(COMMIT_RETRIES + 1):
            with self._connection(conflicts=True) as conn:
                try:
                    conn.execute("BEGIN TRANSACTION")
                    for sql, path in inserts:
                        conn.execute(sql, [path])
                    try:
                        conn.execute("COMMIT")
                    except duckdb.Error as exc:
                        if lost_connection(exc):  # it may have landed: neither "written" nor "nothing written"
                            self._drop()
                            raise CommitUnknown(
                                f"the connection to the lake's catalog ({self.location.catalog_host()}) was lost "
                                f"during the commit ({why_unreachable(exc)}); whether the batch was written is "
                                "unknown: run it again once the lake answers (it writes nothing twice)") from None
                        raise
                    return _snapshot_id(conn)
                except duckdb.TransactionException:
                    _rollback(conn)
                    if attempt == COMMIT_RETRIES:
                        raise LakeUnavailable(f"the lake {self.location.describe()} refused the commit "
                                              f"{COMMIT_RETRIES} times (other hosts writing); nothing was "
                                              "written, run it again") from None
                except BaseException:
                    _rollback(conn)
                    raise
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))  # apart from the host it collided with
        raise AssertionError("unreachable")

    def compact(self) -> None:
        """Move inlined small inserts out of PostgreSQL and merge small Parquet files. Snapshots are kept:
        every replica follows the change feed from its own snapshot."""
        with self._connection() as conn:
            conn.execute("CALL ducklake_flush_inlined_data('lake')")
            conn.execute("CALL ducklake_merge_adjacent_files('lake')")


def _rollback(conn: duckdb.DuckDBPyConnection) -> None:
    try:
        conn.execute("ROLLBACK")
    except duckdb.Error:
        pass


def row_of(rec: MemoryRecord, batch: str, item: int, host: str, now: datetime) -> dict[str, Any]:
    row: dict[str, Any] = {"batch": batch, "item": item, "host": host, "appended_at": now.isoformat(sep=" ")}
    for f in _STORED:
        value = getattr(rec, f.name)
        row["tbl" if f.name == "table" else f.name] = value.isoformat(sep=" ") if isinstance(value, datetime) else value
    return row


def record_from_row(row: dict[str, Any]) -> MemoryRecord:
    values = {f.name: row["tbl" if f.name == "table" else f.name] for f in _STORED}
    values["tags"] = list(values["tags"] or [])
    values["refs"] = list(values["refs"] or [])
    # Its links are as the committing host decided them (its `changing` kept or cleared the head's):
    # replayed, a record must not take a head's links again.
    return MemoryRecord(**values, links_named=True)


@contextmanager
def _staged_rows(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The rows as a newline-delimited JSON file for read_json (query/ingest.py: far faster than executemany)."""
    fd, path = tempfile.mkstemp(prefix="recallfs-lake-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")
        yield path
    finally:
        os.unlink(path)
