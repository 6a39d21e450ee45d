"""The semantic arm: embed the query under a time budget, then search the partition's FAISS index
restricted to the rids the gate allows. Returns rids only, like every arm.

Degraded reasons, as recall reports them: `off` (the `semantic` setting is false), `warming` (the
model is still loading), `model-missing`, `timeout` (the query embedding overran its budget) and
`error` (the model failed to load or encode, or the stored vectors do not fit the model).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from recallfs.query.embedder import Embedder
from recallfs.query.semantic_query import FUSED_MIN_Z, MIN_COSINE, QuerySearch, SemanticHit
from recallfs.query.settings import DEFAULTS, Settings, SettingsError
from recallfs.query.shared_embedders import embedder_from_settings
from recallfs.query.store import Store
from recallfs.query.vector_meta import StoredModel, VectorError
from recallfs.query.vectors import VectorIndexes, ensure_indexes, shared_indexes
from recallfs.ranking.calibration import Z_FLOOR

VECTOR_SEARCHES = ("ann", "exact")
log = logging.getLogger("recallfs.semantic")

__all__ = ["FUSED_MIN_Z", "MIN_COSINE", "QuerySearch", "SemanticHit", "SemanticSearch"]


class SemanticSearch:
    """The semantic arm (query/recall_scope.SemanticArm): one per process, shared by every recall."""

    def __init__(
        self,
        embedder: Embedder | None,
        *,
        enabled: bool = True,
        budget_ms: float | None = DEFAULTS.embed_timeout_ms,
        indexes: VectorIndexes | None = None,
        min_cosine: float = MIN_COSINE,
        fused_min_z: float = FUSED_MIN_Z,
        exact: bool = False,
    ) -> None:
        self.embedder = embedder
        self.enabled = enabled and embedder is not None
        self.budget_ms = budget_ms
        self.indexes = indexes or shared_indexes()
        self.min_score = (1.0 + min_cosine) / 2.0
        self.fused_min_z = fused_min_z
        self.exact = exact  # search every readable window, never the inverted lists (query/ivf_lists.py)
        self._indexes_ready = threading.Event()
        self._indexes_ready.set()  # nothing to wait for until warm_indexes() is asked

    @classmethod
    def from_settings(cls, cfg: Settings, *, warm: bool = True) -> SemanticSearch:
        """The arm as the settings describe it (`semantic`, `model`, `device`, `embed_timeout_ms`);
        starts the background warm-up unless the arm is off."""
        if cfg.vector_search not in VECTOR_SEARCHES:
            raise SettingsError(f"RECALLFS_VECTOR_SEARCH must be ann or exact, not {cfg.vector_search!r}")
        if not cfg.semantic:
            return cls(None, enabled=False)
        embedder = embedder_from_settings(cfg)
        if warm:
            embedder.warm_queries()  # the saved query graph where there is one, else the model
        return cls(embedder, budget_ms=float(cfg.embed_timeout_ms), exact=cfg.vector_search == "exact")

    # -- the protocol (query/recall_scope.SemanticArm) ---------------------------------------------------------
    def availability(self) -> tuple[bool, str | None]:
        if not self.enabled or self.embedder is None:
            return False, "off"
        ready, reason = self.embedder.availability()
        if ready and not self._indexes_ready.is_set():
            return False, "warming"  # the model is loaded, the store's vector indexes not yet
        return ready, reason

    def warm_indexes(self, store: Store, schema: str | None, then: Callable[[], None] | None = None) -> None:
        """Load a partition's vector indexes (or build those missing) on a background thread, as the model
        loads, and run `then` (the daemon's full-text postings) on another beside it; until both are done
        the arm says `warming` and recall answers lexically, rather than make the first hybrid recalls
        wait seconds for a large index or the postings (at 1M memories, side by side: hybrid-ready in
        8.9-10.4 s; one after the other: 11.0 s). A failure is logged: each search then loads its table's
        index again, and reports what fails."""
        if not self.enabled or schema is None:
            if then is not None:
                threading.Thread(target=then, name="recallfs-lexical-warm", daemon=True).start()
            return
        self._indexes_ready.clear()

        def warm() -> None:
            started = time.perf_counter()
            beside = threading.Thread(target=then or (lambda: None), name="recallfs-lexical-warm", daemon=True)
            beside.start()
            try:
                count = ensure_indexes(store, self.indexes, schemas=[schema])
                log.info("%d vector indexes ready in %.1f s", count, time.perf_counter() - started)
            except Exception:
                log.exception("could not load the vector indexes ahead of the first recall")
            finally:
                beside.join()
                self._indexes_ready.set()

        threading.Thread(target=warm, name="recallfs-index-warm", daemon=True).start()

    def wait_indexes(self) -> None:
        """Until warm_indexes() has loaded the indexes (or failed); at once when none was asked for."""
        self._indexes_ready.wait()

    def query(self, text: str) -> QuerySearch:
        return QuerySearch(self, text)

    def stored_vectors(
        self, store: Store, schema: str, by_table: Mapping[str, Sequence[int]]
    ) -> dict[int, np.ndarray] | None:
        """From the in-memory FAISS indexes: they need no model, so they serve a lexical recall too."""
        return self.indexes.stored_vectors(store, schema, by_table)

    def stuck_for_s(self) -> float:
        """How long the model has been loading past its load timeout (0 when it is not stuck)."""
        if self.embedder is None:
            return 0.0
        loading = self.embedder.loading_for_s()
        return loading if loading > self.embedder.load_timeout_s else 0.0

    # -- one query text per call (QuerySearch's searches) --------------------------------------------------
    def search(
        self, store: Store, schema: str, table: str, query: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[int]:
        return self.query(query).search(store, schema, table, where, params, limit, alone=alone)

    def search_scored(
        self, store: Store, schema: str, table: str, query: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[SemanticHit]:
        return self.query(query).search_scored(store, schema, table, where, params, limit, alone=alone)

    def search_calibrated(
        self, store: Store, schema: str, table: str, query: str, where: str, params: list[object], limit: int,
        *, also: Sequence[int] = (), z_floor: float = Z_FLOOR,
    ) -> dict[int, float]:
        return self.query(query).search_calibrated(store, schema, table, where, params, limit, also=also,
                                                   z_floor=z_floor)

    # -- what every search of a query uses -------------------------------------------------------------
    def background(
        self, store: Store, schema: str, stored: StoredModel, where: str, params: list[object], qvec: np.ndarray
    ) -> tuple[float, float] | None:
        """(mean, sd) of the query's cosine to a sample of the rows this caller may read, or None when
        they are too few to sample (VectorIndexes.background)."""
        sample = self.indexes.background(store, schema, stored, where, params)
        if sample is None:
            return None
        sims = sample @ qvec
        return float(sims.mean()), max(float(sims.std()), 1e-6)

    def require_vectors(self, store: Store, schema: str, table: str) -> None:
        """A table with memories but not one vector is not searchable: say so rather than answer
        `degraded: false` with nothing found."""
        if store.table_counts(schema).get(table, 0):
            model = self.embedder.model_id if self.embedder else "the configured model"
            raise VectorError(
                f"the {table} of this workspace have no vectors yet (stored before embeddings, or with the "
                f"semantic arm off or its model missing): run `recallfs reindex` to embed them with {model}"
            )


