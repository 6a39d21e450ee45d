"""A recall directory's files: one per hit (`NN-<table>-<slug>.md`), results.json and context.xml."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallfs.mount import render
from recallfs.mount.entries import RECALL_DEP, Entry, RecallSnapshot, blob
from recallfs.mount.names import encode_value, fact_name, hit_name, turn_name
from recallfs.mount.paths import Kind
from recallfs.query.readable import Row

if TYPE_CHECKING:
    from recallfs.query.recall import RecallResult


def snapshot(query: str, result: RecallResult) -> RecallSnapshot:
    from recallfs.query.formats import render_context, render_json

    width = max(2, len(str(result.offset + len(result.hits))))
    deps = frozenset({RECALL_DEP})
    entries: list[Entry] = []
    for hit in result.hits:
        row = {**hit.row, "table": hit.table, "replaces": hit.replaces}
        data = render.render_hit(hit.rank, hit.score, hit.arms, row, tree_path(row))
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
        return f"{row.get('speaker') or ''} {row['content']}"
    return str(row["content"])


def tree_path(row: Row) -> str | None:
    """Where the hit lives in the tree, relative to the mount root."""
    if row["table"] == "facts":
        return f"facts/{fact_name(row['content'], row['id'])}"
    session = row.get("session")
    if session is None:
        return None
    if row["table"] == "summaries":
        return f"sessions/{encode_value(session)}/summary.md"
    return f"sessions/{encode_value(session)}/turns/{turn_name(row.get('seq'), row.get('speaker'))}"
