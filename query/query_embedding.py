"""The query side of the embedder: one query at a time, on a worker thread, within a time budget.

recall starts a query's embedding before its lexical arm (`start_query`) and joins it when the semantic
arm needs the vector; the mount and an eval run also ask for the fast query graph (`serve_queries`,
query/query_encoder.py). The last QUERY_CACHE vectors are kept: the mount runs one query for `ls`,
`cat` and results.json. Embedder (query/embedder.py) is the model, its loading and bulk embedding; this
is the mixin it takes its query methods from.

A process that only embeds queries (`warm_queries`: the daemon, a CLI recall) first looks for the query
graph a process with the model saved (query/query_graph.py) and, where it finds one, never loads the
model for its queries; the model loads at the first job that needs it (rows to embed).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from recallfs.query.query_encoder import QueryEncoder, fast_query_encoder, run_on_one_thread
from recallfs.query.query_graph import load_graph, save_graph
from recallfs.query.query_worker import PendingQuery, Worker, overran

QUERY_CACHE = 256  # recent query vectors kept: the mount re-runs a query for ls, cat and results.json
# How long start_query waits to see its encode begin (a free worker takes ~0.1 ms; a busy one is not waited for)
START_WAIT_S = 0.002


class QueryEmbedding:
    """Query embedding over the Embedder's loaded model (the attributes below are the Embedder's)."""

    device: str
    device_setting: str
    model_path: str
    query_precision: str
    _lock: threading.Lock
    _state: str
    _encoder: Any
    _query_fast: QueryEncoder | None
    _serves_queries: bool
    _cache: OrderedDict[str, np.ndarray]
    _cache_lock: threading.Lock
    _worker: Worker | None
    _graph_state: str  # idle -> looking -> found | none: warm_queries' look for a saved query graph
    _graph_done: threading.Event
    _load_started: float | None
    load_timeout_s: float

    @property
    def model_id(self) -> str:
        raise NotImplementedError  # the Embedder's

    def start_warmup(self) -> None:
        raise NotImplementedError  # the Embedder's

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        raise NotImplementedError  # the Embedder's

    def _encode(self, texts: list[str], batch_size: int | None = None, *, bulk: bool = False) -> np.ndarray:
        raise NotImplementedError  # the Embedder's

    def _require_ready_now(self) -> None:
        raise NotImplementedError  # the Embedder's

    def warm_queries(self) -> None:
        """Make queries ready, on a background thread (idempotent): through the saved query graph where
        there is one for this model, else by loading the model (start_warmup). The graph serves the
        float32 CPU path only: a GPU device or bfloat16 queries load the model."""
        with self._lock:
            if self._graph_state != "idle":
                return
            self._graph_state = "looking"
            if self._load_started is None:
                self._load_started = time.monotonic()  # a hung look counts as a hung load (health: stuck)
        if self._state != "idle" or self.device_setting not in ("auto", "cpu") or self.query_precision not in (
                "auto", "float32") or not self.model_path:
            self._graph_found(None)
            return
        threading.Thread(target=lambda: self._graph_found(load_graph(self.model_path)),
                         name="recallfs-query-graph", daemon=True).start()

    def _graph_found(self, graph: QueryEncoder | None) -> None:
        if graph is not None:
            self._query_fast = graph
        self._graph_state = "found" if graph is not None else "none"
        self._graph_done.set()
        if graph is None:
            self.start_warmup()

    def queries_ready(self) -> bool:
        """Whether a query can be embedded now, without waiting for a load."""
        return self._graph_state == "found" or self._state == "ready"

    def graph_serves(self, timeout_s: float | None = None) -> bool:
        """warm_queries(), then wait up to `timeout_s` (None: the model's load timeout) for its look for a
        saved graph (a fraction of a second; a model on a hung file system holds it); True when the graph
        serves queries."""
        self.warm_queries()
        self._graph_done.wait(self.load_timeout_s if timeout_s is None else timeout_s)
        return self._graph_state == "found"

    def wait_queries(self, timeout_s: float | None = None) -> bool:
        """Wait up to `timeout_s` (None: the model's load timeout) in all for queries to be ready, through
        the saved graph or the model. True when they are."""
        deadline = time.monotonic() + (self.load_timeout_s if timeout_s is None else timeout_s)
        if self.graph_serves(timeout_s):
            return True
        return self.wait_ready(max(deadline - time.monotonic(), 0.0))

    def keep_query_graph(self) -> None:
        """Save the loaded model's query graph for later processes (query/query_graph.py), unless it is
        saved already or the model is not a CPU one of the plain shape."""
        encoder = self._encoder
        if self._state == "ready" and self.device == "cpu" and hasattr(encoder, "forward"):
            save_graph(encoder, self.model_path, self.model_id)  # at once when it is saved already

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
    def query_from_saved_graph(self) -> bool:
        """Whether queries run on the saved graph (query/query_graph.py) rather than one made from the
        loaded model."""
        return self._graph_state == "found"

    @property
    def query_dtype(self) -> str:
        """The precision queries are embedded in now: the fast path's, else the model's float32."""
        return self._query_fast.precision if self._query_fast is not None else "float32"

    def _trace_queries(self) -> None:
        encoder = self._encoder
        if self.device != "cpu" or encoder is None or not hasattr(encoder, "forward"):
            return  # an injected encoder (tests) or a GPU model: the stock path
        if self._graph_state == "found":
            return  # the saved graph serves queries already

        def trace() -> None:
            if self.query_precision == "float32":
                # Saved first and then loaded, rather than exported to memory and saved apart: one export
                # and one session at the peak, and the next daemon or CLI recall needs no model.
                self.keep_query_graph()
                graph = load_graph(self.model_path)
                if graph is not None:
                    self._query_fast = graph
                    return
            self._query_fast = fast_query_encoder(encoder, self.query_precision)
            self.keep_query_graph()

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
        if cached or not self.queries_ready():
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
        graph = self._query_fast
        if self._graph_state == "found" and graph is not None:
            return graph(text)  # ONNX Runtime, one thread of its own: no torch in this process
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
