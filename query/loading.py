"""recall()'s two loading phases (query/rows.py): the gate then the light rows of every candidate, and
the full rows of the returned page only.

Nothing loads for an id the gate has not passed. The light columns (rows.LIGHT_COLUMNS) are what the
ranking stages read of a Candidate; full rows load for the page and the copies folded into it (`also`).
"""

from __future__ import annotations

from functools import partial

from recallfs.query.arms import Scope, Trace
from recallfs.query.gate import authorize_in_store
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.rows import load_light, load_rows
from recallfs.query.store import Store
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.scope.principal import Principal


def authorize_and_load(
    scope: Scope, principal: Principal, fused: list[Candidate], options: RecallOptions, trace: Trace
) -> tuple[list[Candidate], dict[int, Row]]:
    """The gate, then the light rows: nothing is loaded for an id the principal may not read. Returns the
    readable candidates, filled from their light rows for the stages, in order; and those rows by rid."""
    allowed: set[int] = set()
    for table in MEMORY_TABLES:
        ids = [c.rid for c in fused if c.table == table]
        allowed |= trace.timed("authorize", partial(
            authorize_in_store, scope.store, principal, scope.schema, table, ids, options))
    readable = [c for c in fused if c.rid in allowed]
    rows = trace.timed("load", partial(light_rows, scope.store, scope.schema, readable))
    for cand in readable:
        fill(cand, rows[cand.rid])
    return ordered(readable), rows


def fill(cand: Candidate, row: Row) -> None:
    """A candidate's fields from its light row."""
    cand.created_at, cand.id, cand.session = row["created_at"], row["id"], row["session"]
    cand.content, cand.kind, cand.tags = row["content"], row["kind"], tuple(row["tags"] or ())


def light_rows(store: Store, schema: str, cands: list[Candidate]) -> dict[int, Row]:
    rows: dict[int, Row] = {}
    for table in MEMORY_TABLES:
        rows.update(load_light(store, schema, table, [c.rid for c in cands if c.table == table]))
    return rows


def full_rows(store: Store, schema: str, rids: list[int], light: dict[int, Row]) -> dict[int, Row]:
    """Phase two: the full rows of these authorized rids (each in `light`, which says its table)."""
    rows: dict[int, Row] = {}
    for table in MEMORY_TABLES:
        rows.update(load_rows(store, schema, table, [r for r in rids if light[r]["table"] == table]))
    return rows
