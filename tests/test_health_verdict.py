"""The health verdict (mount/health.py), from a table: what the daemon knows -> ok / degraded / failing."""

from __future__ import annotations

from typing import Any

import pytest

from recallfs.mount.health import verdict
from recallfs.mount.vector_backlog import VectorBacklog

DEAD_INBOX = "the inbox process exited with status -9; starting it again"
RESTARTED = "the inbox process was started again 1 time(s), last at 2026-11-28T07:53:54 after it exited with status -9"


@pytest.mark.parametrize(("facts", "state", "problem", "note"), [
    ({}, "ok", None, None),
    ({"semantic_reason": "warming"}, "ok", None, None),  # transient: recall answers lexically meanwhile
    ({"semantic_reason": "error"}, "degraded", "the semantic arm is not running (error)", None),
    ({"recent_errors": 1, "last_error": "boom"}, "degraded", "1 unexpected error(s)", None),
    ({"recent_errors": 3, "last_error": "boom"}, "failing", "3 unexpected errors", None),
    ({"store": {"read_only": True}}, "degraded", "the store is served read-only", None),
    ({"store": {"broken": "fatal"}}, "failing", "invalidated by a DuckDB fatal error", None),
    ({"store": {"gone": "the store file /s was deleted while it was open"}}, "failing", "/s was deleted", None),
    # checkpoints stopped: it serves, but its writes will fail for memory (query/wal_guard.py)
    ({"store": {"wal_stuck": "the write-ahead log has grown to 80 MB and DuckDB cannot checkpoint it (x)"}},
     "degraded", "the write-ahead log has grown to 80 MB", None),
    # inbox/ that takes no writes is not ok, however well the rest serves; a restart is a note
    ({"inbox": (DEAD_INBOX, None)}, "degraded", f"inbox/ takes no writes: {DEAD_INBOX}", None),
    ({"inbox": (None, RESTARTED)}, "ok", None, RESTARTED),
    # rows left without vectors: degraded while the mount embeds them (or when it could not), then a note
    *[({"vectors": state}, "degraded" if state[0] else "ok", state[0], state[1]) for state in (
        VectorBacklog(waiting=3).state(), VectorBacklog(waiting=3, failure="no model").state(),
        VectorBacklog(embedded=3, finished_at="2026-11-28T11:00:00").state())],
])
def test_verdict(facts: dict[str, Any], state: str, problem: str | None, note: str | None) -> None:
    args: dict[str, Any] = {"store": {}, "recent_errors": 0, "last_error": None, "semantic_reason": None, **facts}
    got = verdict(**args)
    assert got.state == state
    assert (problem is None) == (not got.problems)
    if problem is not None:
        assert problem in got.line()
    assert (note in got.notes) if note else not any("inbox" in n or "vectors" in n for n in got.notes)
