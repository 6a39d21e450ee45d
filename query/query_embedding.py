"""The query side of the embedder: one query at a time, on a worker thread, within a time budget.

recall starts a query's embedding before its lexical arm (`start_query`) and joins it when the semantic
arm needs the vector; the mount and an eval run also ask for the fast query graph (`serve_queries`,
query/query_encoder.py). The last QUERY_CACHE vectors are kept: the mount runs one query for `ls`,
`cat` and results.json. Embedder (query/embedder.py) is the model, its loading and bulk embedding; this
is the mixin it takes its query methods from.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from recallfs.query.query_encoder import QueryEncoder, fast_query_encoder, run_on_one_thread
from recallfs.query.query_worker import PendingQuery, Worker, overran

QUERY_CACHE = 256  # recent query vectors kept: the mount re-runs a query for ls, cat and results.json
# How long start_query waits to see its encode begin (a free worker takes ~0.1 ms; a busy one is not waited for)
START_WAIT_S = 0.002


class QueryEmbedding:
    """Query embedding over the Embedder's loaded model (the attributes below are the Embedder's)."""

    device: str
    query_precision: str
    _lock: threading.Lock
    _state: str
    _encoder: Any
    _query_fast: QueryEncoder | None
    _serves_queries: bool
    _cache: OrderedDict[str, np.ndarray]
    _cache_lock: threading.Lock
    _worker: Worker | None

    def _encode(self, texts: list[str], batch_size: int | None = None, *, bulk: bool = False) -> np.ndarray:
        raise NotImplementedError  # the Embedder's

    def _require_ready_now(self) -> None:
        raise NotImplementedError  # the Embedder's

    def serve_queries(self) -> None:
        """This process embeds many queries (the daemon, an eval run): once the model is loaded, trace
        its query graph (query/query_encoder.py) on a background thread, and take that path when it is
        ready. A one-off CLI recall or an ingest does not call this: the ~2 s of tracing would cost
        them more than it saves."""
        with self._lock:
            first, self._serves_queries = not self._serves_queries, True
        if first and self._state == "ready":
            self._trace_queries()

    @property
    def query_path(self) -> str:
        """How a query is embedded now: "onnx" or "traced" (serve_queries' fast paths), or "stock"."""
        return self._query_fast.runtime if self._query_fast is not None else "stock"

    @property
    def query_dtype(self) -> str:
        """The precision queries are embedded in now: the fast path's, else the model's float32."""
        return self._query_fast.precision if self._query_fast is not None else "float32"

    def _trace_queries(self) -> None:
        encoder = self._encoder
        if self.device != "cpu" or encoder is None or not hasattr(encoder, "forward"):
            return  # an injected encoder (tests) or a GPU model: the stock path

        def trace() -> None:
            self._query_fast = fast_query_encoder(encoder, self.query_precision)

        threading.Thread(target=trace, name="recallfs-trace-query", daemon=True).start()

    def embed_query(self, text: str, *, budget_ms: float | None = None) -> np.ndarray:
        """One query vector (shape (d,)). Waits at most `budget_ms`, else raises TimeoutError."""
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        self._require_ready_now()
        if budget_ms is None:
            vec = self._encode_query(text)
        else:
            fut = self._query_worker().submit(lambda: self._encode_query(text))
            try:
                vec = fut.result(timeout=max(budget_ms, 0.0) / 1000.0)
            except TimeoutError:
                fut.cancel()  # if it has not started, it never will
                raise overran(budget_ms) from None
        self.remember_query(text, vec)
        return vec

    def start_query(self, text: str) -> PendingQuery:
        """Start embedding `text` on the query worker now, so that the caller can work meanwhile
        (recall runs its lexical arm); PendingQuery.result() joins it. Nothing starts when the vector
        is cached or the model is not ready: result() is then embed_query() itself."""
        with self._cache_lock:
            cached = text in self._cache
        if cached or self._state != "ready":
            return PendingQuery(self, text, None)
        fast = self._query_fast
        try:
            # Tokenized here, and the graph started before this returns: the worker then needs the GIL
            # only to return. Begun while the caller ran Python, it waited up to a switch interval
            # (5 ms) at each step: an encode beside a busy thread took 15.8 ms against 4.4 alone.
            features = fast.features(text) if fast is not None and self.device == "cpu" else None
        except Exception:  # whatever failed fails again on the worker, and result() raises it there
            features = None
        if fast is None or features is None:
            # the job also says when it finished: the budget is judged on the encode, not on the join
            return PendingQuery(self, text, self._query_worker().submit(
                lambda: (self._encode_query(text), time.monotonic())))
        started = threading.Event()

        def encode() -> tuple[np.ndarray, float]:
            started.set()  # the caller wakes once the graph releases the GIL, just after this
            return run_on_one_thread(fast, features), time.monotonic()

        worker = self._query_worker()
        busy = not worker.idle.is_set()  # behind another recall's encode: it does not wait its turn
        job = worker.submit(encode)
        if not busy:
            started.wait(START_WAIT_S)  # bounded all the same
        return PendingQuery(self, text, job)

    def remember_query(self, text: str, vec: np.ndarray) -> None:
        with self._cache_lock:
            self._cache[text] = vec
            while len(self._cache) > QUERY_CACHE:
                self._cache.popitem(last=False)

    def _query_worker(self) -> Worker:
        if self._worker is None:
            with self._lock:
                if self._worker is None:
                    self._worker = Worker("recallfs-embed-query")
        return self._worker

    def _encode_query(self, text: str) -> np.ndarray:
        """One sentence on one CPU thread. A short input gains little from intra-op parallelism, and on
        a busy machine every OpenMP barrier waits for a descheduled peer: measured on 2 busy cores,
        2 threads took 60-900 ms per query, 1 thread 30-45 ms. Bulk embedding keeps all threads."""
        if self.device != "cpu" or self._encoder is None or not hasattr(self._encoder, "forward"):
            return np.asarray(self._encode([text], batch_size=1)[0])
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            if self._query_fast is not None:
                return self._query_fast(text)
            return np.asarray(self._encode([text], batch_size=1)[0])
        finally:
            torch.set_num_threads(before)
