"""Versioned schema migrations.

Two kinds: store-wide ones (the `main` schema: catalog, sequences, stopwords) and partition ones,
applied to every partition schema. Each migration runs once, inside the caller's transaction, and
the version it reaches is recorded, so an old store is brought forward on open.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from recallfs.query.cursor import Cursor
from recallfs.query.half_vectors import HALF_SQL, half_bits
from recallfs.query.search_forms import refold_search_text
from recallfs.query.stopwords import STOPWORDS

MEMORY_TABLES = ("facts", "summaries", "turns")

# One column set for all three tables keeps every query generic; table-specific columns stay NULL.
_MEMORY_COLUMNS = """
    rid BIGINT PRIMARY KEY,
    id VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    org VARCHAR NOT NULL,
    workspace VARCHAR NOT NULL,
    agent VARCHAR NOT NULL,
    visibility VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    content VARCHAR NOT NULL,
    search_text VARCHAR NOT NULL,
    tags VARCHAR[] NOT NULL,
    refs VARCHAR[] NOT NULL,
    session VARCHAR,
    source_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    ingested_at TIMESTAMP NOT NULL,
    status VARCHAR NOT NULL,
    superseded_by VARCHAR,
    supersedes VARCHAR,
    entity VARCHAR,
    slot VARCHAR,
    title VARCHAR,
    seq INTEGER,
    speaker VARCHAR,
    caption VARCHAR
"""


def _store_v1(conn: Cursor) -> None:
    conn.execute("CREATE SEQUENCE IF NOT EXISTS main.rid_seq START 1")
    conn.execute(
        """CREATE TABLE IF NOT EXISTS main.partitions (
            org VARCHAR NOT NULL, workspace VARCHAR NOT NULL, schema_name VARCHAR NOT NULL UNIQUE,
            schema_version INTEGER NOT NULL, created_at TIMESTAMP NOT NULL, PRIMARY KEY (org, workspace))"""
    )
    conn.execute("CREATE TABLE IF NOT EXISTS main.fts_stopwords (sw VARCHAR)")
    conn.execute("DELETE FROM main.fts_stopwords")
    conn.executemany("INSERT INTO main.fts_stopwords VALUES (?)", [[w] for w in sorted(STOPWORDS)])
    # Which rows each FTS index covers: rows above the watermark are searched by substring.
    conn.execute(
        """CREATE TABLE IF NOT EXISTS main.fts_state (
            schema_name VARCHAR NOT NULL, tbl VARCHAR NOT NULL, built_max_rid BIGINT NOT NULL,
            built_at TIMESTAMP NOT NULL, PRIMARY KEY (schema_name, tbl))"""
    )


def _store_v2(conn: Cursor) -> None:
    # Read policies (scope/policy.py). authors ['*'] means every author.
    conn.execute(
        """CREATE TABLE IF NOT EXISTS main.policies (
            org VARCHAR NOT NULL, workspace VARCHAR NOT NULL, agent VARCHAR NOT NULL,
            authors VARCHAR[] NOT NULL, visibilities VARCHAR[] NOT NULL,
            deny_kinds VARCHAR[] NOT NULL, deny_tags VARCHAR[] NOT NULL,
            updated_at TIMESTAMP NOT NULL, PRIMARY KEY (org, workspace, agent))"""
    )


def _store_v3(conn: Cursor) -> None:
    # The write side of a policy: whether the agent may remember through the mount's inbox/ (issue 17).
    # (DuckDB adds no column with a constraint: NULL reads as true, query/policies.py)
    conn.execute("ALTER TABLE main.policies ADD COLUMN IF NOT EXISTS writes BOOLEAN DEFAULT true")


def _partition_v1(conn: Cursor, schema: str) -> None:
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for table in MEMORY_TABLES:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {schema}.{table} ({_MEMORY_COLUMNS})")
    # Derived: which row is the current version of each memory. Rebuilt after every ingest batch;
    # memory rows themselves are never changed in place.
    conn.execute(f"CREATE TABLE IF NOT EXISTS {schema}.heads (rid BIGINT PRIMARY KEY, tbl VARCHAR NOT NULL)")


def _partition_v2(conn: Cursor, schema: str) -> None:
    # Embeddings (query/vectors.py): one row per memory row, FLOAT[d] at the store's dimension, which
    # main.meta records once a model has embedded. Before that, the first embed creates the table.
    conn.execute("CREATE TABLE IF NOT EXISTS main.meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    row = conn.execute("SELECT value FROM main.meta WHERE key = 'embed_dim'").fetchone()
    if row is not None:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.vectors (rid BIGINT PRIMARY KEY, tbl VARCHAR NOT NULL, "
            f"model VARCHAR NOT NULL, embedding FLOAT[{int(row[0])}] NOT NULL)"
        )  # the v2 shape: _partition_v3 brings it forward


def vectors_columns(dim: int) -> str:
    """The vectors table (query/vectors.py): one row per window of a memory (query/chunks.py), chunk 0
    the first; a memory that fits the model's input has chunk 0 only. `embedding` holds the vector's
    float16 bits (query/half_vectors.py)."""
    return (f"rid BIGINT NOT NULL, chunk SMALLINT NOT NULL, tbl VARCHAR NOT NULL, model VARCHAR NOT NULL, "
            f"embedding {HALF_SQL}[{int(dim)}] NOT NULL, PRIMARY KEY (rid, chunk)")


def _vectors_columns_v3(dim: int) -> str:
    # The v3 shape as released (float32 vectors): what _partition_v3 creates and _partition_v4 converts.
    return (f"rid BIGINT NOT NULL, chunk SMALLINT NOT NULL, tbl VARCHAR NOT NULL, model VARCHAR NOT NULL, "
            f"embedding FLOAT[{int(dim)}] NOT NULL, PRIMARY KEY (rid, chunk)")


def windows_pending_key(schema: str) -> str:
    """main.meta key set while a migrated partition's long rows have only their first window."""
    return f"embed_windows_pending:{schema}"


def _partition_v3(conn: Cursor, schema: str) -> None:
    # Long memories as windows (issue 14): the vectors table gains `chunk`. Its key changes from rid to
    # (rid, chunk), which DuckDB cannot alter in place, so the table is copied; every stored vector
    # becomes chunk 0 (the model read only a long memory's opening, which is what chunk 0 is). The
    # next embed or reindex adds the other windows of long rows (vectors.fill_windows).
    row = conn.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE schema_name = ? AND table_name = 'vectors' "
        "AND column_name IN ('rid', 'chunk')", [schema]).fetchone()
    if row is None or int(row[0]) != 1:
        return  # no vectors table yet (the first embed creates the new one), or already chunked
    dim = conn.execute(
        "SELECT value FROM main.meta WHERE key = 'embed_dim'").fetchone()
    if dim is None:
        return
    conn.execute(f"CREATE TABLE {schema}.vectors_v3 ({_vectors_columns_v3(int(dim[0]))})")
    conn.execute(f"INSERT INTO {schema}.vectors_v3 SELECT rid, 0, tbl, model, embedding FROM {schema}.vectors")
    moved = conn.execute(f"SELECT count(*) FROM {schema}.vectors_v3").fetchone()
    conn.execute(f"DROP TABLE {schema}.vectors")
    conn.execute(f"ALTER TABLE {schema}.vectors_v3 RENAME TO vectors")
    if moved and int(moved[0]):
        conn.execute("INSERT OR REPLACE INTO main.meta VALUES (?, 'pending')", [windows_pending_key(schema)])


_V4_BATCH = 8192  # rids converted per statement


def _partition_v4(conn: Cursor, schema: str) -> None:
    # Vectors as float16 (issue 15: half the disk; query/half_vectors.py), converted in numpy a rid range
    # at a time into a new table. The persisted indexes were built from the float32 vectors, so the epoch
    # moves and the next load rebuilds them from these (every copy then holds the same values). DuckDB
    # keeps the old table's blocks as free space in the file, which later writes reuse.
    row = conn.execute(
        "SELECT data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = 'vectors' "
        "AND column_name = 'embedding'", [schema]).fetchone()
    if row is None or not str(row[0]).startswith("FLOAT"):
        return  # no vectors table yet (the first embed creates the new one), or already converted
    dim = int(str(row[0]).split("[")[1].rstrip("]"))
    conn.execute(f"CREATE TABLE {schema}.vectors_v4 ({vectors_columns(dim)})")
    bounds = conn.execute(f"SELECT min(rid), max(rid) FROM {schema}.vectors").fetchone()
    low, high = (int(bounds[0]), int(bounds[1])) if bounds and bounds[0] is not None else (0, -1)
    for start in range(low, high + 1, _V4_BATCH):  # by rid range: DuckDB's zone maps skip the other row groups
        res = conn.execute(
            f"SELECT rid, chunk, tbl, model, embedding FROM {schema}.vectors WHERE rid >= ? AND rid < ?",
            [start, start + _V4_BATCH]).fetchnumpy()
        if len(res["rid"]):
            insert_vectors(conn, f"{schema}.vectors_v4", res["rid"], res["chunk"], res["tbl"], res["model"],
                           np.stack(list(res["embedding"])))
    conn.execute(f"DROP TABLE {schema}.vectors")
    conn.execute(f"ALTER TABLE {schema}.vectors_v4 RENAME TO vectors")
    epoch = conn.execute("SELECT value FROM main.meta WHERE key = 'embed_epoch'").fetchone()
    conn.execute("INSERT OR REPLACE INTO main.meta VALUES ('embed_epoch', ?)", [str(int(epoch[0]) + 1 if epoch else 1)])


def insert_vectors(
    conn: Cursor, target: str, rids: np.ndarray, chunks: np.ndarray, tbls: np.ndarray | str, models: np.ndarray | str,
    matrix: np.ndarray, *, replace: bool = False,
) -> None:
    """Insert rows of the vectors table into `target` (`schema.table` of vectors_columns' shape): row i is
    window chunks[i] of memory rids[i], its vector matrix[i] stored as float16 bits. `replace`: delete
    the rows of these rids first (a batch holds every window of its memories). DuckDB scans registered
    numpy columns in place (~30k rows/s); binding nested Python lists as parameters manages ~50 rows/s."""
    n, dim = matrix.shape
    bits = half_bits(matrix)
    batch = {"rid": np.ascontiguousarray(rids, dtype=np.int64), "chunk": np.asarray(chunks, dtype=np.int16),
             "tbl": _labels(tbls, n), "model": _labels(models, n),
             **{f"e{j}": np.ascontiguousarray(bits[:, j]) for j in range(dim)}}
    view = "recallfs_vector_batch"
    conn.register(view, batch)
    try:
        if replace:
            conn.execute(f"DELETE FROM {target} WHERE rid IN (SELECT rid FROM {view})")
        cols = ", ".join(f"e{j}" for j in range(dim))
        conn.execute(f"INSERT INTO {target} SELECT rid, chunk, tbl, model, [{cols}]::{HALF_SQL}[{dim}] FROM {view}")
    finally:
        conn.unregister(view)


def _labels(value: np.ndarray | str, n: int) -> np.ndarray:
    """A text column as a numpy unicode array. Not dtype=object: DuckDB then tries `import pandas` for
    every value it scans (8 failed imports each), which cost an ingest of 2,000 rows about 2.4 s."""
    return np.full(n, value) if isinstance(value, str) else np.asarray(value, dtype=str)


STORE_MIGRATIONS: list[Callable[[Cursor], None]] = [_store_v1, _store_v2, _store_v3]
def _partition_v5(conn: Cursor, schema: str) -> None:
    refold_search_text(conn, schema, MEMORY_TABLES)  # compatibility forms indexed as plain letters


PARTITION_MIGRATIONS: list[Callable[[Cursor, str], None]] = [
    _partition_v1, _partition_v2, _partition_v3, _partition_v4, _partition_v5,
]
STORE_VERSION = len(STORE_MIGRATIONS)
PARTITION_VERSION = len(PARTITION_MIGRATIONS)


def store_version(conn: Cursor) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS main.meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    row = conn.execute("SELECT value FROM main.meta WHERE key = 'store_version'").fetchone()
    return int(row[0]) if row else 0


def migrate_store(conn: Cursor) -> int:
    """Bring the store-wide schema, then every partition, to the current version. Returns steps run."""
    steps = 0
    current = store_version(conn)
    if current > STORE_VERSION:
        raise RuntimeError(
            f"this store has schema version {current}, newer than this recallfs ({STORE_VERSION}); upgrade recallfs"
        )
    for version in range(current, STORE_VERSION):
        STORE_MIGRATIONS[version](conn)
        steps += 1
    conn.execute(
        "INSERT OR REPLACE INTO main.meta VALUES ('store_version', ?)", [str(STORE_VERSION)]
    )
    rows = conn.execute("SELECT schema_name, schema_version FROM main.partitions").fetchall()
    for schema, version in rows:
        for step in range(version, PARTITION_VERSION):
            PARTITION_MIGRATIONS[step](conn, schema)
            steps += 1
        if version < PARTITION_VERSION:
            conn.execute(
                "UPDATE main.partitions SET schema_version = ? WHERE schema_name = ?", [PARTITION_VERSION, schema]
            )
    return steps


def create_partition(conn: Cursor, schema: str) -> None:
    for step in range(PARTITION_VERSION):
        PARTITION_MIGRATIONS[step](conn, schema)
