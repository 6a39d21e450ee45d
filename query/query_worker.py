"""The thread query encodes run on, and a query embedding started ahead of need (PendingQuery): a
caller can stop waiting at its budget without killing the encode, and exit waits for one left running.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

import numpy as np


class QueryEmbedder(Protocol):
    """What a PendingQuery and a QueryVector ask of their embedder (query/embedder.Embedder)."""

    def embed_query(self, text: str, *, budget_ms: float | None = None) -> np.ndarray: ...

    def remember_query(self, text: str, vec: np.ndarray) -> None: ...

    def start_query(self, text: str) -> PendingQuery: ...


_WORKERS: weakref.WeakSet[Worker] = weakref.WeakSet()
EXIT_GRACE_S = 10.0  # how long exit waits for an encode a timed-out caller left running


@atexit.register
def _let_encodes_finish() -> None:
    """An encode still running when the interpreter exits aborts the process inside torch
    ("terminate called without an active exception"), after the output was written but with
    SIGABRT. Exit waits for it instead, bounded: an encode that never returns is abandoned."""
    deadline = time.monotonic() + EXIT_GRACE_S
    for worker in list(_WORKERS):
        worker.idle.wait(max(deadline - time.monotonic(), 0.0))


class Worker:
    """One daemon thread that runs query encodes, so a caller can stop waiting without killing it.

    A daemon thread (not a ThreadPoolExecutor) because an encode that never returns must not hold
    the process open at exit.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self.idle = threading.Event()
        self.idle.set()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        _WORKERS.add(self)

    def _loop(self) -> None:
        while True:
            fn, fut = self._jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue  # its caller already gave up
            self.idle.clear()
            try:
                fut.set_result(fn())
            except BaseException as exc:  # handed to the waiting caller
                fut.set_exception(exc)
            finally:
                self.idle.set()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        self._jobs.put((fn, fut))
        return fut


def overran(budget_ms: float) -> TimeoutError:
    return TimeoutError(f"query embedding took longer than its {budget_ms:g} ms budget")


class PendingQuery:
    """A query embedding started ahead of need (Embedder.start_query). result() answers as
    embed_query() would have, had it been called when the encode started: the same vector, and
    TimeoutError when the encode overran its budget, counted from its start (an encode that finished
    late still fails, even if nobody was waiting for it yet)."""

    __slots__ = ("_embedder", "_future", "_started", "_text")

    def __init__(self, embedder: QueryEmbedder, text: str, future: Future[Any] | None) -> None:
        self._embedder = embedder
        self._text = text
        self._future = future
        self._started = time.monotonic()

    def result(self, budget_ms: float | None) -> np.ndarray:
        future, self._future = self._future, None
        if future is None:  # nothing was started (cached or not ready), or already joined: as before
            return self._embedder.embed_query(self._text, budget_ms=budget_ms)
        if budget_ms is None:
            vec, _ = future.result()
        else:
            deadline = self._started + max(budget_ms, 0.0) / 1000.0
            try:
                vec, finished = future.result(timeout=max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                future.cancel()  # if it has not started, it never will
                raise overran(budget_ms) from None
            if finished > deadline:
                raise overran(budget_ms)
        self._embedder.remember_query(self._text, vec)
        return np.asarray(vec)


class QueryVector:
    """One recall's query embedding, shared by its threads: started ahead of need (start), joined under
    the budget by the first thread that asks (get); the others wait for that one, and a failure is
    raised again to each, so a timed-out embedding is not waited for twice."""

    __slots__ = ("_budget_ms", "_embedder", "_failure", "_lock", "_pending", "_text", "value")

    def __init__(self, embedder: QueryEmbedder | None, text: str, budget_ms: float | None) -> None:
        self._embedder = embedder  # None: the arm has no model, and the vector is None
        self._text = text
        self._budget_ms = budget_ms
        self._pending: PendingQuery | None = None  # the embedding start() began, until get() joins it
        self._failure: BaseException | None = None
        self._lock = threading.Lock()
        self.value: np.ndarray | None = None

    def start(self) -> None:
        if self.value is None and self._pending is None and self._embedder is not None:
            self._pending = self._embedder.start_query(self._text)

    def get(self) -> np.ndarray | None:
        if self.value is not None:
            return self.value
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self.value is None and self._embedder is not None:
                pending, self._pending = self._pending, None
                try:
                    self.value = (pending.result(self._budget_ms) if pending is not None
                                  else self._embedder.embed_query(self._text, budget_ms=self._budget_ms))
                except Exception as exc:
                    self._failure = exc
                    raise
            return self.value
