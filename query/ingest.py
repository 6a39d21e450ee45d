"""Transactional, idempotent ingest of validated records.

A batch is all or nothing: records are validated first (an importer raises IngestError with
FILE:LINE), then written inside one transaction. Re-ingesting an unchanged record (same table,
memory and content hash as any stored version) writes nothing; a changed one appends a new version,
which becomes the memory's head only if it is not older than the head (query/versioning.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from recallfs.query import diskspace
from recallfs.query.currentness import rebuild_heads
from recallfs.query.cursor import Cursor
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.query.versioning import MemoryVersions, Outcome, dated_ahead, decide, overtakes_by_tie


class IngestError(ValueError):
    """A batch refused, with FILE:LINE: reason. Nothing from the batch was written."""


class DiskFullError(IngestError):
    """The disk holding the store (or the staging file) cannot take the batch. Nothing was written."""


def disk_full(where: Path, detail: str) -> DiskFullError:
    return DiskFullError(f"the disk holding {where} is full ({detail}); free some space and run the ingest again")


@dataclass(slots=True)
class IngestReport:
    read: int = 0
    written: int = 0
    unchanged: int = 0
    new_versions: int = 0
    historical: int = 0  # new versions older than their memory's head: written to history only
    partitions: set[tuple[str, str]] = field(default_factory=set)
    written_rids: dict[str, list[int]] = field(default_factory=dict)  # schema.table -> rids
    # position in the batch -> (schema, table, rid) of each record written (a lake batch's vectors follow it)
    placed: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    # full-text indexes found behind (an earlier ingest stopped before rebuilding them) and rebuilt
    fts_repaired: list[str] = field(default_factory=list)
    embedded: int = 0  # rows given vectors: this batch's, and any an earlier ingest left without
    ahead: int = 0  # records written dated past this machine's clock (versioning.dated_ahead)
    ahead_latest: datetime | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "read": self.read,
            "written": self.written,
            "unchanged": self.unchanged,
            "new_versions": self.new_versions,
            "historical": self.historical,
            "workspaces": sorted(f"{o}/{w}" for o, w in self.partitions),
            "fts_repaired": list(self.fts_repaired),
            "embedded": self.embedded,
            "dated_ahead": self.ahead,
            "dated_ahead_latest": self.ahead_latest.isoformat() if self.ahead_latest else None,
        }


NARROW_LOAD = 2000  # keys (source ids and ids) of one table in a batch up to which _Known reads only theirs

_COLUMNS = {
    "rid": "BIGINT", "id": "VARCHAR", "version": "INTEGER", "org": "VARCHAR", "workspace": "VARCHAR",
    "agent": "VARCHAR", "visibility": "VARCHAR", "kind": "VARCHAR", "content": "VARCHAR",
    "search_text": "VARCHAR", "tags": "VARCHAR[]", "refs": "VARCHAR[]", "session": "VARCHAR",
    "source_id": "VARCHAR", "source": "VARCHAR", "content_hash": "VARCHAR", "created_at": "TIMESTAMP",
    "ingested_at": "TIMESTAMP", "status": "VARCHAR", "superseded_by": "VARCHAR", "supersedes": "VARCHAR",
    "entity": "VARCHAR", "slot": "VARCHAR", "title": "VARCHAR", "seq": "INTEGER", "speaker": "VARCHAR",
    "caption": "VARCHAR",
}


def _row(rec: MemoryRecord, rid: int, version: int, now: datetime) -> dict[str, object]:
    return {
        "rid": rid, "id": rec.id, "version": version, "org": rec.org, "workspace": rec.workspace,
        "agent": rec.agent, "visibility": rec.visibility, "kind": rec.kind, "content": rec.content,
        "search_text": rec.search_text, "tags": rec.tags, "refs": rec.refs, "session": rec.session,
        "source_id": rec.source_id, "source": rec.source, "content_hash": rec.content_hash,
        "created_at": rec.created_at.isoformat(sep=" "), "ingested_at": now.isoformat(sep=" "),
        "status": rec.status, "superseded_by": rec.superseded_by, "supersedes": rec.supersedes,
        "entity": rec.entity, "slot": rec.slot, "title": rec.title, "seq": rec.seq, "speaker": rec.speaker,
        "caption": rec.caption,
    }


@contextmanager
def _staged(pending: dict[tuple[str, str], list[dict[str, object]]]) -> Iterator[dict[str, tuple[str, int]]]:
    """Each target table's rows as a newline-delimited JSON file: DuckDB's executemany manages ~1k
    rows/s, read_json ~300k. Yields target -> (path, bytes); the files are removed on leaving."""
    staged: dict[str, tuple[str, int]] = {}
    try:
        for (schema, table), rows in pending.items():
            fd, path = tempfile.mkstemp(prefix="recallfs-ingest-", suffix=".jsonl")
            staged[f"{schema}.{table}"] = (path, 0)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False))
                    fh.write("\n")
            staged[f"{schema}.{table}"] = (path, os.path.getsize(path))
        yield staged
    except OSError as exc:
        if not diskspace.is_disk_full(exc):
            raise
        raise disk_full(Path(tempfile.gettempdir()), "no room for the staging file; TMPDIR moves it") from None
    finally:
        for path, _ in staged.values():
            os.unlink(path)


def _bulk_insert(cur: Cursor, target: str, path: str) -> None:
    columns = ", ".join(f"'{k}': '{v}'" for k, v in _COLUMNS.items())
    cur.execute(
        f"INSERT INTO {target} ({', '.join(_COLUMNS)}) "
        f"SELECT {', '.join(_COLUMNS)} FROM read_json(?, format='newline_delimited', columns={{{columns}}})",
        [path],
    )


def _check_space(cur: Cursor, store: Store, staged_bytes: int, schemas: set[str]) -> None:
    """Refuse before writing when the store's disk cannot take the transaction (diskspace.py: DuckDB
    may abort the process when a commit finds the disk full)."""
    heads = sum(cur.scalar(f"SELECT count(*) FROM {schema}.heads") for schema in schemas)
    need = diskspace.write_need(staged_bytes, heads)
    free = diskspace.free_bytes(store.path.parent)
    if free < need:
        raise disk_full(store.path, f"{diskspace.size(free)} free, this ingest needs about {diskspace.size(need)}")


def write_records(
    store: Store,
    records: Iterable[MemoryRecord],
    *,
    progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Write already-validated records in one transaction. A full disk is a DiskFullError, before
    anything is written when it can be foreseen, and with the transaction rolled back when not."""
    try:
        return _write(store, list(records), progress)
    except (duckdb.Error, OSError) as exc:
        if not diskspace.is_disk_full(exc):
            raise
        raise disk_full(store.path, str(exc).splitlines()[0][:200]) from None


def _ids_written(schema: str, accepted: list[tuple[tuple[str, str], MemoryRecord, int, int]]) -> dict[str, set[str]]:
    """table -> the memory ids this write gives a version, in one partition (query/currentness.rebuild_heads)."""
    out: dict[str, set[str]] = {}
    for (where, table), rec, _version, _index in accepted:
        if where == schema:
            out.setdefault(table, set()).add(rec.id)
    return out


class _Known:
    """What the store (and the batch so far) holds, per (schema, table): source_id -> memory id, and
    memory id -> its versions. Loaded once per table the batch touches: for a batch of at most
    NARROW_LOAD records of that table, only the rows its source ids and memory ids name (one fact
    written into 30k facts read all 30k rows, ~70 ms, on every `inbox/` write)."""

    def __init__(self, cur: Cursor, batch: Iterable[MemoryRecord] = ()) -> None:
        self.cur = cur
        self.loaded: set[tuple[str, str]] = set()
        self.source: dict[tuple[str, str, str], str] = {}
        self.memories: dict[tuple[str, str, str], MemoryVersions] = {}
        self.keys: dict[str, tuple[set[str], set[str]]] = {}  # table -> (source ids, ids) of the batch
        for rec in batch:
            sources, ids = self.keys.setdefault(rec.table, (set(), set()))
            sources.add(rec.source_id)
            ids.add(rec.id)

    def load(self, schema: str, table: str) -> None:
        if (schema, table) in self.loaded:
            return
        self.loaded.add((schema, table))
        links = "supersedes, superseded_by" if table == "facts" else "NULL, NULL"
        columns = f"SELECT source_id, id, version, content_hash, created_at, {links} FROM {schema}.{table}"
        order = "ORDER BY version, rid"
        sources, ids = self.keys.get(table, (set(), set()))
        if not sources or len(sources) + len(ids) > NARROW_LOAD:
            self._add(schema, table, self.cur.execute(f"{columns} {order}").fetchall(), sources=True)
            return
        by_source = self.cur.execute(
            f"{columns} WHERE source_id IN (SELECT unnest(?::VARCHAR[])) {order}", [sorted(sources)]).fetchall()
        self._add(schema, table, by_source, sources=True, versions=False)
        named = ids | {str(row[1]) for row in by_source}
        self._add(schema, table, self.cur.execute(
            f"{columns} WHERE id IN (SELECT unnest(?::VARCHAR[])) {order}", [sorted(named)]).fetchall())

    def _add(self, schema: str, table: str, rows: list[tuple[Any, ...]], *, sources: bool = False,
             versions: bool = True) -> None:
        for source_id, mem_id, version, content_hash, created_at, supersedes, superseded_by in rows:
            if sources:
                self.source[(schema, table, str(source_id))] = str(mem_id)  # the latest arrival's id
            if versions:
                self.memory(schema, table, str(mem_id)).add(str(content_hash), int(version), created_at,
                                                            (supersedes, superseded_by))

    def memory(self, schema: str, table: str, mem_id: str) -> MemoryVersions:
        return self.memories.setdefault((schema, table, mem_id), MemoryVersions())


def _decide(known: _Known, schema: str, rec: MemoryRecord) -> tuple[str, Outcome, int]:
    """(memory id, outcome, version) of `rec` against what `known` holds; an accepted record is added to
    `known`, so a later record of the same batch is decided against it."""
    as_written = rec.normalize_labels()  # every path into the store passes here: one place for labels
    known.load(schema, rec.table)
    # a known source record keeps its memory id: a changed one is a new version of it
    mem_id = known.source.get((schema, rec.table, rec.source_id), rec.id)
    versions = known.memory(schema, rec.table, mem_id)
    outcome = decide(versions, rec.content_hash, rec.created_at, as_written=as_written)
    if outcome is Outcome.HEAD and not rec.links_named and (rec.supersedes, rec.superseded_by) == (None, None) \
            and versions.head_links != (None, None):
        rec.supersedes, rec.superseded_by = versions.head_links  # versioning.py: a head keeps its links
        rec.links_named = True  # said now: decided again (`changing`, then the write), they stay
        outcome = decide(versions, rec.content_hash, rec.created_at)
    if outcome is Outcome.HEAD and rec.dated_by_write and versions.newest is not None and \
            replace(rec, created_at=versions.newest).content_hash in versions.hashes:
        outcome = Outcome.UNCHANGED  # the head said again, dated by the write alone: a retry stores nothing
    if outcome is Outcome.HEAD and overtakes_by_tie(versions, rec.copied_version, rec.created_at):
        raise IngestError(
            f"{rec.source.removeprefix('inbox:')}: this is version {rec.copied_version} of {mem_id}, edited, but "
            f"version {versions.head_version} is current and dated the same, so this copy would replace it as "
            f"current. To edit the memory, copy its current file (history/{mem_id}/v{versions.head_version}.md); "
            "to make this text current, drop the `created_at:` line")
    version = versions.max_version + 1
    if outcome is not Outcome.UNCHANGED:
        known.source[(schema, rec.table, rec.source_id)] = mem_id
        versions.add(rec.content_hash, version, rec.created_at, (rec.supersedes, rec.superseded_by))
    return mem_id, outcome, version


def changing(store: Store, batch: list[MemoryRecord]) -> list[MemoryRecord]:
    """The records of `batch` that an ingest would write now (new, or changed); reads only."""
    known = _Known(store.cursor(), batch)
    out = []
    for rec in batch:
        schema = store.partition(rec.org, rec.workspace)
        if schema is None or _decide(known, schema, rec)[1] is not Outcome.UNCHANGED:
            out.append(rec)
    return out


def _write(store: Store, batch: list[MemoryRecord], progress: Callable[[int], None] | None) -> IngestReport:
    report = IngestReport()
    report.read = len(batch)
    now = datetime.now()
    touched: set[str] = set()  # read at the commit: the tables given rows (and heads) below
    with store.transaction(touches=touched) as cur:
        pending: dict[tuple[str, str], list[dict[str, object]]] = {}
        known = _Known(cur, batch)
        accepted: list[tuple[tuple[str, str], MemoryRecord, int, int]] = []
        schemas_of: dict[tuple[str, str], str] = {}  # one catalog query per workspace, not per record
        for index, rec in enumerate(batch):
            where = (rec.org, rec.workspace)
            if where not in schemas_of:
                schemas_of[where] = store.ensure_partition(cur, rec.org, rec.workspace)
            schema = schemas_of[where]
            report.partitions.add(where)
            rec.id, outcome, version = _decide(known, schema, rec)
            if outcome is Outcome.UNCHANGED:
                report.unchanged += 1
                continue
            report.new_versions += outcome is not Outcome.NEW
            report.historical += outcome is Outcome.HISTORICAL
            accepted.append(((schema, rec.table), rec, version, index))
            if progress and index % 200 == 0:
                progress(index)
        # One round trip for all row ids rather than one per record.
        rids = [int(r[0]) for r in cur.execute(
            "SELECT nextval('main.rid_seq') FROM range(?) ORDER BY 1", [len(accepted)]).fetchall()]
        for ((schema, table), rec, version, index), rid in zip(accepted, rids, strict=True):
            pending.setdefault((schema, table), []).append(_row(rec, rid, version, now))
            report.written_rids.setdefault(f"{schema}.{table}", []).append(rid)
            report.placed[index] = (schema, table, rid)
        report.written = len(accepted)
        report.ahead, report.ahead_latest = dated_ahead((rec.created_at for _, rec, _, _ in accepted),
                                                        datetime.now(UTC).replace(tzinfo=None))
        schemas = {schema for schema, _ in pending}
        touched.update(f"{schema}.{table}" for schema, table in pending)
        with _staged(pending) as staged:
            _check_space(cur, store, sum(n for _, n in staged.values()), schemas)
            for target, (path, _) in staged.items():
                _bulk_insert(cur, target, path)
        for schema in schemas:
            rebuild_heads(cur, schema, _ids_written(schema, accepted))
    if progress:
        progress(report.read)
    return report
