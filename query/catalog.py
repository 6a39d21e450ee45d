"""The catalog: what the mount lists and reads, as one principal may see it.

Every SQL statement the mount needs is here; `mount/` holds none. Authorization is the gate's
`scope_clause` for the principal, evaluated once per table and store generation (`Readable`); content
is loaded only for rids in that answer, so a row the principal may not read is absent from listings
and lookups alike.

Every method reads DuckDB: callers in the daemon run them in a worker thread (its store refuses a
cursor on the trio thread). Thread-safe: each thread uses its own cursor.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from recallfs.query.gate import reader_scope_clause
from recallfs.query.labels import label, label_forms
from recallfs.query.lineage import Lineage, Ref, partition_links
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.policies import stored_policy_key
from recallfs.query.readable import Changed, Meta, Readable, Row
from recallfs.query.readable_parts import META_COLUMNS, OWN_HEADS, current_grown, grown, meta, whole
from recallfs.query.rows import load_rows
from recallfs.query.store import Store
from recallfs.scope.predicate import POLICY_TABLE
from recallfs.scope.principal import Principal

RID_CHUNK = 4000  # rids per statement; keeps the SQL text bounded


def _rid_lists(rids: Sequence[int]) -> Iterable[str]:
    """Integer literals in chunks: DuckDB binds a list parameter at ~10k items/s, far slower than the query,
    and int() makes sure nothing but integers reaches the SQL text."""
    for start in range(0, len(rids), RID_CHUNK):
        yield ",".join(str(int(r)) for r in rids[start:start + RID_CHUNK])


def _readable(cat: Readable, ref: Ref) -> bool:
    return ref.rid in cat.readable.get(ref.table, frozenset())


# The links before the write: the new links no longer name the partners a memory left (a fact moved out
# of its slot was between two slot members, now linked to each other). Old versions keep their slot and
# explicit links, so every memory sharing a slot with any version of these, or named by one, is a partner.
_LINKED_BEFORE = """
    SELECT id FROM {schema}.facts WHERE slot IN (SELECT slot FROM {schema}.facts
        WHERE id IN (SELECT unnest(?1::VARCHAR[])) AND slot IS NOT NULL)
    UNION SELECT supersedes FROM {schema}.facts WHERE id IN (SELECT unnest(?1::VARCHAR[])) AND supersedes IS NOT NULL
    UNION SELECT superseded_by FROM {schema}.facts
        WHERE id IN (SELECT unnest(?1::VARCHAR[])) AND superseded_by IS NOT NULL"""


class Catalog:
    """The store as `principal` may read it: one `Readable` per store generation, and rows by rid."""

    def __init__(self, store: Store, principal: Principal) -> None:
        self.store = store
        self.principal = principal
        self._readable: Readable | None = None
        self._lock = threading.Lock()

    def schema(self) -> str | None:
        return self.store.schema_for(self.principal)

    def built(self) -> Readable | None:
        """The current generation's Readable if it is built already; builds nothing."""
        cat = self._readable
        return cat if cat is not None and cat.generation == self.store.generation else None

    def session_turns(self, sessions: Iterable[str]) -> dict[str, list[Meta]]:
        """session -> the current turns this principal may read in it, as `Readable.sessions()` has them
        (the gate's `scope_clause`, current rows), read for these sessions alone: a recall right after a
        write names its turn hits' files without building the whole new Readable (0.8 s at 100k)."""
        schema = self.schema()
        wanted = sorted({form for s in sessions for form in label_forms(s)})
        if schema is None or not wanted:
            return {}
        where, params = reader_scope_clause(self.store, self.principal, schema, None, current_only=True)
        out: dict[str, list[Meta]] = {}
        for row in self.store.cursor().execute(
            f"SELECT {', '.join(f'm.{c}' for c in META_COLUMNS)} FROM {schema}.turns m "
            f"WHERE {where} AND m.session IN (SELECT unnest(?::VARCHAR[]))", [*params, wanted]
        ).fetchall():
            found = meta("turns", row)
            out.setdefault(label(str(found.session)), []).append(found)
        return out

    def readable(self) -> Readable | None:
        """The current generation's readable rows (None: the workspace holds nothing yet)."""
        generation = self.store.generation  # read before the queries: a commit during them makes it stale
        cat = self._readable
        if cat is not None and cat.generation == generation:
            return cat
        with self._lock:
            cat = self._readable
            if cat is not None and cat.generation == generation:
                return cat
            schema = self.schema()
            if schema is None:
                return None
            cat = self._build(generation, schema)
            self._readable = cat
            return cat

    def _build(self, generation: int, schema: str) -> Readable:
        """Two queries per table carrying the gate's `scope_clause` (current rows, and every version), plus
        one plain query for the metadata. Small queries with list parameters or the policy predicate cost
        tens of milliseconds each in DuckDB, and a walk of the tree would issue thousands of them.

        A table that no commit touched since the last build (Store.table_generation), read with the same
        clauses, keeps its part: one fact written at 100k memories rebuilt the 65k turns' (0.4 s). A table
        that was written keeps its rows and reads only the new ones (query/readable_parts.py)."""
        cur = self.store.cursor()
        older = self._readable if self._readable is not None and self._readable.schema == schema else None
        current: dict[str, frozenset[int]] = {}
        readable: dict[str, frozenset[int]] = {}
        rows: dict[str, list[Meta]] = {}
        made_with: dict[str, tuple[Any, ...]] = {}
        policy = stored_policy_key(cur, self.principal)  # part of the key: the clauses' text hides it
        for table in MEMORY_TABLES:
            clauses = [reader_scope_clause(self.store, self.principal, schema, None, current_only=only)
                       for only in (True, False)]
            key = (self.store.table_generation(schema, table), *(repr(c) + policy for c in clauses))
            before = older.made_with.get(table, ()) if older is not None else ()
            if older is not None and before[:3] == key:
                made_with[table] = before
                current[table], readable[table], rows[table] = (older.current[table], older.readable[table],
                                                                older.rows[table])
                continue
            if older is not None and table in OWN_HEADS and before[1:2] == key[1:2]:
                current[table] = current_grown(cur, schema, table, clauses[0], older)
            else:
                where, params = clauses[0]
                current[table] = frozenset(int(r[0]) for r in cur.execute(
                    f"SELECT m.rid FROM {schema}.{table} m WHERE {where}", params).fetchall())
            if older is not None and before[2:3] == key[2:3]:  # every version read with the same clause
                readable[table], rows[table], top = grown(cur, schema, table, clauses[1], older)
            else:
                readable[table], rows[table], top = whole(cur, schema, table, clauses[1])
            made_with[table] = (*key, top)  # the highest rid read: where the next `_grown` starts
        built = Readable(generation, schema, current, readable, rows, made_with=made_with)
        if older is not None:
            built.carry_from(older, {t for t in MEMORY_TABLES if older.made_with.get(t) == made_with[t]})
        return built

    def load(self, cat: Readable, table: str, rids: Sequence[int], *, current_only: bool = True) -> list[Row]:
        """Content for the rids `cat` (the gate's answer) allows, in the order of `rids`."""
        allowed = cat.current[table] if current_only else cat.readable[table]
        wanted = [rid for rid in rids if rid in allowed]
        by_rid = load_rows(self.store, cat.schema, table, wanted, cache=False)
        return [{**by_rid[rid], "lineage": self.lineage(cat, table, rid)} for rid in wanted if rid in by_rid]

    def lineage(self, cat: Readable, table: str, rid: int) -> Lineage:
        """Whether this version is current, and what replaced it and what it replaced, naming only
        versions this principal may read (query/lineage.py)."""
        links = cat.derived("links", lambda: partition_links(self.store, cat.schema).for_reader(cat.readable))
        return links.lineage(rid, rid in cat.current[table]).visible(lambda ref: _readable(cat, ref))

    def neighbours(self, ids: Iterable[str]) -> set[str]:
        """The memories linked to any version of these, after the write and before it (a write that
        changes one changes their front matter too). For invalidation only, so not cut to what this
        principal may read. Read from the store, not from a Readable: building the new generation's
        Readable here put the whole catalog (0.8 s at 100k memories, once per view) on every write's
        path, before its close returned."""
        schema = self.schema()
        wanted = sorted(set(ids))
        if schema is None or not wanted:
            return set()
        links = partition_links(self.store, schema).links
        out: set[str] = set()
        cur = self.store.cursor()
        for table in MEMORY_TABLES:
            for (rid,) in cur.execute(f"SELECT rid FROM {schema}.{table} WHERE id IN (SELECT unnest(?::VARCHAR[]))",
                                      [wanted]).fetchall():
                by, older = links.get(int(rid), (None, ()))
                out.update(r.id for r in (*older, *([by] if by is not None else [])))
        out.update(id_ for (id_,) in cur.execute(_LINKED_BEFORE.format(schema=schema), [wanted]).fetchall())
        return out - set(wanted)

    def load_metas(self, cat: Readable, metas: Sequence[Meta], *, current_only: bool = True) -> list[Row]:
        """Content for these rows (of any tables), in their order."""
        out: list[Row] = []
        for table in MEMORY_TABLES:
            rids = [m.rid for m in metas if m.table == table]
            if rids:
                out += self.load(cat, table, rids, current_only=current_only)
        order = {(m.table, m.rid): i for i, m in enumerate(metas)}
        out.sort(key=lambda r: order[(r["table"], int(r["rid"]))])
        return out

    def row(self, table: str, rid: int) -> Row | None:
        """One memory version, any version, authorized again (None: gone, or not readable)."""
        cat = self.readable()
        rows = self.load(cat, table, [rid], current_only=False) if cat is not None else []
        return rows[0] if rows else None

    # -- change sets (what a write touched) ------------------------------------------------------
    def heads(self) -> np.ndarray:
        """The sorted rids of every current version (all principals: a change set is diffed, not shown).
        An array: a set of 100k Python ints cost ~50 ms twice per write, the array ~3 ms."""
        schema = self.schema()
        if schema is None:
            return np.zeros(0, dtype=np.int64)
        rids = self.store.cursor().execute(f"SELECT rid FROM {schema}.heads").fetchnumpy()["rid"]
        return np.sort(np.asarray(rids, dtype=np.int64))

    def policies(self) -> tuple[tuple[Any, ...], ...]:
        """The stored policies of the principal's workspace, to tell whether a write changed one."""
        return tuple(tuple(r) for r in self.store.cursor().execute(
            f"SELECT * FROM {POLICY_TABLE} WHERE org = ? AND workspace = ? ORDER BY agent",
            [self.principal.org, self.principal.workspace]).fetchall())

    def heads_changed_since(self, before: np.ndarray) -> set[int]:
        """The rids current in exactly one of `before` (an earlier `heads()`) and now."""
        return set(np.setxor1d(before, self.heads(), assume_unique=True).tolist())

    def changed(self, rids: Iterable[int]) -> Changed:
        """The ids, sessions, entities, kinds and tags of these rows."""
        schema = self.schema()
        wanted = sorted({int(r) for r in rids})
        if schema is None or not wanted:
            return Changed()
        ids: set[str] = set()
        sessions: set[str] = set()
        entities: set[str] = set()
        kinds: set[str] = set()
        tags: set[str] = set()
        for table in MEMORY_TABLES:
            for rid_list in _rid_lists(wanted):
                for mem_id, session, entity, kind, row_tags in self.store.cursor().execute(
                    f"SELECT id, session, entity, kind, tags FROM {schema}.{table} WHERE rid IN ({rid_list})"
                ).fetchall():
                    ids.add(str(mem_id))
                    if session is not None:
                        sessions.add(str(session))
                    if entity is not None:
                        entities.add(str(entity))
                    if table == "facts":
                        kinds.add(str(kind))
                        tags.update(str(t) for t in row_tags or [])
        return Changed(frozenset(ids), frozenset(sessions), frozenset(entities), frozenset(kinds), frozenset(tags))
