"""recall()'s arms: each searches every memory table for ids, guarded on its own.

One runner per fusion, over one per-table loop (`_each_table`): calibrated fusion takes each arm's
{rid: calibrated score}, rank fusion each arm's ranked rids, a single arm its own scores (single_arm).
An arm that fails is empty and says so in a note; the semantic arm's first failure degrades the whole
answer to lexical.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TypeVar

from recallfs.query.lexical import score_indexed, search_calibrated
from recallfs.query.lexical import search as lexical_search
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.recall_scope import Scope, SemanticQuery, Trace
from recallfs.query.vector_meta import VectorError
from recallfs.ranking.calibration import Z_FLOOR_WEAK, standout_floor
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.fusion import calibrated, list_key

log = logging.getLogger("recallfs.recall")

Found = TypeVar("Found", list[int], dict[int, float])
Scored = dict[str, dict[int, float]]  # `arm:table` -> {rid: calibrated score}
Ranked = dict[str, list[int]]  # `arm:table` -> rids, best first


def _no_scores() -> dict[int, float]:
    return {}


def _no_rids() -> list[int]:
    return []


def calibrated_arms(
    scope: Scope, terms: list[str], semantic: SemanticQuery | None, trace: Trace,
    between: Callable[[dict[int, str]], None] | None = None, *, weak_z: float = Z_FLOOR_WEAK,
) -> tuple[Scored, dict[int, str]]:
    """Both arms' calibrated scores per table, for ranking.fusion.calibrated; and each rid's table.
    `between(tables)` runs after the lexical arm and before the semantic one (recall loads the lexical
    hits there, while the semantic arm's prefetched searches finish). The semantic arm's standout bar
    follows how well the lexical arm matched (calibration.standout_floor, falling to `weak_z`); the
    trace keeps both (`trace.standout`)."""
    store, schema, where, params, limit = scope.store, scope.schema, scope.where, scope.params, scope.limit
    tables: dict[int, str] = {}
    lexical = _calibrated_bm25(scope, terms)

    def search(table: str) -> dict[int, float]:
        assert semantic is not None
        also = list(scores[list_key("lexical", table)])
        return semantic.search_calibrated(store, schema, table, where, params, limit, also=also, z_floor=bar)

    def score_unseen(table: str, found: dict[int, float]) -> None:
        # The lexical side of rows only the semantic arm found: fusion weighs both arms for every row.
        lex = scores[list_key("lexical", table)]
        unseen = [rid for rid in found if rid not in lex]
        lex.update(_guarded(trace, "lexical", table, _no_scores,
                            partial(score_indexed, store, schema, table, terms, unseen, corpus=scope.corpus)))

    scores = _each_table(trace, "lexical", tables, _no_scores, lexical)
    # How well the lexical arm matched sets the semantic arm's standout bar: every table's lexical hits
    # are in by now.
    best = max((max(found.values(), default=0.0) for found in scores.values()), default=0.0)
    bar = standout_floor(best, weak_z)
    if semantic is not None:
        trace.standout = (best, bar)
    if semantic is not None and between is not None:
        between(dict(tables))
    if semantic is not None:
        scores.update(_each_table(trace, "semantic", tables, _no_scores, search, then=score_unseen))
    return scores, tables


def ranked_arms(
    scope: Scope, terms: list[str], semantic: SemanticQuery | None, trace: Trace, *, lexical: bool,
    between: Callable[[dict[int, str]], None] | None = None,
) -> tuple[Ranked, dict[int, str]]:
    """Each asked-for arm's ranked rids per table, for ranking.fusion.rrf; and each rid's table.
    `between`: as in calibrated_arms."""
    store, schema, where, params, limit = scope.store, scope.schema, scope.where, scope.params, scope.limit
    tables: dict[int, str] = {}

    def lexical_ranked(table: str) -> list[int]:
        return lexical_search(store, schema, table, terms, where=where, params=params, limit=limit,
                              corpus=scope.corpus)

    def semantic_ranked(table: str) -> list[int]:
        assert semantic is not None
        return semantic.search(store, schema, table, where, params, limit, alone=not lexical)

    lists: Ranked = _each_table(trace, "lexical", tables, _no_rids, lexical_ranked) if lexical else {}
    if semantic is not None and between is not None and tables:
        between(dict(tables))
    if semantic is not None:
        lists.update(_each_table(trace, "semantic", tables, _no_rids, semantic_ranked))
    return lists, tables


def single_arm(
    scope: Scope, terms: list[str], semantic: SemanticQuery | None, trace: Trace, *, lexical: bool,
) -> tuple[Scored, dict[int, str]]:
    """One arm alone, each table's hits with the score the arm ranks them by: the calibrated BM25
    (lexical) or the cosine (semantic). Alone, an arm's tables are merged by these scores
    (ranking.fusion.by_score): merged by rank, the best row of every table came in the first three
    whatever it scored (developer-notes/devsets.md)."""
    store, schema, where, params, limit = scope.store, scope.schema, scope.where, scope.params, scope.limit
    tables: dict[int, str] = {}

    def semantic_scored(table: str) -> dict[int, float]:
        assert semantic is not None
        return semantic.search_cosines(store, schema, table, where, params, limit)

    if lexical:
        return _each_table(trace, "lexical", tables, _no_scores, _calibrated_bm25(scope, terms)), tables
    if semantic is None:
        return {}, tables
    return _each_table(trace, "semantic", tables, _no_scores, semantic_scored), tables


def _calibrated_bm25(scope: Scope, terms: list[str]) -> Callable[[str], dict[int, float]]:
    """table -> the lexical arm's calibrated BM25 scores of its hits in this scope."""
    def search(table: str) -> dict[int, float]:
        return search_calibrated(scope.store, scope.schema, table, terms, where=scope.where, params=scope.params,
                                 limit=scope.limit, corpus=scope.corpus)
    return search


def _each_table(
    trace: Trace, arm: str, tables: dict[int, str], empty: Callable[[], Found], search: Callable[[str], Found],
    *, then: Callable[[str, Found], None] | None = None,
) -> dict[str, Found]:
    """`arm:table` -> search(table) over every memory table, each guarded; `then` runs after each table.
    The semantic arm stops at its first failure and then returns nothing: a degraded answer carries
    no semantic scores, and the other tables would only fail or wait again."""
    found: dict[str, Found] = {}
    for table in MEMORY_TABLES:
        if arm == "semantic" and trace.degraded:
            break
        hits = _guarded(trace, arm, table, empty, partial(search, table))
        found[list_key(arm, table)] = hits
        tables.update((rid, table) for rid in hits)
        if then is not None:
            then(table, hits)
    return {} if arm == "semantic" and trace.degraded else found


def _guarded(trace: Trace, arm: str, table: str, empty: Callable[[], Found], fn: Callable[[], Found]) -> Found:
    """fn(), timed under the arm's name; empty() when it fails."""
    try:
        return trace.timed(arm, fn)
    except Exception as exc:  # an arm failure empties that arm only
        _failed(trace, arm, table, exc)
        return empty()


def _failed(trace: Trace, arm: str, table: str, exc: Exception) -> None:
    """Note a failed arm (called while handling `exc`); the semantic arm's failure degrades the answer."""
    if arm == "lexical":
        log.exception("lexical arm failed on %s", table)
        trace.notes.append(f"lexical arm failed on {table}: {type(exc).__name__}")
    elif isinstance(exc, TimeoutError):
        trace.degraded, trace.degraded_reason = True, "timeout"
        trace.notes.append(f"semantic arm: {exc}; answered from the lexical arm")
    elif isinstance(exc, VectorError):  # a state of the store the note explains, not a fault: no traceback
        log.warning("semantic arm: %s", exc)
        trace.degraded, trace.degraded_reason = True, "error"
        trace.notes.append(f"semantic arm failed on {table}: {exc}")
    else:
        log.exception("semantic arm failed on %s", table)
        trace.degraded, trace.degraded_reason = True, "error"
        trace.notes.append(f"semantic arm failed on {table}: {exc or type(exc).__name__}")


def calibrated_evidence(
    scope: Scope, terms: list[str], semantic: SemanticQuery | None, cands: Sequence[Candidate], trace: Trace,
    *, arms: Sequence[str], weights: Mapping[str, float] | None,
) -> bool:
    """For candidates not fused by calibrated scores (RECALLFS_FUSION=rrf, or a single arm): set each
    one's `relevance` to the calibrated fused score of the `arms` that ran, and `shares_words`, so that
    the relevance floor means the same whichever fusion orders the hits. Rank fusion's own scores are
    reciprocal ranks:
    they say where a row came, not whether it matched. Costs a second pass of the arms (cached BM25,
    one more FAISS search per table); a failure here only leaves a relevance at 0, noted once.
    Returns whether any readable memory holds a word of the query (shares_words)."""
    quiet = Trace(notes=[], degraded=trace.degraded, degraded_reason=trace.degraded_reason)
    scores, tables = calibrated_arms(scope, terms, semantic, quiet)
    tables.update((c.rid, c.table) for c in cands)
    chosen = {name: found for name, found in scores.items() if name.split(":", 1)[0] in arms}
    fused = {c.rid: c.score for c in calibrated(chosen, tables, weights=weights)}
    for cand in cands:
        cand.relevance = fused.get(cand.rid, 0.0)
    attach_evidence(cands, scores, semantic)
    trace.timings["evidence"] = sum(quiet.timings.values())
    return shares_words(scores)


def shares_words(scores: Scored) -> bool:
    """Whether the lexical side found any readable memory holding a word of the query."""
    return any(s > 0 for name, found in scores.items() if name.startswith("lexical:") for s in found.values())


def attach_evidence(cands: Sequence[Candidate], scores: Scored, semantic: SemanticQuery | None) -> None:
    """Each candidate's cosine to the query (as the semantic arm's searches measured it) and whether
    the lexical side scored it (it holds a query word): what the floor asks of semantic-only hits."""
    cosines = semantic.cosines if semantic is not None else {}
    worded = {rid for name, found in scores.items() if name.startswith("lexical:") for rid, s in found.items()
              if s > 0}
    for cand in cands:
        cand.cosine = cosines.get(cand.rid)
        cand.shares_words = cand.rid in worded
