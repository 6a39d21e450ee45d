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
        VectorBacklog(waiting=3, failure="the disk holding /s is full (1 MB free)", retry=True).state(),
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


def test_a_backlog_stopped_by_a_full_disk_says_its_cause_and_when_it_tries_again() -> None:
    """Found 2026-12-07: the line was an ingest's message cut at 200 characters ("0 written, 0 unchanged ...
    but no") and named `recallfs reindex`, which a mounted store refuses."""
    problem, _ = VectorBacklog(waiting=3, failure="the disk holding /s is full (1 MB free)", retry=True).state()
    assert problem is not None and problem.endswith(
        "(embedding them failed: the disk holding /s is full (1 MB free)); the mount tries again every minute "
        "and after each write")
    assert "reindex" not in problem


def test_an_fts_rebuild_that_failed_says_the_rows_are_still_found() -> None:
    from recallfs.mount.health import index_state

    failed = {"index": "fts", "what": "acme/proj facts", "why": "1 row behind; rebuild failed: disk full",
              "ok": False, "at": "t"}
    problems, _ = index_state([failed])
    assert problems == ["the full-text index of acme/proj facts could not be rebuilt (1 row behind; rebuild "
                        "failed: disk full); recall finds the rows it lacks from an in-memory delta meanwhile, "
                        "and the next write to that table or the mount's next start rebuilds it"]
    problems, notes = index_state([failed, {**failed, "ok": True, "why": "rebuilt after a rebuild that had failed"}])
    assert problems == [] and notes
