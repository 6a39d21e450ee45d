"""index.md: what the mount holds (the catalog's counts), and the daemon's state (status from MountOps)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recallfs.mount import render
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.readable import Counts


@dataclass(frozen=True, slots=True)
class Place:
    """Who reads where: the fixed part of index.md."""

    mountpoint: str
    store: str
    workspace: str
    agent: str


def tree_file_count(facts: int, tag_links: int, sessions_with_summary: int, sessions_with_turns: int,
                    turns: int, entities: int, versions: int) -> int:
    """Files outside recall/: index.md, each fact in facts/ + by-kind/ + one per tag, a summary.md and a
    transcript.md per session that has them, every turn, every entity, every version."""
    return 1 + 2 * facts + tag_links + sessions_with_summary + sessions_with_turns + turns + entities + versions


def truncated_listings(c: Counts, cap: int) -> list[str]:
    """The directories whose listings are cut at max_rows."""
    out = [where for where, n in (("facts/", c.rows["facts"]), ("sessions/", c.sessions),
                                  ("entities/", len(c.entities)), ("history/", c.memories),
                                  ("facts/by-kind/", len(c.kinds)), ("facts/by-tag/", len(c.tags)))
           if n > cap]
    out += [f"facts/by-kind/{k}/" for k, n in c.kinds.items() if n > cap]
    out += [f"facts/by-tag/{t}/" for t, n in c.tags.items() if n > cap]
    return out


def _empty() -> Counts:
    return Counts(rows={t: 0 for t in MEMORY_TABLES}, versions=0, memories=0, kinds={}, tags={}, entities={},
                  sessions=0, sessions_with_summary=0, sessions_with_turns=0)


def index_bytes(place: Place, counts: Counts | None, status: dict[str, Any], *, max_rows: int,
                seen: tuple[int, datetime] | None, k: int, last_recall_degraded: str | None) -> bytes:
    """`counts` None: the workspace holds nothing yet. `seen`: (rid, arrival) of the newest row the reader
    may read (Browser._last_seen), never the store's generation, which other readers' writes move."""
    c = counts or _empty()
    files = 0 if counts is None else tree_file_count(
        c.rows["facts"], sum(c.tags.values()), c.sessions_with_summary, c.sessions_with_turns, c.rows["turns"],
        len(c.entities), c.versions)
    s = render.IndexStatus(
        mountpoint=place.mountpoint, store=place.store, workspace=place.workspace, agent=place.agent,
        last_row=seen[0] if seen else 0, counts=c.rows, versions=c.versions, files=files,
        kinds=c.kinds, tags=c.tags, sessions=c.sessions, entities=c.entities, memories=c.memories,
        semantic_ready=bool(status.get("semantic_ready")), degraded_reason=status.get("degraded_reason") or "off",
        last_recall_degraded=last_recall_degraded, recall_ttl_s=int(status.get("recall_ttl_s", 5)), k=k,
        truncated=[] if counts is None else truncated_listings(c, max_rows), last_change=seen[1] if seen else None,
    )
    health = status.get("health")
    if health is not None:
        s.health, s.health_problems, s.health_notes = health.state, list(health.problems), list(health.notes)
    return render.render_index(s)
