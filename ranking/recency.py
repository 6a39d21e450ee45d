"""Recency dampening: score x 0.5 ** (age / half-life). Neutral unless turned on.

Age is measured from the newest candidate, not from the wall clock: the newest hit keeps its score,
and the order between two hits depends only on how far apart they are in time, so a store of old
conversations behaves like a fresh one. A candidate with no timestamp counts as the oldest.
"""

from __future__ import annotations

from datetime import datetime

from recallfs.ranking.candidates import Candidate, ordered

DEFAULT_HALF_LIFE_DAYS = 180.0  # chosen by the ablation: 90 d let a fresh turn overtake the current fact (demo)
SECONDS_PER_DAY = 86_400.0


def recency_factor(age_days: float, half_life_days: float) -> float:
    """1.0 at age 0, 0.5 at one half-life; ages below 0 count as 0."""
    if half_life_days <= 0:
        return 1.0
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


def dampen_recency(
    cands: list[Candidate], half_life_days: float, *, reference: datetime | None = None
) -> list[Candidate]:
    """Multiply each score by its recency factor; `reference` defaults to the newest candidate."""
    out = [c.copy() for c in cands]
    if half_life_days <= 0 or not out:
        return out
    stamps = [c.created_at for c in out if c.created_at is not None]
    if not stamps:
        return ordered(out)
    ref = reference or max(stamps)
    oldest = min(stamps)
    for cand in out:
        when = cand.created_at or oldest
        cand.score *= recency_factor((ref - when).total_seconds() / SECONDS_PER_DAY, half_life_days)
    return ordered(out)
