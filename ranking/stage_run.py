"""What the shaping stages share while they run (ranking/pipeline.py): their inputs, and the Shaped they
write to. Kept apart from the stages so that the pipeline module holds only the stages and their order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from recallfs.ranking.candidates import Candidate
from recallfs.ranking.currentness import CurrentLink
from recallfs.ranking.similarity import Vector
from recallfs.ranking.stage_config import StageConfig


@dataclass(slots=True)
class Shaped:
    cands: list[Candidate]
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # stage -> what it did, for results.json ("on", "off", "skipped: ...", "auto: 'latest'", ...)
    stages: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class StageRun:
    """One run of the stages: what they read, and the Shaped they write to."""

    out: Shaped
    config: StageConfig
    query: str
    terms: Sequence[str]
    query_vector: Vector | None
    vectors: Mapping[int, Vector] | None
    recent_half_life_days: float | None
    budget_tokens: int | None
    calibrated: bool
    clock: Callable[[], float]
    links: Mapping[int, Sequence[CurrentLink]] = field(default_factory=dict)
    replies: Mapping[int, int] = field(default_factory=dict)  # question rid -> its reply's rid
    context: Mapping[int, float] = field(default_factory=dict)  # turn rid -> its context cosine
    now: datetime | None = None  # when the question is asked (relative dates: ranking/time_window.py)
    near_misses: list[Candidate] = field(default_factory=list)  # below the floor; they follow the hits

    def timed(self, name: str, fn: Callable[[], list[Candidate]]) -> None:
        t0 = self.clock()
        self.out.cands = fn()
        self.out.timings_ms[name] = (self.clock() - t0) * 1000
