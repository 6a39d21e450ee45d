"""A recall directory's files: one per hit (`NN-<table>-<slug>.md`), the entity card when the query
names an entity (`00-entity-<slug>.md`), results.json and context.xml."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from recallfs.mount import render
from recallfs.mount.entries import Deps, Entry, RecallSnapshot, blob
from recallfs.mount.names import describe, encode_value, fact_name, hit_name, slug, turn_name, version_name
from recallfs.mount.paths import Kind
from recallfs.query.readable import Row

if TYPE_CHECKING:
    from recallfs.query.entity_card import EntityCard
    from recallfs.query.results import RecallResult


def snapshot(query: str, result: RecallResult, mountpoint: str = "",
             turn_files: Mapping[int, str] | None = None) -> RecallSnapshot:
    """`mountpoint`: where the tree is mounted, so that a hit's `path:` opens from anywhere (a path
    relative to the mount root does not resolve from inside recall/<q>/). `turn_files`: rid -> the
    turn's file name in its session, where the browser knows it."""
    from recallfs.query.formats import render_context, render_json

    width = max(2, len(str(result.offset + len(result.hits))))
    # A run's files never change, nor does its listing: a write makes a new run (a new directory inode,
    # which recall/.results/<q> is looked up to on every use), so no binding here is ever stale.
    deps: Deps = ()
    entries: list[Entry] = []
    if result.entity is not None:
        data = render_card(result.entity, mountpoint)
        # always 00-: a page of three-digit ranks (offset:100) sorts it first all the same, and a script's
        # `cat recall/q/00-entity-*` finds it on every page
        entries.append(Entry(f"00-entity-{slug(result.entity.name, 40)}.md", Kind.HIT, {"rank": 0},
                             content=blob(data), deps=deps))
    for hit in result.hits:
        row = {**hit.row, "table": hit.table, "replaces": hit.replaces}
        path = tree_path(row, mountpoint, (turn_files or {}).get(hit.rid))
        data = render.render_hit(hit.rank, hit.score, hit.arms, row, path)
        entries.append(Entry(hit_name(hit.rank, hit.table, hit_label(row), width), Kind.HIT, {"rank": hit.rank},
                             content=blob(data), mtime=row.get("created_at"), deps=deps))
    for name, kind, text in (("results.json", Kind.RESULTS_JSON, render_json(result)),
                             ("context.xml", Kind.CONTEXT_XML, render_context(result))):
        entries.append(Entry(name, kind, content=blob(text.encode()), deps=deps))
    return RecallSnapshot(query, entries, result.degraded, result.degraded_reason, len(result.hits))


def hit_label(row: Row) -> str:
    if row["table"] == "summaries":
        date = row["created_at"].strftime("%Y-%m-%d") if row.get("created_at") else ""
        return f"{date} {row.get('title') or row.get('session') or ''}"
    if row["table"] == "turns":
        return f"{row.get('speaker') or ''} {describe(str(row['content']))}"
    return describe(str(row["content"]))


def tree_path(row: Row, mountpoint: str = "", turn_file: str | None = None) -> str | None:
    """Where the hit lives in the tree: under `mountpoint`, or relative to the mount root without one. A
    fact's is its version's file in history/: the name in facts/ holds the text, so a newer version moves
    it, and a path from a recall a second old was gone (found 2026-12-07 with a writer beside the
    readers); the version's file stays, and its `current:` and `superseded_by:` say what replaced it."""
    if row["table"] == "facts":
        return _under(mountpoint, f"history/{row['id']}/{version_name(int(row['version']))}")
    session = row.get("session")
    if session is None:
        return None
    if row["table"] == "summaries":
        return _under(mountpoint, f"sessions/{encode_value(session)}/summary.md")
    name = turn_file or turn_name(row.get("seq"), row.get("speaker"))
    return _under(mountpoint, f"sessions/{encode_value(session)}/turns/{name}")


def _under(mountpoint: str, path: str) -> str:
    return posixpath.join(mountpoint, path) if mountpoint else path


def render_card(card: EntityCard, mountpoint: str = "") -> bytes:
    """recall/<q>/00-entity-<name>.md: the card recall shows before the hits, as a file (the same facts
    as results.json's `entity`: a fact that is also a hit names its rank instead of repeating it)."""
    fields: list[tuple[str, Any]] = [
        ("entity", card.name), ("table", "facts"), ("facts", card.total_facts), ("shown", len(card.facts)),
        ("path", _under(mountpoint, f"entities/{encode_value(card.name, '.md')}")),
    ]
    lines = [f"# {card.name}", ""]
    for fact in card.facts:
        when = str(fact.get("created_at") or "?")[:16].replace("T", " ")
        if "hit" in fact:
            lines.append(f"- {when} [{fact['kind']}] {fact['id']}: hit {fact['hit']} in this directory")
        else:
            where = _under(mountpoint, f"facts/{fact_name(fact['content'], fact['id'])}")
            text = str(fact["content"]).rstrip("\n").replace("\n", "\n  ")
            lines.append(f"- {when} [{fact['kind']}] {text} ({where})")
    if card.total_facts > len(card.facts):
        lines.append(f"\n{card.total_facts - len(card.facts)} more: see the entity's file ({fields[-1][1]})")
    return (render.front_matter(fields) + "\n" + "\n".join(lines) + "\n").encode()
