"""Versioned schema migrations.

Two kinds: store-wide ones (the `main` schema: catalog, sequences, stopwords) and partition ones,
applied to every partition schema. Each migration runs once, inside the caller's transaction, and
the version it reaches is recorded, so an old store is brought forward on open.
"""

from __future__ import annotations

from collections.abc import Callable

from recallfs.query.cursor import Cursor
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
        )


STORE_MIGRATIONS: list[Callable[[Cursor], None]] = [_store_v1, _store_v2]
PARTITION_MIGRATIONS: list[Callable[[Cursor, str], None]] = [_partition_v1, _partition_v2]
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
