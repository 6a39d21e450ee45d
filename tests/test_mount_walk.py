"""A cold walk over many history/<id>/ and sessions/<s>/ directories (issue 13, cold walks).

Each such directory lists its memories' files with their sizes, so its listing renders them: the daemon
lists siblings in batches, one content load each. A walk should wait for the first batch only; the next
ones are built while it lists the current one (mount/dir_cache.py, read-ahead). Counted, not timed: the
daemon's `listing_batches_waited` (batches a request had to wait for) after a real `find`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, serve

from conftest import fact, turn

pytestmark = [needs_fuse, pytest.mark.mount]
FACTS = 1500  # history/ dirs: several times the first batch (mount/dir_cache.py BATCH_WINDOW = 256)
SESSIONS = 700
RECORDS = [fact(f"cold-{i}", f"cold walk fact {i} about the osprey ledger {i % 11}") for i in range(FACTS)] + [
    turn(f"2026-08-01-s{i:04d}", 0, "maya", f"session {i} turn about the osprey ledger") for i in range(SESSIONS)]


@pytest.fixture
def mounted(tmp_path: Path):
    yield from serve(tmp_path, RECORDS)


def test_a_cold_walk_waits_for_one_batch_of_each_kind(mounted: Mount) -> None:
    before = mounted.mount_info()["detail"]
    found = subprocess.run(["find", str(mounted.path), "-type", "f"], capture_output=True, text=True,
                           timeout=300, check=True).stdout.splitlines()
    rel = [Path(p).relative_to(mounted.path).parts for p in found]
    assert sum(1 for p in rel if p[0] == "history" and len(p) == 3) == FACTS + SESSIONS  # each listed whole
    assert sum(1 for p in rel if p[0] == "sessions" and p[2:3] == ("turns",)) == SESSIONS
    detail = mounted.mount_info()["detail"]
    waited = detail["listing_batches_waited"] - before.get("listing_batches_waited", 0)
    # history/<id>/ and sessions/<s>/: the first of each waits; every later batch was built ahead.
    assert waited <= 2, detail
    assert detail["listing_batches_ahead"] >= 2, detail
    assert detail["unexpected_errors"] == 0
