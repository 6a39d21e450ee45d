"""The whole ingest of one file: import (validate) -> write (one transaction) -> refresh indexes.

Shared by the CLI and the mount daemon, so a file ingested either way ends in the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from recallfs.query.importers import IMPORTERS
from recallfs.query.ingest import IngestError, IngestReport, write_records
from recallfs.query.lexical import build_fts
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store

Progress = Callable[[int, int], None]  # (done, total)


def load_file(path: Path, fmt: str, *, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    if fmt not in IMPORTERS:
        raise IngestError(f"unknown format {fmt!r}: use one of {', '.join(IMPORTERS)}")
    if not path.exists():
        raise IngestError(f"{path}: no such file")
    return IMPORTERS[fmt](path, org=org, workspace=workspace, agent=agent)


def ingest_records(
    store: Store, records: list[MemoryRecord], *, progress: Progress | None = None, refresh: bool = True
) -> IngestReport:
    total = len(records)
    report = write_records(store, records, progress=(lambda done: progress(done, total)) if progress else None)
    if refresh and report.written:
        refresh_indexes(store, report)
    return report


def refresh_indexes(store: Store, report: IngestReport) -> None:
    """Rebuild the FTS index of every table the batch touched (rows stay findable meanwhile)."""
    touched = {tuple(key.split(".", 1)) for key in report.written_rids}
    with store.transaction() as cur:
        for schema, table in sorted(touched):
            build_fts(cur, schema, table)
