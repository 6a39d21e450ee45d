"""A thread's DuckDB connection, wrapped so that a fatal DuckDB error reaches its store.

DuckDB invalidates the whole database after an internal error ("database has been invalidated because
of a previous fatal error"): every later query on every connection fails until the database is opened
again. Callers catch DuckDB errors in many places (an arm that fails empties itself, an entity card is
an extra), so the store could not learn of it from them. Every query passes through `Cursor`, which
tells the store (`on_error`) and lets the error go on as before; the store then reopens the database
(query/store.py, `Store.recover`).

`on_enter`/`on_exit` bracket each call into DuckDB, so the store can wait until no thread is inside
DuckDB before it closes the connections (closing a connection under a running call is not safe).

Every fetch ends its result. DuckDB (1.5.5) keeps a connection's transaction open while its last result
is not read to the end, and a commit that updated rows cannot checkpoint while any other transaction is
open: one `fetchone` left on an idle thread's connection stopped every checkpoint of a daemon, whose
write-ahead log then grew by each write until DuckDB ran out of memory (developer-notes/storage.md,
"Checkpoints").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import duckdb
import numpy as np

FATAL_TYPES: tuple[type[BaseException], ...] = (duckdb.FatalException, duckdb.InternalException)
INVALIDATED = "database has been invalidated"


def is_fatal(exc: BaseException) -> bool:
    """Whether DuckDB has (or will have) invalidated the database because of `exc`."""
    return isinstance(exc, FATAL_TYPES) or INVALIDATED in str(exc)


class Hooks:
    """What a Cursor reports to its store. The default does nothing (a bare connection's behaviour)."""

    def on_enter(self) -> None:
        return None

    def on_exit(self) -> None:
        return None

    def on_error(self, exc: BaseException) -> None:
        return None


class Cursor:
    """The subset of DuckDBPyConnection recallfs uses, with every call reported to `hooks`."""

    __slots__ = ("_conn", "_hooks")

    def __init__(self, conn: duckdb.DuckDBPyConnection, hooks: Hooks) -> None:
        self._conn = conn
        self._hooks = hooks

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._hooks.on_enter()
        try:
            return fn(*args)
        except duckdb.Error as exc:
            self._hooks.on_error(exc)
            raise
        finally:
            self._hooks.on_exit()

    def execute(self, query: str, parameters: object = None) -> Cursor:
        self._call(self._conn.execute, query, parameters)
        return self

    def executemany(self, query: str, parameters: object) -> Cursor:
        self._call(self._conn.executemany, query, parameters)
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._call(self._conn.fetchall)  # type: ignore[no-any-return]

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row; the rest of the result is read and dropped, which ends its transaction."""
        return self._call(self._first_row)  # type: ignore[no-any-return]

    def _first_row(self) -> tuple[Any, ...] | None:
        row = self._conn.fetchone()
        if row is not None:
            self._conn.fetchall()
        return row

    def scalar(self, query: str, parameters: object = None) -> int:
        """The first column of the first row of `query`, as an int (0 when there is no row or it is NULL)."""
        row = self.execute(query, parameters).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    def fetchnumpy(self) -> dict[str, np.ndarray]:
        return self._call(self._conn.fetchnumpy)  # type: ignore[no-any-return]

    def register(self, name: str, data: object) -> Cursor:
        self._call(self._conn.register, name, data)
        return self

    def unregister(self, name: str) -> Cursor:
        self._call(self._conn.unregister, name)
        return self

    @property
    def raw(self) -> duckdb.DuckDBPyConnection:
        """The wrapped connection (for closing it)."""
        return self._conn


@contextmanager
def read_snapshot(cur: Cursor) -> Iterator[Cursor]:
    """Statements in this block see one committed state of the store. Each statement outside a
    transaction sees the latest commit, so reads that must agree (an index's tables) would otherwise
    mix two builds when a writer commits between them. Inside a caller's transaction, that one."""
    try:
        cur.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:
        yield cur  # already in a transaction, which is a snapshot
        return
    try:
        yield cur
    except BaseException:
        with suppress(duckdb.Error):
            cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")  # nothing was written: this only ends the snapshot
