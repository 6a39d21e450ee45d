"""The store backend seam: where writes are committed, and where other hosts' writes come from.

Every store is read through a single-file DuckDB Store, so the query, ranking and scope code never
knows which backend is in use:
- `FileBackend`: the store is the file; a write goes straight to it, and nothing else writes.
- `LakeBackend`: the store is this host's replica of a DuckLake store (query/lake_replica.py). A write
  is committed to the lake, then replayed here; `sync` replays what other hosts committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from recallfs.query.ingest import IngestReport, changing
from recallfs.query.ingest_file import Progress, ingest_records
from recallfs.query.lake_location import LakeLocation, is_lake, parse_lake
from recallfs.query.lake_vectors import embed_records
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.scope.policy import Policy
from recallfs.scope.principal import Principal

if TYPE_CHECKING:
    from recallfs.query.embedder import Embedder
    from recallfs.query.lake import Lake
    from recallfs.query.lake_replica import CatchUp

log = logging.getLogger(__name__)
T = TypeVar("T")
STALL_S = 10.0  # a poll's catalog query that waits this long: the lake counts as down (`stalled`)


class Backend(Protocol):
    kind: str

    def attach(self, store: Store, *, embedder: Embedder | None) -> None: ...

    def ingest(self, store: Store, records: list[MemoryRecord], *, embedder: Embedder | None,
               progress: Progress | None = None, own_part: int | None = None) -> IngestReport:
        """`own_part`: embed at most this many of the batch's own rows and leave the rest to the caller
        (ingest_file.ingest_records); a backend that embeds a batch before committing it ignores it."""
        ...

    def sync(self, store: Store, *, embedder: Embedder | None) -> IngestReport | None: ...

    def problem(self) -> str | None: ...

    def describe(self) -> dict[str, object]: ...

    def close(self) -> None: ...


class FileBackend:
    kind = "file"

    def attach(self, store: Store, *, embedder: Embedder | None) -> None:
        pass

    def ingest(self, store: Store, records: list[MemoryRecord], *, embedder: Embedder | None,
               progress: Progress | None = None, own_part: int | None = None) -> IngestReport:
        return ingest_records(store, records, progress=progress, embedder=embedder, own_part=own_part)

    def sync(self, store: Store, *, embedder: Embedder | None) -> IngestReport | None:
        return None

    def problem(self) -> str | None:
        return None

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind}

    def close(self) -> None:
        pass


class LakeBackend:
    kind = "ducklake"

    def __init__(self, location: LakeLocation, lake: Lake | None = None) -> None:
        from recallfs.query.lake import Lake

        self.location = location
        self.lake = lake or Lake(location)
        self.snapshot = 0  # what the replica holds
        self.unreachable: str | None = None  # why the last call to the lake failed, until one succeeds
        self.unreachable_since: float | None = None
        self.replay_failed: str | None = None  # why the last replay failed (the lake answered), until one succeeds
        self.synced_at: float | None = None
        self.polling_since: float | None = None  # monotonic start of the poll in flight (`stalled`)

    def _call(self, store: Store, fn: Callable[[], T]) -> T:
        """fn() against the lake, keeping whether the lake answers (`problem`, and the replica's `stale`
        that recall reports)."""
        from recallfs.query.lake import LakeUnavailable

        try:
            done = fn()
        except LakeUnavailable as exc:
            if self.unreachable is None:
                self.unreachable_since = time.time()
                log.info("%s", exc)  # the daemon's follow loop warns; a command's error line says it
            self.unreachable = str(exc)
            raise
        finally:
            store.stale = self.problem()
        if self.unreachable is not None:
            log.info("the lake answers again")
        self.unreachable = self.unreachable_since = None
        store.stale = self.problem()
        return done

    def _catch_up(self, store: Store, embedder: Embedder | None, mine: str | None = None) -> CatchUp:
        """Replay what is new. A replay that fails with the lake answering (a full disk, a damaged batch)
        leaves the replica behind, and `problem` says so until a replay succeeds."""
        from recallfs.query.lake import LakeUnavailable
        from recallfs.query.lake_replica import catch_up

        try:
            done = self._call(store, lambda: catch_up(store, self.lake, embedder=embedder, mine=mine))
        except LakeUnavailable:
            raise
        except Exception as exc:
            self.replay_failed = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc) else ''}"
            store.stale = self.problem()
            raise
        self.replay_failed = None
        self.snapshot, self.synced_at = done.snapshot, time.time()
        store.stale = self.problem()
        return done

    def attach(self, store: Store, *, embedder: Embedder | None) -> None:
        """Tie `store` to this lake and replay it. A lake that cannot be reached, or a replay that fails,
        leaves the replica as it is, serving what it holds (`problem` says why)."""
        from recallfs.query.lake_replica import bind, watermark

        bind(store, self.lake)
        store.stale_probe = self.stalled
        self.snapshot = watermark(store)
        try:
            self.sync(store, embedder=embedder)
        except Exception:
            log.info("serving this host's copy as it is: %s", self.problem())

    def ingest(self, store: Store, records: list[MemoryRecord], *, embedder: Embedder | None,
               progress: Progress | None = None, own_part: int | None = None) -> IngestReport:
        """Commit the records that would change the store to the lake as one batch, then replay the lake
        here. Unchanged records are not appended, so re-ingesting a file does not grow the lake. The batch
        brings its vectors (every host reads them), so it is embedded whole: `own_part` does not apply."""
        from recallfs.query.lake import CommitUnknown, LakeUnavailable, new_batch_id

        batch = new_batch_id()
        stalled = self.stalled()
        if stalled is not None:  # a call holds the lake's connection: this would wait as long as it does
            raise LakeUnavailable(f"{stalled}; nothing was written")
        try:
            self._catch_up(store, None)
            fresh = changing(store, records)
            if fresh:
                vectors = embed_records(embedder, fresh)  # only this host embeds the batch
                self._call(store, lambda: self.lake.append_records(fresh, batch, vectors))
        except CommitUnknown:
            raise
        except LakeUnavailable as exc:
            raise LakeUnavailable(f"{exc}; nothing was written") from None
        try:
            done = self._catch_up(store, embedder, mine=batch)
        except LakeUnavailable as exc:
            raise LakeUnavailable(f"the batch is committed to the lake, but this host's copy could not replay it "
                                  f"({exc}); it catches up once the lake answers") from None
        report = done.mine or IngestReport()
        report.read = len(records)
        report.unchanged += len(records) - len(fresh)
        report.partitions |= {(r.org, r.workspace) for r in records}
        if progress:
            progress(len(records), len(records))
        return report

    def commit_policy(self, principal: Principal, policy: Policy | None) -> None:
        """Set `principal`'s policy (or remove it: None) on every host: committed to the lake, and replayed
        by each replica in commit order. Needs no replica here, so it works while a mount holds it."""
        from recallfs.query.lake import new_batch_id
        from recallfs.query.lake_replica import policy_change

        self.lake.append_policy(policy_change(principal, policy), new_batch_id())

    def sync(self, store: Store, *, embedder: Embedder | None) -> IngestReport | None:
        """Replay what other hosts committed; None when there was nothing new."""
        done = self._catch_up(store, embedder)
        return done.report if done.batches else None

    def lake_moved(self, store: Store) -> bool:
        """Whether the lake holds a snapshot this replica has not replayed (one small catalog query);
        raises LakeUnavailable."""
        self.polling_since = time.monotonic()
        try:
            return self._call(store, self.lake.snapshot) > self.snapshot
        finally:
            self.polling_since = None

    def stalled(self) -> str | None:
        """Why the lake counts as down though no query failed: the poll's one small catalog query, or any
        other call to the lake (a replay's reads, a commit), has waited STALL_S or more (found 2026-12-07: a
        PostgreSQL that hangs, unlike one that is stopped, fails nothing, so health said ok while an inbox
        write waited 600 s for an answer; and a hang during a replay, which holds the writer, was missed
        until every call counted)."""
        starts = [s for s in (self.polling_since, self.lake.busy_since) if s is not None]
        waited = time.monotonic() - min(starts) if starts else 0.0
        if waited < STALL_S:
            return None
        return (f"the shared lake has not answered for {waited:.0f} s (a query to its catalog is still "
                f"waiting); answers come from this host's copy as of lake snapshot {self.snapshot}, and "
                "ingest is refused until it answers")

    def problem(self) -> str | None:
        """Why this host's copy may lack the lake's newest writes (None: it is current). A poll that
        hangs is told by `stalled`, which the store asks live (Store.stale_probe)."""
        if self.unreachable is not None:
            since = time.strftime("%H:%M:%S", time.localtime(self.unreachable_since or time.time()))
            return (f"the shared lake is unreachable since {since} ({self.unreachable}); answers come from this "
                    f"host's copy as of lake snapshot {self.snapshot}, and ingest is refused")
        if self.replay_failed is not None:
            return (f"this host's copy could not replay the lake past snapshot {self.snapshot} "
                    f"({self.replay_failed}); answers come from that copy, and each poll tries again")
        return None

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "lake": self.location.describe(), "snapshot": self.snapshot,
                "synced_at": self.synced_at, "degraded": self.problem() is not None,
                "degraded_reason": self.problem()}

    def close(self) -> None:
        self.lake.close()


def backend_for(store: str) -> Backend:
    return LakeBackend(parse_lake(store)) if is_lake(store) else FileBackend()
