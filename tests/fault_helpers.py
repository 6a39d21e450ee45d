"""Real faults for the fault tests: a DuckDB database invalidated by a real internal error."""

from __future__ import annotations

from pathlib import Path

from recallfs.query import diskspace
from recallfs.query.store import Store

# DuckDB 1.5.5 fails, intermittently, on a windowed aggregate over a semi-join ("INTERNAL Error: Attempted
# to access index 0 within vector of size 0") and then invalidates the database for every connection.
# recallfs no longer issues such a query (query/shaping.py); the tests use it to cause the real fault.
INVALIDATING_QUERY = "SELECT m.id, count(*) OVER () FROM {s}.facts m WHERE m.rid IN (SELECT rid FROM {s}.heads)"


def invalidate(store: Store, schema: str, tries: int = 200_000) -> str:
    """Run the invalidating query on `store` until DuckDB invalidates the database; the error's text."""
    cur = store.cursor()
    for _ in range(tries):
        try:
            cur.execute(INVALIDATING_QUERY.format(s=schema)).fetchall()
        except Exception as exc:  # the first failure is the internal error itself
            assert store.broken is not None, f"a failure that did not invalidate the database: {exc!r}"
            return str(exc)
    raise AssertionError("DuckDB no longer fails on the invalidating query; find another real trigger for "
                         "tests/fault_helpers.py")


def fill(mnt: Path, leave: int) -> Path:
    """Take the tmpfs's free space down to `leave` bytes with a real file; delete it to free them."""
    filler = mnt / "filler"
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(diskspace.free_bytes(mnt) - leave, 0))
    return filler
