"""Recency dampening: score x 0.5 ** (age / half-life). Neutral unless turned on.

Recency reorders the relevant hits only (`band`): the hits scoring at least `band` x the best score
are dampened by age; the others stay below every one of them, in their own order. Dampening every
hit let a fresh, barely matching one take first place once the relevant ones were a few half-lives
old (`docs deployment recent:7d` put an off-topic summary first on the demo store).

Age is measured from the newest candidate, not from the wall clock: the newest hit keeps its score,
and the order between two hits depends only on how far apart they are in time, so a store of old
conversations behaves like a fresh one. A candidate with no timestamp counts as the oldest.
"""

from __future__ import annotations

from datetime import datetime

from recallfs.ranking.candidates import Candidate, ordered

DEFAULT_BAND = 0.8  # relevant = within 20% of the best score; measured in developer-notes/ranking.md
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


def recency_in_band(
    cands: list[Candidate], half_life_days: float, band: float = DEFAULT_BAND, *, reference: datetime | None = None
) -> list[Candidate]:
    """dampen_recency() over the hits scoring at least `band` x the best score; the others are scaled
    so that they stay below the lowest of those (in their own order, never raised). `band` 0: every
    hit is dampened (the behaviour before the band)."""
    if not 0.0 <= band <= 1.0:
        raise ValueError("the recency band must lie in 0..1")
    out = list(cands)  # no copy: dampen_recency copies what it dampens, and the others are copied below
    if half_life_days <= 0 or not out:
        return out
    top = max(c.score for c in out)
    threshold = band * top
    inside = [c for c in out if c.score >= threshold]
    outside = [c for c in out if c.score < threshold]
    if not outside:
        return dampen_recency(out, half_life_days, reference=reference)
    # Age counts from the newest relevant hit: the newest of what answers keeps its score.
    kept = dampen_recency(inside, half_life_days, reference=reference)
    lowest = min(c.score for c in kept)
    scale = min(1.0, lowest / threshold) if threshold > 0 else 1.0
    return ordered(kept + [_scaled(c, scale) for c in outside])


def _scaled(cand: Candidate, scale: float) -> Candidate:
    """The candidate with its score x `scale`: a copy, unless the score stays as it is."""
    if scale == 1.0:
        return cand
    out = cand.copy()
    out.score *= scale
    return out
