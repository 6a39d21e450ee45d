"""What each directory of the mount lists, built from the catalog (query/catalog.py).

Runs in worker threads (every listing may load content). A listing of a directory that holds memories
renders each of them that no listing of this generation rendered yet (mount/known_files.py), so a file's
size is known before it is read; the rendered bytes go with the listing (`Listing.rows`) for the trio
thread's content cache. Listings of more than `max_rows` entries
are cut, and say so in `_truncated.md`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

from recallfs.mount import render
from recallfs.mount.entries import INDEX_DEP, ContentKey, Entry, Listing, NotFound, blob, directory
from recallfs.mount.known_files import Known, KnownFiles
from recallfs.mount.names import disambiguate, encode_value, fact_name, turn_name, version_name
from recallfs.mount.paths import KINDS, TRUNCATED_NAME, Kind
from recallfs.query.catalog import Catalog
from recallfs.query.labels import label
from recallfs.query.readable import Meta, Readable, Row

T = TypeVar("T")
Batch = list[tuple[Kind, dict[str, Any], Listing]]


# -- entries from rows (pure) --------------------------------------------------------------------------
def finish(entries: list[Entry], rows: dict[ContentKey, bytes], truncated: tuple[int, int] | None,
           where: str) -> Listing:
    entries.sort(key=lambda e: e.name)
    if truncated is not None:
        entries.append(Entry(TRUNCATED_NAME, Kind.TRUNCATED,
                             content=blob(render.render_truncated(truncated[0], truncated[1], where)),
                             deps=(INDEX_DEP,)))
    return Listing(entries, rows, truncated)


def fact_entries(catalog: Catalog, cat: Readable, metas: Sequence[Meta], out: dict[ContentKey, bytes]
                 ) -> list[Entry]:
    """The files of these current facts; those no listing of this generation rendered yet are loaded and
    rendered (their bytes into `out`)."""
    return [Entry(known.name, Kind.FACT, content=known.content, mtime=m.created_at, deps=known.deps)
            for m, known in KnownFiles(cat).load(catalog, metas, out)]


def entity_entry(entity: str, rows: Sequence[Row]) -> Entry:
    rows = sorted(rows, key=lambda r: (r["created_at"], r["rid"]))
    paths = [f"../facts/{fact_name(r['content'], r['id'])}" for r in rows]
    data = render.render_entity(entity, rows, paths)
    return Entry(encode_value(entity, ".md"), Kind.ENTITY, {"entity": entity}, content=blob(data),
                 mtime=rows[-1]["created_at"] if rows else None, deps=(("entity", entity),))


def session_listing(session: str, summaries: list[Row], turns: list[Row]) -> Listing:
    dep = (("session", session),)
    entries: list[Entry] = []
    if summaries:
        data = render.render_summary(session, summaries)
        entries.append(Entry("summary.md", Kind.SUMMARY, {"session": session}, content=blob(data),
                             mtime=max(r["created_at"] for r in summaries), deps=dep))
    if turns:
        data = render.render_transcript(session, turns)
        entries.append(Entry("transcript.md", Kind.TRANSCRIPT, {"session": session}, content=blob(data),
                             mtime=max(r["created_at"] for r in turns), deps=dep))
        entries.append(directory("turns", Kind.TURNS, dep, {"session": session}))
    return Listing(entries)


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


def named_turns(metas: Iterable[Meta]) -> list[tuple[Meta, str]]:
    """A session's turns in listing order (the order session_listings sorts rows in), each with its
    file name in turns/, without loading their rows."""
    ordered = sorted(metas, key=lambda m: (m.seq if m.seq is not None else -1, m.created_at, m.rid))
    names = turn_names([{"seq": m.seq, "speaker": m.speaker, "id": m.id} for m in ordered])
    return list(zip(ordered, names, strict=True))


def turn_entry(session: str, row: Row, name: str, files: KnownFiles, out: dict[ContentKey, bytes]) -> Entry:
    return Entry(name, Kind.TURN, content=files.of_row(row, out).content, mtime=row["created_at"],
                 deps=(("session", session),))


def turn_lookup(catalog: Catalog, cat: Readable, session: str, name: str) -> tuple[Entry, dict[ContentKey, bytes]]:
    """One file of sessions/<session>/turns/, listed or not: a listing cut at max_rows shows the newest
    turns, and the others must still open by name (as its _truncated.md says)."""
    meta = next((m for m, n in named_turns(cat.sessions().get(session, {}).get("turns", [])) if n == name), None)
    rows = catalog.load_metas(cat, [meta]) if meta is not None else []
    if not rows:
        raise NotFound(name)
    out: dict[ContentKey, bytes] = {}
    return turn_entry(session, rows[0], name, KnownFiles(cat), out), out


def turns_listing(session: str, rows: list[Row], max_rows: int, files: KnownFiles) -> Listing:
    truncated = (max_rows, len(rows)) if len(rows) > max_rows else None
    out: dict[ContentKey, bytes] = {}
    names = turn_names(rows)  # names first, so a cut listing keeps the names of the full one
    entries = [turn_entry(session, row, name, files, out)
               for row, name in list(zip(rows, names, strict=True))[-max_rows:]]
    return finish(entries, out, truncated, f"sessions/{session}/turns/")


def versions_listing(mem_id: str, found: Sequence[tuple[Meta, Known]], rows: dict[ContentKey, bytes]) -> Listing:
    """history/<id>/: one file per readable version; `rows`: the bytes of those rendered for it."""
    tables = {m.table for m, _ in found}
    entries = []
    taken: set[str] = set()
    for meta, known in sorted(found, key=lambda f: (f[0].version, f[0].rid)):
        name = version_name(meta.version, meta.table if len(tables) > 1 else None)
        if name in taken:  # two rows with one (id, version): keep both visible
            name = disambiguate(name, str(meta.rid))
        taken.add(name)
        # deps: a newer version (or a link to another memory) changes this one's front matter
        entries.append(Entry(name, Kind.VERSION, content=known.content, mtime=meta.created_at, deps=known.deps))
    return finish(entries, rows, None, f"history/{mem_id}/")


def _own(rendered: dict[ContentKey, bytes], files: Sequence[tuple[Meta, Known]]) -> dict[ContentKey, bytes]:
    """The bytes among `rendered` (a batch's renders) that belong to these files."""
    return {known.content.key: rendered[known.content.key] for _, known in files if known.content.key in rendered}


# -- listings from the catalog ---------------------------------------------------------------------------
class Listings:
    """The listing of each directory kind below the root, for one principal's catalog."""

    def __init__(self, catalog: Catalog, max_rows: int) -> None:
        self.catalog = catalog
        self.max_rows = max_rows

    def listing(self, cat: Readable, kind: Kind, params: dict[str, Any]) -> Listing:
        return self._BY_KIND[kind](self, cat, params)

    def _cap(self, items: list[T]) -> tuple[list[T], tuple[int, int] | None]:
        if len(items) <= self.max_rows:
            return items, None
        return items[: self.max_rows], (self.max_rows, len(items))

    def _facts_of(self, cat: Readable, metas: list[Meta], where: str, extra: Iterable[Entry] = ()) -> Listing:
        shown, truncated = self._cap(metas)
        out: dict[ContentKey, bytes] = {}
        entries = fact_entries(self.catalog, cat, shown, out) + list(extra)
        return finish(entries, out, truncated, where)

    def _value_dirs(self, values: Iterable[str], kind: Kind, key: str, where: str) -> Listing:
        shown, truncated = self._cap(sorted(values))
        entries = [directory(encode_value(v), kind, [(key, v)], {key: v}) for v in shown]
        return finish(entries, {}, truncated, where)

    def _facts(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._facts_of(cat, cat.current_rows("facts"), "facts/",
                              [directory("by-kind", Kind.KINDS), directory("by-tag", Kind.TAGS)])

    def _kinds(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._value_dirs(cat.kinds(), Kind.KIND, "kind", "facts/by-kind/")

    def _kind(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._facts_of(cat, cat.kinds().get(params["kind"], []), f"facts/by-kind/{params['kind']}/")

    def _tags(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._value_dirs(cat.tags(), Kind.TAG, "tag", "facts/by-tag/")

    def _tag(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._facts_of(cat, cat.tags().get(params["tag"], []), f"facts/by-tag/{params['tag']}/")

    def _sessions(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self._value_dirs(cat.sessions(), Kind.SESSION, "session", "sessions/")

    def _session(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self.session_listings(cat, [params["session"]])[params["session"]][0]

    def _turns(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self.session_listings(cat, [params["session"]])[params["session"]][1]

    def _entities(self, cat: Readable, params: dict[str, Any]) -> Listing:
        groups = cat.entities()
        names, truncated = self._cap(sorted(groups))
        by_entity: dict[str, list[Row]] = {}
        for row in self.catalog.load_metas(cat, [m for e in names for m in groups[e]]):
            by_entity.setdefault(label(row["entity"]), []).append(row)
        entries = [entity_entry(e, rows) for e, rows in by_entity.items()]
        return finish(entries, {}, truncated, "entities/")

    def _history(self, cat: Readable, params: dict[str, Any]) -> Listing:
        ids, truncated = self._cap([i for i in cat.history_ids() if i not in (".", "..")])
        entries = [directory(i, Kind.VERSIONS, params={"id": i}) for i in ids]
        return finish(entries, {}, truncated, "history/")

    def _versions(self, cat: Readable, params: dict[str, Any]) -> Listing:
        return self.version_listings(cat, [params["id"]])[params["id"]]

    _BY_KIND: ClassVar[dict[Kind, Callable[[Listings, Readable, dict[str, Any]], Listing]]] = {
        Kind.FACTS: _facts, Kind.KINDS: _kinds, Kind.KIND: _kind, Kind.TAGS: _tags, Kind.TAG: _tag,
        Kind.SESSIONS: _sessions, Kind.SESSION: _session, Kind.TURNS: _turns, Kind.ENTITIES: _entities,
        Kind.HISTORY: _history, Kind.VERSIONS: _versions,
    }
    KINDS_LISTED: ClassVar[frozenset[Kind]] = frozenset(_BY_KIND)

    # -- sibling batches ------------------------------------------------------------------------------
    def session_listings(self, cat: Readable, sessions: Sequence[str]) -> dict[str, tuple[Listing, Listing]]:
        """sessions/<s>/ and sessions/<s>/turns/ for many sessions, with one content load."""
        groups = cat.sessions()
        files = KnownFiles(cat)
        wanted = [m for s in sessions for table in ("summaries", "turns") for m in groups.get(s, {}).get(table, [])]
        rows: dict[str, dict[str, list[Row]]] = {s: {"summaries": [], "turns": []} for s in sessions}
        for row in self.catalog.load_metas(cat, wanted):
            rows[label(row["session"])][row["table"]].append(row)
        out = {}
        for session, by_table in rows.items():
            for group in by_table.values():
                group.sort(key=lambda r: (r["seq"] if r["seq"] is not None else -1, r["created_at"], r["rid"]))
            out[session] = (session_listing(session, by_table["summaries"], by_table["turns"]),
                            turns_listing(session, by_table["turns"], self.max_rows, files))
        return out

    def version_listings(self, cat: Readable, ids: Sequence[str]) -> dict[str, Listing]:
        """history/<id>/ for many ids, with one content load."""
        groups = cat.history_ids()
        rendered: dict[ContentKey, bytes] = {}
        found: dict[str, list[tuple[Meta, Known]]] = {i: [] for i in ids}
        metas = [m for i in ids for m in groups.get(i, [])]
        for meta, known in KnownFiles(cat).load(self.catalog, metas, rendered, current_only=False):
            found[meta.id].append((meta, known))
        return {mem_id: versions_listing(mem_id, versions, _own(rendered, versions))
                for mem_id, versions in found.items()}

    def batch(self, cat: Readable | None, kind: Kind, values: Sequence[str]) -> Batch:
        """The listings of many sibling directories (history/<id>/, sessions/<s>/ and their turns/) with
        one content load: `find` and `grep -r` open them one after another."""
        key = KINDS[kind].batch_key
        assert key is not None, kind
        if cat is None:
            return [(kind, {key: v}, Listing([])) for v in values]
        if kind is Kind.VERSIONS:
            return [(kind, {key: v}, listing) for v, listing in self.version_listings(cat, values).items()]
        out: Batch = []
        for session, (listing, turns) in self.session_listings(cat, values).items():
            out += [(Kind.SESSION, {key: session}, listing), (Kind.TURNS, {key: session}, turns)]
        return out
