"""Which row is current: the derived `heads` table, and supersession chains.

Memory rows are append-only. A memory is current when:
- its head version is active: the head is the newest by `created_at`, ties going to the later
  arrival (the highest `version`); versions are numbered by arrival, so an older record ingested
  late is history, never the head (query/versioning.py);
- following supersession links from it leads nowhere else: a link `old -> new` comes from a
  non-deleted fact's `supersedes: old`, or from a fact's `superseded_by: new` naming a fact that exists and is
  not deleted (so deleting a correction brings back what it had replaced, and a pointer to a fact
  not ingested yet hides nothing);
- and, for facts sharing a slot key, no newer such fact replaced it: one replaces the older facts of its
  slot that its author may read (query/slot_succession.py), so usually only the newest is current.

Chains are walked to their head, at most MAX_CHAIN steps, and a cycle (bad data) resolves to its
newest member rather than hiding every member or looping.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recallfs.query.cursor import Cursor
from recallfs.query.slot_succession import Blind, SlotMember, blind_pairs, slot_successors

# A memory's head among its versions: the newest by time, then the last to arrive (query/versioning.py).
HEAD_ORDER = "PARTITION BY id ORDER BY created_at DESC, version DESC, rid DESC"
MAX_CHAIN = 64  # supersession chains longer than this are cut: a guard against bad or cyclic data
HEAD_TABLES = ("facts", "summaries", "turns")
NEW_HEADS = "temp.main.recallfs_new_heads"  # the writer connection's own, for one rebuild of `heads`


@dataclass(frozen=True, slots=True)
class FactState:
    """The head version of one fact id, as far as currentness cares."""

    id: str
    status: str
    supersedes: str | None = None
    superseded_by: str | None = None
    created_at: datetime | None = None
    version: int = 1
    rid: int = 0

    def newness(self) -> tuple[datetime, int, int, str]:
        return (self.created_at or datetime.min, self.version, self.rid, self.id)


def chain_head(
    links: Mapping[str, str],
    start: str,
    limit: int = MAX_CHAIN,
    rank: Mapping[str, Any] | None = None,
) -> tuple[str, list[str]]:
    """Follow `old -> new` links from start. Returns (head, path walked).

    Stops after `limit` steps (the node reached then is the head). On a cycle the head is the cycle
    member with the highest `rank` (by default the greatest id), so every member agrees on it.
    Pure, so it is tested from a table.
    """
    path = [start]
    index = {start: 0}
    node = start
    while node in links and len(path) <= limit:
        node = links[node]
        if node in index:
            cycle = path[index[node]:]
            head = max(cycle, key=lambda n: (1, rank[n], n) if rank is not None and n in rank else (0, n))
            return head, path
        index[node] = len(path)
        path.append(node)
    return path[-1], path


def fact_links(facts: Mapping[str, FactState]) -> dict[str, str]:
    """old id -> newer id among the latest versions (see the module docstring for which links count).

    When a fact has several successors, the newest one wins, so the result does not depend on order.
    """
    candidates: dict[str, list[FactState]] = {}
    for fact in facts.values():
        if fact.status == "deleted":
            continue
        if fact.supersedes and fact.supersedes != fact.id and fact.supersedes in facts:
            candidates.setdefault(fact.supersedes, []).append(fact)
        target = facts.get(fact.superseded_by) if fact.superseded_by else None
        if target is not None and target.status != "deleted" and target.id != fact.id:
            candidates.setdefault(fact.id, []).append(target)
    return {old: max(news, key=FactState.newness).id for old, news in candidates.items()}


def replaced_ids(facts: Mapping[str, FactState], limit: int = MAX_CHAIN) -> set[str]:
    """Ids whose supersession chain leads to another fact: they are not current."""
    links = fact_links(facts)
    rank = {fid: fact.newness() for fid, fact in facts.items()}
    return {fid for fid in links if chain_head(links, fid, limit, rank)[0] != fid}


def rebuild_heads(cur: Cursor, schema: str, written: Mapping[str, Collection[str]] | None = None) -> None:
    """Bring the partition's heads up to date inside the caller's transaction. Only rows whose
    currentness changed are deleted or inserted: rewriting the whole table put every head in the
    write-ahead log (~0.7 MB per one-fact write at 30k memories) and re-inserted every primary key.

    `written`: table -> the memory ids a write touched (None: all). A table not written keeps its heads,
    and a summary's or turn's head depends on its own id's versions alone, so those are recomputed for
    the ids written only; facts link across ids (supersession, slots), so a write to facts recomputes
    all of theirs. One fact written at 100k memories had the window over 65k turns recomputed."""
    tables = [t for t in HEAD_TABLES if written is None or written.get(t)]
    for table in tables:
        ids = sorted(written[table]) if written is not None and table != "facts" else None
        if ids is None:
            queries, scope, scope_params = head_queries(cur, schema, tables=(table,)), "TRUE", []
        else:
            where = "m.id IN (SELECT unnest(?::VARCHAR[]))"
            queries = head_queries(cur, schema, where, [ids], tables=(table,))
            scope, scope_params = f"rid IN (SELECT rid FROM {schema}.{table} m WHERE {where})", [ids]
        (_, sql, params), = queries
        cur.execute(f"CREATE OR REPLACE TEMP TABLE {NEW_HEADS} AS SELECT rid FROM ({sql})", params)
        cur.execute(f"DELETE FROM {schema}.heads WHERE tbl = ? AND {scope} "
                    f"AND rid NOT IN (SELECT rid FROM {NEW_HEADS})", [table, *scope_params])
        cur.execute(f"INSERT INTO {schema}.heads SELECT rid, ? FROM {NEW_HEADS} "
                    f"WHERE rid NOT IN (SELECT rid FROM {schema}.heads)", [table])
        cur.execute(f"DROP TABLE {NEW_HEADS}")


def head_queries(
    cur: Cursor, schema: str, where: str = "TRUE", params: Sequence[object] = (),
    tables: Collection[str] = HEAD_TABLES, blind: Blind | None = None,
) -> list[tuple[str, str, list[object]]]:
    """(table, sql selecting `rid`, its parameters) of the current rows of each memory table, among the
    rows that satisfy `where` over alias `m` (the partition's heads: TRUE; one reader's heads: the
    reader's authorization predicate, so that rows it may not read neither replace nor hide anything).
    The facts' supersession chains are walked here, in Python, over the linked facts alone. `blind` is
    the partition's `Blind` when the caller has it (a reader of the committed store); a write works it
    out through `cur`, which sees the write's own rows."""
    rows = f"(SELECT * FROM {schema}.{{table}} m WHERE {where})"
    out: list[tuple[str, str, list[object]]] = []
    for table in ("summaries", "turns"):
        if table not in tables:
            continue
        out.append((table, f"""SELECT rid FROM (
                SELECT rid, status, row_number() OVER ({HEAD_ORDER}) AS rn FROM {rows.format(table=table)})
            WHERE rn = 1 AND status = 'active'""", list(params)))
    if "facts" in tables:
        if blind is None:
            blind = blind_pairs(cur, schema)
        out.append(("facts", *_fact_heads(cur, rows.format(table="facts"), list(params), blind)))
    return out


def _fact_heads(cur: Cursor, rows: str, params: list[object], blind: Blind) -> tuple[str, list[object]]:
    """(sql, params) of the current facts among `rows`: the latest version of each id, active, whose
    supersession chain ends at itself, and not replaced in its slot (query/slot_succession.py)."""
    latest = f"""SELECT * FROM (
            SELECT *, row_number() OVER ({HEAD_ORDER}) AS rn FROM {rows})
        WHERE rn = 1"""
    # Only facts that take part in a link matter to the chain walk; the rest are read by SQL alone.
    linked = cur.execute(
        f"""WITH latest AS ({latest}),
            named AS (SELECT supersedes AS id FROM latest WHERE supersedes IS NOT NULL
                      UNION SELECT superseded_by FROM latest WHERE superseded_by IS NOT NULL)
        SELECT id, status, supersedes, superseded_by, created_at, version, rid FROM latest
        WHERE supersedes IS NOT NULL OR superseded_by IS NOT NULL OR id IN (SELECT id FROM named)""",
        params,
    ).fetchall()
    facts = {
        str(r[0]): FactState(str(r[0]), str(r[1]), r[2], r[3], r[4], int(r[5]), int(r[6])) for r in linked
    }
    gone = sorted(replaced_ids(facts))
    alive = f"""WITH latest AS ({latest}),
        alive AS (
            SELECT * FROM latest
            WHERE status = 'active' AND id NOT IN (SELECT unnest(?::VARCHAR[])))"""
    # Slots where an author may not read a fact it could replace are worked out in Python (most
    # partitions have none); every other slot, and every fact without one, by its newest member in SQL.
    special = "nfc_normalize(slot) IN (SELECT unnest(?::VARCHAR[]))"
    kept: list[int] = []
    if blind:
        members = [SlotMember(int(r[0]), str(r[1]), str(r[2]), r[3], int(r[4])) for r in cur.execute(
            f"{alive} SELECT rid, slot, agent, created_at, version FROM alive WHERE slot IS NOT NULL AND {special}",
            [*params, gone, sorted(blind.slots)]).fetchall()]
        kept = sorted({m.rid for m in members} - set(slot_successors(members, blind)))
    return (f"""{alive},
        ranked AS (
            SELECT rid, row_number() OVER (
                PARTITION BY coalesce(nfc_normalize(slot), '\\x00' || id)  -- one slot in either Unicode form
                ORDER BY created_at DESC, version DESC, rid DESC) AS srn
            FROM alive WHERE slot IS NULL OR NOT {special})
        SELECT rid FROM ranked WHERE srn = 1
        UNION ALL SELECT unnest(?::BIGINT[])""", [*params, gone, sorted(blind.slots), kept])
