"""recall(): parse -> arms (ids only) -> fuse -> authorize and load (light) -> stages -> page (full rows).

Each step is a function with a typed hand-off: a Request, the fused Candidates, the authorized
candidates with the light columns the stages read (query/loading.py), the shaped candidates, the page
of Hits, whose full rows are the only ones loaded. The currentness pull is query/staleness.py's
`current_links`, the filter fallback query/fallback.py's `fallback`. Each arm is guarded on its own
(query/arms.py): an arm that fails is empty, and recall never throws for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial

from recallfs.query.arms import (
    attach_evidence,
    calibrated_arms,
    calibrated_evidence,
    ranked_arms,
    shares_words,
    single_arm,
)
from recallfs.query.blas import one_blas_thread
from recallfs.query.context import context_cosines
from recallfs.query.entity_card import EntityCard, entity_card, fit_card
from recallfs.query.fallback import fallback, filters_of
from recallfs.query.fts_freshness import behind_note
from recallfs.query.gate import reader_corpus, reader_scope_clause
from recallfs.query.lineage import replaced_by_hits
from recallfs.query.loading import Preloaded, authorize_and_load, full_rows, preload
from recallfs.query.query_syntax import RecallOptions, utc_now
from recallfs.query.readable import Row
from recallfs.query.recall_request import ARMS, FUSIONS, Request, parse
from recallfs.query.recall_scope import Scope, SemanticArm, SemanticQuery, Trace
from recallfs.query.replies import reply_links
from recallfs.query.results import Hit, RecallResult
from recallfs.query.settings import DEFAULTS
from recallfs.query.shaping import StageInputs, apply_stages
from recallfs.query.staleness import current_links
from recallfs.query.store import Store
from recallfs.query.vector_gap import gap_note
from recallfs.ranking.calibration import Z_FLOOR_WEAK, standout_note
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.floor import floor_config
from recallfs.ranking.fusion import best_per_table, by_score, calibrated, rrf
from recallfs.ranking.pipeline import Shaped, StageConfig
from recallfs.ranking.temporal import question_of
from recallfs.ranking.time_window import TimeWindow, time_window
from recallfs.scope.principal import Principal

__all__ = ["ARMS", "FUSIONS", "Hit", "RecallResult", "Request", "SemanticArm", "SemanticQuery", "recall"]

def recall(
    store: Store,
    principal: Principal,
    query: str,
    *,
    k: int = DEFAULTS.k,
    offset: int = 0,
    arm: str = "fused",
    semantic: SemanticArm | None = None,
    options: RecallOptions | None = None,
    candidates: int = DEFAULTS.candidates,
    rrf_k: int = DEFAULTS.rrf_k,
    weights: dict[str, float] | None = None,
    now: datetime | None = None,
    stages: StageConfig | None = None,
    fusion: str = DEFAULTS.fusion,
) -> RecallResult:
    """`weights`: provenance weights (None: the defaults in ranking.provenance of the fusion that runs,
    DEFAULT_WEIGHTS for calibrated, RANK_WEIGHTS for rank fusion, equal for a single arm; {}: equal).
    `stages`: which shaping stages run (None: the shipped defaults, see ranking.pipeline.StageConfig).
    `fusion`: how the fused arm combines its arms (FUSIONS)."""
    t_start = time.perf_counter()
    one_blas_thread()
    req = parse(query, arm=arm, fusion=fusion, options=options, k=k, offset=offset, now=now)
    trace = Trace(notes=list(req.errors))
    trace.degraded, trace.degraded_reason = semantic_state(arm, semantic)
    trace.stale = store.stale
    handle = _semantic_query(req, semantic, trace)  # its embedding starts now, beside the lexical work
    schema = store.schema_for(principal)
    if schema is None:
        trace.notes.append(f"workspace {principal.workspace_path} holds no memories")
        return _result(req, principal, trace, t_start)
    scope = _scope(store, principal, schema, req, candidates, trace)
    early, between = _overlap(req, scope, principal, handle, trace)
    asked = req.options.now or now or utc_now()
    stages = stages or StageConfig()
    window = _named_window(req, stages, asked)
    fused, words = _fuse(req, scope, handle if req.text.strip() else None, trace, weights=weights, rrf_k=rrf_k,
                         between=between, cut=window is None, weak_z=stages.standout_weak_z)
    if handle is not None and (unseen := gap_note(handle.gaps)):
        trace.notes.append(unseen)
    authorized, rows = authorize_and_load(scope, principal, fused, req.options, trace, early)
    if window is not None:  # cut once dates are known: past it, the memories of the named span stay
        authorized = best_per_table(authorized, scope.limit, keep=lambda c: window.holds(c.created_at))
    config = floor_config(stages, any_shared_word=words, alone=req.arm != "fused")
    replies = reply_links(scope, principal, authorized, rows, req.options, trace) if config.reply_weight > 0 else {}
    context = (context_cosines(scope, principal, authorized, req.options, None if trace.degraded else handle, semantic,
                               trace) if config.context_weight > 0 and req.calibrated else {})
    links = current_links(scope, principal, authorized, rows, req.options, trace) if config.currentness else {}
    inputs = StageInputs(store, scope.cur, schema, req.text, req.terms, req.options, req.calibrated,
                         query=None if trace.degraded else handle, vectors_from=semantic, links=links,
                         replies=replies, context=context, now=asked)
    shaped = _shape(authorized, config, inputs, trace)
    if handle is not None and handle.paths:
        shaped.stages["vector_search"] = "; ".join(f"{t}: {p}" for t, p in sorted(handle.paths.items()))
    if trace.standout is not None and req.calibrated:
        shaped.stages["standout"] = standout_note(*trace.standout)
    ranked, total = shaped.cands, len(shaped.cands)
    if not ranked and filters_of(req.options):
        ranked, rows, total = fallback(scope, principal, req.text, req.offset + req.k, req.options, trace,
                                       shaped.stages)
    hits = _page(ranked, rows, scope, req, trace)
    replaced = replaced_by_hits(store, principal, schema, [(h.table, h.rid) for h in hits])
    for hit in hits:
        hit.replaces = replaced.get(hit.rid, [])
    entity = _entity(req, scope, hits, trace) if config.entity_first else None
    return _result(req, principal, trace, t_start, hits=hits, total=total, entity=entity,
                   stages=shaped.stages)


def semantic_state(arm: str, semantic: SemanticArm | None) -> tuple[bool, str | None]:
    """(degraded, degraded_reason) before any search runs."""
    if arm == "lexical":
        return False, None  # the arm the caller chose: not a degradation
    if semantic is None:
        return True, "off"  # there is no semantic arm (RECALLFS_SEMANTIC=false)
    ready, reason = semantic.availability()
    return not ready, reason


def _scope(store: Store, principal: Principal, schema: str, req: Request, limit: int, trace: Trace) -> Scope:
    """Where the arms search, with a note when the lexical arm will see less than it should."""
    cur = store.cursor()
    behind = behind_note(store, schema) if req.lexical else None
    if behind:
        trace.notes.append(behind)
    where, params = reader_scope_clause(store, principal, schema, req.options)
    if not req.terms and req.lexical:
        if req.text.strip():
            trace.notes.append("the query has no searchable words for the lexical arm (only stop words or "
                               "punctuation)")
        elif not filters_of(req.options):  # with filters, the fallback's note says what they select
            trace.notes.append("the query has no search text")
    return Scope(store, cur, schema, where, params, limit, reader_corpus(store, principal, schema))


def _semantic_query(req: Request, semantic: SemanticArm | None, trace: Trace) -> SemanticQuery | None:
    """The semantic arm's handle for this query, when that arm was asked for and is ready. The query
    embedding starts at once on the embedder's worker thread (torch releases the GIL): it then runs
    while the lexical arm searches, and the semantic arm joins it (SemanticQuery.start)."""
    if semantic is None or not req.semantic or trace.degraded:
        return None
    handle = semantic.query(req.text)
    if req.text.strip():  # an empty text is never searched
        handle.start()
    return handle


def _overlap(
    req: Request, scope: Scope, principal: Principal, semantic: SemanticQuery | None, trace: Trace,
) -> tuple[Preloaded, Callable[[dict[int, str]], None] | None]:
    """Start the semantic arm's searches on their worker, beside the lexical arm, and say what to do
    while they finish: gate and load the lexical hits (loading.preload), into the Preloaded returned."""
    early = Preloaded()
    if semantic is None or not req.text.strip():
        return early, None
    semantic.prefetch(scope.store, scope.schema, scope.where, scope.params, scope.limit)

    def between(tables: dict[int, str]) -> None:
        preload(scope, principal, tables, req.options, trace, early)
        if req.calibrated:  # the arm weighs the lexical hits too: their cosines, beside its own searches
            found = {rid: table for rid, table in tables.items() if rid in early.allowed}
            trace.timed("semantic", partial(semantic.prepare, scope.store, scope.schema, scope.where,
                                            scope.params, scope.limit, found))

    return early, between


def _fuse(
    req: Request, scope: Scope, semantic: SemanticQuery | None, trace: Trace, *,
    weights: dict[str, float] | None, rrf_k: int, between: Callable[[dict[int, str]], None] | None = None,
    cut: bool = True, weak_z: float = Z_FLOOR_WEAK,
) -> tuple[list[Candidate], bool]:
    """The arms, then their fusion, cut to the best `scope.limit` rows of each table (what one arm
    brings; fusion.best_per_table) unless `cut` is False. `semantic`: the semantic arm's query, None when
    that arm does not run. `between`: run between the arms (arms.calibrated_arms). Also returns whether
    any readable memory holds a word of the query (for the relevance floor). `weak_z`: the semantic
    arm's standout bar when the lexical arm matched nothing (arms.calibrated_arms)."""
    limit = scope.limit if cut else sys.maxsize
    if req.calibrated:
        scores, tables = calibrated_arms(scope, req.terms, semantic, trace, between, weak_z=weak_z)
        fused = trace.timed("fusion", lambda: best_per_table(calibrated(scores, tables, weights=weights), limit))
        attach_evidence(fused, scores, semantic)
        return fused, shares_words(scores)
    if req.arm == "fused":
        lists, ranked_tables = ranked_arms(scope, req.terms, semantic, trace, lexical=True, between=between)
        fused = trace.timed("fusion", lambda: best_per_table(rrf(lists, ranked_tables, weights=weights, k=rrf_k),
                                                             limit))
    else:  # one arm alone: its tables merged by its own scores
        scored, ranked_tables = single_arm(scope, req.terms, semantic, trace, lexical=req.lexical)
        fused = trace.timed("fusion", lambda: by_score(scored, ranked_tables, weights=weights))
    # The floor reads calibrated evidence; rank fusion's scores are reciprocal ranks. Custom weights
    # apply to both; the defaults of calibrated fusion weigh the evidence.
    # The lexical side always runs here (cached BM25): whether a hit shares a word with the query is
    # asked of every hit, also when only the semantic arm ranks.
    chosen = [a for a, on in (("lexical", req.lexical), ("semantic", req.semantic)) if on]
    words = calibrated_evidence(scope, req.terms, semantic, fused, trace, arms=chosen, weights=weights)
    return fused, words


def _named_window(req: Request, stages: StageConfig, asked: datetime) -> TimeWindow | None:
    """The time window the question names, when the window stage will favour it (ranking/time_window.py)."""
    if stages.window_weight <= 0 or req.arm != "fused":
        return None
    return time_window(question_of(req.text), asked)


def _shape(cands: list[Candidate], config: StageConfig, inputs: StageInputs, trace: Trace) -> Shaped:
    """The ranking stages over the authorized candidates; their notes and times join the trace."""
    shaped = trace.timed("shaping", partial(apply_stages, cands, config, inputs))
    trace.notes.extend(shaped.notes)
    trace.timings.update((f"stage_{name}", ms) for name, ms in shaped.timings_ms.items())
    return shaped


def _entity(req: Request, scope: Scope, hits: list[Hit], trace: Trace) -> EntityCard | None:
    """The card of the entity the query names exactly (query/entity_card.py), fitted beside the
    page's hits: no fact twice, and within budget:N (entity_card.fit_card)."""
    if not req.text.strip():
        return None
    card = trace.timed("entity", partial(entity_card, scope.cur, scope.schema, req.text, scope.where, scope.params,
                                         scope.store))
    fitted, notes = fit_card(card, [(h.id, h.rank, str(h.row["content"])) for h in hits], req.options.budget)
    trace.notes.extend(notes)
    return fitted


def _page(ranked: list[Candidate], light: dict[int, Row], scope: Scope, req: Request, trace: Trace) -> list[Hit]:
    """The requested page of the ranked candidates, as hits (with a note when there is none). Only
    here do full rows load: the page's and those of the copies folded into them (`also`)."""
    page = ranked[req.offset: req.offset + req.k]
    wanted = list(dict.fromkeys(r for c in page for r in (c.rid, *c.merged) if r in light))
    rows = trace.timed("load_page", partial(full_rows, scope.store, scope.schema, wanted, light))
    if not ranked:
        trace.notes.append("no memory matched the query")
    elif not page:
        trace.notes.append(f"offset {req.offset} is past the last of {len(ranked)} hits")
    for c in page:
        if c.stale:  # a turn or summary that is the evidence of a fact no longer current
            rows[c.rid] = {**rows[c.rid], "stale": c.stale}
        if c.near_miss:  # below the relevance floor: it follows the hits
            rows[c.rid] = {**rows[c.rid], "near_miss": True}
    return [
        Hit(rank=req.offset + i + 1, rid=c.rid, id=c.id, table=c.table, score=c.score, arms=sorted(c.arms),
            ranks=dict(c.ranks), row=rows[c.rid],
            also=[{"id": rows[r]["id"], "table": rows[r]["table"], "source_id": rows[r]["source_id"]}
                  for r in c.merged if r in rows], relevance=c.relevance or 0.0, cosine=c.cosine,
            shares_words=c.shares_words)
        for i, c in enumerate(page)
    ]


def _result(
    req: Request, principal: Principal, trace: Trace, t_start: float, *, hits: list[Hit] | None = None,
    total: int = 0, entity: EntityCard | None = None, stages: dict[str, str] | None = None,
) -> RecallResult:
    timings = {**trace.timings, "total": (time.perf_counter() - t_start) * 1000}
    reasons = [r for r in (trace.degraded_reason if trace.degraded else None, trace.stale) if r]
    return RecallResult(
        query=req.query, search_text=req.text, workspace=principal.workspace_path, agent=principal.agent,
        arm=req.arm, hits=hits or [], degraded=trace.degraded or trace.stale is not None,
        degraded_reason="; ".join(reasons) or None, total_candidates=total, offset=req.offset, k=req.k,
        timings_ms=timings, notes=trace.notes, entity=entity, stages=stages or {}, lexical_only=trace.degraded,
    )
