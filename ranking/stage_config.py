"""Which shaping stages run, and their knobs: the configuration alone, without the stages' code.

Kept apart from ranking/pipeline.py so that the settings table (and with it `recallfs --help`) does not
import numpy and the stages to learn their defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from recallfs.ranking.calibration import Z_FLOOR, Z_FLOOR_WEAK
from recallfs.ranking.recency import DEFAULT_BAND, DEFAULT_HALF_LIFE_DAYS

DEFAULT_SESSION_WEIGHT = 0.6  # ranking/session_evidence.py (kept here so this module needs no stages)
DEFAULT_SESSION_BREADTH = 1.0  # how much a session's further hits add to its support (0: its best alone)
DEFAULT_QUESTION_WEIGHT = 0.8  # ranking/questions.py
DEFAULT_REPLY_WEIGHT = 0.9  # ranking/replies.py: a question's reply scores at least this x the question
DEFAULT_WINDOW_WEIGHT = 1.0  # ranking/time_window.py: memories in the window the question names x (1 + this)
DEFAULT_CONTEXT_WEIGHT = 0.2  # ranking/context.py: a turn gains this x (its context cosine - 0.2)

DEFAULT_LAMBDA = 0.7  # MMR: relevance against diversity under a token budget
DEFAULT_THRESHOLD = 0.9  # cosine at or above which two hits may be near-duplicates

DEFAULT_RELEVANCE_FLOOR = 0.01  # ranking/floor.py; measured in developer-notes/ranking.md
DEFAULT_FLOOR_COSINE = 0.3  # ranking/floor.py: the cosine a hit only the semantic arm found must reach

RECENCY_MODES = ("off", "auto", "on")
# The names --ablate toggles, in pipeline order.
STAGES = ("standout", "dedup", "floor", "questions", "session", "replies", "context", "rerank", "collapse", "bonuses",
          "window", "recency", "near_misses", "currentness", "mmr", "min_score")


# The knobs that must lie in a range (StageConfig.__post_init__): name -> (lowest, highest).
_RANGES: dict[str, tuple[float, float]] = {
    "rerank_mix": (0.0, 1.0), "mmr_lambda": (0.0, 1.0), "collapse_threshold": (-1.0, 1.0),
    "recency_band": (0.0, 1.0), "relevance_floor": (0.0, 1.0), "floor_cosine": (-1.0, 1.0),
    "question_weight": (0.0, 1.0), "reply_weight": (0.0, 1.0), "window_weight": (0.0, 10.0),
    "context_weight": (0.0, 10.0), "session_weight": (0.0, 10.0), "session_breadth": (0.0, 1.0),
    "standout_weak_z": (0.0, Z_FLOOR),
}


# Stages switched by a boolean field of their own name.
_SWITCHES = frozenset({"dedup", "rerank", "collapse", "currentness", "mmr", "near_misses"})
# Stages switched by one number: stage -> (field, its value when off, the value toggling it on sets).
_KNOBS: dict[str, tuple[str, float, float]] = {
    "standout": ("standout_weak_z", Z_FLOOR, Z_FLOOR_WEAK), "min_score": ("min_score", 0.0, 0.05),
    "questions": ("question_weight", 1.0, DEFAULT_QUESTION_WEIGHT),
    "session": ("session_weight", 0.0, DEFAULT_SESSION_WEIGHT), "replies": ("reply_weight", 0.0, DEFAULT_REPLY_WEIGHT),
    "context": ("context_weight", 0.0, DEFAULT_CONTEXT_WEIGHT), "window": ("window_weight", 0.0, DEFAULT_WINDOW_WEIGHT),
}


@dataclass(frozen=True, slots=True)
class StageConfig:
    """Which shaping stages run, and their knobs. The defaults are the shipped pipeline."""

    # Fusion, before the stages: the semantic arm's standout bar when the lexical arm matched nothing
    # (ranking/calibration.standout_floor); Z_FLOOR: the bar never falls.
    standout_weak_z: float = Z_FLOOR_WEAK
    dedup: bool = True
    relevance_floor: float = DEFAULT_RELEVANCE_FLOOR  # drop hits whose arms matched less (0 keeps all)
    floor_cosine: float = DEFAULT_FLOOR_COSINE  # ... and semantic-only hits less near the query than this
    near_misses: bool = True          # ... unless some hit passes: then they follow the hits (ranking/floor.py)
    question_weight: float = DEFAULT_QUESTION_WEIGHT  # score x this for a turn that asks; 1 is off
    reply_weight: float = DEFAULT_REPLY_WEIGHT  # a question's reply scores at least this x it; 0 is off
    window_weight: float = DEFAULT_WINDOW_WEIGHT  # x (1 + this) inside the time window asked about; 0 is off
    context_weight: float = DEFAULT_CONTEXT_WEIGHT  # a turn read with its neighbours; 0 is off
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
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        for name, (lo, hi) in _RANGES.items():
            if not lo <= getattr(self, name) <= hi:
                what = " is a cosine: it" if (lo, hi) == (-1.0, 1.0) else ""
                raise ValueError(f"{name}{what} must lie in {lo:g}..{hi:g}")

    def replace(self, **changes: Any) -> StageConfig:
        return dataclasses.replace(self, **changes)

    def is_on(self, stage: str) -> bool:
        """Whether one stage of STAGES runs under this config (--ablate names its row by it)."""
        if stage == "recency":
            return self.recency != "off"
        if stage == "bonuses":
            return self.tag_bonus > 0 or self.kind_bonus > 0
        if stage == "floor":
            return self.relevance_floor > 0 or self.floor_cosine > 0
        if stage in _KNOBS:
            name, when_off, _ = _KNOBS[stage]
            return bool(getattr(self, name) != when_off)
        if stage in _SWITCHES:
            return bool(getattr(self, stage))
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")

    def toggled(self, stage: str) -> StageConfig:
        """The config with one stage of STAGES flipped: what --ablate measures, row by row."""
        on = self.is_on(stage)
        if stage == "recency":
            return self.replace(recency="off" if on else "auto")
        if stage == "bonuses":
            return self.replace(tag_bonus=0.0 if on else 0.1, kind_bonus=0.0 if on else 0.1)
        if stage == "floor":
            if on:
                return self.replace(relevance_floor=0.0, floor_cosine=0.0)
            return self.replace(relevance_floor=DEFAULT_RELEVANCE_FLOOR or 0.03,
                                floor_cosine=DEFAULT_FLOOR_COSINE or 0.3)
        if stage in _KNOBS:
            name, when_off, when_on = _KNOBS[stage]
            return self.replace(**{name: when_off if on else when_on})
        return self.replace(**{stage: not on})
