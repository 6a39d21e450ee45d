"""The one authorization gate. Every channel that turns ids into content goes through here.

`scope_clause` gives the SQL every arm and listing filters by (partition + read policy + current);
`authorize` re-checks a list of candidate ids against it before any content is loaded, so an arm
with a bug cannot leak a row it should not have returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids
from recallfs.query.labels import label_forms
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.reader_heads import NO_CHANGES, HeadChanges, head_changes, hides_rows
from recallfs.query.store import Store
from recallfs.scope.predicate import authorization_predicate
from recallfs.scope.principal import Principal

AUTHORIZE_CHUNK = 4000  # ids per statement; keeps the SQL text bounded


def _forms(values: list[str]) -> list[str]:
    return [form for v in values for form in label_forms(v)]


def _one_of(column: str, values: list[str]) -> tuple[str, list[object]]:
    if len(values) == 1:
        return f"{column} = ?", list(values)
    return f"{column} IN ({', '.join('?' for _ in values)})", list(values)


def _kinds(kinds: list[str]) -> tuple[str, list[object]]:
    return _one_of("m.kind", _forms(kinds))


# The recall filters, in clause order: the RecallOptions field, and its SQL over alias `m` with the
# values it binds. An option that is unset or empty filters nothing. A label matches in either Unicode
# form (query/labels.py: a store written before labels were normalized may hold "café" decomposed).
FILTERS: tuple[tuple[str, Callable[[Any], tuple[str, list[object]]]], ...] = (
    ("kinds", _kinds),
    ("tags", lambda tags: ("list_has_any(m.tags, ?::VARCHAR[])", [_forms(list(tags))])),
    ("session", lambda session: _one_of("m.session", label_forms(session))),
    ("agent", lambda agent: ("m.agent = ?", [agent])),
    ("since", lambda since: ("m.created_at >= ?", [since])),
    ("until", lambda until: ("m.created_at <= ?", [until])),
)


def scope_clause(
    principal: Principal, schema: str, options: RecallOptions | None = None, *, current_only: bool = True,
    heads: HeadChanges = NO_CHANGES,
) -> tuple[str, list[object]]:
    """(sql, params) over alias `m`: the rows of a memory table this principal may see. `heads` corrects
    the partition's current rows for what the principal may not read (query/reader_heads.py): callers
    with a store use `reader_scope_clause`, which looks them up."""
    sql, params = authorization_predicate(principal, "m")
    clauses = [sql]
    if current_only:
        clauses.append(current_clause(schema, heads))
    for name, clause in FILTERS:
        value = getattr(options, name, None)  # no options: no filters
        if value:
            where, bound = clause(value)
            clauses.append(where)
            params.extend(bound)
    return " AND ".join(clauses), params


def corpus_clause(principal: Principal, schema: str) -> tuple[str, list[object]]:
    """(sql, params) over alias `m`: every row of a memory table the principal may read, any version,
    no filter: the rows a recall's statistics may come from (query/bm25_reader.py)."""
    return scope_clause(principal, schema, current_only=False)


def reader_corpus(store: Store, principal: Principal, schema: str) -> tuple[str, list[object]] | None:
    """`corpus_clause`, or None when the partition holds no row the principal may not read: then every
    row is its corpus, and the statistics every such reader shares serve it."""
    return corpus_clause(principal, schema) if hides_rows(store, principal, schema) else None


def current_clause(schema: str, heads: HeadChanges) -> str:
    """The current rows over alias `m`: the partition's heads, less and plus this reader's corrections
    (our own integer rids, inlined: few, and never the user's text)."""
    sql = f"m.rid IN (SELECT rid FROM {schema}.heads)"
    if heads.demoted:
        sql = f"({sql} AND m.rid NOT IN ({','.join(str(int(r)) for r in heads.demoted)}))"
    if heads.promoted:
        sql = f"({sql} OR m.rid IN ({','.join(str(int(r)) for r in heads.promoted)}))"
    return sql


def reader_scope_clause(
    store: Store, principal: Principal, schema: str, options: RecallOptions | None = None, *,
    current_only: bool = True,
) -> tuple[str, list[object]]:
    """`scope_clause` with the principal's own current rows: what every caller holding the store uses."""
    heads = head_changes(store, principal, schema) if current_only else NO_CHANGES
    return scope_clause(principal, schema, options, current_only=current_only, heads=heads)


def authorize(
    cur: Cursor,
    principal: Principal,
    schema: str,
    table: str,
    rids: Iterable[int],
    options: RecallOptions | None = None,
    *,
    current_only: bool = True,
    heads: HeadChanges = NO_CHANGES,
) -> set[int]:
    # int() on every id: the list is inlined into the SQL, so nothing but integers may reach it.
    wanted = sorted({int(r) for r in rids})
    if not wanted:
        return set()
    where, params = scope_clause(principal, schema, options, current_only=current_only, heads=heads)
    allowed: set[int] = set()
    for start in range(0, len(wanted), AUTHORIZE_CHUNK):
        # A literal list: binding a BIGINT[] parameter and unnesting it costs ~10x more in DuckDB
        # (about 40 ms per recall), and the ids are ours, never the user's text.
        id_list = ",".join(str(r) for r in wanted[start:start + AUTHORIZE_CHUNK])
        rows = cur.execute(
            f"SELECT m.rid FROM {schema}.{table} m WHERE m.rid IN ({id_list}) AND {where}", params
        ).fetchall()
        allowed.update(int(r[0]) for r in rows)
    return allowed


def authorize_in_store(
    store: Store,
    principal: Principal,
    schema: str,
    table: str,
    rids: Iterable[int],
    options: RecallOptions | None = None,
) -> set[int]:
    """`authorize` for a recall: the same clause, checked against the set of readable rids that it
    selects, computed once per store generation (query/derived.py) instead of once per recall. At 100k
    memories the per-recall query costs tens of milliseconds; the set lookup costs microseconds."""
    wanted = np.array(sorted({int(r) for r in rids}), dtype=np.int64)
    if not len(wanted):
        return set()
    where, params = reader_scope_clause(store, principal, schema, options)
    readable = allowed_rids(store, schema, table, where, params)
    if not len(readable):
        return set()
    # readable is sorted: a binary search per wanted rid (np.isin sorts both arrays on every call)
    at = np.minimum(np.searchsorted(readable, wanted), len(readable) - 1)
    return set(wanted[readable[at] == wanted].tolist())
