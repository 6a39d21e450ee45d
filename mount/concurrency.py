"""The daemon's concurrency rules as code (developer-notes/concurrency.md explains them).

- `GuardedStore`: a Store that refuses to hand out a DuckDB cursor on the trio thread, so a blocking
  query on the event loop is an error (counted and logged), not a silent stall.
- `SingleFlight`: concurrent requests for the same expensive thing (a listing, a recall) share one
  worker-thread computation.
- `Blocking`: the type of `MountOps._sync`, which the view's parts are handed to reach worker threads.

The daemon's caches are `recallfs.query.caches.LruCache`, the one cache type (only the trio thread
touches them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import trio

from recallfs.query.cursor import Cursor
from recallfs.query.store import Store

log = logging.getLogger("recallfs.mount")
T = TypeVar("T")


class Blocking(Protocol):
    """How the trio thread runs blocking work: `await run(fn, *args)` in a worker thread (MountOps._sync)."""

    async def __call__(self, fn: Callable[..., T], /, *args: Any) -> T: ...


class LoopThreadError(RuntimeError):
    """A DuckDB call was attempted on the trio thread."""


class GuardedStore(Store):
    """The daemon's store. `loop_thread` is set once trio runs; cursors are refused on that thread."""

    # DuckDB keeps freed query buffers up to its memory_limit (80% of RAM by default); a daemon that
    # lives for days should hold far less. Larger operations spill to <store>.tmp instead.
    MEMORY_LIMIT = "512MB"

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        self.loop_thread: int | None = None
        self.violations = 0
        super().__init__(path, memory_limit=self.MEMORY_LIMIT, **kwargs)  # set again at every reopen (as threads)

    def cursor(self) -> Cursor:
        if self.loop_thread is not None and threading.get_ident() == self.loop_thread:
            self.violations += 1
            log.error("DuckDB cursor requested on the trio thread (a bug: it would block every request)")
            raise LoopThreadError("DuckDB must not be called on the trio thread")
        return super().cursor()


@dataclass(slots=True)
class _Flight(Generic[T]):
    done: trio.Event = field(default_factory=trio.Event)
    ok: bool = False
    result: Any = None
    error: Exception | None = None


class SingleFlight:
    """`await run(key, fn)`: the first caller computes, callers arriving meanwhile get its result."""

    def __init__(self) -> None:
        self._flights: dict[Hashable, _Flight[Any]] = {}

    async def run(self, key: Hashable, fn: Callable[[], Awaitable[T]]) -> T:
        while True:
            flight = self._flights.get(key)
            if flight is None:
                break
            await flight.done.wait()
            if flight.ok:
                return flight.result
            if flight.error is not None:
                raise flight.error
            # The computing task was cancelled: compute again ourselves.
        flight = _Flight()
        self._flights[key] = flight
        try:
            flight.result = await fn()
            flight.ok = True
            return flight.result
        except Exception as exc:
            flight.error = exc
            raise
        finally:
            del self._flights[key]
            flight.done.set()
