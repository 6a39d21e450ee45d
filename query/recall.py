"""recall(): parse -> arms (ids only) -> fusion -> authorize -> load -> order -> page.

Each arm is guarded on its own: an arm that fails is empty, and recall never throws for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from recallfs.query.fts_freshness import behind_note
from recallfs.query.gate import authorize_in_store, scope_clause
from recallfs.query.lexical import query_terms, score_indexed, search_calibrated
from recallfs.query.lexical import search as lexical_search
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions, parse_query, well_formed
from recallfs.query.rows import Row, load_rows
from recallfs.query.shaping import EntityCard, apply_stages, entity_card
from recallfs.query.store import Store
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.fusion import calibrated, list_key, rrf
from recallfs.ranking.pipeline import StageConfig
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.recall")

ARMS = ("lexical", "semantic", "fused")
# How the fused arm combines the two: calibrated scores (the default, chosen by the ablation in
# developer-notes/ranking.md) or reciprocal ranks. Single arms are ordered by their own ranking either way.
FUSIONS = ("calibrated", "rrf")


class SemanticArm(Protocol):
    """What recall needs from the semantic arm (query/semantic.py provides it)."""

    def availability(self) -> tuple[bool, str | None]:
        """(ready, degraded_reason)."""
        ...

    def search(
        self, store: Store, schema: str, table: str, query: str, where: str, params: list[object], limit: int,
        *, alone: bool = False,
    ) -> list[int]:
        """Ranked rids; raises on failure (recall contains it). `alone`: no lexical arm runs beside it
        (the arm may then keep weaker neighbours than it would offer to fusion)."""
        ...

    def search_calibrated(
        self, store: Store, schema: str, table: str, query: str, where: str, params: list[object], limit: int,
        *, also: Sequence[int] = (),
    ) -> dict[int, float]:
        """{rid: calibrated score in 0..1} of its own hits and of `also` (rows another arm found)."""
        ...


@dataclass(slots=True)
class Hit:
    rank: int
    rid: int
    id: str
    table: str
    score: float
    arms: list[str]
    ranks: dict[str, int]
    row: dict[str, Any]
    # other memories folded into this hit by dedup or near-duplicate collapse: {id, table, source_id}
    also: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        r = self.row
        out: dict[str, Any] = {
            "rank": self.rank,
            "id": self.id,
            "table": self.table,
            "score": round(self.score, 6),
            "arms": self.arms,
            "content": r["content"],
            "session": r["session"],
            "source_id": r["source_id"],
            "created_at": r["created_at"].isoformat() if r["created_at"] else None,
            "kind": r["kind"],
            "version": r["version"],
            "agent": r["agent"],
            "tags": list(r["tags"] or []),
            "provenance": {"source": r["source"], "refs": list(r["refs"] or []), "ranks": self.ranks},
        }
        if self.also:
            out["provenance"]["also"] = self.also
        for key in ("speaker", "seq", "entity", "title", "caption"):
            if r.get(key) is not None:
                out[key] = r[key]
        return out


@dataclass(slots=True)
class RecallResult:
    query: str
    search_text: str
    workspace: str
    agent: str
    arm: str
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    total_candidates: int
    offset: int
    k: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The entity the query names exactly: shown before the hits (it is not a hit and takes no rank).
    entity: EntityCard | None = None
    stages: dict[str, str] = field(default_factory=dict)  # what each shaping stage did

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.hits) < self.total_candidates

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "search_text": self.search_text,
            "workspace": self.workspace,
            "agent": self.agent,
            "arm": self.arm,
            "hits": [h.as_json() for h in self.hits],
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "total_candidates": self.total_candidates,
            "pagination": {
                "offset": self.offset,
                "k": self.k,
                "returned": len(self.hits),
                "has_more": self.has_more,
                "next_offset": self.offset + len(self.hits) if self.has_more else None,
            },
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "notes": self.notes,
            "entity": self.entity.as_json() if self.entity else None,
            "stages": self.stages,
        }


class _Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - t0) * 1000


def recall(
    store: Store,
    principal: Principal,
    query: str,
    *,
    k: int = 10,
    offset: int = 0,
    arm: str = "fused",
    semantic: SemanticArm | None = None,
    options: RecallOptions | None = None,
    candidates: int = 100,
    rrf_k: int = 60,
    weights: dict[str, float] | None = None,
    now: datetime | None = None,
    stages: StageConfig | None = None,
    fusion: str = "calibrated",
) -> RecallResult:
    """`weights`: provenance weights (None: the defaults in ranking.provenance of the fusion that runs,
    DEFAULT_WEIGHTS for calibrated, RANK_WEIGHTS for rank fusion and single arms; {}: equal).
    `stages`: which shaping stages run (None: the shipped defaults, see ranking.pipeline.StageConfig).
    `fusion`: how the fused arm combines its arms (FUSIONS)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {', '.join(ARMS)}")
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}")
    timer = _Timer()
    t_start = time.perf_counter()
    query = well_formed(query)
    parsed = parse_query(query, now=now)
    opts = (options or RecallOptions()).merged(parsed.options)
    k = opts.k or k
    offset = opts.offset if opts.offset is not None else offset
    notes = list(parsed.errors)
    result = RecallResult(
        query=query, search_text=parsed.text, workspace=principal.workspace_path, agent=principal.agent,
        arm=arm, hits=[], degraded=True, degraded_reason="off", total_candidates=0, offset=offset, k=k,
        notes=notes,
    )

    want_semantic = arm in ("semantic", "fused")
    if want_semantic and semantic is not None:
        ready, reason = semantic.availability()
        result.degraded, result.degraded_reason = (not ready), reason
    elif want_semantic:
        result.degraded_reason = "off"
    if arm == "lexical":
        # Lexical-only was asked for: the semantic arm is off by request.
        result.degraded, result.degraded_reason = True, "off"

    schema = store.schema_for(principal)
    if schema is None:
        notes.append(f"workspace {principal.workspace_path} holds no memories")
        result.timings_ms = {"total": (time.perf_counter() - t_start) * 1000}
        return result

    cur = store.cursor()
    behind = behind_note(store, schema) if arm in ("lexical", "fused") else None
    if behind:
        notes.append(behind)
    where, params = scope_clause(principal, schema, opts)
    terms = query_terms(parsed.text)
    lists: dict[str, list[int]] = {}
    tables: dict[int, str] = {}

    if not terms and arm in ("lexical", "fused"):
        notes.append("the query has no searchable words for the lexical arm (only stop words or punctuation)")
    want_lexical = arm in ("lexical", "fused")
    run_semantic = want_semantic and semantic is not None and not result.degraded and bool(parsed.text.strip())

    def lexical_arm(table: str, fn: Callable[[], Any], empty: Any) -> Any:
        try:
            return timer.run("lexical", fn)
        except Exception as exc:  # an arm failure empties that arm only
            log.exception("lexical arm failed on %s", table)
            notes.append(f"lexical arm failed on {table}: {type(exc).__name__}")
            return empty

    def semantic_arm(table: str, fn: Callable[[], Any], empty: Any) -> Any:
        try:
            return timer.run("semantic", fn)
        except TimeoutError as exc:
            result.degraded, result.degraded_reason = True, "timeout"
            notes.append(f"semantic arm: {exc}; answered from the lexical arm")
        except Exception as exc:
            log.exception("semantic arm failed on %s", table)
            result.degraded, result.degraded_reason = True, "error"
            notes.append(f"semantic arm failed on {table}: {exc or type(exc).__name__}")
        return empty

    if arm == "fused" and fusion == "calibrated":
        scores: dict[str, dict[int, float]] = {}
        for table in MEMORY_TABLES:
            found = lexical_arm(table, lambda table=table: search_calibrated(
                store, schema, table, terms, where=where, params=params, limit=candidates), {})
            scores[list_key("lexical", table)] = found
            tables.update((rid, table) for rid in found)
        if run_semantic:
            assert semantic is not None
            for table in MEMORY_TABLES:
                if result.degraded:
                    break  # one failure degrades the arm: the other tables would only fail or wait again
                lex = scores[list_key("lexical", table)]
                found = semantic_arm(table, lambda table=table, lex=lex: semantic.search_calibrated(
                    store, schema, table, parsed.text, where, params, candidates, also=list(lex)), {})
                scores[list_key("semantic", table)] = found
                tables.update((rid, table) for rid in found)
                # The lexical side of rows only the semantic arm found: fusion weighs both arms for every row.
                unseen = [rid for rid in found if rid not in lex]
                lex.update(lexical_arm(table, lambda table=table, unseen=unseen: score_indexed(
                    store, schema, table, terms, unseen), {}))
            if result.degraded:  # all or nothing: a degraded answer carries no semantic scores
                for table in MEMORY_TABLES:
                    scores.pop(list_key("semantic", table), None)
        fused: list[Candidate] = timer.run("fusion", lambda: calibrated(scores, tables, weights=weights))
    else:
        if want_lexical:
            for table in MEMORY_TABLES:
                rids = lexical_arm(table, lambda table=table: lexical_search(
                    store, schema, table, terms, where=where, params=params, limit=candidates), [])
                lists[list_key("lexical", table)] = rids
                tables.update((rid, table) for rid in rids)
        if run_semantic:
            assert semantic is not None
            for table in MEMORY_TABLES:
                if result.degraded:
                    break
                rids = semantic_arm(table, lambda table=table: semantic.search(
                    store, schema, table, parsed.text, where, params, candidates, alone=arm == "semantic"), [])
                lists[list_key("semantic", table)] = rids
                tables.update((rid, table) for rid in rids)
            if result.degraded:
                for table in MEMORY_TABLES:
                    lists.pop(list_key("semantic", table), None)
        fused = timer.run("fusion", lambda: rrf(lists, tables, weights=weights, k=rrf_k))

    # The gate: nothing is loaded for an id the principal may not read.
    allowed: set[int] = set()
    for table in MEMORY_TABLES:
        ids = [c.rid for c in fused if c.table == table]
        allowed |= timer.run("authorize", lambda ids=ids, table=table: authorize_in_store(
            store, principal, schema, table, ids, opts))
    fused = [c for c in fused if c.rid in allowed]
    rows = timer.run("load", lambda: _load_rows(store, schema, fused))
    for cand in fused:
        row = rows[cand.rid]
        cand.created_at = row["created_at"]
        cand.id = row["id"]
        cand.content, cand.kind, cand.tags = row["content"], row["kind"], tuple(row["tags"] or ())
        cand.session = row["session"]
    fused = ordered(fused)
    config = stages or StageConfig()
    shaped = timer.run("shaping", lambda: apply_stages(
        cur, schema, fused, config, text=parsed.text, terms=terms, options=opts,
        semantic=semantic if want_semantic and not result.degraded else None, store=store,
        vector_indexes=getattr(semantic, "indexes", None), calibrated=arm == "fused" and fusion == "calibrated"))
    fused = shaped.cands
    notes.extend(shaped.notes)
    result.stages = shaped.stages
    timer.timings.update((f"stage_{name}", ms) for name, ms in shaped.timings_ms.items())
    if config.entity_first and parsed.text.strip():
        result.entity = timer.run("entity", lambda: entity_card(cur, schema, parsed.text, where, params, store))

    result.total_candidates = len(fused)
    page = fused[offset: offset + k]
    result.hits = [
        Hit(rank=offset + i + 1, rid=c.rid, id=c.id, table=c.table, score=c.score,
            arms=sorted(c.arms), ranks=dict(c.ranks), row=rows[c.rid],
            also=[{"id": rows[r]["id"], "table": tables[r], "source_id": rows[r]["source_id"]}
                  for r in c.merged if r in rows])
        for i, c in enumerate(page)
    ]
    if not fused:
        notes.append("no memory matched the query")
    elif not page:
        notes.append(f"offset {offset} is past the last of {len(fused)} hits")
    result.timings_ms = dict(timer.timings)
    result.timings_ms["total"] = (time.perf_counter() - t_start) * 1000
    return result


def _load_rows(store: Store, schema: str, cands: list[Candidate]) -> dict[int, Row]:
    rows: dict[int, Row] = {}
    for table in MEMORY_TABLES:
        rows.update(load_rows(store, schema, table, [c.rid for c in cands if c.table == table]))
    return rows
