"""Which shaping stages run, and their knobs: the configuration alone, without the stages' code.

Kept apart from ranking/pipeline.py so that the settings table (and with it `recallfs --help`) does not
import numpy and the stages to learn their defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from recallfs.ranking.recency import DEFAULT_BAND, DEFAULT_HALF_LIFE_DAYS

DEFAULT_SESSION_WEIGHT = 0.6  # ranking/session_evidence.py (kept here so this module needs no stages)
DEFAULT_SESSION_BREADTH = 1.0  # how much a session's further hits add to its support (0: its best alone)
DEFAULT_QUESTION_WEIGHT = 0.8  # ranking/questions.py

DEFAULT_LAMBDA = 0.7  # MMR: relevance against diversity under a token budget
DEFAULT_THRESHOLD = 0.9  # cosine at or above which two hits may be near-duplicates

DEFAULT_RELEVANCE_FLOOR = 0.01  # ranking/floor.py; measured in developer-notes/ranking.md
DEFAULT_FLOOR_COSINE = 0.3  # ranking/floor.py: the cosine a hit only the semantic arm found must reach

RECENCY_MODES = ("off", "auto", "on")
# The names --ablate toggles, in pipeline order.
STAGES = ("dedup", "floor", "questions", "session", "rerank", "collapse", "bonuses", "recency", "currentness",
          "mmr", "min_score")


@dataclass(frozen=True, slots=True)
class StageConfig:
    """Which shaping stages run, and their knobs. The defaults are the shipped pipeline."""

    dedup: bool = True
    relevance_floor: float = DEFAULT_RELEVANCE_FLOOR  # drop hits whose arms matched less (0 keeps all)
    floor_cosine: float = DEFAULT_FLOOR_COSINE  # ... and semantic-only hits less near the query than this
    question_weight: float = DEFAULT_QUESTION_WEIGHT  # score x this for a turn that asks; 1 is off
    session_weight: float = DEFAULT_SESSION_WEIGHT  # session evidence; 0 is off
    session_breadth: float = DEFAULT_SESSION_BREADTH  # a session's further hits in its support (0..1)
    rerank: bool = False
    rerank_mix: float = 0.5           # weight of the cosine in the blended score
    rerank_budget_ms: float = 50.0    # past this the fused order is kept
    collapse: bool = True
    collapse_threshold: float = DEFAULT_THRESHOLD
    recency: str = "auto"             # off | auto (on for temporal intent or recent:) | on
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    currentness: bool = True          # turns and summaries yield to the current fact that replaced them
    recency_band: float = DEFAULT_BAND  # recency reorders hits scoring >= this x the best (0: all hits)
    mmr: bool = True                  # with budget:N, choose by MMR diversity (False: by score only)
    mmr_lambda: float = DEFAULT_LAMBDA
    min_score: float = 0.0
    tag_bonus: float = 0.0            # 0 is off
    kind_bonus: float = 0.0           # 0 is off
    entity_first: bool = True         # exact entity match puts the entity's card first

    def __post_init__(self) -> None:
        if self.recency not in RECENCY_MODES:
            raise ValueError(f"recency must be one of {', '.join(RECENCY_MODES)}, not {self.recency!r}")
        if not 0.0 <= self.rerank_mix <= 1.0:
            raise ValueError("rerank_mix must lie in 0..1")
        if not 0.0 <= self.mmr_lambda <= 1.0:
            raise ValueError("mmr_lambda must lie in 0..1")
        if not -1.0 <= self.collapse_threshold <= 1.0:
            raise ValueError("collapse_threshold is a cosine: it must lie in -1..1")
        if not 0.0 <= self.recency_band <= 1.0:
            raise ValueError("recency_band must lie in 0..1")
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0.0 <= self.relevance_floor <= 1.0:
            raise ValueError("relevance_floor must lie in 0..1")
        if not -1.0 <= self.floor_cosine <= 1.0:
            raise ValueError("floor_cosine is a cosine: it must lie in -1..1")
        if not 0.0 <= self.question_weight <= 1.0:
            raise ValueError("question_weight must lie in 0..1")
        if not 0.0 <= self.session_weight <= 10.0:
            raise ValueError("session_weight must lie in 0..10")
        if not 0.0 <= self.session_breadth <= 1.0:
            raise ValueError("session_breadth must lie in 0..1")

    def replace(self, **changes: Any) -> StageConfig:
        return dataclasses.replace(self, **changes)

    def toggled(self, stage: str) -> StageConfig:
        """The config with one stage of STAGES flipped: what --ablate measures, row by row."""
        if stage == "recency":
            return self.replace(recency="off" if self.recency != "off" else "auto")
        if stage == "bonuses":
            on = self.tag_bonus > 0 or self.kind_bonus > 0
            return self.replace(tag_bonus=0.0 if on else 0.1, kind_bonus=0.0 if on else 0.1)
        if stage == "floor":
            if self.relevance_floor > 0 or self.floor_cosine > 0:
                return self.replace(relevance_floor=0.0, floor_cosine=0.0)
            return self.replace(relevance_floor=DEFAULT_RELEVANCE_FLOOR or 0.03,
                                floor_cosine=DEFAULT_FLOOR_COSINE or 0.3)
        if stage == "min_score":
            return self.replace(min_score=0.0 if self.min_score > 0 else 0.05)
        if stage == "questions":
            return self.replace(question_weight=1.0 if self.question_weight < 1 else DEFAULT_QUESTION_WEIGHT)
        if stage == "session":
            return self.replace(session_weight=0.0 if self.session_weight > 0 else DEFAULT_SESSION_WEIGHT)
        if stage in ("dedup", "rerank", "collapse", "currentness", "mmr"):
            return self.replace(**{stage: not getattr(self, stage)})
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
