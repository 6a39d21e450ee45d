"""The store side of ranking/context.py: each candidate turn's context cosine.

A turn's context is its own stored vector and those of the nearest turns before and after it in its
session that the principal may read under the request's filters (query/turn_order.py, then the gate:
no neighbour's vector is read before `authorize_in_store` passed it, so a private turn never shapes
the score of a turn beside it). The vectors come from the semantic arm's in-memory indexes and the
query's embedding from its handle: nothing is embedded again, and a lexical-only or degraded recall
skips the stage.
"""

from __future__ import annotations

import logging

import numpy as np

from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall_scope import Scope, SemanticArm, SemanticQuery, Trace
from recallfs.query.turn_order import nearest_readable
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.context import group_cosines
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.recall")

# Turns among this many of the best candidates get a context cosine (past it a turn cannot gain a page).
CONTEXT_AMONG = 200


def context_cosines(
    scope: Scope, principal: Principal, cands: list[Candidate], options: RecallOptions,
    query: SemanticQuery | None, source: SemanticArm | None, trace: Trace,
) -> dict[int, float]:
    """rid -> context cosine for the turns among the first CONTEXT_AMONG of `cands`; {} when the query
    has no embedding or the store no vectors. Never raises: without it the stage has nothing to add."""
    turns = [c.rid for c in cands[:CONTEXT_AMONG] if c.table == "turns"]
    if not turns or query is None or source is None:
        return {}
    try:
        return trace.timed("context", lambda: _cosines(scope, principal, turns, options, query, source))
    except Exception as exc:  # an extra: recall answers without it
        log.exception("context lookup failed")
        trace.notes.append(f"context unavailable ({type(exc).__name__}); turns were scored alone")
        return {}


def _cosines(scope: Scope, principal: Principal, turns: list[int], options: RecallOptions,
             query: SemanticQuery, source: SemanticArm) -> dict[int, float]:
    qvec = query.vector()
    if qvec is None:
        return {}
    near = nearest_readable(scope, principal, options, turns, sides=(False, True))
    around = {rid: [rid, *(side[rid] for side in near if rid in side)] for rid in turns}
    vectors = source.stored_vectors(scope.store, scope.schema,
                                    {"turns": sorted({r for group in around.values() for r in group})})
    if not vectors:
        return {}
    return group_cosines(np.asarray(qvec, dtype=np.float32), around, vectors)
