"""Reciprocal rank fusion with per-list weights (arm x table provenance).

score(d) = sum over lists L containing d of  w(L) / (k + rank_L(d))

normalised by the best score any one row could reach: rank 1 in every list of the best-weighted
table (a row lives in one table). Empty lists count in that bound, so a score means the same thing
whichever arms happened to find something; scores lie in 0..1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.provenance import RANK_WEIGHTS, SINGLE_ARM_WEIGHTS, split_list_name, weight_for

RRF_K = 60


def list_key(arm: str, table: str) -> str:
    return f"{arm}:{table}"


def best_possible(names: Sequence[str], weights: Mapping[str, float] | None, k: int) -> float:
    """The highest fused score one row can reach over these lists (0 when every weight is 0)."""
    per_table: dict[str, float] = {}
    for name in names:
        w = weight_for(name, weights)
        if w > 0:
            table = split_list_name(name)[1]
            per_table[table] = per_table.get(table, 0.0) + w / (k + 1)
    return max(per_table.values(), default=0.0)


def rrf(
    lists: Mapping[str, Sequence[int]],
    tables: Mapping[int, str],
    *,
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[Candidate]:
    """Fuse ranked lists of row ids. `lists` maps `arm:table` to rids, best first.

    `weights` keys are lists, arms or tables (see ranking.provenance); None means RANK_WEIGHTS, {}
    equal weights. A rid repeated inside one list counts once, at its best rank.
    Lists with weight 0 are ignored.
    """
    if k < 1:
        raise ValueError("the RRF k constant must be at least 1")
    if weights is None:
        weights = RANK_WEIGHTS
    ranked: dict[str, list[tuple[int, float]]] = {}
    for name, rids in lists.items():
        w = weight_for(name, weights)
        if w > 0:
            distinct = dict.fromkeys(rids)  # a repeated rid counts once, at its best rank
            ranked[name] = [(rid, w / (k + rank)) for rank, rid in enumerate(distinct, start=1)]
    return _fuse(ranked, tables, best_possible(list(lists), weights, k))


def calibrated(
    scores: Mapping[str, Mapping[int, float]],
    tables: Mapping[int, str],
    *,
    weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """Fuse calibrated arm scores (ranking/calibration.py): a weighted sum per row.

    `scores` maps `arm:table` to {rid: score in 0..1}; a row absent from a list scores 0 there. A row's
    fused score is sum over lists of w(list) * score, over the best sum any row of the best-weighted
    table could reach, so it lies in 0..1 like rrf()'s. A row every arm scores 0 is no match and is
    dropped (no padding). `ranks` records each row's rank among that list's positive scores.
    """
    ranked: dict[str, list[tuple[int, float]]] = {}
    for name, by_rid in scores.items():
        w = weight_for(name, weights)
        if w > 0:
            positive = sorted(((s, rid) for rid, s in by_rid.items() if s > 0), key=lambda p: (-p[0], -p[1]))
            ranked[name] = [(rid, w * s) for s, rid in positive]
    return _fuse(ranked, tables, best_possible(list(scores), weights, 0))


def by_score(
    scores: Mapping[str, Mapping[int, float]],
    tables: Mapping[int, str],
    *,
    weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """One arm's per-table lists merged by the arm's own scores (a cosine, a calibrated BM25): the
    order a plain retriever over all the rows gives. Merged by rank instead (rrf), each table's first
    row came in the first three whatever its score. `weights` None means SINGLE_ARM_WEIGHTS (the
    semantic arm's tables weigh 1, the lexical arm's keep calibrated fusion's table prior; why in
    ranking/provenance.py); custom weights scale the scores. Rows scoring 0 are dropped."""
    return calibrated(scores, tables, weights=SINGLE_ARM_WEIGHTS if weights is None else weights)


def best_per_table(
    cands: Sequence[Candidate], limit: int, keep: Callable[[Candidate], bool] | None = None,
) -> list[Candidate]:
    """The first `limit` candidates of each table, in the order given (best first). Fusion keeps no
    more rows per table than one arm brings: the union of two arms is about 1.7x one arm's rows, and
    the stages after fusion cost per row, while rows past that cut almost never reach a page (every
    dev set measured the same with and without it; developer-notes/recall-performance.md).
    `keep`: past the cut, the candidates it accepts stay too (at most `limit` more per table): a stage
    that will lift them (the named time window) cannot lift what the cut dropped."""
    seen: dict[str, int] = {}
    kept: list[Candidate] = []
    for cand in cands:
        count = seen.get(cand.table, 0)
        if count < limit or (keep is not None and count < 2 * limit and keep(cand)):
            kept.append(cand)
            seen[cand.table] = count + 1
    return kept


def _fuse(
    ranked: Mapping[str, Sequence[tuple[int, float]]], tables: Mapping[int, str], bound: float
) -> list[Candidate]:
    """Sum each row's contributions over the lists (`arm:table` -> [(rid, weighted score)], best first),
    recording its 1-based rank in each, then scale by `bound`, the best sum one row could reach."""
    fused: dict[int, Candidate] = {}
    for name, contributions in ranked.items():
        arm = split_list_name(name)[0]
        for rank, (rid, part) in enumerate(contributions, start=1):
            cand = fused.get(rid)
            if cand is None:
                cand = fused[rid] = Candidate(rid=rid, table=tables[rid])
            cand.score += part
            cand.arms.add(arm)
            cand.ranks[name] = rank
    for cand in fused.values():
        if bound > 0:
            cand.score /= bound
        cand.relevance = cand.score  # rank fusion's callers replace it with calibrated evidence
    return ordered(list(fused.values()))
