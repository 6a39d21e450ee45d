"""The daemon's health verdict: whether it can serve, said plainly, for `recallfs status` and index.md.

Pure: `verdict(...)` turns what the daemon knows into one state and the sentences behind it.
- failing: the daemon cannot serve (the database is invalidated and could not be reopened, or requests
  keep failing unexpectedly);
- degraded: it serves, with something missing (an index behind, the semantic arm failing, an
  unexpected error a moment ago);
- ok: neither. A reopen after a DuckDB fatal error that succeeded is reported as a note, not a problem:
  nothing was lost (committed data is in the store's write-ahead log) and the daemon serves.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ERROR_WINDOW_S = 60.0  # unexpected errors are counted over this window
FAILING_ERRORS = 3  # this many in the window: failing (one or two: degraded)
# Semantic-arm states that mean something is broken, rather than chosen (off) or transient (warming).
SEMANTIC_PROBLEMS = frozenset({"error", "model-missing"})


@dataclass(slots=True)
class Verdict:
    state: str  # ok | degraded | failing
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "problems": list(self.problems), "notes": list(self.notes)}

    def line(self) -> str:
        """'ok', or the state and its problems in one line."""
        return self.state if not self.problems else f"{self.state}: {'; '.join(self.problems)}"

    def digest(self) -> tuple[str, ...]:
        """Everything index.md shows of it."""
        return (self.line(), *self.notes)


class ErrorWindow:
    """Timestamps of recent unexpected errors (trio thread only)."""

    def __init__(self, window_s: float = ERROR_WINDOW_S) -> None:
        self.window_s = window_s
        self._times: deque[float] = deque()

    def add(self, now: float | None = None) -> None:
        self._times.append(time.monotonic() if now is None else now)

    def count(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        while self._times and now - self._times[0] > self.window_s:
            self._times.popleft()
        return len(self._times)


def _when(ts: float | None) -> str:
    if ts is None:
        return "?"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def index_state(repairs: Iterable[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(problems, notes) from the derived-index repairs of this process (query/repairs.py), oldest first:
    an index whose latest rebuild failed is a problem; one that was rebuilt is a note."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for repair in repairs:
        latest[(repair["index"], repair["what"])] = repair
    problems, notes = [], []
    for (index, what), repair in latest.items():
        name = "full-text" if index == "fts" else "FAISS" if index == "faiss" else index
        if repair["ok"]:
            notes.append(f"rebuilt the {name} index of {what} at {repair['at']} ({repair['why']})")
        else:
            problems.append(_unrebuilt(index, name, what, str(repair["why"])))
    return problems, notes


def _unrebuilt(index: str, name: str, what: str, why: str) -> str:
    if index == "fts":  # its rows stay findable (query/fts_delta.py), and a write rebuilds what it touched
        return (f"the full-text index of {what} could not be rebuilt ({why}); recall finds the rows it lacks "
                "from an in-memory delta meanwhile, and the next write to that table or the mount's next start "
                "rebuilds it")
    return f"the {name} index of {what} is unusable ({why}); `recallfs reindex` rebuilds it"


def store_problems(store: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(failing, degraded) from the store's state (verdict's `store`)."""
    failing: list[str] = []
    degraded: list[str] = []
    if store.get("failed"):
        failing.append(str(store["failed"]))
    elif store.get("broken"):
        failing.append(f"the database was invalidated by a DuckDB fatal error ({store['broken']}); reopening it")
    if store.get("gone"):  # the path names another file, or none (query/store_file.py)
        failing.append(str(store["gone"]))
    if store.get("wal_stuck"):  # checkpoints stopped: writes will fail for memory (query/wal_guard.py)
        degraded.append(str(store["wal_stuck"]))
    if store.get("stale"):  # a replica whose lake is unreachable: it serves what it holds
        degraded.append(str(store["stale"]))
    if store.get("read_only"):
        degraded.append("the store is served read-only (its file system or file is not writable): browsing "
                        "and recall work, ingest is refused")
    return failing, degraded


def verdict(
    *,
    store: dict[str, Any],
    recent_errors: int,
    last_error: str | None,
    semantic_reason: str | None,
    semantic_stuck_s: float = 0.0,
    repairs: Iterable[dict[str, Any]] = (),
    inbox: tuple[str | None, str | None] = (None, None),
    vectors: tuple[str | None, str | None] = (None, None),
) -> Verdict:
    """`store`: StoreHealth.as_dict() plus `broken` (the fatal error not yet recovered from, if any) and
    `stale` (why a lake's replica may lack the newest writes)."""
    failing, degraded = store_problems(store)
    notes: list[str] = []
    if recent_errors >= FAILING_ERRORS:
        failing.append(f"{recent_errors} unexpected errors in the last {ERROR_WINDOW_S:.0f} s (last: {last_error})")
    elif recent_errors:
        degraded.append(f"{recent_errors} unexpected error(s) in the last {ERROR_WINDOW_S:.0f} s "
                        f"(last: {last_error})")
    if semantic_reason in SEMANTIC_PROBLEMS:
        degraded.append(f"the semantic arm is not running ({semantic_reason}); recall is lexical only")
    elif semantic_reason == "warming" and semantic_stuck_s:
        degraded.append(f"the embedding model has been loading for {semantic_stuck_s:.0f} s, past "
                        "RECALLFS_MODEL_LOAD_TIMEOUT_S (a hung file system?); recall is lexical only")
    index_problems, index_notes = index_state(repairs)
    degraded.extend(index_problems)
    inbox_problem, inbox_note = inbox  # why inbox/ takes no writes now; that its process was started again
    if inbox_problem:
        degraded.append(f"inbox/ takes no writes: {inbox_problem}")
    vectors_problem, vectors_note = vectors  # rows left without vectors, embedded at start (vector_backlog.py)
    if vectors_problem:
        degraded.append(vectors_problem)
    if store.get("reopens"):
        notes.append(f"reopened the database {store['reopens']} time(s) after a DuckDB fatal error "
                     f"(last at {_when(store.get('last_fatal_at'))}: {store.get('last_fatal')}); nothing was lost")
    notes.extend(index_notes)
    notes.extend(note for note in (inbox_note, vectors_note) if note)
    state = "failing" if failing else "degraded" if degraded else "ok"
    return Verdict(state, failing + degraded, notes)
