"""Retrieval metrics over one ranked list of relevance units: pure functions, tested from tables.

A *unit* is what relevance is judged on (a LoCoMo turn id such as "D1:3", or a session such as
"session_1"). The harness first turns a ranked list of hits into a ranked list of distinct units
(`unit_ranking`), then scores that list against the set of relevant units:

- recall@k: 1 when any relevant unit is among the first k units, else 0 (a question is a hit at k
  when any of its evidence is in the top k; the usual LoCoMo convention);
- MRR: 1 / rank of the first relevant unit (0 when none is ranked);
- nDCG@10: binary gains, DCG = sum of 1/log2(rank+1) over relevant units in the first 10, divided by
  the DCG of the ideal list (all relevant units first, at most 10 of them).

Averages are plain means over questions, so every question weighs the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

RECALL_KS = (1, 5, 10)
NDCG_K = 10
METRICS = ("r@1", "r@5", "r@10", "mrr", "ndcg@10")


def unit_ranking(hit_units: Iterable[Sequence[str]]) -> list[str]:
    """Ranked hits -> ranked distinct units. Each hit names the units it counts for, in order; a unit
    already ranked by an earlier hit is not ranked again, and a hit naming no unit takes no rank."""
    seen: dict[str, None] = {}
    for units in hit_units:
        for unit in units:
            if unit not in seen:
                seen[unit] = None
    return list(seen)


def recall_at(ranking: Sequence[str], relevant: set[str], k: int) -> float:
    return 1.0 if any(unit in relevant for unit in ranking[:k]) else 0.0


def reciprocal_rank(ranking: Sequence[str], relevant: set[str]) -> float:
    for rank, unit in enumerate(ranking, start=1):
        if unit in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranking: Sequence[str], relevant: set[str], k: int = NDCG_K) -> float:
    if not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, unit in enumerate(ranking[:k], start=1) if unit in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal


def score(ranking: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """Every metric for one question."""
    out = {f"r@{k}": recall_at(ranking, relevant, k) for k in RECALL_KS}
    out["mrr"] = reciprocal_rank(ranking, relevant)
    out["ndcg@10"] = ndcg_at(ranking, relevant, NDCG_K)
    return out


def mean(scores: Sequence[Mapping[str, float]], digits: int = 4) -> dict[str, float]:
    """Per-metric mean over questions, rounded for stable JSON (0.0 for every metric when empty)."""
    if not scores:
        return {m: 0.0 for m in METRICS}
    return {m: round(sum(s[m] for s in scores) / len(scores), digits) for m in METRICS}


CURRENTNESS_METRICS = ("current@1", "stale_above_current")
LOWER_IS_BETTER = frozenset({"stale_above_current"})


def currentness(hits: Sequence[str], current: set[str], stale: set[str]) -> dict[str, float]:
    """One question of the currentness set, over its hits' source ids in rank order: current@1 (the
    first hit is a current memory) and stale_above_current (a stale memory ranks above every current
    one; a stale hit with no current hit at all counts)."""
    first_current = next((i for i, h in enumerate(hits) if h in current), len(hits))
    first_stale = next((i for i, h in enumerate(hits) if h in stale), None)
    return {
        "current@1": 1.0 if hits and hits[0] in current else 0.0,
        "stale_above_current": 1.0 if first_stale is not None and first_stale < first_current else 0.0,
    }


def mean_of(scores: Sequence[Mapping[str, float]], names: Sequence[str], digits: int = 4) -> dict[str, float]:
    """Per-metric mean of the named metrics (0.0 each when empty)."""
    if not scores:
        return {m: 0.0 for m in names}
    return {m: round(sum(s[m] for s in scores) / len(scores), digits) for m in names}
