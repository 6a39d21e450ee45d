"""What an ingested record does to its memory: nothing, a new head, or a historical version.

Versions are append-only and numbered in order of arrival (`version` 1, 2, 3, ...). Which version is
the memory's head is decided by time, not by arrival: the newest `created_at`, and among versions
with the same `created_at` the one that arrived last. So:

- a record equal to any stored version of its memory (the same content hash: content, status,
  `created_at` and every other field) writes nothing;
- a record older than the memory's newest version is written as a historical version and never
  becomes the head;
- a `deleted` or `superseded` head stays so until a record at least as new says otherwise;
- a fact that becomes the head and names neither link (`supersedes`, `superseded_by`) keeps the head's
  links: an older export that did not carry them must not bring back what a link retired, and a record
  that says them is, with them, often a version already stored (query/ingest._decide).

`created_at` is required by every importer, so every version has a time. Pure: tested from tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

__all__ = ["CLOCK_SKEW", "MemoryVersions", "Outcome", "dated_ahead", "decide", "is_newer", "overtakes_by_tie"]
# How far past this machine's clock a record may be dated before ingest says so: clocks of the hosts
# that write a memory differ by seconds, not minutes.
CLOCK_SKEW = timedelta(minutes=5)


class Outcome(Enum):
    UNCHANGED = "unchanged"  # equal to a stored version: nothing is written
    NEW = "new"  # the memory's first version
    HEAD = "head"  # a new version that is the memory's newest
    HISTORICAL = "historical"  # a new version older than the memory's newest: history only


@dataclass(slots=True)
class MemoryVersions:
    """What ingest knows of one memory's stored versions (and those accepted earlier in the batch)."""

    hashes: set[str] = field(default_factory=set)
    max_version: int = 0
    newest: datetime | None = None  # created_at of the head by time
    head_version: int = 0  # the head's version number
    head_links: tuple[str | None, str | None] = (None, None)  # the head's (supersedes, superseded_by)

    def add(self, content_hash: str, version: int, created_at: datetime,
            links: tuple[str | None, str | None] = (None, None)) -> None:
        """Versions are added in order of arrival, so a tie in time goes to the later one, as in the store."""
        self.hashes.add(content_hash)
        self.max_version = max(self.max_version, version)
        if self.newest is None or created_at >= self.newest:
            self.newest = created_at
            self.head_links = links
            self.head_version = version


def is_newer(created_at: datetime, newest: datetime | None) -> bool:
    """Whether a version made at `created_at` becomes the head over one made at `newest`. A tie goes
    to the record that arrives later: it restates or corrects the same moment."""
    return newest is None or created_at >= newest


def decide(known: MemoryVersions | None, content_hash: str, created_at: datetime, *,
           as_written: str | None = None) -> Outcome:
    """`as_written`: the record's hash before its labels were normalized, which an older store may hold."""
    if known is None or known.max_version == 0:
        return Outcome.NEW
    if content_hash in known.hashes or as_written in known.hashes:
        return Outcome.UNCHANGED
    return Outcome.HEAD if is_newer(created_at, known.newest) else Outcome.HISTORICAL


def overtakes_by_tie(known: MemoryVersions | None, copied_version: int | None, created_at: datetime) -> bool:
    """Whether a copy of version `copied_version` (an older version's file, edited and written back with
    its date) would become the head only by the tie rule: it is dated as the head, which is another
    version. Versions edited by copying keep their date, so all of a memory's versions may share one;
    such a copy would silently replace the current text with an edit of an older one."""
    return (known is not None and copied_version is not None and known.newest == created_at
            and known.head_version not in (0, copied_version))


def dated_ahead(created: Iterable[datetime], now: datetime) -> tuple[int, datetime | None]:
    """How many of these times (naive UTC) lie past `now` by more than CLOCK_SKEW, and the latest. Such a
    record is still stored as written (synthetic or imported sets are dated ahead on purpose), but as the
    newest of its memory or slot it stays current until a newer-dated one arrives: a fact written now
    (an `inbox/` file, say) does not replace it, so ingest says so."""
    ahead = [t for t in created if t > now + CLOCK_SKEW]
    return len(ahead), max(ahead, default=None)
