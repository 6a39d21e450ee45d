"""The whole ingest of one file: import (validate) -> write (one transaction) -> refresh indexes.

Shared by the CLI and the mount daemon, so a file ingested either way ends in the same state.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from recallfs.query import diskspace
from recallfs.query.cursor import Cursor
from recallfs.query.fts_freshness import (
    rebuild_tables,
    record_failed_rebuilds,
    record_rebuilt,
    record_repairs,
    stale_fts,
)
from recallfs.query.importers import IMPORTERS
from recallfs.query.ingest import IngestError, IngestReport, write_records
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store

if TYPE_CHECKING:
    from recallfs.query.embedder import Embedder

log = logging.getLogger("recallfs.ingest")

Progress = Callable[[int, int], None]  # (done, total)


class IndexRefreshError(RuntimeError):
    """The batch was written (committed), but the disk filled before its indexes were refreshed.
    Not an IngestError: that one promises nothing was written. `short`: the cause alone, for a health
    line that is not about one ingest."""

    def __init__(self, message: str, short: str = "") -> None:
        super().__init__(message)
        self.short = short or message


def load_file(path: Path, fmt: str, *, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    if fmt not in IMPORTERS:
        raise IngestError(f"unknown format {fmt!r}: use one of {', '.join(IMPORTERS)}")
    if not path.exists():
        raise IngestError(f"{path}: no such file")
    return IMPORTERS[fmt](path, org=org, workspace=workspace, agent=agent)


def ingest_records(
    store: Store,
    records: list[MemoryRecord],
    *,
    progress: Progress | None = None,
    refresh: bool = True,
    embedder: Embedder | None,
    embed_progress: Progress | None = None,
    own_part: int | None = None,
) -> IngestReport:
    """Write, then refresh the FTS indexes and embed new rows. `embedder`: the caller's (from its own
    settings: the daemon's, the CLI's), or None (no embedding). With a `progress` callback and no
    `embed_progress`, embedding shows a progress bar on stderr. `own_part`: embed only the batch's own
    rows, at most this many, the newest first, and leave the rest (a mount embeds it in parts, letting
    other writers in between: mount/vector_backlog.py)."""
    total = len(records)
    _check_model(store, embedder)
    report = write_records(store, records, progress=(lambda done: progress(done, total)) if progress else None)
    if refresh:
        refresh_indexes(store, report, embedder=embedder, embed_progress=embed_progress,
                        bar=progress is not None and embed_progress is None, own_part=own_part)
    return report


def refresh_indexes(
    store: Store,
    report: IngestReport,
    *,
    embedder: Embedder | None,
    embed_progress: Progress | None = None,
    bar: bool = False,
    own_part: int | None = None,
) -> None:
    """Rebuild the FTS index of every table due for it (query/fts_delta.needs_rebuild; the rows stay
    findable meanwhile): those the batch wrote, and any an earlier ingest left behind (killed between
    its commit and this step, or stopped by a full disk), which are reported as repairs. Then embed the
    rows of the batch's workspaces that have no vector from the model yet. A full disk is an
    IndexRefreshError: the rows are in."""
    every = stale_fts(store, deferred=True)
    behind = [s for s in every if s.due]
    for s in every:
        if not s.due:  # a large table: its delta serves the new rows until they pass its share
            log.info("full-text index of %s %s: %d rows served from its delta until a rebuild is due",
                     s.workspace, s.table, s.rows_behind)
    if behind:
        _rebuild_fts(store, report, sorted({(s.schema, s.table) for s in behind}))
    written = {key: len(rids) for key, rids in report.written_rids.items()}
    lagging = [replace(s, rows_behind=s.rows_behind - written.get(s.key, 0))
               for s in behind if s.rows_behind > written.get(s.key, 0)]
    record_repairs(lagging)
    report.fts_repaired = [s.describe() for s in lagging]
    own = None if own_part is None else report.written_rids
    report.embedded = embed_new_rows(store, report, embedder=embedder, progress=embed_progress, bar=bar,
                                     limit=own_part, among=own)


def _rebuild_fts(store: Store, report: IngestReport, tables: list[tuple[str, str]]) -> None:
    cur = store.cursor()
    text = sum(cur.scalar(f"SELECT coalesce(sum(strlen(search_text)), 0) FROM {schema}.{table}")
               for schema, table in tables)
    need, free = diskspace.fts_need(text), diskspace.free_bytes(store.path.parent)
    if free < need:  # checked first: see diskspace.py
        detail = f"{diskspace.size(free)} free, rebuilding the index needs about {diskspace.size(need)}"
        record_failed_rebuilds(store, tables, _disk_full(store, detail))
        raise IndexRefreshError(_not_indexed(store, report, detail), _disk_full(store, detail))
    try:
        rebuild_tables(store, tables)
    except (duckdb.Error, OSError) as exc:
        if not diskspace.is_disk_full(exc):
            raise
        detail = str(exc).splitlines()[0][:200]
        record_failed_rebuilds(store, tables, _disk_full(store, detail))
        raise IndexRefreshError(_not_indexed(store, report, detail), _disk_full(store, detail)) from None
    record_rebuilt(store, tables)  # a rebuild that had failed (health said so) is done now


def _disk_full(store: Store, detail: str) -> str:
    return f"the disk holding {store.path} is full ({detail})"


def _not_indexed(store: Store, report: IngestReport, detail: str) -> str:
    return (f"the disk holding {store.path} is full ({detail}): the ingest itself was written "
            f"({report.written} written, {report.unchanged} unchanged), but the full-text index was not rebuilt, so "
            "recall finds the new records from an in-memory delta (by substring in a table never indexed) until it "
            "is; free some space and run the same ingest again: it writes nothing twice and rebuilds the index")


def _not_embedded(store: Store, report: IngestReport, detail: str) -> str:
    return (f"the disk holding {store.path} is full ({detail}): the ingest itself was written "
            f"({report.written} written, {report.unchanged} unchanged) and indexed for full-text search, but "
            "not every record has its vector, so the semantic arm misses those; free some space and run the "
            "same ingest again (or `recallfs reindex`): it writes nothing twice and embeds what is missing")


def embed_new_rows(
    store: Store, report: IngestReport, *, embedder: Embedder | None, progress: Progress | None = None,
    bar: bool = False, limit: int | None = None, among: Mapping[str, Sequence[int]] | None = None,
) -> int:
    """Embed what the batch's workspaces lack (new rows, or rows written while the model was missing);
    with `limit`, about that many rows at most; with `among`, only those rows (vector_write.embed_missing).

    A model that cannot load does not fail the ingest: the rows are in, the lexical arm finds them,
    and the next ingest or `recallfs reindex` embeds them. Returns rows embedded.
    """
    from recallfs.query.embedder_errors import EmbedderError, ModelMissingError
    from recallfs.query.vector_write import embed_missing, windows_pending

    if embedder is None or not report.partitions:
        return 0
    schemas = [s for s in (store.partition(o, w) for o, w in sorted(report.partitions)) if s]
    cur = store.cursor()
    # Counted first, by the identity of the model's files: a batch that left nothing to embed (a file
    # ingested again) does not wait for the model to load, which cost it ~8 s.
    model = embedder.model_id_within(embedder.load_timeout_s)  # None: its files do not answer
    counted = _missing(cur, schemas, model) if model is not None else None
    if counted == 0 and not windows_pending(cur, schemas):
        return 0
    if not embedder.wait_ready():  # at most its load timeout: a hung model must not hold the ingest
        log.warning("memories stored without vectors (%s); the lexical arm finds them meanwhile, and "
                    "`recallfs reindex` or the next ingest embeds them",
                    embedder.problem or f"the model did not load within {embedder.load_timeout_s:.0f} s")
        return 0
    # Counted again only if the loaded model is not the one its files named (replaced meanwhile).
    missing = counted if counted is not None and model == embedder.model_id else _missing(cur, schemas,
                                                                                        embedder.model_id)
    if among is not None:  # only these rows, at most `limit` of them: the disk needs room for those alone
        missing = min(missing, sum(len(rids) for rids in among.values()))
    if limit is not None:
        missing = min(missing, limit)
    need, free = diskspace.vector_need(missing), diskspace.free_bytes(store.path.parent)
    if missing and free < need:
        detail = f"{diskspace.size(free)} free, {missing} vectors need about {diskspace.size(need)}"
        raise IndexRefreshError(_not_embedded(store, report, detail), _disk_full(store, detail))
    try:
        with embed_bar(bar) as bar_progress:
            done = embed_missing(store, embedder, schemas=schemas, progress=progress or bar_progress, limit=limit,
                                 among=among)
    except (duckdb.Error, OSError) as exc:
        if not diskspace.is_disk_full(exc):
            raise
        detail = str(exc).splitlines()[0][:200]
        raise IndexRefreshError(_not_embedded(store, report, detail), _disk_full(store, detail)) from None
    except (ModelMissingError, EmbedderError) as exc:
        log.warning("memories stored without vectors (%s); the lexical arm finds them meanwhile, and "
                    "`recallfs reindex` or the next ingest embeds them", exc)
        return 0
    return done.embedded


def _missing(cur: Cursor, schemas: list[str], model: str) -> int:
    from recallfs.query.vector_write import missing_in

    return missing_in(cur, schemas, model)


def _check_model(store: Store, embedder: Any) -> None:
    """Refuse before writing anything when the store's vectors were made by another model."""
    from recallfs.query.vector_meta import mismatch_message, stored_model

    if embedder is None or store.read_only:
        return
    stored = stored_model(store.cursor())
    if stored is None or stored.model == embedder.model_id_within(embedder.load_timeout_s):
        # Nothing embedded yet, or the same model files (the identity is read from them, not from the
        # loaded model): no wait for the load, which cost a re-ingest of unchanged rows ~8 s.
        return
    if not embedder.wait_ready():
        return  # no model: embed_new_rows warns
    if stored.model != embedder.model_id or stored.dim != embedder.dim:
        raise IngestError(mismatch_message(stored, embedder.model_id, embedder.dim))


@contextmanager
def embed_bar(enabled: bool) -> Iterator[Progress | None]:
    if not enabled or sys.stderr is None or not sys.stderr.isatty():  # None: stderr closed (`2>&-`)
        yield None
        return
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="row", desc="embed", file=sys.stderr)
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()
