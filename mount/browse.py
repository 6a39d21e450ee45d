"""The store as the mount's principal sees it: what each directory lists, what one name resolves to,
index.md, a recall directory's files, and what a write changed.

A facade over the units that do each (mount/listings.py, mount/lookups.py, mount/index_page.py,
mount/recall_files.py) and the catalog (query/catalog.py), which holds every store read. Every method
reads DuckDB, so it runs in a worker thread, never on the trio thread (the daemon's store raises if it
is asked for a cursor there). Results are plain data (mount/entries.py): the trio thread owns inodes
and caches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from recallfs.mount import recall_files, render
from recallfs.mount.entries import (
    INDEX_DEP,
    RECALL_DEP,
    ContentKey,
    Dep,
    Entry,
    Listing,
    NotADirectory,
    NotFound,
    RecallSnapshot,
    blob,
    directory,
)
from recallfs.mount.index_page import Place, index_bytes
from recallfs.mount.listings import Batch, Listings, named_turns
from recallfs.mount.lookups import Lookups
from recallfs.mount.paths import Kind, Match
from recallfs.query.catalog import Catalog
from recallfs.query.labels import label
from recallfs.query.lineage import Lineage
from recallfs.query.readable import Changed, Meta, Readable
from recallfs.query.settings import Ranking, Settings
from recallfs.query.store import Store
from recallfs.scope.principal import Principal


class Browser:
    """Thread-safe: each thread uses its own cursor."""

    def __init__(
        self,
        store: Store,
        principal: Principal,
        *,
        max_rows: int = 5000,
        mountpoint: str = "",
        k: int | None = None,
        ranking: Ranking | None = None,
        semantic: Any = None,
    ) -> None:
        self.store = store
        self.principal = principal
        self.max_rows = max_rows
        self.mountpoint = mountpoint
        defaults = Settings()
        self.k = defaults.k if k is None else k  # hits per recall directory
        self.ranking = ranking or defaults.ranking()  # the settings' ranking, as the CLI's recall uses it
        self.semantic = semantic
        self.last_recall_degraded: str | None = None
        self.reader = Catalog(store, principal)
        self.listings = Listings(self.reader, max_rows)
        self.lookups = Lookups(self.reader)

    def catalog(self) -> Readable | None:
        """The rows the principal may read in the current generation (None: the workspace holds nothing yet)."""
        return self.reader.readable()

    def history_ids(self, cat: Readable) -> dict[str, list[Meta]]:
        return cat.history_ids()

    # -- listings and lookups --------------------------------------------------------------------------
    def listing(self, kind: Kind, params: dict[str, Any], status: dict[str, Any] | None = None) -> Listing:
        if kind is Kind.INBOX:
            return Listing([])  # what shows here is the inbox's own file system (mount/inbox_fs.py)
        if kind is not Kind.ROOT and kind not in Listings.KINDS_LISTED:
            raise NotADirectory(kind)
        cat = self.catalog()
        if kind is Kind.ROOT:
            return self._root(cat, status or {})
        if cat is None:
            return Listing([])
        return self.listings.listing(cat, kind, params)

    def _root(self, cat: Readable | None, status: dict[str, Any]) -> Listing:
        seen = self._last_seen(cat)
        return Listing([
            Entry("index.md", Kind.INDEX, content=blob(self.index_bytes(cat, status, seen)), deps=(INDEX_DEP,),
                  mtime=seen[1] if seen else None),
            directory("facts", Kind.FACTS), directory("sessions", Kind.SESSIONS),
            directory("entities", Kind.ENTITIES), directory("history", Kind.HISTORY),
            directory("recall", Kind.RECALL), directory("inbox", Kind.INBOX),
        ])

    def batch(self, kind: Kind, values: Sequence[str]) -> Batch:
        """The listings of sibling directories a walk opens one after another (mount/listings.py)."""
        return self.listings.batch(self.catalog(), kind, values)

    def lookup(self, parent_kind: Kind, parent_params: dict[str, Any], name: str, match: Match
               ) -> tuple[Entry, dict[ContentKey, bytes]]:
        """Resolve one name below a directory whose listing is too big to build for one lookup."""
        cat = self.catalog()
        if cat is None:
            raise NotFound(name)
        return self.lookups.lookup(cat, parent_kind, parent_params, name, match)

    def row_bytes(self, table: str, rid: int, lineage: Lineage | None) -> bytes:
        """Re-render one memory version whose bytes left the cache (authorized again first), with the
        lineage its file was listed with, so that the bytes match the size announced then."""
        row = self.reader.row(table, rid)
        if row is None:
            raise NotFound(rid)
        return render.render_memory({**row, "lineage": lineage})

    # -- index.md and recall ---------------------------------------------------------------------------
    def index_bytes(self, cat: Readable | None, status: dict[str, Any],
                    seen: tuple[int, datetime] | None = None) -> bytes:
        place = Place(self.mountpoint, str(self.store.path), self.principal.workspace_path, self.principal.agent)
        return index_bytes(place, cat.counts() if cat is not None else None, status, max_rows=self.max_rows,
                           seen=seen, k=self.k, last_recall_degraded=self.last_recall_degraded)

    def _last_seen(self, cat: Readable | None) -> tuple[int, datetime] | None:
        """(rid, arrival) of the newest row this reader may read. index.md shows it and takes its time as
        its mtime: a write the reader cannot read changes neither (found 2026-12-07: index.md showed the
        store's generation and last write, so a reader saw when another agent wrote a private memory,
        and its mtime stayed at the mount's start while its counts changed)."""
        newest = cat.newest() if cat is not None else None
        if newest is None or cat is None:
            return None
        table, rid = newest
        row = self.store.cursor().execute(
            f"SELECT ingested_at FROM {cat.schema}.{table} WHERE rid = ?", [rid]).fetchone()
        return (rid, row[0]) if row else None

    def recall(self, query: str) -> RecallSnapshot:
        from recallfs.query.recall import recall

        result = recall(self.store, self.principal, query, k=self.k, semantic=self.semantic,
                        **self.ranking.recall_kwargs())
        self.last_recall_degraded = result.degraded_reason if result.degraded else None
        return recall_files.snapshot(query, result, self.mountpoint, self._turn_files(result))

    def _turn_files(self, result: Any) -> dict[int, str]:
        """rid -> file name in sessions/<s>/turns/ of the turns among the hits: two turns of one seq and
        speaker are told apart by id there (listings.turn_names), so the name needs its session's turns."""
        sessions = {label(h.row["session"]) for h in result.hits if h.table == "turns" and h.row.get("session")}
        if not sessions:
            return {}
        cat = self.reader.built()  # right after a write it is not: read these sessions' turns alone
        turns = ({s: cat.sessions().get(s, {}).get("turns", []) for s in sessions} if cat is not None
                 else self.reader.session_turns(sessions))
        out: dict[int, str] = {}
        for session in sessions:
            out.update((m.rid, name) for m, name in named_turns(turns.get(session, [])))
        return out

    # -- change sets (for kernel invalidation after an ingest) -----------------------------------------
    def state(self) -> Any:
        """The current versions and the workspace's policies now, to diff after a write
        (`heads_changed_since`, `policies_changed_since`); opaque here."""
        return self.reader.heads(), self.reader.policies()

    def heads_changed_since(self, before: Any) -> set[int]:
        """The rids whose currentness changed since `state()` answered `before`."""
        return self.reader.heads_changed_since(before[0])

    def policies_changed_since(self, before: Any) -> bool:
        """Whether a policy of the workspace changed since `state()` answered `before` (a lake replays
        `recallfs policy set` while mounted): what a reader may read changed, not which rows are current."""
        return bool(self.reader.policies() != before[1])

    def deps_of(self, rids: Iterable[int]) -> set[Dep]:
        """What changed, as invalidation tags: the ids, sessions, entities, kinds and tags of these rows,
        and the ids linked to them (their history front matter names what replaced what)."""
        changed = self.reader.changed(rids)
        return deps_of(replace(changed, ids=changed.ids | self.reader.neighbours(changed.ids)))


def deps_of(changed: Changed) -> set[Dep]:
    deps: set[Dep] = {INDEX_DEP, RECALL_DEP}
    for tag, values in (("id", changed.ids), ("session", changed.sessions), ("entity", changed.entities),
                        ("kind", changed.kinds), ("tag", changed.tags)):
        deps.update((tag, label(v)) for v in values)  # listings are keyed by the label's one form
    return deps
