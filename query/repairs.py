"""What this process found wrong with a derived index (FTS or FAISS) and rebuilt.

Derived indexes are rebuilt from DuckDB whenever they are found behind or damaged; each such repair is
logged as a warning and recorded here, so a long-lived daemon can say in its health report that it
happened (and why), rather than leaving it in a log nobody reads. Nothing here touches DuckDB: the
daemon reads it on its event loop.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

KEEP = 20  # the most recent repairs kept in full; the counts cover all of them


@dataclass(frozen=True, slots=True)
class Repair:
    index: str  # "fts" or "faiss"
    what: str  # "<org>/<workspace> <table>" (or the schema when the workspace is unknown)
    why: str  # what was wrong, e.g. "120 rows behind", "checksum mismatch"
    ok: bool = True  # False: the rebuild itself failed (the index is still behind or damaged)
    at: str = field(default_factory=lambda: datetime.now().isoformat(timespec="seconds"))


class RepairLog:
    """A bounded, thread-safe record of repairs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._recent: deque[Repair] = deque(maxlen=KEEP)
        self.counts: dict[str, int] = {}

    def record(self, repair: Repair) -> Repair:
        with self._lock:
            self._recent.append(repair)
            key = repair.index if repair.ok else f"{repair.index}_failed"
            self.counts[key] = self.counts.get(key, 0) + 1
        return repair

    def recent(self) -> list[Repair]:
        with self._lock:
            return list(self._recent)

    def latest_failed(self, index: str) -> list[Repair]:
        """The repairs of this kind of index whose latest record (per what) is a failure."""
        latest: dict[str, Repair] = {}
        for repair in self.recent():
            if repair.index == index:
                latest[repair.what] = repair
        return [r for r in latest.values() if not r.ok]


REPAIRS = RepairLog()  # every repair this process made


def index_health() -> dict[str, Any]:
    """For a health report: how many derived indexes this process rebuilt after finding them behind or
    damaged (per kind; `<kind>_failed` for rebuilds that failed), and the most recent ones."""
    with REPAIRS._lock:
        counts = dict(REPAIRS.counts)
    return {"index_repairs": counts, "recent_index_repairs": [asdict(r) for r in REPAIRS.recent()]}
