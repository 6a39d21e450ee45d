"""Keep the store's write-ahead log folded in, and say so when DuckDB cannot.

DuckDB checkpoints by itself at a commit once the WAL passes its `checkpoint_threshold` (16 MB), but
not while another connection holds a transaction open and the commit updated rows, which every ingest
does (`main.fts_state`, `main.meta`). Until a checkpoint, what the WAL holds stays in DuckDB's memory:
a daemon whose checkpoints stopped ran out of memory after some 450 one-fact writes into a 30k store,
and refused every write after that. query/cursor.py removes the cause we found (results left unread);
this is the guard for any other: after a commit, a WAL past `CHECK_BYTES` is checkpointed here, and a
checkpoint that fails is reported (StoreHealth.wal_stuck, a degraded verdict) until one succeeds.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import duckdb

from recallfs.query.cursor import Cursor

log = logging.getLogger("recallfs")

CHECK_BYTES = 64 << 20  # four times DuckDB's own threshold: below it, DuckDB's checkpoints are trusted


def wal_bytes(store_path: Path) -> int:
    try:
        return os.path.getsize(f"{store_path}.wal")
    except OSError:
        return 0


def fold_wal(cur: Cursor, store_path: Path, check_bytes: int = CHECK_BYTES) -> str | None:
    """After a commit on `cur`: checkpoint when the WAL is past `check_bytes`. Returns why the WAL
    stays large (a failed checkpoint), or None when it is small or was folded in."""
    size = wal_bytes(store_path)
    if size <= check_bytes:
        return None
    try:
        cur.execute("CHECKPOINT")
    except duckdb.Error as exc:
        why = (f"the write-ahead log has grown to {size >> 20} MB and DuckDB cannot checkpoint it "
               f"({str(exc).splitlines()[0]}); writes will fail for memory if it keeps growing")
        log.warning("%s", why)
        return why
    log.info("checkpointed a %d MB write-ahead log that DuckDB had not folded in", size >> 20)
    return None
