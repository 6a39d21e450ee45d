"""Which row is current: the derived `heads` table, and supersession chains.

Memory rows are append-only. A memory is current when its highest version is active, no active
row says it `supersedes` it, its own latest version names no `superseded_by`, and, for facts
sharing a slot key, it is the newest such fact.
"""

from __future__ import annotations

import duckdb

MAX_CHAIN = 64  # supersession chains longer than this are cut: a guard against bad or cyclic data


def rebuild_heads(cur: duckdb.DuckDBPyConnection, schema: str) -> None:
    """Recompute the partition's heads inside the caller's transaction."""
    cur.execute(f"DELETE FROM {schema}.heads")
    for table in ("summaries", "turns"):
        cur.execute(
            f"""INSERT INTO {schema}.heads
                SELECT rid, '{table}' FROM (
                    SELECT rid, status, row_number() OVER (PARTITION BY id ORDER BY version DESC) AS rn
                    FROM {schema}.{table}) WHERE rn = 1 AND status = 'active'"""
        )
    cur.execute(
        f"""INSERT INTO {schema}.heads
        WITH latest AS (
            SELECT * FROM (
                SELECT *, row_number() OVER (PARTITION BY id ORDER BY version DESC) AS rn FROM {schema}.facts)
            WHERE rn = 1),
        replaced AS (SELECT DISTINCT supersedes AS id FROM latest
                     WHERE supersedes IS NOT NULL AND status <> 'deleted'),
        alive AS (
            SELECT * FROM latest
            WHERE status = 'active' AND superseded_by IS NULL AND id NOT IN (SELECT id FROM replaced)),
        ranked AS (
            SELECT rid, slot, row_number() OVER (
                PARTITION BY coalesce(slot, '\\x00' || id) ORDER BY created_at DESC, version DESC, rid DESC) AS srn
            FROM alive)
        SELECT rid, 'facts' FROM ranked WHERE srn = 1"""
    )


def chain_head(links: dict[str, str], start: str, limit: int = MAX_CHAIN) -> tuple[str, list[str]]:
    """Follow `old -> new` links from start. Returns (head, path). Stops on a cycle or at the limit.

    Pure, so it is tested from a table; callers build `links` from superseded_by/supersedes.
    """
    path = [start]
    seen = {start}
    node = start
    while node in links and len(path) <= limit:
        node = links[node]
        if node in seen:
            break
        seen.add(node)
        path.append(node)
    return path[-1], path


def supersession_links(cur: duckdb.DuckDBPyConnection, schema: str) -> dict[str, str]:
    """old id -> newer id, from both directions of the relation and from shared slots."""
    links: dict[str, str] = {}
    for old, new in cur.execute(
        f"""SELECT supersedes, id FROM {schema}.facts WHERE supersedes IS NOT NULL
            UNION ALL SELECT id, superseded_by FROM {schema}.facts WHERE superseded_by IS NOT NULL"""
    ).fetchall():
        links.setdefault(str(old), str(new))
    slot_rows = cur.execute(
        f"""SELECT slot, id FROM (
                SELECT slot, id, min(created_at) AS first_at, min(rid) AS first_rid
                FROM {schema}.facts WHERE slot IS NOT NULL GROUP BY slot, id)
            ORDER BY slot, first_at, first_rid"""
    ).fetchall()
    previous: tuple[str, str] | None = None
    for slot, mem_id in slot_rows:
        if previous and previous[0] == slot and previous[1] != mem_id:
            links.setdefault(previous[1], str(mem_id))
        previous = (str(slot), str(mem_id))
    return links
