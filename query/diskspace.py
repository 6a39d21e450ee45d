"""Free space for the store's writes: check before writing, and recognise a full disk afterwards.

DuckDB 1.5.5 can abort the whole process (SIGABRT: "Failed to append to PRIMARY_heads_0 ... duplicate
key") when a commit fails for want of space in a transaction that deleted and re-inserted primary
keys, which every ingest does (it recomputes `heads`). No exception reaches Python then, so an ingest
first checks the free space against a generous estimate of what it will write (`write_need`,
`fts_need`, `vector_need`, measured from the WAL growth of real ingests). A failure that gets
through anyway (another process filled the disk meanwhile) is recognised by `is_disk_full`.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

MARGIN = 1 << 20  # the WAL's own overhead, the catalog, a checkpoint's slack
# WAL bytes per unit written, with headroom over what was measured on real stores:
STAGED_FACTOR = 2  # per byte of staged NDJSON (measured about 1)
HEAD_BYTES = 64  # per `heads` row of a touched workspace, deleted and re-inserted (measured 22)
FTS_FACTOR = 12  # per byte of text in a re-indexed table (measured 2.3 for prose, 8.4 for two-letter words)
VECTOR_BYTES = 4096  # per embedded row (a 384-d vector is 1.5 kB; 768-d models twice that)
_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")


def free_bytes(directory: Path) -> int:
    """Bytes this process may still write under `directory` (root may use the blocks kept for it)."""
    st = os.statvfs(directory)
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return int(blocks) * int(st.f_frsize)


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or during, says the disk is full. DuckDB
    reports it as text ("Could not write file ...: No space left on device") in several classes."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(current) for text in _FULL_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False


def write_need(staged_bytes: int, heads: int) -> int:
    """Free bytes an ingest's transaction needs: its rows, and the workspaces' heads rewritten."""
    return STAGED_FACTOR * staged_bytes + HEAD_BYTES * heads + MARGIN


def fts_need(text_bytes: int) -> int:
    """Free bytes rebuilding the full-text index of tables holding `text_bytes` of text needs."""
    return FTS_FACTOR * text_bytes + MARGIN


def vector_need(rows: int) -> int:
    return VECTOR_BYTES * rows + MARGIN


def size(n: int) -> str:
    """Bytes for people, to three figures: 812 bytes, 40.2 kB, 1.05 MB, 3.40 GB."""
    if n < 1000:
        return f"{n} bytes"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12)):
        value = n / scale
        if value < 999.5 or unit == "TB":
            decimals = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{decimals}f} {unit}"
    raise AssertionError("unreachable")
