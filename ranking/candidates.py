"""The candidate a ranking stage sees: an authorized row id with its scores and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

# Scores are sums of floats whose order of addition can differ between equal candidates; rounding
# the sort key makes "equal" mean equal, so the tie-break (newest, then id) decides, not noise.
_SCORE_DIGITS = 12


@dataclass(slots=True)
class Candidate:
    rid: int
    table: str
    score: float = 0.0
    arms: set[str] = field(default_factory=set)
    # (arm, table) -> 1-based rank in that list: kept so results.json can say where a hit came from
    ranks: dict[str, int] = field(default_factory=dict)
    created_at: datetime | None = None
    id: str = ""
    # Filled from the loaded row (after authorization) for the stages that look at content.
    content: str = ""
    kind: str = ""
    tags: tuple[str, ...] = ()
    session: str | None = None  # the conversation the memory came from (None: not tied to one)
    # rids of other authorized rows folded into this hit by dedup or near-duplicate collapse
    merged: list[int] = field(default_factory=list)
    # Why this turn or summary is no longer current ('' when it is): ranking/currentness.py
    stale: str = ""
    # How strongly the arms matched, on the calibrated 0..1 scale, before any shaping stage: what the
    # relevance floor (ranking/floor.py) reads, so that priors (recency, session, questions) never
    # decide whether a hit is a match at all.
    relevance: float | None = None  # None: not measured (hand-made lists); the floor keeps it
    # The query's cosine to this row's embedding when the semantic arm scored it (None: it did not).
    # The z-score behind the semantic arm's relevance is relative to the query: for a query about
    # nothing, the nearest rows still stand out. The floor also asks semantic-only hits for a cosine.
    cosine: float | None = None
    shares_words: bool = False  # the lexical side scored it: it holds a word of the query
    near_miss: bool = False  # below the relevance floor: it follows the hits (ranking/floor.py)

    def copy(self) -> Candidate:
        """An independent copy. Stages never change a candidate they are given: they copy the ones they
        change and pass the others through as they are (copying every candidate in every stage cost
        about a fifth of a recall at 100k memories)."""
        return Candidate(
            rid=self.rid, table=self.table, score=self.score, arms=set(self.arms), ranks=dict(self.ranks),
            created_at=self.created_at, id=self.id, content=self.content, kind=self.kind, tags=self.tags,
            session=self.session, merged=list(self.merged), stale=self.stale, relevance=self.relevance,
            cosine=self.cosine, shares_words=self.shares_words, near_miss=self.near_miss,
        )

    def sort_key(self) -> tuple[float, float, str, int]:
        """Deterministic order: score descending, then newest, then id, then row id."""
        return _order_key(self)


@lru_cache(maxsize=65_536)
def _timestamp(when: datetime) -> float:
    """datetime.timestamp(), remembered: for a naive datetime it asks the C library for the local zone
    (mktime) each time, and every stage sorts every candidate again (a tenth of a recall at 100k)."""
    return when.timestamp()


def _order_key(c: Candidate) -> tuple[float, float, str, int]:
    # A plain function over the fields: recall sorts some 500 candidates about ten times, and the
    # method call this replaced was a quarter of the cost of each sort.
    when = c.created_at
    # round(x, 12) formats the float through its decimal digits (most of a key's cost); scaling and
    # rounding to an integer quantizes as finely, in a tenth of the time
    scaled = c.score * _SCALE
    rank = -round(scaled) if -_FINITE < scaled < _FINITE else -scaled  # inf and nan cannot be rounded
    return (rank, -_timestamp(when) if when else _NEWEST_LAST, c.id, c.rid)


_NEWEST_LAST = float("inf")  # no date sorts after every dated candidate of the same score
_SCALE = 10.0**_SCORE_DIGITS
_FINITE = 2.0**62


def ordered(cands: list[Candidate]) -> list[Candidate]:
    """The tie-break stage: score descending, then newest, then id (then rid, so it is total)."""
    return sorted(cands, key=_order_key)


def absorb(keeper: Candidate, other: Candidate) -> None:
    """Fold `other` into `keeper`: every provenance survives (arms, per-list ranks, merged rids).

    The keeper's score becomes the better of the two, so a group ranks where its best member ranked.
    """
    keeper.score = max(keeper.score, other.score)
    if other.relevance is not None:
        keeper.relevance = other.relevance if keeper.relevance is None else max(keeper.relevance, other.relevance)
    keeper.shares_words = keeper.shares_words or other.shares_words
    if other.cosine is not None:
        keeper.cosine = other.cosine if keeper.cosine is None else max(keeper.cosine, other.cosine)
    keeper.arms |= other.arms
    for name, rank in other.ranks.items():
        keeper.ranks[name] = min(rank, keeper.ranks.get(name, rank))
    for rid in (other.rid, *other.merged):
        if rid != keeper.rid and rid not in keeper.merged:
            keeper.merged.append(rid)
