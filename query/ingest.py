"""Transactional, idempotent ingest of validated records.

A batch is all or nothing: records are validated first (an importer raises IngestError with
FILE:LINE), then written inside one transaction. Re-ingesting an unchanged record (same table,
source_id and content hash) writes nothing; a changed one appends a new version.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from recallfs.query import diskspace
from recallfs.query.currentness import rebuild_heads
from recallfs.query.cursor import Cursor
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store


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
    partitions: set[tuple[str, str]] = field(default_factory=set)
    written_rids: dict[str, list[int]] = field(default_factory=dict)  # schema.table -> rids
    # full-text indexes found behind (an earlier ingest stopped before rebuilding them) and rebuilt
    fts_repaired: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "read": self.read,
            "written": self.written,
            "unchanged": self.unchanged,
            "new_versions": self.new_versions,
            "workspaces": sorted(f"{o}/{w}" for o, w in self.partitions),
            "fts_repaired": list(self.fts_repaired),
        }


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


def _write(store: Store, batch: list[MemoryRecord], progress: Callable[[int], None] | None) -> IngestReport:
    report = IngestReport()
    report.read = len(batch)
    now = datetime.now()
    with store.transaction() as cur:
        pending: dict[tuple[str, str], list[dict[str, object]]] = {}
        # (schema, table, source_id) -> (hash, id); (schema, table, id) -> max version
        known_source: dict[tuple[str, str, str], tuple[str, str]] = {}
        known_version: dict[tuple[str, str, str], int] = {}
        loaded: set[tuple[str, str]] = set()
        accepted: list[tuple[tuple[str, str], MemoryRecord, int]] = []
        for index, rec in enumerate(batch):
            schema = store.ensure_partition(cur, rec.org, rec.workspace)
            report.partitions.add((rec.org, rec.workspace))
            key = (schema, rec.table)
            if key not in loaded:
                _load_existing(cur, schema, rec.table, known_source, known_version)
                loaded.add(key)
            previous = known_source.get((schema, rec.table, rec.source_id))
            if previous is not None:
                prev_hash, prev_id = previous
                if prev_hash == rec.content_hash:
                    report.unchanged += 1
                    continue
                rec.id = prev_id  # a changed source record is a new version of the same memory
            version = known_version.get((schema, rec.table, rec.id), 0) + 1
            if version > 1:
                report.new_versions += 1
            accepted.append((key, rec, version))
            known_source[(schema, rec.table, rec.source_id)] = (rec.content_hash, rec.id)
            known_version[(schema, rec.table, rec.id)] = version
            if progress and index % 200 == 0:
                progress(index)
        # One round trip for all row ids rather than one per record.
        rids = [int(r[0]) for r in cur.execute(
            "SELECT nextval('main.rid_seq') FROM range(?) ORDER BY 1", [len(accepted)]).fetchall()]
        for ((schema, table), rec, version), rid in zip(accepted, rids, strict=True):
            pending.setdefault((schema, table), []).append(_row(rec, rid, version, now))
            report.written_rids.setdefault(f"{schema}.{table}", []).append(rid)
        report.written = len(accepted)
        schemas = {schema for schema, _ in pending}
        with _staged(pending) as staged:
            _check_space(cur, store, sum(n for _, n in staged.values()), schemas)
            for target, (path, _) in staged.items():
                _bulk_insert(cur, target, path)
        for schema in schemas:
            rebuild_heads(cur, schema)
    if progress:
        progress(report.read)
    return report


def _load_existing(
    cur: Cursor,
    schema: str,
    table: str,
    known_source: dict[tuple[str, str, str], tuple[str, str]],
    known_version: dict[tuple[str, str, str], int],
) -> None:
    rows = cur.execute(
        f"""SELECT source_id, content_hash, id, version FROM {schema}.{table}
            QUALIFY row_number() OVER (PARTITION BY source_id ORDER BY version DESC, rid DESC) = 1"""
    ).fetchall()
    for source_id, content_hash, mem_id, _ in rows:
        known_source[(schema, table, str(source_id))] = (str(content_hash), str(mem_id))
    for mem_id, version in cur.execute(f"SELECT id, max(version) FROM {schema}.{table} GROUP BY id").fetchall():
        known_version[(schema, table, str(mem_id))] = int(version)
