"""Browse queries: what each directory of the mount lists, and what one name in it resolves to.

Every method here reads DuckDB, so it runs in a worker thread, never on the trio thread (the daemon's
store raises if it is asked for a cursor there). Authorization is the gate's `scope_clause` for the
mount's principal, evaluated once per table and store generation (the `Catalog`); content is loaded only
for rids in that answer, so a row the principal may not read is absent from listings and lookups alike.

Results are plain data (`Entry`, `Listing`): the trio thread owns inodes and caches.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import duckdb

from recallfs.mount import render
from recallfs.mount.names import (
    TABLE_SINGULAR,
    decode_value,
    disambiguate,
    encode_value,
    fact_name,
    hit_name,
    parse_fact_name,
    turn_name,
    version_name,
)
from recallfs.mount.paths import RESULTS_DIR, TRUNCATED_NAME, Kind
from recallfs.query.gate import scope_clause
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.mount.browse")

ROW_COLUMNS = (
    "rid", "id", "version", "kind", "content", "session", "source_id", "source", "created_at", "ingested_at",
    "tags", "refs", "agent", "visibility", "speaker", "seq", "entity", "slot", "title", "caption", "status",
    "superseded_by", "supersedes",
)
Row = dict[str, Any]
T = TypeVar("T")
Dep = tuple[str, str]
ContentKey = tuple[Any, ...]
INDEX_DEP: Dep = ("index", "")
RECALL_DEP: Dep = ("recall", "")


class NotFound(LookupError):
    """No such name here (or the principal may not see it): ENOENT."""


class NotADirectory(LookupError):
    """A lookup or listing below a file: ENOTDIR."""


class NeedsListing(Exception):
    """This name cannot be resolved on its own: build the directory's listing and look there."""


@dataclass(frozen=True, slots=True)
class Content:
    """A file's bytes are identified by `key`: ('row', table, rid) can be re-rendered from the store;
    ('blob', sha1) cannot, so the node that holds it keeps the bytes."""

    key: ContentKey
    size: int
    data: bytes | None = None


_NO_PARAMS: dict[str, Any] = {}  # shared by every file entry (hundreds of thousands): never written


@dataclass(frozen=True, slots=True, eq=False)
class Entry:
    name: str
    kind: Kind
    params: dict[str, Any] = field(default_factory=lambda: _NO_PARAMS)  # what a directory lists by
    content: Content | None = None  # files
    target: str | None = None  # symlinks
    mtime: datetime | None = None
    deps: frozenset[Dep] = frozenset()

    @property
    def is_dir(self) -> bool:
        return self.content is None and self.target is None


@dataclass(slots=True)
class Listing:
    entries: list[Entry]
    rows: dict[ContentKey, bytes] = field(default_factory=dict)  # re-renderable bytes for the content cache
    truncated: tuple[int, int] | None = None  # (shown, total)
    _positions: dict[str, int] | None = None

    def position(self, name: str) -> int | None:
        if self._positions is None:  # built once; listings are never changed after they are made
            self._positions = {e.name: i for i, e in enumerate(self.entries)}
        return self._positions.get(name)

    def find(self, name: str) -> Entry | None:
        i = self.position(name)
        return None if i is None else self.entries[i]


def blob(data: bytes) -> Content:
    return Content(("blob", hashlib.sha1(data).hexdigest()), len(data), data)


def _dir(name: str, kind: Kind, deps: Iterable[Dep] = (), params: dict[str, Any] | None = None) -> Entry:
    return Entry(name=name, kind=kind, params=params or {}, deps=frozenset(deps))


@dataclass(slots=True)
class RecallSnapshot:
    """One run of recall for one directory name: the files it shows, fixed for its inode's life."""

    query: str
    entries: list[Entry]
    degraded: bool
    degraded_reason: str | None
    hits: int


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


@dataclass(slots=True)
class Catalog:
    """The rows the principal may read, as metadata, for one store generation.

    Built with two queries per table carrying the gate's `scope_clause` (current rows, and every
    version), plus one plain query for the metadata; after that a listing or a lookup is a Python
    filter, and content is loaded only for rids in these sets. Small, store-generation-keyed queries
    with list parameters or the policy predicate cost tens of milliseconds each in DuckDB, and a
    walk of the tree would issue thousands of them."""

    generation: int
    schema: str
    current: dict[str, frozenset[int]]  # table -> rids readable and current
    readable: dict[str, frozenset[int]]  # table -> rids readable, every version
    rows: dict[str, list[Meta]]  # table -> readable rows, newest first
    memo: dict[str, Any] = field(default_factory=dict)  # groupings derived from the rows, built once

    def derived(self, name: str, build: Callable[[], T]) -> T:
        """A grouping of this catalog, computed on first use (two threads may both compute it: harmless)."""
        if name not in self.memo:
            self.memo[name] = build()
        return self.memo[name]  # type: ignore[no-any-return]

    def current_rows(self, table: str) -> list[Meta]:
        return self.derived(f"current:{table}", lambda: [m for m in self.rows[table] if m.rid in self.current[table]])


class Browser:
    """The store as the mount's principal sees it. Thread-safe: each thread uses its own cursor."""

    def __init__(
        self,
        store: Store,
        principal: Principal,
        *,
        max_rows: int = 5000,
        mountpoint: str = "",
        recall_settings: dict[str, Any] | None = None,
        semantic: Any = None,
    ) -> None:
        self.store = store
        self.principal = principal
        self.max_rows = max_rows
        self.mountpoint = mountpoint
        self.recall_settings = dict(recall_settings or {})
        self.semantic = semantic
        self.last_recall_degraded: str | None = None
        self._catalog: Catalog | None = None
        self._catalog_lock = threading.Lock()

    # -- the catalog and content -----------------------------------------------------------------
    def _cur(self) -> duckdb.DuckDBPyConnection:
        return self.store.cursor()

    def schema(self) -> str | None:
        return self.store.schema_for(self.principal)

    def catalog(self) -> Catalog | None:
        """The current generation's catalog (None: the workspace holds nothing yet)."""
        generation = self.store.generation  # read before the queries: a commit during them makes it stale
        cat = self._catalog
        if cat is not None and cat.generation == generation:
            return cat
        with self._catalog_lock:
            cat = self._catalog
            if cat is not None and cat.generation == generation:
                return cat
            schema = self.schema()
            if schema is None:
                return None
            cur = self._cur()
            current, readable, rows = {}, {}, {}
            for table in MEMORY_TABLES:
                for only, out in ((True, current), (False, readable)):
                    where, params = scope_clause(self.principal, schema, None, current_only=only)
                    out[table] = frozenset(int(r[0]) for r in cur.execute(
                        f"SELECT m.rid FROM {schema}.{table} m WHERE {where}", params).fetchall())
                metas = []
                for rid, mem_id, session, kind, tags, entity, created, seq, speaker in cur.execute(
                    f"SELECT rid, id, session, kind, tags, entity, created_at, seq, speaker FROM {schema}.{table} "
                    "ORDER BY created_at DESC, rid DESC"
                ).fetchall():
                    if int(rid) in readable[table]:
                        metas.append(Meta(int(rid), table, str(mem_id), session, str(kind), tuple(tags or ()),
                                          entity, created, seq, speaker))
                rows[table] = metas
            cat = Catalog(generation, schema, current, readable, rows)
            self._catalog = cat
            return cat

    def _load(self, cat: Catalog, table: str, rids: Sequence[int], *, current_only: bool = True) -> list[Row]:
        """Content for the rids the catalog (the gate's answer) allows, in the order of `rids`."""
        allowed = cat.current[table] if current_only else cat.readable[table]
        wanted = [rid for rid in rids if rid in allowed]
        by_rid: dict[int, Row] = {}
        cur = self._cur()
        for start in range(0, len(wanted), 4000):
            # Integers inlined: DuckDB binds a list parameter at ~10k items/s, far slower than the query.
            chunk = ",".join(str(int(r)) for r in wanted[start:start + 4000])
            for r in cur.execute(
                f"SELECT {', '.join(ROW_COLUMNS)} FROM {cat.schema}.{table} WHERE rid IN ({chunk})"
            ).fetchall():
                by_rid[int(r[0])] = {**dict(zip(ROW_COLUMNS, r, strict=True)), "table": table}
        return [by_rid[rid] for rid in wanted if rid in by_rid]

    def _load_metas(self, cat: Catalog, metas: Sequence[Meta], *, current_only: bool = True) -> list[Row]:
        out: list[Row] = []
        for table in MEMORY_TABLES:
            rids = [m.rid for m in metas if m.table == table]
            if rids:
                out += self._load(cat, table, rids, current_only=current_only)
        order = {(m.table, m.rid): i for i, m in enumerate(metas)}
        out.sort(key=lambda r: order[(r["table"], int(r["rid"]))])
        return out

    @staticmethod
    def row_content(row: Row) -> tuple[Content, bytes]:
        data = render.render_memory(row)
        return Content(("row", row["table"], int(row["rid"])), len(data)), data

    def row_bytes(self, table: str, rid: int) -> bytes:
        """Re-render one memory version whose bytes left the cache (authorized again first)."""
        cat = self.catalog()
        rows = self._load(cat, table, [rid], current_only=False) if cat is not None else []
        if not rows:
            raise NotFound(rid)
        return render.render_memory(rows[0])

    def _cap(self, metas: list[Meta]) -> tuple[list[Meta], tuple[int, int] | None]:
        if len(metas) <= self.max_rows:
            return metas, None
        return metas[: self.max_rows], (self.max_rows, len(metas))

    def _finish(self, entries: list[Entry], rows: dict[ContentKey, bytes], truncated: tuple[int, int] | None,
                where: str) -> Listing:
        entries.sort(key=lambda e: e.name)
        if truncated is not None:
            entries.append(Entry(TRUNCATED_NAME, Kind.TRUNCATED,
                                 content=blob(render.render_truncated(truncated[0], truncated[1], where)),
                                 deps=frozenset({INDEX_DEP})))
        return Listing(entries, rows, truncated)

    def _fact_entries(self, rows: Sequence[Row], out: dict[ContentKey, bytes]) -> list[Entry]:
        entries = []
        for row in rows:
            content, data = self.row_content(row)
            out[content.key] = data
            entries.append(Entry(fact_name(row["content"], row["id"]), Kind.FACT,
                                 content=content, mtime=row["created_at"], deps=frozenset({("id", row["id"])})))
        return entries

    def _fact_listing(self, cat: Catalog, metas: list[Meta], where: str, extra: list[Entry] | None = None
                      ) -> Listing:
        shown, truncated = self._cap(metas)
        out: dict[ContentKey, bytes] = {}
        entries = self._fact_entries(self._load_metas(cat, shown), out) + (extra or [])
        return self._finish(entries, out, truncated, where)

    # -- listings --------------------------------------------------------------------------------
    def listing(self, kind: Kind, params: dict[str, Any], status: dict[str, Any] | None = None) -> Listing:
        handler = self._LISTINGS.get(kind)
        if handler is None:
            raise NotADirectory(kind)
        cat = self.catalog()
        if cat is None and kind is not Kind.ROOT:
            return Listing([])
        return handler(self, cat, params, status or {})

    def _list_root(self, cat: Catalog | None, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        index = self.index_bytes(cat, status)
        entries = [
            Entry("index.md", Kind.INDEX, content=blob(index), deps=frozenset({INDEX_DEP})),
            _dir("facts", Kind.FACTS), _dir("sessions", Kind.SESSIONS), _dir("entities", Kind.ENTITIES),
            _dir("history", Kind.HISTORY), _dir("recall", Kind.RECALL),
        ]
        return Listing(entries)

    def _list_facts(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._fact_listing(cat, cat.current_rows("facts"), "facts/",
                                  [_dir("by-kind", Kind.KINDS), _dir("by-tag", Kind.TAGS)])

    @staticmethod
    def _group(metas: Iterable[Meta], key: Callable[[Meta], Iterable[str]]) -> dict[str, list[Meta]]:
        groups: dict[str, list[Meta]] = {}
        for m in metas:
            for value in key(m):
                groups.setdefault(value, []).append(m)
        return groups

    def kinds(self, cat: Catalog) -> dict[str, list[Meta]]:
        return cat.derived("kinds", lambda: self._group(cat.current_rows("facts"), lambda m: (m.kind,)))

    def tags(self, cat: Catalog) -> dict[str, list[Meta]]:
        return cat.derived("tags", lambda: self._group(cat.current_rows("facts"), lambda m: m.tags))

    def entities(self, cat: Catalog) -> dict[str, list[Meta]]:
        return cat.derived("entities", lambda: self._group(
            cat.current_rows("facts"), lambda m: (m.entity,) if m.entity is not None else ()))

    def facts_by_id(self, cat: Catalog) -> dict[str, list[Meta]]:
        return cat.derived("facts_by_id", lambda: self._group(cat.current_rows("facts"), lambda m: (m.id,)))

    def sessions(self, cat: Catalog) -> dict[str, dict[str, list[Meta]]]:
        def build() -> dict[str, dict[str, list[Meta]]]:
            out: dict[str, dict[str, list[Meta]]] = {}
            for table in ("summaries", "turns"):
                for session, metas in self._group(cat.current_rows(table),
                                                  lambda m: (m.session,) if m.session is not None else ()).items():
                    out.setdefault(session, {"summaries": [], "turns": []})[table] = metas
            return out

        return cat.derived("sessions", build)

    def _value_dirs(self, values: Iterable[str], kind: Kind, key: str, where: str) -> Listing:
        ordered = sorted(values)
        truncated = None
        if len(ordered) > self.max_rows:
            truncated = (self.max_rows, len(ordered))
            ordered = ordered[: self.max_rows]
        entries = [_dir(encode_value(v), kind, [(key, v)], {key: v}) for v in ordered]
        return self._finish(entries, {}, truncated, where)

    def _list_kinds(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._value_dirs(self.kinds(cat), Kind.KIND, "kind", "facts/by-kind/")

    def _list_tags(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._value_dirs(self.tags(cat), Kind.TAG, "tag", "facts/by-tag/")

    def _list_kind(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._fact_listing(cat, self.kinds(cat).get(params["kind"], []), f"facts/by-kind/{params['kind']}/")

    def _list_tag(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._fact_listing(cat, self.tags(cat).get(params["tag"], []), f"facts/by-tag/{params['tag']}/")

    def _list_sessions(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._value_dirs(self.sessions(cat), Kind.SESSION, "session", "sessions/")

    def _session_listings(self, cat: Catalog, sessions: Sequence[str]) -> dict[str, tuple[Listing, Listing]]:
        """sessions/<s>/ and sessions/<s>/turns/ for many sessions, with one content load."""
        groups = self.sessions(cat)
        wanted = [m for s in sessions for table in ("summaries", "turns") for m in groups.get(s, {}).get(table, [])]
        rows: dict[str, dict[str, list[Row]]] = {s: {"summaries": [], "turns": []} for s in sessions}
        for row in self._load_metas(cat, wanted):
            rows[row["session"]][row["table"]].append(row)
        out = {}
        for session, by_table in rows.items():
            for group in by_table.values():
                group.sort(key=lambda r: (r["seq"] if r["seq"] is not None else -1, r["created_at"], r["rid"]))
            out[session] = (self._session_listing(session, by_table["summaries"], by_table["turns"]),
                            self._turns_listing(session, by_table["turns"]))
        return out

    def _session_listing(self, session: str, summaries: list[Row], turns: list[Row]) -> Listing:
        dep = frozenset({("session", session)})
        entries: list[Entry] = []
        if summaries:
            data = render.render_summary(session, summaries)
            entries.append(Entry("summary.md", Kind.SUMMARY, {"session": session}, content=blob(data),
                                 mtime=max(r["created_at"] for r in summaries), deps=dep))
        if turns:
            data = render.render_transcript(session, turns)
            entries.append(Entry("transcript.md", Kind.TRANSCRIPT, {"session": session}, content=blob(data),
                                 mtime=max(r["created_at"] for r in turns), deps=dep))
            entries.append(_dir("turns", Kind.TURNS, dep, {"session": session}))
        return Listing(entries)

    @staticmethod
    def turn_names(rows: Sequence[Row]) -> list[str]:
        names: list[str] = []
        taken: set[str] = set()
        for row in rows:
            name = turn_name(row["seq"], row["speaker"])
            if name in taken:
                name = disambiguate(name, row["id"])
            taken.add(name)
            names.append(name)
        return names

    def _turns_listing(self, session: str, rows: list[Row]) -> Listing:
        truncated = None
        if len(rows) > self.max_rows:
            truncated = (self.max_rows, len(rows))
        out: dict[ContentKey, bytes] = {}
        entries = []
        deps = frozenset({("session", session)})
        names = self.turn_names(rows)  # names first, so a cut listing keeps the names of the full one
        for row, name in list(zip(rows, names, strict=True))[-self.max_rows:]:
            content, data = self.row_content(row)
            out[content.key] = data
            entries.append(Entry(name, Kind.TURN, content=content, mtime=row["created_at"], deps=deps))
        return self._finish(entries, out, truncated, f"sessions/{session}/turns/")

    def _list_session(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._session_listings(cat, [params["session"]])[params["session"]][0]

    def _list_turns(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._session_listings(cat, [params["session"]])[params["session"]][1]

    def _entity_entry(self, entity: str, rows: Sequence[Row]) -> Entry:
        rows = sorted(rows, key=lambda r: (r["created_at"], r["rid"]))
        paths = [f"../facts/{fact_name(r['content'], r['id'])}" for r in rows]
        data = render.render_entity(entity, rows, paths)
        return Entry(encode_value(entity, ".md"), Kind.ENTITY, {"entity": entity}, content=blob(data),
                     mtime=rows[-1]["created_at"] if rows else None, deps=frozenset({("entity", entity)}))

    def _list_entities(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        groups = self.entities(cat)
        names = sorted(groups)
        truncated = None
        if len(names) > self.max_rows:
            truncated = (self.max_rows, len(names))
            names = names[: self.max_rows]
        by_entity: dict[str, list[Row]] = {}
        for row in self._load_metas(cat, [m for e in names for m in groups[e]]):
            by_entity.setdefault(row["entity"], []).append(row)
        entries = [self._entity_entry(e, rows) for e, rows in by_entity.items()]
        return self._finish(entries, {}, truncated, "entities/")

    def history_ids(self, cat: Catalog) -> dict[str, list[Meta]]:
        """Every readable version, by memory id (newest id first)."""
        def build() -> dict[str, list[Meta]]:
            metas = [m for table in MEMORY_TABLES for m in cat.rows[table]]
            metas.sort(key=lambda m: (m.created_at, m.rid), reverse=True)
            return self._group(metas, lambda m: (m.id,))

        return cat.derived("history", build)

    def _list_history(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        ids = [i for i in self.history_ids(cat) if i not in (".", "..")]
        truncated = None
        if len(ids) > self.max_rows:
            truncated = (self.max_rows, len(ids))
            ids = ids[: self.max_rows]
        entries = [_dir(i, Kind.VERSIONS, params={"id": i}) for i in ids]
        return self._finish(entries, {}, truncated, "history/")

    def _version_listings(self, cat: Catalog, ids: Sequence[str]) -> dict[str, Listing]:
        """history/<id>/ for many ids, with one content load."""
        groups = self.history_ids(cat)
        found: dict[str, list[Row]] = {i: [] for i in ids}
        for row in self._load_metas(cat, [m for i in ids for m in groups.get(i, [])], current_only=False):
            found[row["id"]].append(row)
        return {mem_id: self._versions_listing(mem_id, rows) for mem_id, rows in found.items()}

    def _versions_listing(self, mem_id: str, found: list[Row]) -> Listing:
        tables = {r["table"] for r in found}
        out: dict[ContentKey, bytes] = {}
        entries = []
        taken: set[str] = set()
        for row in sorted(found, key=lambda r: (r["version"], r["rid"])):
            name = version_name(row["version"], row["table"] if len(tables) > 1 else None)
            if name in taken:  # two rows with one (id, version): keep both visible
                name = disambiguate(name, str(row["rid"]))
            taken.add(name)
            content, data = self.row_content(row)
            out[content.key] = data
            entries.append(Entry(name, Kind.VERSION, content=content, mtime=row["created_at"]))
        return self._finish(entries, out, None, f"history/{mem_id}/")

    def _list_versions(self, cat: Catalog, params: dict[str, Any], status: dict[str, Any]) -> Listing:
        return self._version_listings(cat, [params["id"]])[params["id"]]

    # Sibling directories a walk opens one after another; their listings are built in batches.
    BATCHED: ClassVar[dict[Kind, str]] = {Kind.VERSIONS: "id", Kind.SESSION: "session", Kind.TURNS: "session"}

    def batch(self, kind: Kind, values: Sequence[str]) -> list[tuple[Kind, dict[str, Any], Listing]]:
        """The listings of many sibling directories (history/<id>/, sessions/<s>/ and their turns/) with
        one content load: `find` and `grep -r` open them one after another."""
        cat = self.catalog()
        key = self.BATCHED[kind]
        if cat is None:
            return [(kind, {key: v}, Listing([])) for v in values]
        if kind is Kind.VERSIONS:
            return [(kind, {key: v}, listing) for v, listing in self._version_listings(cat, values).items()]
        out: list[tuple[Kind, dict[str, Any], Listing]] = []
        for session, (listing, turns) in self._session_listings(cat, values).items():
            out += [(Kind.SESSION, {key: session}, listing), (Kind.TURNS, {key: session}, turns)]
        return out

    _LISTINGS: ClassVar[dict[Kind, Callable[[Browser, Any, dict[str, Any], dict[str, Any]], Listing]]] = {
        Kind.ROOT: _list_root,
        Kind.FACTS: _list_facts,
        Kind.KINDS: _list_kinds,
        Kind.KIND: _list_kind,
        Kind.TAGS: _list_tags,
        Kind.TAG: _list_tag,
        Kind.SESSIONS: _list_sessions,
        Kind.SESSION: _list_session,
        Kind.TURNS: _list_turns,
        Kind.ENTITIES: _list_entities,
        Kind.HISTORY: _list_history,
        Kind.VERSIONS: _list_versions,
    }

    # -- direct lookups (no listing needed) ------------------------------------------------------
    # Listings are capped at max_rows and cost a render of every entry; these answer one name.
    DIRECT: ClassVar[frozenset[Kind]] = frozenset({
        Kind.FACTS, Kind.KIND, Kind.TAG, Kind.KINDS, Kind.TAGS, Kind.SESSIONS, Kind.ENTITIES, Kind.HISTORY,
    })

    def lookup(self, parent_kind: Kind, parent_params: dict[str, Any], name: str, child_kind: Kind
               ) -> tuple[Entry, dict[ContentKey, bytes]]:
        """Resolve one name below a directory whose listing is too big to build for one lookup."""
        cat = self.catalog()
        if cat is None:
            raise NotFound(name)
        if child_kind is Kind.FACT:
            return self._lookup_fact(cat, parent_kind, parent_params, name)
        if child_kind in (Kind.KIND, Kind.TAG, Kind.SESSION):
            key = {Kind.KIND: "kind", Kind.TAG: "tag", Kind.SESSION: "session"}[child_kind]
            values = {Kind.KIND: self.kinds, Kind.TAG: self.tags, Kind.SESSION: self.sessions}[child_kind](cat)
            value = decode_value(name)
            if value is None:
                raise NeedsListing(name)
            if value not in values or encode_value(value) != name:
                raise NotFound(name)
            return _dir(name, child_kind, [(key, value)], {key: value}), {}
        if child_kind is Kind.ENTITY:
            value = decode_value(name, ".md")
            if value is None:
                raise NeedsListing(name)
            metas = self.entities(cat).get(value)
            if not metas or encode_value(value, ".md") != name:
                raise NotFound(name)
            return self._entity_entry(value, self._load_metas(cat, metas)), {}
        if child_kind is Kind.VERSIONS:
            if name not in self.history_ids(cat):
                raise NotFound(name)
            return _dir(name, Kind.VERSIONS, params={"id": name}), {}
        raise NeedsListing(name)

    def _lookup_fact(self, cat: Catalog, parent_kind: Kind, parent_params: dict[str, Any], name: str
                     ) -> tuple[Entry, dict[ContentKey, bytes]]:
        mem_id = parse_fact_name(name)
        if mem_id is None:
            raise NotFound(name)
        metas = list(self.facts_by_id(cat).get(mem_id, []))
        if parent_kind is Kind.KIND:
            metas = [m for m in metas if m.kind == parent_params["kind"]]
        elif parent_kind is Kind.TAG:
            metas = [m for m in metas if parent_params["tag"] in m.tags]
        out: dict[ContentKey, bytes] = {}
        for entry in self._fact_entries(self._load_metas(cat, metas[:1]), out):
            if entry.name == name:  # only the canonical name: one file, one name
                return entry, out
        raise NotFound(name)

    # -- index.md --------------------------------------------------------------------------------
    def index_bytes(self, cat: Catalog | None, status: dict[str, Any]) -> bytes:
        counts = {t: 0 for t in MEMORY_TABLES}
        versions = memories = sessions = files = 0
        kinds: dict[str, int] = {}
        tags: dict[str, int] = {}
        entities: dict[str, int] = {}
        truncated: list[str] = []
        if cat is not None:
            counts = {t: len(cat.current[t]) for t in MEMORY_TABLES}
            versions = sum(len(cat.readable[t]) for t in MEMORY_TABLES)
            memories = len(self.history_ids(cat))
            kinds = {k: len(v) for k, v in self.kinds(cat).items()}
            tags = {k: len(v) for k, v in self.tags(cat).items()}
            entities = {k: len(v) for k, v in self.entities(cat).items()}
            by_session = self.sessions(cat)
            sessions = len(by_session)
            with_summary = sum(1 for g in by_session.values() if g["summaries"])
            with_turns = sum(1 for g in by_session.values() if g["turns"])
            files = tree_file_count(counts["facts"], sum(tags.values()), with_summary, with_turns,
                                    counts["turns"], len(entities), versions)
            cap = self.max_rows
            for where, n in (("facts/", counts["facts"]), ("sessions/", sessions), ("entities/", len(entities)),
                             ("history/", memories), ("facts/by-kind/", len(kinds)), ("facts/by-tag/", len(tags))):
                if n > cap:
                    truncated.append(where)
            truncated += [f"facts/by-kind/{k}/" for k, n in kinds.items() if n > cap]
            truncated += [f"facts/by-tag/{t}/" for t, n in tags.items() if n > cap]
        s = render.IndexStatus(
            mountpoint=self.mountpoint, store=str(self.store.path), workspace=self.principal.workspace_path,
            agent=self.principal.agent, generation=int(status.get("generation", self.store.generation)),
            counts=counts, versions=versions, files=files, kinds=kinds, tags=tags, sessions=sessions,
            entities=entities, memories=memories, semantic_ready=bool(status.get("semantic_ready")),
            degraded_reason=status.get("degraded_reason") or "off",
            last_recall_degraded=self.last_recall_degraded, recall_ttl_s=int(status.get("recall_ttl_s", 5)),
            k=int(self.recall_settings.get("k", 10)), truncated=truncated, last_change=status.get("last_change"),
        )
        health = status.get("health")
        if health is not None:
            s.health, s.health_problems, s.health_notes = health.state, list(health.problems), list(health.notes)
        return render.render_index(s)

    # -- recall ----------------------------------------------------------------------------------
    def recall(self, query: str) -> RecallSnapshot:
        from recallfs.query.formats import render_context, render_json
        from recallfs.query.recall import recall

        cfg = self.recall_settings
        result = recall(self.store, self.principal, query, k=int(cfg.get("k", 10)), semantic=self.semantic,
                        candidates=int(cfg.get("candidates", 100)), rrf_k=int(cfg.get("rrf_k", 60)),
                        weights=cfg.get("weights"), stages=cfg.get("stages"),  # from the settings
                        fusion=str(cfg.get("fusion", "calibrated")))
        self.last_recall_degraded = result.degraded_reason if result.degraded else None
        width = max(2, len(str(result.offset + len(result.hits))))
        entries: list[Entry] = []
        for hit in result.hits:
            row = {**hit.row, "table": hit.table}
            label = _hit_label(row)
            data = render.render_hit(hit.rank, hit.score, hit.arms, row, _tree_path(row))
            entries.append(Entry(hit_name(hit.rank, hit.table, label, width), Kind.HIT, {"rank": hit.rank},
                                 content=blob(data), mtime=row.get("created_at"), deps=frozenset({RECALL_DEP})))
        for name, kind, data in (("results.json", Kind.RESULTS_JSON, render_json(result)),
                                 ("context.xml", Kind.CONTEXT_XML, render_context(result))):
            entries.append(Entry(name, kind, content=blob(data.encode()), deps=frozenset({RECALL_DEP})))
        return RecallSnapshot(query, entries, result.degraded, result.degraded_reason, len(result.hits))

    # -- change sets (for kernel invalidation after an ingest) -----------------------------------
    def heads(self) -> set[int]:
        schema = self.schema()
        if schema is None:
            return set()
        return {int(r[0]) for r in self._cur().execute(f"SELECT rid FROM {schema}.heads").fetchall()}

    def deps_of(self, rids: Iterable[int]) -> set[Dep]:
        """What changed, as invalidation tags: the ids, sessions, entities, kinds and tags of these rows."""
        schema = self.schema()
        wanted = sorted({int(r) for r in rids})
        deps: set[Dep] = {INDEX_DEP, RECALL_DEP}
        if schema is None or not wanted:
            return deps
        for table in MEMORY_TABLES:
            for start in range(0, len(wanted), 4000):
                chunk = ",".join(map(str, wanted[start:start + 4000]))
                for mem_id, session, entity, kind, tags in self._cur().execute(
                    f"SELECT id, session, entity, kind, tags FROM {schema}.{table} WHERE rid IN ({chunk})"
                ).fetchall():
                    deps.add(("id", str(mem_id)))
                    if session is not None:
                        deps.add(("session", str(session)))
                    if entity is not None:
                        deps.add(("entity", str(entity)))
                    if table == "facts":
                        deps.add(("kind", str(kind)))
                        deps.update(("tag", str(t)) for t in tags or [])
        return deps


def tree_file_count(facts: int, tag_links: int, sessions_with_summary: int, sessions_with_turns: int,
                    turns: int, entities: int, versions: int) -> int:
    """Files outside recall/: index.md, each fact in facts/ + by-kind/ + one per tag, a summary.md and a
    transcript.md per session that has them, every turn, every entity, every version."""
    return 1 + 2 * facts + tag_links + sessions_with_summary + sessions_with_turns + turns + entities + versions


def _hit_label(row: Row) -> str:
    if row["table"] == "summaries":
        date = row["created_at"].strftime("%Y-%m-%d") if row.get("created_at") else ""
        return f"{date} {row.get('title') or row.get('session') or ''}"
    if row["table"] == "turns":
        return f"{row.get('speaker') or ''} {row['content']}"
    return str(row["content"])


def _tree_path(row: Row) -> str | None:
    """Where the hit lives in the tree, relative to the mount root."""
    if row["table"] == "facts":
        return f"facts/{fact_name(row['content'], row['id'])}"
    session = row.get("session")
    if session is None:
        return None
    if row["table"] == "summaries":
        return f"sessions/{encode_value(session)}/summary.md"
    return f"sessions/{encode_value(session)}/turns/{turn_name(row.get('seq'), row.get('speaker'))}"


__all__ = [
    "INDEX_DEP", "RECALL_DEP", "RESULTS_DIR", "TABLE_SINGULAR", "Browser", "Content", "Entry", "Listing",
    "NeedsListing", "NotADirectory", "NotFound", "RecallSnapshot", "blob", "tree_file_count",
]
