"""Which rows are current for one reader: the partition's heads, corrected for what it may not read.

The partition's `heads` table (query/currentness.py) is computed over every row. A reader whose policy
hides some rows must see the store as one that never held them would: a hidden newer version of a
memory, a hidden fact that supersedes a visible one or takes its slot, must not make the visible one
non-current for it. Otherwise the reader's `facts/` and `index.md` counts are lower than in a store that
never held the hidden memory, and the visible one says `current: false` with `superseded_by: null`
(something newer exists), and a recall loses it altogether.

So per store generation and reader, the heads are computed again over the rows the reader may read,
and kept as their difference to the partition's: usually none (no hidden row shares an id with a
readable one or takes part in a link or slot, which one query per table tells), otherwise a few rids.
The gate's `scope_clause` adds them to its current-rows clause.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from recallfs.query.caches import LruCache
from recallfs.query.currentness import head_queries
from recallfs.query.cursor import Cursor
from recallfs.query.derived import store_state
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.policies import stored_policy_key
from recallfs.query.slot_succession import Blind, committed_blind
from recallfs.query.store import Store
from recallfs.scope.predicate import (
    authorization_predicate,
    partition_predicate,
    policy_predicate,
)
from recallfs.scope.principal import Principal


@dataclass(frozen=True, slots=True)
class HeadChanges:
    """How one reader's current rows differ from the partition's heads."""

    promoted: tuple[int, ...] = ()  # current for this reader, though a hidden row replaced them
    demoted: tuple[int, ...] = ()  # partition heads it may read that are not current for it


NO_CHANGES = HeadChanges()

def _by_generation(key: tuple[object, ...]) -> tuple[Hashable, int]:
    """LruCache's `generation` for `(*_reader_key's key, generation)`: the store is its path and token."""
    return (key[0], key[1]), int(key[-1])  # type: ignore[call-overload]


_CHANGES: LruCache[tuple[object, ...], HeadChanges] = LruCache(256, generation=_by_generation)
# (store path, store token, schema, reader's clause, its policy) -> (the highest rid looked at per table,
# whether any row up to it is hidden from the reader). Rows are only ever added, with rising rids, so
# after an ingest only the new rows need a look: a reader who may read everything pays a few
# milliseconds per write, not a scan.
_HIDDEN_SEEN: LruCache[tuple[object, ...], tuple[tuple[int, ...], bool]] = LruCache(256)
_HIDES: LruCache[tuple[object, ...], bool] = LruCache(256, generation=_by_generation)


def _reader_key(store: Store, principal: Principal, schema: str) -> tuple[tuple[object, ...], int]:
    """(what identifies this reader's view of this open store, the store's generation)"""
    where, params = authorization_predicate(principal, "m")
    token, generation = store_state(store)
    return (str(store.path), token, schema, where, repr(params)), generation


def hides_rows(store: Store, principal: Principal, schema: str) -> bool:
    """Whether the partition holds any row this reader may not read, once per store generation (and
    then only the rows written since the last look are read)."""
    key, generation = _reader_key(store, principal, schema)

    def compute() -> bool:
        cur = store.cursor()
        # the reader's stored policy is part of what was looked at: a new one makes every row new again
        return _any_hidden(cur, principal, schema, (*key, stored_policy_key(cur, principal)))

    return _HIDES.get_or_compute((*key, generation), compute)


def head_changes(store: Store, principal: Principal, schema: str) -> HeadChanges:
    """This reader's corrections to the partition's heads, computed once per store generation."""
    key, generation = _reader_key(store, principal, schema)
    where, params = authorization_predicate(principal, "m")

    def compute() -> HeadChanges:
        cur = store.cursor()
        if not hides_rows(store, principal, schema):
            return NO_CHANGES
        if not any(_hidden_rows_matter(cur, principal, schema, table) for table in MEMORY_TABLES):
            return NO_CHANGES
        return _recompute(cur, schema, where, params, committed_blind(store, schema))

    return _CHANGES.get_or_compute((*key, generation), compute)


def _any_hidden(cur: Cursor, principal: Principal, schema: str, key: tuple[object, ...]) -> bool:
    """Whether the partition holds any row the reader may not read (looking only past the last look)."""
    seen_to, hidden = _HIDDEN_SEEN.get(key) or ((-1,) * len(MEMORY_TABLES), False)
    if hidden:
        return True
    top = tuple(cur.scalar(f"SELECT coalesce(max(rid), -1) FROM {schema}.{t}") for t in MEMORY_TABLES)
    if top != seen_to:
        part, part_params = partition_predicate(principal, "h")
        policy, policy_params = policy_predicate(principal, "h")
        hidden = any(cur.execute(
            f"""SELECT 1 FROM {schema}.{table} h WHERE h.rid > ? AND h.rid <= ?
                AND {part} AND NOT coalesce({policy}, false) LIMIT 1""",
            [after, upto, *part_params, *policy_params]).fetchone() is not None
            for table, after, upto in zip(MEMORY_TABLES, seen_to, top, strict=True) if upto > after)
        _HIDDEN_SEEN.put(key, (top, hidden))
    return hidden


def _recompute(cur: Cursor, schema: str, where: str, params: list[object], blind: Blind) -> HeadChanges:
    current: set[int] = set()
    for _table, sql, bound in head_queries(cur, schema, where, params, blind=blind):
        current.update(int(r[0]) for r in cur.execute(sql, bound).fetchall())
    heads = {int(r[0]) for r in cur.execute(f"SELECT rid FROM {schema}.heads").fetchall()}
    readable_heads: set[int] = set()
    for table in MEMORY_TABLES:
        readable_heads.update(int(r[0]) for r in cur.execute(
            f"SELECT m.rid FROM {schema}.{table} m WHERE {where} AND m.rid IN (SELECT rid FROM {schema}.heads)",
            params).fetchall())
    return HeadChanges(promoted=tuple(sorted(current - heads)), demoted=tuple(sorted(readable_heads - current)))


def _hidden_rows_matter(cur: Cursor, principal: Principal, schema: str, table: str) -> bool:
    """Whether a row this reader may not read could move its heads: one that shares an id with a
    readable row (a version of it), or a fact that links, holds a slot, or is named by a readable
    fact's link. Most readers of most stores have none, and skip the recomputation."""
    part, part_params = partition_predicate(principal, "h")
    policy, policy_params = policy_predicate(principal, "h")
    readable, readable_params = authorization_predicate(principal, "m")
    ties = [f"h.id IN (SELECT m.id FROM {schema}.{table} m WHERE {readable})"]
    bound: list[object] = [*part_params, *policy_params, *readable_params]
    if table == "facts":
        ties.append("h.supersedes IS NOT NULL OR h.superseded_by IS NOT NULL OR h.slot IS NOT NULL")
        ties.append(f"""h.id IN (SELECT m.supersedes FROM {schema}.facts m WHERE {readable}
                                UNION SELECT m.superseded_by FROM {schema}.facts m WHERE {readable})""")
        bound += [*readable_params, *readable_params]
    row = cur.execute(
        f"""SELECT 1 FROM {schema}.{table} h WHERE {part} AND NOT coalesce({policy}, false)
            AND ({' OR '.join(ties)}) LIMIT 1""", bound).fetchone()
    return row is not None
