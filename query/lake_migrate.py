"""`recallfs migrate`: a single-file store into a lake, or a lake into a new single-file store.

Into a lake: every version of every memory, in the order the store took them (rid order), with its
stored vectors (no host embeds them again), and every policy, committed as one lake transaction: all
or nothing. Replayed by a replica (ingest itself), the
versions, heads and policies come out as they were. Out of a lake: the lake replayed into a new file,
which is then an ordinary store, tied to no lake.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from recallfs.query.lake import Lake, new_batch_id
from recallfs.query.lake_replica import LAKE_KEY, WATERMARK, catch_up, policy_change
from recallfs.query.lake_vectors import BatchVector
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.policies import list_policies
from recallfs.query.records import TRANSIENT, MemoryRecord
from recallfs.query.store import Store
from recallfs.query.vector_meta import VECTORS, has_vectors_table
from recallfs.scope.policy import Policy
from recallfs.scope.principal import Principal

if TYPE_CHECKING:
    from recallfs.query.embedder import Embedder

_FIELDS = [f.name for f in fields(MemoryRecord) if f.name != "table" and f.name not in TRANSIENT]


@dataclass(slots=True)
class Migrated:
    memories: int  # versions, counted as rows
    policies: int
    snapshot: int  # the lake snapshot that holds them (into a lake), or that was replayed (out of one)


def stored_records(store: Store) -> Iterator[tuple[str, int, MemoryRecord]]:
    """(schema, rid, record) of every version of every memory, in the order the store took them."""
    cur = store.cursor()
    for org, workspace in store.workspaces():
        schema = store.partition(org, workspace)
        if schema is None:
            continue
        union = " UNION ALL ".join(f"SELECT rid, '{t}' AS tbl, {', '.join(_FIELDS)} FROM {schema}.{t}"
                                   for t in MEMORY_TABLES)
        names = ["rid", "tbl", *_FIELDS]
        for values in cur.execute(f"SELECT {', '.join(names)} FROM ({union}) ORDER BY rid").fetchall():
            row = dict(zip(names, values, strict=True))
            yield schema, int(row["rid"]), _record(row)


def stored_vectors(store: Store, items: dict[tuple[str, int], int]) -> list[BatchVector]:
    """The stored vectors of the rows in `items` ((schema, rid) -> position in the batch), so that no host
    embeds a migrated store again."""
    cur = store.cursor()
    out = []
    for schema in sorted({s for s, _ in items}):
        if not has_vectors_table(cur, schema):
            continue
        for rid, chunk, model, emb in cur.execute(
                f"SELECT rid, chunk, model, embedding FROM {schema}.{VECTORS} ORDER BY rid, chunk").fetchall():
            item = items.get((schema, int(rid)))
            if item is not None:
                out.append(BatchVector(item, int(chunk), str(model), [int(b) for b in emb]))
    return out


def _record(row: dict[str, Any]) -> MemoryRecord:
    values = {k: row[k] for k in _FIELDS}
    values["tags"] = list(values["tags"] or [])
    values["refs"] = list(values["refs"] or [])
    return MemoryRecord(table=str(row["tbl"]), **values, links_named=True)  # a stored version's links, as stored


def file_to_lake(store: Store, lake: Lake) -> Migrated:
    rows = list(stored_records(store))
    records = [rec for _, _, rec in rows]
    vectors = stored_vectors(store, {(schema, rid): i for i, (schema, rid, _) in enumerate(rows)})
    batch = new_batch_id()
    snapshot = lake.append_records(records, batch, vectors) if records else lake.snapshot()
    changes = [policy_change(principal, policy) for principal, policy in _policies(store)]
    for change in changes:  # after the memories: a replica applies them in this order
        snapshot = lake.append_policy(change, batch)
    return Migrated(len(records), len(changes), snapshot)


def _policies(store: Store) -> Iterator[tuple[Principal, Policy]]:
    for org, workspace in store.workspaces():
        for agent, policy in list_policies(store, org, workspace):
            yield Principal(org, workspace, agent), policy


def lake_to_file(lake: Lake, store: Store, *, embedder: Embedder | None) -> Migrated:
    done = catch_up(store, lake, embedder=embedder)
    with store.transaction() as tx:  # an ordinary store now, tied to no lake
        tx.execute("DELETE FROM main.meta WHERE key IN (?, ?)", [LAKE_KEY, WATERMARK])
    policies = sum(len(list_policies(store, o, w)) for o, w in store.workspaces())
    return Migrated(done.report.read, policies, done.snapshot)
