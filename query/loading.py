"""recall()'s two loading phases (query/rows.py): the gate then the light rows of every candidate, and
the full rows of the returned page only.

Nothing loads for an id the gate has not passed. The light columns (rows.LIGHT_COLUMNS) are what the
ranking stages read of a Candidate; full rows load for the page and the copies folded into it (`also`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from recallfs.query.gate import authorize_in_store
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
from recallfs.query.rows import load_light, load_rows_of_tables
from recallfs.query.store import Store
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.scope.principal import Principal


@dataclass(slots=True)
class Preloaded:
    """Rows already through the gate and loaded before fusion (`preload`): authorize_and_load skips them."""

    checked: set[int] = field(default_factory=set)  # rids the gate has answered for
    allowed: set[int] = field(default_factory=set)  # those it passed
    rows: dict[int, Row] = field(default_factory=dict)  # their light rows


def preload(
    scope: Scope, principal: Principal, tables: dict[int, str], options: RecallOptions, trace: Trace,
    into: Preloaded,
) -> None:
    """Gate and light-load these rids (rid -> table) now, into `into`: recall does it for the lexical
    hits while the semantic arm's searches finish on their worker, so that the wait does work."""
    by_table = {table: [rid for rid, t in tables.items() if t == table] for table in MEMORY_TABLES}
    allowed = _authorize(scope, principal, by_table, options, trace)
    rows = trace.timed("load", partial(_light_by_table, scope.store, scope.schema,
                                       {t: [r for r in rids if r in allowed] for t, rids in by_table.items()}))
    into.checked.update(tables)
    into.allowed |= allowed
    into.rows.update(rows)


def authorize_and_load(
    scope: Scope, principal: Principal, fused: list[Candidate], options: RecallOptions, trace: Trace,
    preloaded: Preloaded | None = None,
) -> tuple[list[Candidate], dict[int, Row]]:
    """The gate, then the light rows: nothing is loaded for an id the principal may not read. Returns the
    readable candidates, filled from their light rows for the stages, in order; and those rows by rid.
    `preloaded`: rids already gated and loaded (preload), taken as they are."""
    done = preloaded or Preloaded()
    by_table = {table: [c.rid for c in fused if c.table == table and c.rid not in done.checked]
                for table in MEMORY_TABLES}
    allowed = _authorize(scope, principal, by_table, options, trace) | done.allowed
    readable = [c for c in fused if c.rid in allowed]
    fresh = {t: [r for r in rids if r in allowed] for t, rids in by_table.items()}
    rows = trace.timed("load", partial(_light_by_table, scope.store, scope.schema, fresh))
    rows.update((rid, row) for rid, row in done.rows.items() if rid in allowed)
    for cand in readable:
        fill(cand, rows[cand.rid])
    return ordered(readable), rows


def _authorize(
    scope: Scope, principal: Principal, by_table: dict[str, list[int]], options: RecallOptions, trace: Trace,
) -> set[int]:
    allowed: set[int] = set()
    for table, ids in by_table.items():
        if ids:
            allowed |= trace.timed("authorize", partial(
                authorize_in_store, scope.store, principal, scope.schema, table, ids, options))
    return allowed


def fill(cand: Candidate, row: Row) -> None:
    """A candidate's fields from its light row."""
    cand.created_at, cand.id, cand.session = row["created_at"], row["id"], row["session"]
    cand.content, cand.kind, cand.tags = row["content"], row["kind"], tuple(row["tags"] or ())


def pull_in(
    scope: Scope, table: str, rids: list[int], arm: str, cands: list[Candidate], rows: dict[int, Row],
) -> None:
    """Add these rows, already through the gate and not yet candidates, to `cands` (arms {arm}) and their
    light rows to `rows`: a row recall brings in for another hit's sake (a current fact for its stale
    evidence, a reply for its question), not because an arm found it."""
    for rid, row in load_light(scope.store, scope.schema, table, rids).items():
        rows[rid] = row
        cand = Candidate(rid=rid, table=table, arms={arm})
        fill(cand, row)
        cands.append(cand)


def _light_by_table(store: Store, schema: str, by_table: dict[str, list[int]]) -> dict[int, Row]:
    rows: dict[int, Row] = {}
    for table, rids in by_table.items():
        if rids:
            rows.update(load_light(store, schema, table, rids))
    return rows


def full_rows(store: Store, schema: str, rids: list[int], light: dict[int, Row]) -> dict[int, Row]:
    """Phase two: the full rows of these authorized rids (each in `light`, which says its table)."""
    return load_rows_of_tables(store, schema, {table: [r for r in rids if light[r]["table"] == table]
                                               for table in MEMORY_TABLES})
