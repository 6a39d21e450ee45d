"""A write through inbox/ stays inside what its writer may read (found 2026-12-04 by probing a mount).

Before, an agent whose policy hides a memory could still change it by naming it: `supersedes: <id>` retired
it for its owner, an `id` made the write that memory's next version, and
`superseded_by: <id>` turned the writer's own fact non-current exactly when the hidden id existed, which
told the writer it did. Refusing such a write would tell it just as much. So a write is read as it would
be in a store that never held the memories its writer cannot see:

- a record whose id is a memory the writer cannot read takes an id of its own (derived from the writer
  and that id, so writing it again is the next version of the writer's own memory);
- a link (`supersedes`, `superseded_by`) to a memory the writer cannot read names that same id of its
  own instead: it links the writer's own memory if it wrote one under that id (as in a store without
  the hidden one), and otherwise nothing, as a link to an id nobody wrote does;

A `slot` is kept: a fact replaces only the facts of its slot that its author may read
(query/slot_succession.py), so a hidden fact in the slot stays current for those who read it. (Until
2026-12-07 such a slot was dropped from the record here, which the writer could see in its own file.)

What the writer can read is the gate's own clause (`query/gate.scope_clause`, every version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from recallfs.query.gate import scope_clause
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.records import MemoryRecord, derive_id
from recallfs.query.store import Store
from recallfs.scope.principal import Principal


def confine_to_view(store: Store, writer: Principal, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """The records, with what names a memory `writer` cannot read taken out (module doc)."""
    schema = store.partition(writer.org, writer.workspace)
    if schema is None or not records:
        return list(records)
    ids = sorted({i for r in records for i in (r.id, r.supersedes, r.superseded_by) if i})
    hidden_ids = _hidden(store, schema, writer, ids) if ids else set()
    if not hidden_ids:
        return list(records)

    def own(table: str, mem_id: str) -> str:
        return own_id(table, writer, mem_id) if mem_id in hidden_ids else mem_id

    out: list[MemoryRecord] = []
    for rec in records:  # links are between facts (records.FACT_ONLY)
        mem_id = own(rec.table, rec.id)
        supersedes = own("facts", rec.supersedes) if rec.supersedes else rec.supersedes
        superseded_by = own("facts", rec.superseded_by) if rec.superseded_by else rec.superseded_by
        if (mem_id, supersedes, superseded_by) == (rec.id, rec.supersedes, rec.superseded_by):
            out.append(rec)
        else:
            out.append(replace(rec, id=mem_id, supersedes=supersedes, superseded_by=superseded_by))
    return out


def own_id(table: str, writer: Principal, mem_id: str) -> str:
    """The id of its own that a write naming `mem_id`, a memory the writer cannot read, takes."""
    return derive_id(table, f"{writer.agent}/{mem_id}")


def _hidden(store: Store, schema: str, writer: Principal, ids: list[str]) -> set[str]:
    """Ids of rows, any version, that exist in the writer's workspace but that it may not read."""
    return ids_held(store, schema, writer, ids, MEMORY_TABLES, readable=False)


def ids_held(store: Store, schema: str, writer: Principal, ids: list[str], tables: Sequence[str], *,
             readable: bool) -> set[str]:
    """Which of `ids` some row of `tables` (any version) has that the writer may read (`readable`), or
    may not read (not `readable`): the gate's own clause decides."""
    where, params = scope_clause(writer, schema, None, current_only=False)
    negate = "" if readable else "NOT "
    cur = store.cursor()
    return {str(mem_id) for table in tables for (mem_id,) in cur.execute(
        f"""SELECT DISTINCT m.id FROM {schema}.{table} m
            WHERE m.id IN (SELECT unnest(?::VARCHAR[])) AND {negate}coalesce(({where}), false)""",
        [ids, *params]).fetchall()}
