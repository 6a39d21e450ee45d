"""Which version replaced which: what history/ and recall hits say about currentness.

Every version of a memory is either current or was replaced. `superseded_by` names the version that
replaced it, `supersedes` the versions it replaced, as `<id>/v<version>` (the file
`history/<id>/v<version>.md`). The links follow the rules that decide the heads
(query/currentness.py, query/versioning.py):

- within one memory, versions in time order (`created_at`, then arrival): each is superseded by the
  next one;
- a memory whose head a supersession link replaces (`supersedes` / `superseded_by` between ids): its
  head is superseded by the head of the memory that replaced it (the immediate link, not the end of
  the chain, so a chain reads step by step);
- facts sharing a slot: each live fact's head is superseded by the next newer live fact's head whose
  author may read it (query/slot_succession.py).

`links_of` is pure (tested from tables). `partition_links` reads the rows that can take part in a link
(memories with more than one version, facts with a slot or a link, facts a link names) once per store
generation. What a reader sees is cut to the versions it may read (`Lineage.visible`): a link never
names a memory the reader's policy hides.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any

from recallfs.query.caches import LruCache
from recallfs.query.currentness import FactState, fact_links, replaced_ids
from recallfs.query.derived import by_generation, store_state
from recallfs.query.gate import authorize
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.slot_succession import NOT_BLIND, Blind, SlotMember, committed_blind, slot_successors
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

__all__ = ["Lineage", "Links", "Ref", "Version", "links_of", "partition_links", "reader_links", "replaced_by_hits"]


@dataclass(frozen=True, slots=True)
class Version:
    """One stored version, as far as its links care."""

    rid: int
    table: str
    id: str
    version: int
    created_at: datetime
    status: str = "active"
    slot: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    author: str = ""

    def order(self) -> tuple[datetime, int, int]:
        return (self.created_at, self.version, self.rid)

    def ref(self) -> Ref:
        return Ref(self.id, self.version, self.table, self.rid)


@dataclass(frozen=True, slots=True, order=True)
class Ref:
    id: str
    version: int
    table: str
    rid: int

    @property
    def name(self) -> str:
        return f"{self.id}/v{self.version}"


@dataclass(frozen=True, slots=True)
class Lineage:
    """A version's place in its memory's story. Hashable: part of a mount file's content key."""

    current: bool
    superseded_by: Ref | None = None
    supersedes: tuple[Ref, ...] = ()

    def visible(self, readable: Callable[[Ref], bool]) -> Lineage:
        """The same, naming only versions the reader may read."""
        if self.superseded_by is None and not self.supersedes:
            return self
        by = self.superseded_by if self.superseded_by is not None and readable(self.superseded_by) else None
        return Lineage(self.current, by, tuple(r for r in self.supersedes if readable(r)))

    def fields(self) -> list[tuple[str, Any]]:
        """Front matter: current, superseded_by, supersedes."""
        by = self.superseded_by.name if self.superseded_by is not None else None
        return [("current", self.current), ("superseded_by", by), ("supersedes", [r.name for r in self.supersedes])]


Links = tuple[Ref | None, tuple[Ref, ...]]  # (superseded_by, supersedes)


def _by_memory(versions: Iterable[Version]) -> dict[tuple[str, str], list[Version]]:
    groups: dict[tuple[str, str], list[Version]] = {}
    for v in versions:
        groups.setdefault((v.table, v.id), []).append(v)
    for group in groups.values():
        group.sort(key=Version.order)
    return groups


def _fact_successors(heads: dict[str, Version], blind: Blind) -> dict[int, Ref]:
    """head rid -> the head that replaced it, by supersession link or by slot."""
    states = {fid: FactState(fid, v.status, v.supersedes, v.superseded_by, v.created_at, v.version, v.rid)
              for fid, v in heads.items()}
    links = fact_links(states)
    gone = replaced_ids(states)
    out = {heads[old].rid: heads[new].ref() for old, new in links.items() if old in gone}
    live = {v.rid: v for fid, v in heads.items() if v.slot is not None and v.status == "active" and fid not in gone}
    members = [SlotMember(v.rid, v.slot, v.author, v.created_at, v.version) for v in live.values() if v.slot]
    out.update((older, live[newer].ref()) for older, newer in slot_successors(members, blind).items())
    return out


def links_of(versions: Iterable[Version], blind: Blind = NOT_BLIND) -> dict[int, Links]:
    """rid -> (superseded_by, supersedes) for every version that has a link."""
    groups = _by_memory(versions)
    successor: dict[int, Ref] = {}
    for group in groups.values():
        successor.update((older.rid, newer.ref()) for older, newer in pairwise(group))
    fact_heads = {mem_id: group[-1] for (table, mem_id), group in groups.items() if table == "facts"}
    successor.update(_fact_successors(fact_heads, blind))
    refs = {v.rid: v.ref() for group in groups.values() for v in group}
    replaced: dict[int, list[Ref]] = {}
    for old, new in successor.items():
        replaced.setdefault(new.rid, []).append(refs[old])
    return {rid: (successor.get(rid), tuple(sorted(replaced.get(rid, []))))
            for rid in successor.keys() | replaced.keys()}


@dataclass(slots=True)
class PartitionLinks:
    links: dict[int, Links] = field(default_factory=dict)
    versions: tuple[Version, ...] = ()  # what the links were worked out from (every linked version)
    blind: Blind = NOT_BLIND  # (author, rid) its read policy hides, among slot facts

    def for_reader(self, readable: Mapping[str, Container[int]]) -> PartitionLinks:
        """The links a store holding only the versions this reader may read would have. Filtering the
        store's links instead broke a chain at a hidden version: a fact replaced, through its slot, by a
        private fact and then by one the reader sees showed `superseded_by: null`, and the newest
        `supersedes: []`, where a store without the private fact links the two."""
        mine = [v for v in self.versions if v.rid in readable.get(v.table, ())]
        if len(mine) == len(self.versions):
            return self
        return PartitionLinks(links_of(mine, self.blind), tuple(mine), self.blind)

    def lineage(self, rid: int, current: bool) -> Lineage:
        found = self.links.get(rid)
        if found is None:  # most rows: one version, no link; shared, as they end up in every file's key
            return _CURRENT if current else _NOT_CURRENT
        return Lineage(current, *found)


_CURRENT, _NOT_CURRENT = Lineage(True), Lineage(False)


_CACHE: LruCache[tuple[Any, ...], PartitionLinks] = LruCache(32, generation=by_generation)


def _rows(store: Store, schema: str, table: str) -> list[Version]:
    facts = table == "facts"
    slot = "slot, supersedes, superseded_by, agent" if facts else "NULL, NULL, NULL, agent"
    linked = f"""OR slot IS NOT NULL OR supersedes IS NOT NULL OR superseded_by IS NOT NULL
        OR id IN (SELECT supersedes FROM {schema}.facts UNION SELECT superseded_by FROM {schema}.facts)""" \
        if facts else ""
    rows = store.cursor().execute(
        f"""SELECT rid, id, version, created_at, status, {slot} FROM {schema}.{table}
            WHERE id IN (SELECT id FROM {schema}.{table} GROUP BY id HAVING count(*) > 1) {linked}""").fetchall()
    return [Version(int(r[0]), table, str(r[1]), int(r[2]), r[3], str(r[4]), r[5], r[6], r[7], str(r[8]))
            for r in rows]


def partition_links(store: Store, schema: str) -> PartitionLinks:
    """The links of one partition, computed once per store generation. A memory with one version and
    no link (most turns) is not read at all."""
    def compute() -> PartitionLinks:
        versions = tuple(v for table in MEMORY_TABLES for v in _rows(store, schema, table))
        blind = committed_blind(store, schema)
        return PartitionLinks(links_of(versions, blind), versions, blind)

    return _CACHE.get_or_compute((str(store.path), *store_state(store), schema), compute)


_READER: LruCache[tuple[Any, ...], PartitionLinks] = LruCache(64, generation=by_generation)


def reader_links(store: Store, principal: Principal, schema: str) -> PartitionLinks:
    """partition_links as `principal` may read them (PartitionLinks.for_reader), once per generation."""
    def compute() -> PartitionLinks:
        store_links = partition_links(store, schema)
        wanted: dict[str, list[int]] = {}
        for v in store_links.versions:
            wanted.setdefault(v.table, []).append(v.rid)
        cur = store.cursor()
        return store_links.for_reader({table: set(authorize(cur, principal, schema, table, rids, current_only=False))
                                       for table, rids in wanted.items()})

    return _READER.get_or_compute((str(store.path), *store_state(store), schema, principal), compute)


def replaced_by_hits(
    store: Store, principal: Principal, schema: str, hits: Sequence[tuple[str, int]]
) -> dict[int, list[str]]:
    """rid -> the versions each (table, rid) replaced, as `<id>/v<n>`, among those `principal` may read
    (the gate, every version): what a recall hit says it replaces."""
    if not hits:
        return {}
    links = reader_links(store, principal, schema).links
    older = {rid: links[rid][1] for _, rid in hits if rid in links and links[rid][1]}
    wanted: dict[str, set[int]] = {}
    for refs in older.values():
        for ref in refs:
            wanted.setdefault(ref.table, set()).add(ref.rid)
    cur = store.cursor()
    allowed = {(table, rid) for table, rids in wanted.items()
               for rid in authorize(cur, principal, schema, table, rids, current_only=False)}
    return {rid: [r.name for r in refs if (r.table, r.rid) in allowed] for rid, refs in older.items()}
