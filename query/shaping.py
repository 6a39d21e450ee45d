"""The I/O side of the ranking stages, for recall(): what the pure stages in `ranking/` need from the
store (stored embeddings), fetched only for authorized rows (the entity card is query/entity_card.py).

Everything here fails soft: a store without a vectors table (semantic arm never run, or an older
store) gives no embeddings, and the stages that need them say so in a note and skip or fall back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb
import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import by_generation, store_state
from recallfs.query.half_vectors import from_stored
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall_scope import SemanticArm, SemanticQuery
from recallfs.query.store import Store
from recallfs.query.vector_meta import META_MODEL, VECTORS, embedding_is_half, has_chunk_column, has_vectors_table
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.currentness import CurrentLink
from recallfs.ranking.pipeline import Shaped, StageConfig, shape

log = logging.getLogger("recallfs.shaping")



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
    if not len(table["rid"]):
        return {}, None
    try:
        matrix = from_stored(table["embedding"], len(table["embedding"][0]), half=embedding_is_half(cur, schema))
    except ValueError as exc:  # rows of different lengths: a damaged table must not break recall
        log.warning("stored embeddings in %s are not one shape: %s", schema, exc)
        return None, "stored embeddings could not be read (ValueError); the stages that need them fell back"
    return dict(zip(table["rid"].tolist(), matrix, strict=True)), None


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


_HAS_VECTORS: LruCache[tuple[Any, ...], bool] = LruCache(1024, generation=by_generation)


def _vectors_table_exists(cur: Cursor, store: Store | None, schema: str) -> bool:
    """Asked before reading the table: letting the query fail costs milliseconds in a store of many
    partitions (DuckDB's error lists similar names from the whole catalog)."""
    if store is None:
        return has_vectors_table(cur, schema)
    return bool(_HAS_VECTORS.get_or_compute((str(store.path), *store_state(store), schema),
                                            lambda: has_vectors_table(cur, schema)))


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
    replies: Mapping[int, int] = field(default_factory=dict)  # question rid -> its reply (query/replies.py)
    context: Mapping[int, float] = field(default_factory=dict)  # turn rid -> its context cosine (query/context.py)
    now: datetime | None = None  # when the question is asked: relative dates in it count from here


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
                   calibrated=inputs.calibrated, links=inputs.links, replies=inputs.replies, context=inputs.context,
                   now=inputs.now)
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
