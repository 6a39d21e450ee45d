"""A slow, literal reference implementation of weighted RRF, kept only to test the fast one against.

It follows the formula directly: for every row in the union of the lists, look up its first
position in each list by search, with no incremental state to get wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recallfs.ranking.provenance import RANK_WEIGHTS, split_list_name, weight_for


def rrf_reference(
    lists: Mapping[str, Sequence[int]],
    *,
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> list[tuple[int, float]]:
    """(rid, normalised score) for every row, in no particular order."""
    weights = RANK_WEIGHTS if weights is None else weights
    live = {name: list(rids) for name, rids in lists.items() if weight_for(name, weights) > 0}
    universe = {rid for rids in live.values() for rid in rids}
    out: list[tuple[int, float]] = []
    tables = {split_list_name(name)[1] for name in lists}
    bound = 0.0
    for table in tables:
        reach = sum(
            weight_for(name, weights) / (k + 1)
            for name in lists
            if split_list_name(name)[1] == table and weight_for(name, weights) > 0
        )
        bound = max(bound, reach)
    for rid in universe:
        total = 0.0
        for name, rids in live.items():
            if rid not in rids:
                continue
            distinct: list[int] = []
            for r in rids:
                if r not in distinct:
                    distinct.append(r)
            rank = distinct.index(rid) + 1
            total += weight_for(name, weights) / (k + rank)
        out.append((rid, total / bound if bound else total))
    return out
