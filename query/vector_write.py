"""Writing vectors: embedding the rows that lack one (after an ingest, or all of them on `recallfs
reindex`), in batches that each commit, and the windows of long rows (query/chunks.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import duckdb
import numpy as np

from recallfs.query.bulk_embedding import Progress
from recallfs.query.cursor import Cursor
from recallfs.query.embedder import Embedder
from recallfs.query.migrations import MEMORY_TABLES, insert_vectors, windows_pending_key
from recallfs.query.store import Store
from recallfs.query.vector_meta import (
    META_DIM,
    META_EPOCH,
    META_MODEL,
    VECTORS,
    ModelMismatchError,
    adopt_model,
    has_vectors_table,
    mismatch_message,
    set_meta,
    stored_model,
    vectors_ddl,
)

log = logging.getLogger("recallfs.vectors")

WRITE_BATCH = 2048  # rows embedded per transaction: an interrupted run keeps what it finished


def write_vectors(
    cur: Cursor, schema: str, table: str, model: str, rids: np.ndarray, matrix: np.ndarray,
    chunks: np.ndarray | None = None,
) -> None:
    """Insert one batch: row i is window `chunks[i]` (default 0) of memory `rids[i]`, and a batch holds
    every window of its memories (their old ones are replaced). Stored as float16 (query/half_vectors.py)."""
    windows = np.zeros(len(rids), dtype=np.int16) if chunks is None else chunks
    insert_vectors(cur, f"{schema}.{VECTORS}", rids, windows, table, model, matrix, replace=True)


def missing_count(cur: Cursor, schema: str, table: str, model: str) -> int:
    """Rows of `table` without a vector from `model`."""
    if not has_vectors_table(cur, schema):
        row = cur.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()
    else:
        row = cur.execute(
            f"""SELECT count(*) FROM {schema}.{table} m
                WHERE NOT EXISTS (SELECT 1 FROM {schema}.{VECTORS} v WHERE v.rid = m.rid AND v.model = ?)""",
            [model],
        ).fetchone()
    return int(row[0]) if row else 0


def missing_in(cur: Cursor, schemas: Iterable[str], model: str) -> int:
    """Rows of these partitions, every memory table, without a vector from `model`."""
    return sum(missing_count(cur, schema, table, model) for schema in schemas for table in MEMORY_TABLES)


def _missing_rows(cur: Cursor, schema: str, table: str, model: str, limit: int | None = None,
                  among: Sequence[int] | None = None) -> tuple[np.ndarray, list[str]]:
    """Rows without a vector, the newest first (a limited caller embeds the rows just written before an
    older backlog); `among`: only these rids."""
    only = "AND m.rid IN (SELECT unnest(?::BIGINT[]))" if among is not None else ""
    rows = cur.execute(
        f"""SELECT m.rid, m.search_text FROM {schema}.{table} m
            WHERE NOT EXISTS (SELECT 1 FROM {schema}.{VECTORS} v WHERE v.rid = m.rid AND v.model = ?) {only}
            ORDER BY m.rid DESC LIMIT ?""",
        [model, *([list(among)] if among is not None else []), limit if limit is not None else 2**62],
    ).fetchall()
    return np.array([int(r[0]) for r in rows], dtype=np.int64), [str(r[1]) for r in rows]


@dataclass(slots=True)
class EmbedReport:
    embedded: int = 0
    model: str = ""
    dim: int = 0
    tables: dict[str, int] = field(default_factory=dict)  # schema.table -> rows embedded


def embed_missing(
    store: Store,
    embedder: Embedder,
    *,
    schemas: Iterable[str] | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
    among: Mapping[str, Sequence[int]] | None = None,
) -> EmbedReport:
    """Embed every row that has no vector from the embedder's model, in batches (one transaction each);
    with `limit`, stop after the batch that reaches it (a caller that must let other writers in between);
    with `among` ("schema.table" -> rids), only those rows (a mount's ingest embeds its own batch).

    Rows that already have one are never re-embedded, so re-ingesting costs nothing here.
    Raises ModelMismatchError when the store's vectors come from another model.
    """
    cur = store.cursor()
    if schemas is None:
        schemas = [str(s) for (s,) in cur.execute("SELECT schema_name FROM main.partitions").fetchall()]
    schemas = sorted(set(schemas))
    model, report = embedder.model_id, EmbedReport()
    stored = stored_model(cur)
    if stored is not None and stored.model != model:
        raise ModelMismatchError(mismatch_message(stored, model, embedder.dim))
    # Count first: a store with nothing to embed must not wait for the model.
    todo: list[tuple[str, str, int]] = []
    for schema in schemas:
        for table in MEMORY_TABLES:
            n = missing_count(cur, schema, table, model)
            if n:
                todo.append((schema, table, n))
    total = sum(n for _, _, n in todo)
    pending = windows_pending(cur, schemas)
    if pending and stored is not None:
        fill_windows(store, embedder, pending, model)
    if not total:
        return report
    dim = embedder.dim
    with store.transaction() as tx:
        stored = adopt_model(tx, model, dim)
        for schema in schemas:
            tx.execute(vectors_ddl(schema, stored.dim))
    report.model, report.dim = model, dim
    done = 0
    step = min(WRITE_BATCH, limit) if limit is not None else WRITE_BATCH
    for schema, table, _ in todo:
        rids, texts = _missing_rows(cur, schema, table, model, None if limit is None else limit - done,
                                    None if among is None else among.get(f"{schema}.{table}", ()))
        for start in range(0, len(rids), step):
            part_rids, part_texts = rids[start:start + step], texts[start:start + step]
            _embed_windows(store, embedder, schema, table, part_rids, part_texts,
                           _offset(progress, done, total, len(part_rids)))
            done += len(part_rids)
            report.embedded += len(part_rids)
            key = f"{schema}.{table}"
            report.tables[key] = report.tables.get(key, 0) + len(part_rids)
            if limit is not None and done >= limit:
                return report
    return report


def _embed_windows(
    store: Store, embedder: Embedder, schema: str, table: str, rids: np.ndarray, texts: list[str],
    progress: Progress | None,
) -> int:
    """Embed these rows, each as the windows the model reads whole (query/chunks.py), and write them in
    one transaction. Returns how many vectors were written."""
    windows = embedder.windows(texts)
    counts = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
    flat = [t for w in windows for t in w]
    chunk_rids = np.repeat(np.asarray(rids, dtype=np.int64), counts)
    # 0, 1, ... within each row: position in the flat list less where the row's windows start
    chunks = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts)
    matrix = embedder.embed(flat, progress=progress)
    with store.transaction(touches={f"{schema}.{table}"}) as tx:
        write_vectors(tx, schema, table, embedder.model_id, chunk_rids, matrix, chunks)
    return len(flat)


def windows_pending(cur: Cursor, schemas: Iterable[str]) -> list[str]:
    """Partitions migrated from before windows (query/migrations._partition_v3) whose long rows still
    have only their first window."""
    keys = {windows_pending_key(s): s for s in schemas}
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    try:
        rows = cur.execute(f"SELECT key FROM main.meta WHERE key IN ({marks})", list(keys)).fetchall()
    except duckdb.CatalogException:
        return []
    return sorted(keys[str(k)] for (k,) in rows)


def fill_windows(store: Store, embedder: Embedder, schemas: Sequence[str], model: str) -> int:
    """Give every long row of these migrated partitions all its windows (each row's vectors are
    rewritten whole), then clear their marks. Rows that fit one window keep the vector they have."""
    cur = store.cursor()
    written = 0
    for schema in schemas:
        for table in MEMORY_TABLES:
            rows = cur.execute(
                f"""SELECT m.rid, m.search_text FROM {schema}.{table} m WHERE EXISTS (SELECT 1 FROM
                    {schema}.{VECTORS} v WHERE v.rid = m.rid AND v.model = ?) ORDER BY m.rid""",
                [model]).fetchall()
            for start in range(0, len(rows), WRITE_BATCH):
                part = rows[start:start + WRITE_BATCH]
                long = [(int(rid), str(text)) for (rid, text), w in
                        zip(part, embedder.windows([str(r[1]) for r in part]), strict=True) if len(w) > 1]
                if long:
                    rids = np.array([r for r, _ in long], dtype=np.int64)
                    written += _embed_windows(store, embedder, schema, table, rids, [t for _, t in long], None)
        with store.transaction() as tx:
            tx.execute("DELETE FROM main.meta WHERE key = ?", [windows_pending_key(schema)])
    if written:
        log.info("embedded the windows of long rows in %d migrated partitions: %d vectors", len(schemas), written)
    return written


def _offset(progress: Progress | None, base: int, total: int, rows: int) -> Progress | None:
    """`progress` for one batch of `rows` rows: its counts (windows) as rows, shifted by what the
    batches before it did."""
    if progress is None:
        return None
    report = progress
    return lambda done, windows: report(base + done * rows // max(windows, 1), total)


def reindex(
    store: Store, embedder: Embedder, *, force: bool = False, progress: Progress | None = None
) -> EmbedReport:
    """Make the configured model the store's: drop the vectors of any other model (all vectors when
    the dimension changes, or with `force`), embed every row that lacks one, and make every persisted
    FAISS index stale. Rows already embedded by this model are kept unless `force`."""
    model, dim = embedder.model_id, embedder.dim
    with store.transaction() as tx:
        stored = stored_model(tx)
        schemas = [str(s) for (s,) in tx.execute("SELECT schema_name FROM main.partitions").fetchall()]
        if stored is None or stored.dim != dim or force:
            for schema in schemas:
                tx.execute(f"DROP TABLE IF EXISTS {schema}.{VECTORS}")
        if stored is not None:
            for key in (META_MODEL, META_DIM):
                tx.execute("DELETE FROM main.meta WHERE key = ?", [key])
            set_meta(tx, META_EPOCH, str(stored.epoch + 1))  # every persisted index becomes stale
        adopt_model(tx, model, dim)
        for schema in schemas:
            if has_vectors_table(tx, schema):
                tx.execute(f"DELETE FROM {schema}.{VECTORS} WHERE model <> ?", [model])
    report = embed_missing(store, embedder, progress=progress)
    report.model, report.dim = model, dim
    return report
