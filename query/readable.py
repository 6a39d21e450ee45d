"""What one principal may read in one store generation, as plain data (no DuckDB here).

`query/catalog.py` builds a `Readable` with the gate's answer per table; after that, what a listing or a
lookup needs is a Python filter over it: the rows by kind, tag, entity, session and id, and the counts
index.md shows. Content is loaded (by the catalog) only for rids in these sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from recallfs.query.labels import label

T = TypeVar("T")
Row = dict[str, Any]  # one memory version: query/rows.py ROW_COLUMNS plus "table"


@dataclass(frozen=True, slots=True)
class Meta:
    """What listings need to know about one row, without its content."""

    rid: int
    table: str
    id: str
    session: str | None
    kind: str
    tags: tuple[str, ...]
    entity: str | None
    created_at: datetime
    seq: int | None
    speaker: str | None
    version: int  # history/<id>/ names a version's file by it


@dataclass(frozen=True, slots=True)
class Counts:
    """The numbers index.md shows (current rows unless said otherwise)."""

    rows: dict[str, int]  # table -> current rows
    versions: int  # readable rows of every table, every version
    memories: int  # distinct ids among them
    kinds: dict[str, int]  # facts per kind
    tags: dict[str, int]  # facts per tag
    entities: dict[str, int]  # facts per entity
    sessions: int
    sessions_with_summary: int
    sessions_with_turns: int


@dataclass(frozen=True, slots=True)
class Changed:
    """The values a write touched, by what listings group rows by: ids, sessions and entities of every
    table, kinds and tags of facts."""

    ids: frozenset[str] = frozenset()
    sessions: frozenset[str] = frozenset()
    entities: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()


# The groupings that derive from some tables alone, and those tables (the others span every table, or
# hold what a write elsewhere changes, such as lineage).
MEMO_TABLES: dict[str, frozenset[str]] = {
    "current:facts": frozenset({"facts"}), "current:summaries": frozenset({"summaries"}),
    "current:turns": frozenset({"turns"}), "kinds": frozenset({"facts"}), "tags": frozenset({"facts"}),
    "entities": frozenset({"facts"}), "facts_by_id": frozenset({"facts"}),
    "sessions": frozenset({"summaries", "turns"}),
}


# Memos (dicts) whose entries stay true across generations once each is checked against the newer one (a
# layer above names its own: mount/known_files.py). Those of the generations before are kept, merged, in
# `earlier`.
CHECKED_MEMOS: set[str] = set()


def group(metas: Iterable[Meta], key: Callable[[Meta], Iterable[str]]) -> dict[str, list[Meta]]:
    groups: dict[str, list[Meta]] = {}
    for m in metas:
        for value in key(m):
            groups.setdefault(value, []).append(m)
    return groups


def _age(meta: Meta) -> tuple[datetime, int]:
    return (meta.created_at, meta.rid)


MERGE_ONE_BY_ONE = 256  # more new rows than this: sort the whole list once instead of inserting each


def newest_first(rows: list[Meta], new: Sequence[Meta]) -> list[Meta]:
    """`rows` (newest first: created_at, then rid, descending) with `new` at their places, as a new list.
    Pure, tested from a table."""
    if not new:
        return rows
    if len(new) > MERGE_ONE_BY_ONE:
        return sorted([*rows, *new], key=_age, reverse=True)
    out = list(rows)
    for meta in new:
        key, lo, hi = _age(meta), 0, len(out)
        while lo < hi:  # the first place whose row is older
            mid = (lo + hi) // 2
            if _age(out[mid]) > key:
                lo = mid + 1
            else:
                hi = mid
        out.insert(lo, meta)
    return out


@dataclass(slots=True)
class Readable:
    """The rows the principal may read, as metadata, for one store generation."""

    generation: int
    schema: str
    current: dict[str, frozenset[int]]  # table -> rids readable and current
    readable: dict[str, frozenset[int]]  # table -> rids readable, every version
    rows: dict[str, list[Meta]]  # table -> readable rows, newest first
    memo: dict[str, Any] = field(default_factory=dict)  # groupings derived from the rows, built once
    # What each table's part was read with: (its table generation, the gate's two clauses, the highest rid
    # read); a later build whose table has the same first three keeps that part and its groupings, and
    # one with the same every-version clause reads only the rows past that rid (query/catalog.py).
    made_with: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # The CHECKED_MEMOS of the generations before this one, merged (newest entry wins).
    earlier: dict[str, Any] = field(default_factory=dict)

    def derived(self, name: str, build: Callable[[], T]) -> T:
        """A grouping of these rows, computed on first use (two threads may both compute it: harmless)."""
        if name not in self.memo:
            self.memo[name] = build()
        return self.memo[name]  # type: ignore[no-any-return]

    def carry_from(self, older: Readable, same: set[str]) -> None:
        """Take the groupings of `older` that derive from the tables in `same` alone (their parts equal),
        and keep its CHECKED_MEMOS as `earlier`."""
        for name, tables in MEMO_TABLES.items():
            if name in older.memo and tables <= same:
                self.memo[name] = older.memo[name]
        # Merged with what `older` itself kept: a write commits more than once, and a generation that
        # nobody walked must not drop what the one before it knew.
        self.earlier = {name: {**older.earlier.get(name, {}), **older.memo.get(name, {})} for name in CHECKED_MEMOS}

    def newest(self) -> tuple[str, int] | None:
        """(table, rid) of the last row written that this reader may read: what changed for it last. A
        write it cannot read leaves it as it was (the store's own generation would not)."""
        def build() -> tuple[str, int] | None:
            found = [(max(rids), table) for table, rids in self.readable.items() if rids]
            if not found:
                return None
            rid, table = max(found)
            return table, rid

        return self.derived("newest", build)  # once per generation: a max over 100k rids per table

    def current_rows(self, table: str) -> list[Meta]:
        return self.derived(f"current:{table}", lambda: [m for m in self.rows[table] if m.rid in self.current[table]])

    # Groupings by a label key it in NFC (query/labels.py): a store written before labels were normalized
    # shows one directory for "café" in either form.
    def kinds(self) -> dict[str, list[Meta]]:
        return self.derived("kinds", lambda: group(self.current_rows("facts"), lambda m: (label(m.kind),)))

    def tags(self) -> dict[str, list[Meta]]:
        return self.derived("tags", lambda: group(self.current_rows("facts"),
                                                  lambda m: dict.fromkeys(map(label, m.tags))))

    def entities(self) -> dict[str, list[Meta]]:
        return self.derived("entities", lambda: group(
            self.current_rows("facts"), lambda m: (label(m.entity),) if m.entity is not None else ()))

    def facts_by_id(self) -> dict[str, list[Meta]]:
        return self.derived("facts_by_id", lambda: group(self.current_rows("facts"), lambda m: (m.id,)))

    def sessions(self) -> dict[str, dict[str, list[Meta]]]:
        """session -> {"summaries": [...], "turns": [...]}, current rows."""
        def build() -> dict[str, dict[str, list[Meta]]]:
            out: dict[str, dict[str, list[Meta]]] = {}
            for table in ("summaries", "turns"):
                for session, metas in group(self.current_rows(table),
                                            lambda m: (label(m.session),) if m.session is not None else ()).items():
                    out.setdefault(session, {"summaries": [], "turns": []})[table] = metas
            return out

        return self.derived("sessions", build)

    def history_ids(self) -> dict[str, list[Meta]]:
        """Every readable version, by memory id (newest id first)."""
        def build() -> dict[str, list[Meta]]:
            metas = [m for table_rows in self.rows.values() for m in table_rows]
            metas.sort(key=lambda m: (m.created_at, m.rid), reverse=True)
            return group(metas, lambda m: (m.id,))

        return self.derived("history", build)

    def counts(self) -> Counts:
        by_session = self.sessions()
        return Counts(
            rows={t: len(rids) for t, rids in self.current.items()},
            versions=sum(len(rids) for rids in self.readable.values()),
            memories=len(self.history_ids()),
            kinds={k: len(v) for k, v in self.kinds().items()},
            tags={k: len(v) for k, v in self.tags().items()},
            entities={k: len(v) for k, v in self.entities().items()},
            sessions=len(by_session),
            sessions_with_summary=sum(1 for g in by_session.values() if g["summaries"]),
            sessions_with_turns=sum(1 for g in by_session.values() if g["turns"]),
        )
