"""One recall's use of the semantic arm (query/recall_scope.SemanticQuery): the query vector, the nearest
readable rows of each table, and the floors a neighbour must clear to count as a hit.

recall() starts the embedding and the tables' searches on a worker before its lexical arm (`start`,
`prefetch`). Once its own work is done, recall's thread scores the lexical hits against the query and
takes the searches the worker has not begun (`prepare`); the searches it then makes join them and find
their answers made.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_worker import QueryVector
from recallfs.query.store import Store
from recallfs.query.vector_gap import VectorGap, vector_gap
from recallfs.query.vector_meta import ModelMismatchError, StoredModel, mismatch_message
from recallfs.ranking.calibration import Z_FLOOR, semantic_score, similarity_z, weak_score

if TYPE_CHECKING:
    from recallfs.query.semantic import SemanticSearch

# Below this cosine a neighbour is noise whatever the collection: without a floor the arm would
# return its `limit` nearest rows for any query at all (padding). MiniLM puts unrelated sentences at
# 0..0.2 and the paraphrases in tests/semantic_data.py at 0.32..0.62.
MIN_COSINE = 0.2
# A neighbour must also stand out from the query's similarity to the partition's other memories:
# z = (cos - mean) / sd over a sample of readable rows. In fusion only clear standouts take part
# (about the top 0.5% of a normal background), so a data set on which this arm is the weaker one
# cannot bury the lexical arm's hits under near-misses, while a paraphrase lexical cannot see still
# comes through. Measured on LoCoMo; the rationale and figures are in developer-notes/semantic-arm.md.
# Alone (no lexical arm beside it) the arm keeps every neighbour above MIN_COSINE, like a plain cosine
# top-k: a standout filter there cut true hits on every dev set (developer-notes/devsets.md).
FUSED_MIN_Z = 2.5
ALONE_MIN_COSINE = 0.0
# Calibrated fusion needs a background even in a partition too small to sample one (under
# BACKGROUND_MIN rows, query/background_sample.py): MiniLM's typical similarity between unrelated
# memories, as measured on the demo set's partitions (mean 0.05..0.2, sd 0.07..0.13).
PRIOR_MEAN, PRIOR_SD = 0.1, 0.1
# Where a recall's vector searches run while its lexical work goes on (QuerySearch.prefetch): FAISS and
# torch release the GIL, so on two cores the query embedding and the scans overlap the BM25 arm.
# A few threads, so that concurrent recalls in the daemon do not queue behind one another's scans.
_PREFETCH = ThreadPoolExecutor(max_workers=4, thread_name_prefix="recallfs-semantic")
NearestKey = tuple[int, str, str, str, str, int]


@dataclass(slots=True)
class SemanticHit:
    rid: int
    score: float  # cosine mapped to 0..1


class QuerySearch:
    """One recall's searches for one query text (query/recall_scope.SemanticQuery). The first search that needs
    the query's embedding computes it under the arm's budget, and the handle keeps it for the other
    tables and for the ranking stages."""

    __slots__ = ("_backgrounds", "_found", "_handover", "_nearest", "_prefetch", "_query", "_unclaimed", "arm",
                 "cosines", "gaps", "paths", "text")

    def __init__(self, arm: SemanticSearch, text: str) -> None:
        self.arm = arm
        self.text = text
        self._query = QueryVector(arm.embedder, text, arm.budget_ms)
        self.cosines: dict[int, float] = {}  # rid -> the query's cosine, for every row a search scored
        # (store, schema, table, where, params, limit) -> the index's answer: rank fusion's relevance
        # (arms.calibrated_evidence) asks each table again with the same arguments
        self._nearest: dict[NearestKey, list[tuple[int, float]]] = {}
        self._prefetch: Future[None] | None = None  # the searches prefetch() began, until a search joins them
        self.paths: dict[str, str] = {}  # table -> how its nearest rows were found (VectorIndexes.search)
        self.gaps: dict[str, VectorGap] = {}  # table -> its readable rows without a vector (query/vector_gap.py)
        # (store, schema, where, params) -> the query's background there, asked once for every table
        self._backgrounds: dict[tuple[int, str, str, str], tuple[float, float] | None] = {}
        self._found: dict[tuple[int, str, str], dict[int, float]] = {}  # (store, schema, table) -> rid -> cosine
        self._handover = threading.Lock()  # recall's thread and the worker each take the next table to search
        self._unclaimed = list(MEMORY_TABLES)  # taken from the end: turns, usually the largest table, first

    def start(self) -> None:
        """Begin the query embedding now, on the embedder's query worker, so that it runs while recall
        does its lexical work; vector() joins it with the same budget and errors (PendingQuery)."""
        if self.arm.enabled:
            self._query.start()

    def prefetch(self, store: Store, schema: str, where: str, params: list[object], limit: int) -> None:
        """Start, on a worker thread, what every table's search will ask first: the query embedding,
        then each table's nearest readable rows. recall() calls it before its lexical arm; the searches
        join it (_join) and find their answers made. A failure here is left for the search that joins
        to meet again and report (a timed-out embedding is not waited for twice)."""
        if self._prefetch is None and self.arm.enabled and self.arm.embedder is not None:
            self._prefetch = _PREFETCH.submit(self._search_all, store, schema, where, list(params), limit)

    def _search_all(self, store: Store, schema: str, where: str, params: list[object], limit: int) -> None:
        """The embedding, then the tables' searches, largest first, until recall's thread, done with its
        own work, takes the rest (prepare): two threads share the searches. More threads only took turns
        at the GIL beside recall's Python (three scans: ~3 ms for ~2 ms of work)."""
        try:
            self._embedded()
        except Exception:  # the joining search meets it again (vector() raises the same failure)
            return
        self._search_claimed(store, schema, where, params, limit)

    def _search_claimed(self, store: Store, schema: str, where: str, params: list[object], limit: int) -> None:
        while True:
            with self._handover:
                if not self._unclaimed:
                    return
                table = self._unclaimed.pop()
            self._search_table(store, schema, table, where, params, limit)

    def _search_table(self, store: Store, schema: str, table: str, where: str, params: list[object],
                      limit: int) -> None:
        try:
            ready = self._ready(store, schema, table, where, params)
            if ready is not None:
                self.nearest(store, schema, table, ready[1], where, params, limit, ready[0])
        except Exception:  # the joining search repeats the step, and reports what failed
            return

    def _join(self) -> None:
        """Wait for prefetch()'s searches (they finish within the embedding budget, or fail)."""
        job, self._prefetch = self._prefetch, None
        if job is not None:
            job.result()

    def vector(self) -> np.ndarray | None:
        self._join()
        return self._embedded()

    def _embedded(self) -> np.ndarray | None:
        """The query vector, computed (or joined) on first use, by whichever thread asks first."""
        return self._query.get()

    def search(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[int]:
        return [h.rid for h in self.search_scored(store, schema, table, where, params, limit, alone=alone)]

    def search_scored(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[SemanticHit]:
        """Hits that clear the similarity floors, best first. `alone`: this arm is the only one (no
        standout floor, only the cosine floor). Raises TimeoutError when the query embedding overruns the
        budget, VectorError when the stored vectors do not fit the model."""
        self._join()
        ready = self._ready(store, schema, table, where, params)
        if ready is None:
            return []
        stored, qvec = ready
        arm = self.arm
        found = self.nearest(store, schema, table, qvec, where, params, limit, stored)
        least = (1.0 + ALONE_MIN_COSINE) / 2.0 if alone else arm.min_score
        found = [(rid, score) for rid, score in found if score >= least]
        if not found:
            return []
        background = None if alone else self._background(store, schema, stored, where, params, qvec)
        if background is not None:
            mean, sd = background
            floor = (mean + arm.fused_min_z * sd + 1.0) / 2.0  # as a 0..1 score
            found = [(rid, score) for rid, score in found if score >= floor]
        self.cosines.update((rid, 2.0 * score - 1.0) for rid, score in found)
        return [SemanticHit(rid, score) for rid, score in found]

    def search_cosines(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
    ) -> dict[int, float]:
        """The arm alone: {rid: cosine} of its hits (search_scored, alone), best first."""
        found = self.search_scored(store, schema, table, where, params, limit, alone=True)
        return {h.rid: 2.0 * h.score - 1.0 for h in found}

    def search_calibrated(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
        *, also: Sequence[int] = (), z_floor: float = Z_FLOOR,
    ) -> dict[int, float]:
        """For calibrated fusion: {rid: score in 0..1} (ranking/calibration.semantic_score) of the nearest
        `limit` readable rows that clear the cosine floor and stand out from the background at all
        (z above `z_floor`, the standout bar: calibration.standout_floor), best first, plus the scores
        of `also` (rows the lexical arm found, already authorized) that clear it. The other nearest rows
        with a positive cosine come as near-misses, at calibration.weak_score. Raises as search_scored()
        does."""
        self._join()
        ready = self._ready(store, schema, table, where, params)
        if ready is None:
            return {}
        stored, qvec = ready
        arm = self.arm
        mean, sd = self._background(store, schema, stored, where, params, qvec) or (PRIOR_MEAN, PRIOR_SD)
        found = self.nearest(store, schema, table, qvec, where, params, limit, stored)
        cosines = {rid: 2.0 * score01 - 1.0 for rid, score01 in found}
        scored = self._found.get((id(store), schema, table), {})
        cosines.update((rid, scored[rid]) for rid in also if rid in scored and rid not in cosines)
        cosines.update(self._cosines(store, schema, table, [rid for rid in also if rid not in cosines], qvec))
        floor = 2.0 * arm.min_score - 1.0  # the cosine floor, back on the -1..1 scale
        out: dict[int, float] = {}
        lexical = set(also)
        for rid, cosine in cosines.items():
            calibrated = semantic_score(similarity_z(cosine, mean, sd), z_floor) if cosine >= floor else 0.0
            if calibrated <= 0:
                # A neighbour that does not stand out, or is under the cosine floor, is a near-miss: it
                # may follow the hits (ranking/floor.py), above the cosine the arm alone asks (a plain
                # top-k's continuation). A row the lexical arm found needs no such share.
                if rid in lexical or cosine <= ALONE_MIN_COSINE:
                    continue
                calibrated = weak_score(cosine)
            out[rid] = calibrated
            self.cosines[rid] = cosine
        return out

    def prepare(self, store: Store, schema: str, where: str, params: list[object], limit: int,
                found: dict[int, str]) -> None:
        """Work recall's thread does once its own is done, while the worker searches: the query's background,
        its cosines to `found` (rid -> table: rows another arm found in this scope, authorized), then
        the searches the worker has not begun. Waits for the embedding. Raises nothing: a search that
        needs what failed here computes it again, and reports the failure."""
        if self._prefetch is None:
            return
        try:
            indexes = self.arm.indexes
            # Gathered before the wait for the embedding: the gather is most of the cosines' cost
            # (random rows of a large table) and needs no query vector.
            windows = {table: indexes.row_windows(store, schema, table, [r for r, t in found.items() if t == table])
                       for table in MEMORY_TABLES}
            qvec = self._embedded()
            stored = indexes.stored(store)
            if qvec is None or stored is None:
                return
            self._background(store, schema, stored, where, params, qvec)
            for table, rows in windows.items():
                self._found[(id(store), schema, table)] = rows.best(qvec)
        except Exception:  # the search meets it again and reports it
            return
        self._search_claimed(store, schema, where, params, limit)

    def _background(self, store: Store, schema: str, stored: StoredModel, where: str, params: list[object],
                    qvec: np.ndarray) -> tuple[float, float] | None:
        key = (id(store), schema, where, repr(params))
        if key not in self._backgrounds:
            self._backgrounds[key] = self.arm.background(store, schema, stored, where, params, qvec)
        return self._backgrounds[key]

    def nearest(
        self, store: Store, schema: str, table: str, qvec: np.ndarray, where: str, params: list[object], limit: int,
        stored: StoredModel,
    ) -> list[tuple[int, float]]:
        """[(rid, cos01)] of the `limit` nearest readable rows (VectorIndexes.search), once per handle."""
        key: NearestKey = (id(store), schema, table, where, repr(params), limit)
        found = self._nearest.get(key)
        if found is None:
            found, self.paths[table] = self.arm.indexes.search(
                store, schema, table, qvec, where=where, params=params, limit=limit, stored=stored,
                exact=self.arm.exact)
            self._nearest[key] = found
        return found

    def _cosines(self, store: Store, schema: str, table: str, rids: list[int], qvec: np.ndarray) -> dict[int, float]:
        """The query's cosine to these rows' best windows (rows without a vector are absent)."""
        if not rids:
            return {}
        return self.arm.indexes.best_cosines(store, schema, table, rids, qvec)

    def _ready(self, store: Store, schema: str, table: str, where: str,
               params: list[object]) -> tuple[StoredModel, np.ndarray] | None:
        """(stored model, query vector), or None when this table has nothing to search. Embeds first:
        it is the part that can time out, and it tells us the model's identity. Notes the table's
        readable rows without a vector (a table with none at all in a store that has some is such a
        gap too, not a failure: the other tables' vectors still serve)."""
        arm = self.arm
        if not arm.enabled or arm.embedder is None:
            return None
        stored = arm.indexes.stored(store)
        if stored is None:
            arm.require_vectors(store, schema, table)
            return None
        qvec = self._embedded()
        assert qvec is not None  # an enabled arm has an embedder
        if stored.model != arm.embedder.model_id or stored.dim != len(qvec):
            raise ModelMismatchError(mismatch_message(stored, arm.embedder.model_id, len(qvec)))
        index = arm.indexes.index_for(store, schema, table, stored)
        gap = vector_gap(store, schema, table, where, params, index)
        if gap.missing:
            self.gaps[table] = gap
        return (stored, qvec) if index.ntotal else None
