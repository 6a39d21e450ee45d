"""The vectors' bookkeeping in DuckDB: which model and dimension the store's vectors belong to
(`main.meta`), each partition's `vectors` table, and the errors a mismatch raises (query/vectors.py
has the whole design)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import duckdb

from recallfs.query.cursor import Cursor
from recallfs.query.half_vectors import HALF_SQL
from recallfs.query.migrations import vectors_columns

VECTORS = "vectors"
META_MODEL, META_DIM, META_EPOCH, META_UUID = "embed_model", "embed_dim", "embed_epoch", "store_uuid"


class VectorError(RuntimeError):
    """Vectors that cannot be used as they are; the message says what to run."""


class ModelMismatchError(VectorError):
    """The configured model is not the one that made the stored vectors (identity or dimension)."""


def meta_value(cur: Cursor, key: str) -> str | None:
    row = cur.execute("SELECT value FROM main.meta WHERE key = ?", [key]).fetchone()
    return str(row[0]) if row else None


def set_meta(cur: Cursor, key: str, value: str) -> None:
    cur.execute("INSERT OR REPLACE INTO main.meta VALUES (?, ?)", [key, value])


@dataclass(frozen=True, slots=True)
class StoredModel:
    model: str
    dim: int
    epoch: int
    store_uuid: str


def stored_model(cur: Cursor) -> StoredModel | None:
    """The model and dimension the store's vectors were made with (None before the first embed)."""
    keys = (META_MODEL, META_DIM, META_EPOCH, META_UUID)
    try:
        rows = dict(cur.execute("SELECT key, value FROM main.meta WHERE key IN (?, ?, ?, ?)", list(keys)).fetchall())
    except duckdb.CatalogException:  # a store from before main.meta
        return None
    model, dim = rows.get(META_MODEL), rows.get(META_DIM)
    if model is None or dim is None:
        return None
    return StoredModel(str(model), int(dim), int(rows.get(META_EPOCH) or 0), str(rows.get(META_UUID) or ""))


def vectors_ddl(schema: str, dim: int) -> str:
    return f"CREATE TABLE IF NOT EXISTS {schema}.{VECTORS} ({vectors_columns(dim)})"


def has_vectors_table(cur: Cursor, schema: str) -> bool:
    row = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?", [schema, VECTORS]
    ).fetchone()
    return bool(row and row[0])


def has_chunk_column(cur: Cursor, schema: str) -> bool:
    """Whether the partition's vectors table has windows (migration v3; a read-only open skips it)."""
    row = cur.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? AND column_name = 'chunk'",
        [schema, VECTORS]).fetchone()
    return bool(row and row[0])


def embedding_is_half(cur: Cursor, schema: str) -> bool:
    """Whether the partition's vectors are stored as float16 bits (migration v4; a read-only open of an
    older store skips it and reads FLOAT[d])."""
    row = cur.execute(
        "SELECT data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? AND column_name = 'embedding'",
        [schema, VECTORS]).fetchone()
    return row is not None and str(row[0]).startswith(HALF_SQL)


def mismatch_message(stored: StoredModel, model_id: str, dim: int) -> str:
    what = (f"{dim}-d vectors, but the stored ones are {stored.dim}-d" if dim != stored.dim
            else "different vectors from the stored ones")
    return (
        f"the configured embedding model {model_id} makes {what} (made by {stored.model}): "
        f"run `recallfs reindex` to re-embed every memory with the configured model, "
        f"or set RECALLFS_MODEL back to the model that made them"
    )


def check_model(cur: Cursor, model_id: str, dim: int) -> StoredModel | None:
    """Raise ModelMismatchError unless the store is empty of vectors or was embedded by this model."""
    stored = stored_model(cur)
    if stored is not None and (stored.model != model_id or stored.dim != dim):
        raise ModelMismatchError(mismatch_message(stored, model_id, dim))
    return stored


def adopt_model(cur: Cursor, model_id: str, dim: int) -> StoredModel:
    """Record this model as the store's (first embed), creating every partition's vectors table."""
    stored = check_model(cur, model_id, dim)
    if stored is not None:
        return stored
    store_uuid = meta_value(cur, META_UUID) or uuid.uuid4().hex
    set_meta(cur, META_UUID, store_uuid)
    set_meta(cur, META_MODEL, model_id)
    set_meta(cur, META_DIM, str(dim))
    epoch = int(meta_value(cur, META_EPOCH) or 0)
    set_meta(cur, META_EPOCH, str(epoch))
    for (schema,) in cur.execute("SELECT schema_name FROM main.partitions").fetchall():
        cur.execute(vectors_ddl(str(schema), dim))
    return StoredModel(model_id, dim, epoch, store_uuid)
