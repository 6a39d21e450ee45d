"""The filter fallback: a query whose filters select memories but whose text matches none of them
answers with those memories, newest first, and says so.

`ci tag:windows` used to say "no memory matched" while `facts/by-tag/windows/` held five facts: the
filters were the user's real question and the text only a weak hint. Without any filter there is no
fallback: a query memory has nothing on says so (ranking/floor.py).
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from recallfs.query.loading import authorize_and_load
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
from recallfs.ranking.candidates import Candidate
from recallfs.scope.principal import Principal

# The RecallOptions fields that select memories (k, offset, recent: and budget: only shape the answer).
FILTER_FIELDS = ("kinds", "tags", "session", "agent", "since", "until")


def filters_of(options: RecallOptions) -> list[str]:
    """The filters the options set, as the user would write them (`tag:windows`), in a fixed order."""
    out: list[str] = []
    for name in FILTER_FIELDS:
        value = getattr(options, name)
        if not value:
            continue
        if isinstance(value, list):
            value = ",".join(value)
        elif isinstance(value, datetime):
            value = value.isoformat(sep=" ", timespec="minutes")
        label = {"kinds": "kind", "tags": "tag"}.get(name, name)
        out.append(f"{label}:{value}")
    return out


def newest_selected(scope: Scope, want: int) -> tuple[list[Candidate], int]:
    """(the `want` newest rows the scope's clause selects, across the memory tables; how many it selects
    in all). The clause is the gate's (authorization, current versions, the filters)."""
    found: list[Candidate] = []
    total = 0
    for table in MEMORY_TABLES:
        sql = f"FROM {scope.schema}.{table} m WHERE {scope.where}"
        row = scope.cur.execute(f"SELECT count(*) {sql}", scope.params).fetchone()
        total += int(row[0]) if row else 0
        rows = scope.cur.execute(f"SELECT m.rid, m.created_at {sql} ORDER BY m.created_at DESC, m.rid DESC LIMIT ?",
                                 [*scope.params, want]).fetchall()
        found += [Candidate(rid=int(rid), table=table, created_at=when, arms={"filters"}) for rid, when in rows]
    found.sort(key=lambda c: (c.created_at or datetime.min, c.rid), reverse=True)
    return found[:want], total


FALLBACK_NOTE = "no memory matched the query text;"  # how the fallback's note starts


def fallback_note(text: str, filters: list[str], total: int) -> str:
    what = f"the text {text.strip()!r} matched none of them" if text.strip() else "the query has no search text"
    return (f"{FALLBACK_NOTE} {' '.join(filters)} select{'s' if len(filters) == 1 else ''} "
            f"{total} memor{'y' if total == 1 else 'ies'} and {what}: showing them newest first")


def fallback(
    scope: Scope, principal: Principal, text: str, want: int, options: RecallOptions, trace: Trace,
    stages: dict[str, str],
) -> tuple[list[Candidate], dict[int, Row], int]:
    """recall()'s answer when the text matched nothing the filters select: the `want` newest of those
    memories, through the gate like any hit; (candidates, light rows, how many the filters select)."""
    cands, total = trace.timed("fallback", partial(newest_selected, scope, want))
    if not cands:
        stages["fallback"] = "none: the filters select no memory"
        filters = filters_of(options)  # say which, so `kind:decisions` for `kind:decision` is seen
        trace.notes.append(f"{' '.join(filters)} select{'s' if len(filters) == 1 else ''} no memory")
        return [], {}, 0
    authorized, rows = authorize_and_load(scope, principal, cands, options, trace)
    trace.notes.append(fallback_note(text, filters_of(options), total))
    stages["fallback"] = f"newest first: the filters select {total}"
    return authorized, rows, total
