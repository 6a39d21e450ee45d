"""Reciprocal rank fusion with per-list weights (arm x table provenance).

score(d) = sum over lists L containing d of  w(L) / (k + rank_L(d))

normalised by the best score any document could reach (rank 1 in every list), so that scores lie
in 0..1 and mean the same thing from one query to the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recallfs.ranking.candidates import Candidate, ordered

RRF_K = 60


def list_key(arm: str, table: str) -> str:
    return f"{arm}:{table}"


def rrf(
    lists: Mapping[str, Sequence[int]],
    tables: Mapping[int, str],
    *,
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[Candidate]:
    """Fuse ranked lists of row ids. `lists` maps `arm:table` to rids, best first.

    A rid repeated inside one list counts once, at its best rank. Lists with weight 0 are ignored.
    """
    weights = weights or {}
    fused: dict[int, Candidate] = {}
    best_possible = 0.0
    for name, rids in lists.items():
        w = float(weights.get(name, 1.0))
        if w <= 0 or not rids:
            continue
        best_possible += w / (k + 1)
        arm = name.split(":", 1)[0]
        seen: set[int] = set()
        rank = 0
        for rid in rids:
            if rid in seen:
                continue
            seen.add(rid)
            rank += 1
            cand = fused.get(rid)
            if cand is None:
                cand = fused[rid] = Candidate(rid=rid, table=tables[rid])
            cand.score += w / (k + rank)
            cand.arms.add(arm)
            cand.ranks[name] = rank
    if best_possible > 0:
        for cand in fused.values():
            cand.score /= best_possible
    return ordered(list(fused.values()))
