"""How one table's part of a catalog (`Readable`) is read: whole, or grown from the part read before.

A write starts a new store generation. Rows are only ever added, with rising rids (a change is a new
version), and whether a version may be read depends on the version and the reader's policy alone, so a
written table keeps the rows read before and reads those past the highest rid it read (`grown`); a turn's
or summary's current rows are worked out again for the ids given a version only (`current_grown`). Before
(2026-12-07) a turn written at 100k memories re-read all 88k turns' metadata: 0.7-1.2 s before the next
listing. The caller (query/catalog.py) decides which applies: same clauses and policy, else `whole`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recallfs.query.cursor import Cursor
from recallfs.query.readable import Meta, Readable, newest_first
from recallfs.query.shared_values import shared

META_COLUMNS = ("rid", "id", "session", "kind", "tags", "entity", "created_at", "seq", "speaker", "version")
# Tables whose rows' currentness depends on the versions of their own id alone (query/currentness.py):
# facts link across ids (supersession, slots), so theirs is read whole.
OWN_HEADS = ("summaries", "turns")
Part = tuple[frozenset[int], list[Meta], int]  # (readable rids, their Metas newest first, the highest rid read)


def meta(table: str, row: Sequence[Any]) -> Meta:
    """A Meta from one row of META_COLUMNS, in that order."""
    rid, mem_id, session, kind, tags, entity, created, seq, speaker, version = row
    return Meta(int(rid), table, str(mem_id), shared(session), shared(str(kind)),
                tuple(shared(t) for t in tags) if tags else (), shared(entity), created, seq, shared(speaker),
                int(version))


def whole(cur: Cursor, schema: str, table: str, clause: tuple[str, list[object]]) -> Part:
    """Every version of `table` the clause lets the reader read, with its metadata."""
    where, params = clause
    readable = frozenset(int(r[0]) for r in cur.execute(
        f"SELECT m.rid FROM {schema}.{table} m WHERE {where}", params).fetchall())
    every = cur.execute(
        f"SELECT {', '.join(META_COLUMNS)} FROM {schema}.{table} ORDER BY created_at DESC, rid DESC").fetchall()
    top = max((int(row[0]) for row in every), default=-1)
    return readable, [meta(table, row) for row in every if int(row[0]) in readable], top


def grown(cur: Cursor, schema: str, table: str, clause: tuple[str, list[object]], older: Readable) -> Part:
    """`older`'s part of `table` and the rows written since it was read. Rows are only ever added, with
    rising rids (a change is a new version), and whether a version may be read depends on the version
    and the reader's policy alone (the same clause): so the older rows stand, and only the new ones are
    read."""
    seen = int(older.made_with[table][3])
    where, params = clause
    new = cur.execute(
        f"SELECT {', '.join(f'm.{c}' for c in META_COLUMNS)}, ({where}) AS allowed FROM {schema}.{table} m "
        f"WHERE m.rid > ? ORDER BY m.created_at DESC, m.rid DESC", [*params, seen]).fetchall()
    top = max((int(row[0]) for row in new), default=seen)
    metas = [meta(table, row[:-1]) for row in new if row[-1]]
    readable = older.readable[table] | {m.rid for m in metas}
    return readable, newest_first(older.rows[table], metas), top


def current_grown(
    cur: Cursor, schema: str, table: str, clause: tuple[str, list[object]], older: Readable
) -> frozenset[int]:
    """`older`'s current rows of `table`, brought up to date for the ids given a version since: with the
    same current clause (the reader's own head changes included), no other row's currentness moved."""
    seen = int(older.made_with[table][3])
    where, params = clause
    touched = cur.execute(
        f"""SELECT m.rid, coalesce(({where}), false) FROM {schema}.{table} m
            WHERE m.id IN (SELECT id FROM {schema}.{table} WHERE rid > ?)""", [*params, seen]).fetchall()
    if not touched:
        return older.current[table]
    return frozenset((older.current[table] - {int(r[0]) for r in touched}) | {int(r[0]) for r in touched if r[1]})
