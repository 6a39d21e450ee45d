"""What recall's arms and the stages after them share: where a recall searches (Scope), what it reports
besides its hits (Trace), and what recall needs of the semantic arm (SemanticArm, SemanticQuery; the
arm itself is query/semantic.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from recallfs.query.cursor import Cursor
from recallfs.query.store import Store
from recallfs.query.vector_gap import VectorGap
from recallfs.ranking.calibration import Z_FLOOR

T = TypeVar("T")


class SemanticQuery(Protocol):
    """One recall's use of the semantic arm: its searches, and the query vector they computed."""

    paths: dict[str, str]  # table -> how its nearest rows were found (exact, or the inverted lists)
    gaps: dict[str, VectorGap]  # table -> its readable rows the semantic arm has no vector for

    def search(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[int]:
        """Ranked rids; raises on failure (recall contains it). `alone`: no lexical arm runs beside it
        (the arm may then keep weaker neighbours than it would offer to fusion)."""
        ...

    def search_cosines(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
    ) -> dict[int, float]:
        """The arm alone: {rid: cosine} of every neighbour above its cosine floor, best first."""
        ...

    def search_calibrated(
        self, store: Store, schema: str, table: str, where: str, params: list[object], limit: int,
        *, also: Sequence[int] = (), z_floor: float = Z_FLOOR,
    ) -> dict[int, float]:
        """{rid: calibrated score in 0..1} of its own hits and of `also` (rows another arm found), for
        those whose z against the background passes `z_floor` (ranking/calibration.standout_floor)."""
        ...

    def start(self) -> None:
        """Begin computing the query's embedding in the background (recall calls it before the lexical
        arm, so the two overlap); vector() and the searches join it. Raises nothing."""
        ...

    def prefetch(self, store: Store, schema: str, where: str, params: list[object], limit: int) -> None:
        """Begin, in the background, the nearest-row searches of every table that search() and
        search_calibrated() will make with these arguments; they join it. Raises nothing."""
        ...

    def prepare(self, store: Store, schema: str, where: str, params: list[object], limit: int,
                found: dict[int, str]) -> None:
        """Do now, beside the prefetched searches, what search_calibrated() will ask of the rows another
        arm found (`found`: rid -> table, authorized), then help with the searches. Raises nothing."""
        ...

    def vector(self) -> np.ndarray | None:
        """The query's embedding: the one a search computed, else computed now; None when the arm has
        no model. Raises as the searches do (TimeoutError past the budget)."""
        ...

    @property
    def cosines(self) -> Mapping[int, float]:
        """rid -> the query's cosine, for each row a search of this handle returned or scored."""
        ...


class SemanticArm(Protocol):
    """What recall needs from the semantic arm (query/semantic.py provides it)."""

    def availability(self) -> tuple[bool, str | None]:
        """(ready, degraded_reason)."""
        ...

    def query(self, text: str) -> SemanticQuery:
        """A handle for searching `text`; embeds nothing until a search or vector() needs it."""
        ...

    def stored_vectors(
        self, store: Store, schema: str, by_table: Mapping[str, Sequence[int]]
    ) -> dict[int, np.ndarray] | None:
        """The stored embeddings of these (authorized) rows, needing no model; None when the store has
        none. Raises on failure (the caller reads them from DuckDB instead)."""
        ...


@dataclass(slots=True)
class Trace:
    """What one recall reports besides its hits: notes, timings, and whether it is degraded to lexical."""

    notes: list[str]
    degraded: bool = True
    degraded_reason: str | None = "off"
    timings: dict[str, float] = field(default_factory=dict)
    stale: str | None = None  # why the store may lack the newest writes (Store.stale)
    standout: tuple[float, float] | None = None  # calibrated fusion: (the lexical arm's best, the z bar)

    def timed(self, name: str, fn: Callable[[], T]) -> T:
        """fn(), its time added to timings[name] (also when it raises)."""
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - t0) * 1000


@dataclass(frozen=True, slots=True)
class Scope:
    """Where the arms search: one partition, the rows the gate's clause lets this caller read."""

    store: Store
    cur: Cursor
    schema: str
    where: str
    params: list[object]
    limit: int  # candidates per arm and table
    # Every row the caller may read, filters and currentness aside: the rows whose statistics BM25
    # scores with (query/bm25_reader.py), so hidden rows move no score; None: every row
    corpus: tuple[str, list[object]] | None
