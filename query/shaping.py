"""The I/O side of the ranking stages, for recall(): what the pure stages in `ranking/` need from the
store (stored embeddings, entity names and cards), fetched only for authorized rows.

Everything here fails soft: a store without a vectors table (semantic arm never run, or an older
store) gives no embeddings, and the stages that need them say so in a note and skip or fall back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from recallfs.query.arms import SemanticArm, SemanticQuery
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import store_state
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.store import Store
from recallfs.query.vectors import META_MODEL, VECTORS, has_chunk_column, has_vectors_table
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.currentness import CurrentLink
from recallfs.ranking.entity_match import match_entity
from recallfs.ranking.pipeline import Shaped, StageConfig, shape
from recallfs.ranking.text import estimate_tokens, words

log = logging.getLogger("recallfs.shaping")

ENTITY_CARD_FACTS = 20  # facts shown on an entity card; the rest are in entities/<name>.md
MAX_ENTITY_WORDS = 8  # longer queries are not looked up as entity names


@dataclass(slots=True)
class EntityCard:
    """The entity a query names exactly, shown before the ranked hits (alpha-recall's exact match)."""

    name: str
    facts: list[dict[str, Any]] = field(default_factory=list)  # current, authorized, newest first
    total_facts: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "total_facts": self.total_facts, "facts": self.facts}


def load_vectors(
    cur: Cursor, schema: str, rids: Sequence[int]
) -> tuple[dict[int, np.ndarray] | None, str | None]:
    """Stored embeddings of these (already authorized) rows: (rid -> vector, None), or (None, why).

    Reads the first window of each row from the partition's `vectors` table (query/vectors.py),
    keeping only the store's current model: a store being re-embedded briefly holds two models'.
    """
    if not rids:
        return {}, None
    # The rids are our own integers, so they go in as literals: DuckDB plans `IN (1, 2, ...)` as a
    # cheap filter, while a bound list through unnest costs about 20 ms per call.
    wanted = ", ".join(str(int(r)) for r in rids)
    model = f"(SELECT value FROM main.meta WHERE key = '{META_MODEL}')"
    first = "AND chunk = 0" if has_chunk_column(cur, schema) else ""  # an unmigrated read-only store
    try:
        table = cur.execute(
            f"""SELECT rid, embedding FROM {schema}.{VECTORS} WHERE rid IN ({wanted}) {first}
                AND ({model} IS NULL OR model = {model})"""
        ).fetchnumpy()
    except duckdb.CatalogException:
        return None, "no stored embeddings in this workspace yet (the stages that need them fell back)"
    except duckdb.Error as exc:  # a half-migrated or foreign table must not break recall
        log.warning("loading stored embeddings from %s failed: %s", schema, exc)
        return None, f"stored embeddings could not be read ({type(exc).__name__}); the stages that need them fell back"
    out = {int(rid): np.asarray(vec, dtype=np.float32)
           for rid, vec in zip(table["rid"].tolist(), table["embedding"], strict=True)}
    return out, None


def _indexed_vectors(
    store: Store, schema: str, cands: Sequence[Candidate], source: SemanticArm | None
) -> dict[int, np.ndarray] | None:
    """The candidates' vectors from the semantic arm's in-memory FAISS indexes (they need no model, so
    they serve a lexical-only recall too); None to fall back to DuckDB."""
    if source is None:
        return None
    by_table: dict[str, list[int]] = {}
    for c in cands:
        by_table.setdefault(c.table, []).append(c.rid)
    try:
        return source.stored_vectors(store, schema, by_table)
    except Exception:  # the DuckDB path gives the same vectors, only slower
        log.warning("reading vectors from the in-memory indexes failed", exc_info=True)
        return None


_ENTITY_NAMES: LruCache[tuple[Any, ...], list[str]] = LruCache(256)
_HAS_VECTORS: LruCache[tuple[Any, ...], bool] = LruCache(1024)


def entity_names(cur: Cursor, schema: str, store: Store | None = None) -> list[str]:
    """Every entity named by a fact in the partition. Unscoped, so never shown as such: a name only
    leads to a card through `entity_card`, whose query carries the scope clause. Cached per store
    generation when the store is given."""
    def compute() -> list[str]:
        rows = cur.execute(f"SELECT DISTINCT entity FROM {schema}.facts WHERE entity IS NOT NULL").fetchall()
        return [str(r[0]) for r in rows]

    if store is None:
        return compute()
    names: list[str] = _ENTITY_NAMES.get_or_compute((str(store.path), *store_state(store), schema), compute)
    return names


def _vectors_table_exists(cur: Cursor, store: Store | None, schema: str) -> bool:
    """Asked before reading the table: letting the query fail costs milliseconds in a store of many
    partitions (DuckDB's error lists similar names from the whole catalog)."""
    if store is None:
        return has_vectors_table(cur, schema)
    return bool(_HAS_VECTORS.get_or_compute((str(store.path), *store_state(store), schema),
                                            lambda: has_vectors_table(cur, schema)))


def entity_card(
    cur: Cursor, schema: str, query_text: str, where: str, params: list[object],
    store: Store | None = None,
) -> EntityCard | None:
    """The card of the entity the query names exactly, or None: also when none of its facts is
    current and readable by this principal (a denied entity is absent), and when the lookup fails
    (the card is an extra; recall never fails for it)."""
    if not 0 < len(words(query_text)) <= MAX_ENTITY_WORDS:
        return None  # an exact match needs the whole query to be a name: a sentence never is
    try:
        names = entity_names(cur, schema, store)
        name = match_entity(query_text, names)
        if name is None:
            return None
        spellings = [n for n in names if words(n) == words(name)]  # "Maya" and "maya" are one entity
        # No windowed count over the whole result for the total: over the scope clause's semi-join on
        # `heads`, DuckDB 1.5.5 intermittently fails with an internal error that invalidates the
        # database (developer-notes/concurrency.md). A second count only runs when the page is full.
        match = f"m.entity IN ({', '.join('?' * len(spellings))}) AND {where}"
        rows = cur.execute(
            f"""SELECT m.id, m.kind, m.content, m.created_at, m.version, m.tags FROM {schema}.facts m
                WHERE {match} ORDER BY m.created_at DESC, m.id LIMIT ?""",
            [*spellings, *params, ENTITY_CARD_FACTS],
        ).fetchall()
        total = len(rows)
        if total == ENTITY_CARD_FACTS:
            count = cur.execute(f"SELECT count(*) FROM {schema}.facts m WHERE {match}", [*spellings, *params])
            row = count.fetchone()  # a count answers one row
            total = int(row[0]) if row else total
    except duckdb.Error:
        log.exception("entity lookup failed in %s", schema)
        return None
    if not rows:
        return None
    facts = [
        {"id": r[0], "kind": r[1], "content": r[2], "created_at": r[3].isoformat() if r[3] else None,
         "version": r[4], "tags": list(r[5] or [])}
        for r in rows
    ]
    return EntityCard(name=name, facts=facts, total_facts=total)


def fit_card(
    card: EntityCard | None, hits: Sequence[tuple[str, int, str]], budget: int | None
) -> tuple[EntityCard | None, list[str]]:
    """The card as returned beside this page of hits ((id, rank, content) each), and notes.

    Nothing is returned twice: a card fact that is a hit keeps its place on the card as a reference to
    the hit's rank, without its text. `budget:N` covers everything returned: the hits were chosen
    within it first (they are ranked), and the card's facts take what is left, in card order; those
    that do not fit are dropped and the note says how many. None when nothing of the card is left."""
    if card is None:
        return None, []
    ranks = {mem_id: rank for mem_id, rank, _ in hits}
    left = None if budget is None else budget - sum(estimate_tokens(text) for _, _, text in hits)
    facts: list[dict[str, Any]] = []
    dropped = 0
    for fact in card.facts:
        rank = ranks.get(fact["id"])
        if rank is not None:
            facts.append({k: v for k, v in fact.items() if k != "content"} | {"hit": rank})
        elif left is None or estimate_tokens(fact["content"]) <= left:
            left = None if left is None else left - estimate_tokens(fact["content"])
            facts.append(fact)
        else:
            dropped += 1
    notes = []
    if dropped:
        notes.append(f"budget {budget} tokens: the entity card of {card.name} kept {len(facts)} of "
                     f"{len(card.facts)} facts (the hits came first)")
    if not facts:
        return None, notes
    return EntityCard(name=card.name, facts=facts, total_facts=card.total_facts), notes


def query_vector(query: SemanticQuery | None) -> tuple[np.ndarray | None, str | None]:
    """The query's embedding, as the semantic arm's searches computed it (a lookup, not a second
    embedding). (None, why) when there is none."""
    if query is None:
        return None, "no query embedding: the semantic arm did not run"
    try:
        vec = query.vector()
    except Exception as exc:  # a failed embed only turns the reranker off
        return None, f"no query embedding ({type(exc).__name__})"
    if vec is None:
        return None, "no query embedding: the semantic arm offers none"
    return np.asarray(vec, dtype=np.float32), None


@dataclass(frozen=True, slots=True)
class StageInputs:
    """What recall hands the ranking stages besides the authorized candidates."""

    store: Store
    cur: Cursor
    schema: str
    text: str  # the search text (inline options removed)
    terms: Sequence[str]
    options: RecallOptions
    calibrated: bool  # scores from calibrated fusion (False: reciprocal ranks)
    query: SemanticQuery | None  # the semantic arm's query, when it ran and answered
    vectors_from: SemanticArm | None  # the arm whose indexes hold stored vectors, ready or not
    # rid -> the current facts a turn or summary yields to (query/staleness.py links_for)
    links: Mapping[int, Sequence[CurrentLink]] = field(default_factory=dict)


def apply_stages(cands: list[Candidate], config: StageConfig, inputs: StageInputs) -> Shaped:
    """Gather what the enabled stages need, then run them (ranking.pipeline.shape) over the authorized
    candidates.

    Never raises: should a stage fail, the fused order stands and a note says so."""
    try:
        return _apply_stages(cands, config, inputs)
    except Exception as exc:
        log.exception("ranking stages failed")
        return Shaped(cands=ordered(cands), notes=[f"ranking stages failed ({type(exc).__name__}); "
                                                   "hits are in fused order"], stages={"error": str(exc)})


def _apply_stages(cands: list[Candidate], config: StageConfig, inputs: StageInputs) -> Shaped:
    budget = inputs.options.budget
    wants_vectors = config.collapse or config.rerank or (budget is not None and config.mmr)
    vectors, vector_note = _candidate_vectors(cands, inputs) if wants_vectors and cands else (None, None)
    qvec, qvec_note = query_vector(inputs.query) if config.rerank and cands else (None, None)
    shaped = shape(cands, config, query=inputs.text, terms=inputs.terms, query_vector=qvec, vectors=vectors,
                   recent_half_life_days=inputs.options.recent_half_life_days, budget_tokens=budget,
                   calibrated=inputs.calibrated, links=inputs.links)
    _note_fallbacks(shaped, config, budget, vector_note, qvec_note)
    return shaped


def _note_fallbacks(
    shaped: Shaped, config: StageConfig, budget: int | None, vector_note: str | None, qvec_note: str | None
) -> None:
    """Say which stages ran without the embeddings they wanted."""
    if vector_note:
        # Collapse falls back to exact text on its own; only stages the caller asked for get a note.
        shaped.stages["embeddings"] = vector_note
        if config.rerank or budget is not None:
            shaped.notes.insert(0, vector_note)
    if qvec_note and not any(qvec_note in n for n in shaped.notes):
        shaped.stages["rerank"] = f"skipped: {qvec_note}"


def _candidate_vectors(
    cands: Sequence[Candidate], inputs: StageInputs
) -> tuple[dict[int, np.ndarray] | None, str | None]:
    """(rid -> stored vector, None), from the in-memory indexes or else DuckDB; or (None, why)."""
    vectors = _indexed_vectors(inputs.store, inputs.schema, cands, inputs.vectors_from)
    if vectors is not None:
        return vectors, None
    if not _vectors_table_exists(inputs.cur, inputs.store, inputs.schema):
        return None, "no stored embeddings in this workspace yet (the stages that need them fell back)"
    return load_vectors(inputs.cur, inputs.schema, [c.rid for c in cands])
