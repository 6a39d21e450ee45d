"""The store's write-ahead log is checkpointed while readers come and go (query/cursor.py, query/wal_guard.py).

A daemon reads on some threads and writes on another. DuckDB 1.5.5 keeps a connection's transaction
open while its last result is unread, and a commit that updated rows cannot checkpoint beside an open
transaction: the daemon's start-up `schema_for` (a `fetchone`) on its main thread stopped every
checkpoint for the life of the process, and after ~450 one-fact writes into a 30k store every write
failed with DuckDB out of memory. Real DuckDB files, real threads, the real ingest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from recallfs.mount.health import verdict
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.query.wal_guard import fold_wal, wal_bytes
from recallfs.scope.principal import Principal

from conftest import fact

P = Principal("acme", "tern", "atlas")


def _records(start: int, n: int) -> list:
    return [parse_record(fact(f"f-{i}", f"fact number {i}: the heron rota moved after audit {i}"),
                         org=P.org, workspace=P.workspace, agent=P.agent) for i in range(start, start + n)]


def _seeded(tmp_path: Path) -> Store:
    store = Store(tmp_path / "store.duckdb")
    ingest_records(store, _records(0, 200), embedder=None)
    store.cursor().execute("CHECKPOINT")
    return store


def _in_thread(fn: Callable[[], object]) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # re-raised on the caller's thread
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]


# How a reader's thread may leave its connection: each must let another thread's write checkpoint.
READS: list[tuple[str, Callable[[Store], object]]] = [
    ("fetchone", lambda s: s.cursor().execute("SELECT schema_name FROM main.partitions, range(5)").fetchone()),
    ("scalar", lambda s: s.cursor().scalar("SELECT count(*) FROM main.partitions")),
    ("schema_for", lambda s: s.schema_for(P)),
    ("fetchone of nothing", lambda s: s.cursor().execute("SELECT 1 WHERE false").fetchone()),
    ("fetchall", lambda s: s.cursor().execute("SELECT * FROM main.partitions").fetchall()),
    ("fetchnumpy", lambda s: s.cursor().execute("SELECT * FROM range(10)").fetchnumpy()),
]


@pytest.mark.parametrize(("name", "read"), READS, ids=[r[0] for r in READS])
def test_a_readers_idle_connection_does_not_stop_checkpoints(tmp_path: Path, name: str, read) -> None:
    store = _seeded(tmp_path)
    try:
        read(store)  # the main thread's connection, idle from here on, as the daemon's start-up leaves it
        _in_thread(lambda: read(store))  # and a reader thread's
        _in_thread(lambda: ingest_records(store, _records(1000, 3), embedder=None))  # a write that updates rows

        def checkpoint() -> None:
            store.cursor().execute("CHECKPOINT")

        _in_thread(checkpoint)  # DuckDB: "Cannot CHECKPOINT: there are other write transactions active"
        assert wal_bytes(store.path) == 0
    finally:
        store.close()


def test_duckdbs_own_checkpoints_keep_running_beside_an_idle_reader(tmp_path: Path) -> None:
    """The daemon's pattern, end to end: the main thread asked for the partition, then one-fact writes
    from a worker thread. With DuckDB's threshold lowered to 64 KB the WAL must keep being folded in."""
    store = _seeded(tmp_path)
    try:
        store.cursor().execute("SET checkpoint_threshold = '64KB'")
        store.schema_for(P)
        largest = 0

        def writes() -> None:
            nonlocal largest
            for i in range(40):
                ingest_records(store, _records(2000 + i, 1), embedder=None)
                largest = max(largest, wal_bytes(store.path))

        _in_thread(writes)
        assert largest < 1 << 20, f"the WAL grew to {largest} bytes: checkpoints stopped"
        assert store.health.wal_stuck is None
    finally:
        store.close()


def test_a_wal_that_cannot_be_checkpointed_is_reported_and_then_cleared(tmp_path: Path) -> None:
    """The guard: a connection outside recallfs's Cursor (so nothing drains it) holds a transaction open;
    fold_wal says why the WAL stays, the verdict is degraded with it, and once the holder lets go the
    next fold checkpoints and the reason is gone."""
    store = _seeded(tmp_path)
    holder = store._root.cursor()  # a raw DuckDB connection, as a third-party reader would hold one
    try:
        holder.execute("SELECT * FROM range(100000)").fetchone()  # its result unread: a transaction open
        _in_thread(lambda: ingest_records(store, _records(3000, 3), embedder=None))
        why = fold_wal(store.cursor(), store.path, check_bytes=0)
        assert why is not None and "cannot checkpoint" in why and "write-ahead log" in why
        got = verdict(store={"wal_stuck": why}, recent_errors=0, last_error=None, semantic_reason=None)
        assert got.state == "degraded" and "write-ahead log" in got.line()
        holder.fetchall()  # the holder finishes its read
        assert fold_wal(store.cursor(), store.path, check_bytes=0) is None
        assert wal_bytes(store.path) == 0
    finally:
        holder.close()
        store.close()


def test_a_commit_runs_the_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Store.transaction folds the WAL after its commit and records what the guard says."""
    import recallfs.query.wal_guard as guard

    store = _seeded(tmp_path)
    holder = store._root.cursor()
    try:
        monkeypatch.setattr(guard.fold_wal, "__defaults__", (0,))  # check at any WAL size
        holder.execute("SELECT * FROM range(100000)").fetchone()
        _in_thread(lambda: ingest_records(store, _records(4000, 1), embedder=None))
        assert store.health.wal_stuck is not None and "cannot checkpoint" in store.health.wal_stuck
        assert "wal_stuck" in store.health.as_dict()
        holder.fetchall()
        _in_thread(lambda: ingest_records(store, _records(4100, 1), embedder=None))
        assert store.health.wal_stuck is None
        assert wal_bytes(store.path) == 0
    finally:
        holder.close()
        store.close()
