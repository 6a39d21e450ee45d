"""A host's replica of a lake: the lake's log replayed, in commit order, into a single-file store.

Replaying is ingest itself (query/ingest.py), so a replica holds what a single-file store given the same
files in the same order would hold: versions, heads, policies. Ingest is idempotent, so a batch replayed
twice (a crash between its commit and the watermark's) changes nothing the second time, and a batch two
hosts both appended (the same file ingested on both at once) is written once.

The watermark, the last lake snapshot replayed, is kept in the replica's main.meta.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recallfs.query.embedder import Embedder
from recallfs.query.ingest import IngestReport, write_records
from recallfs.query.ingest_file import refresh_indexes
from recallfs.query.lake import Lake, LakeBatch
from recallfs.query.lake_vectors import store_batch_vectors
from recallfs.query.policies import remove_policy, set_policy
from recallfs.query.store import Store
from recallfs.query.vector_meta import meta_value, set_meta
from recallfs.scope.policy import ALL_AUTHORS, Policy
from recallfs.scope.principal import Principal

WATERMARK = "lake_snapshot"
LAKE_KEY = "lake_url"


class ReplicaMismatchError(RuntimeError):
    """The replica file was made from another lake."""


@dataclass(slots=True)
class CatchUp:
    snapshot: int  # the lake snapshot the replica now holds
    batches: int = 0
    report: IngestReport = field(default_factory=IngestReport)  # everything replayed, merged
    mine: IngestReport | None = None  # the batch asked about, when it was among them


def watermark(store: Store) -> int:
    value = meta_value(store.cursor(), WATERMARK)
    return int(value) if value is not None else 0


def bind(store: Store, lake: Lake) -> None:
    """Tie a new replica to its lake; refuse a replica of another lake (a reused --replica-dir)."""
    cur = store.cursor()
    url = meta_value(cur, LAKE_KEY)
    named = lake.location.describe()  # no password on disk; a new password is still the same lake
    if url is None:
        with store.transaction() as tx:
            set_meta(tx, LAKE_KEY, named)
    elif url != named:
        raise ReplicaMismatchError(f"{store.path} is the replica of another lake; remove it or choose "
                                   "another replica directory")


def catch_up(store: Store, lake: Lake, *, embedder: Embedder | None, mine: str | None = None) -> CatchUp:
    """Replay what the lake committed since the replica's watermark. Raises LakeUnavailable when the lake
    cannot be read (the replica is left as it was, and serves)."""
    since = watermark(store)
    upto = lake.snapshot()
    result = CatchUp(snapshot=max(since, upto))
    if upto <= since:
        return result
    for batch in lake.changes(since, upto):
        report = _replay(store, batch)
        result.batches += 1
        _merge(result.report, report)
        if batch.batch == mine:
            result.mine = report
    with store.transaction() as tx:
        set_meta(tx, WATERMARK, str(upto))
    if result.report.written:
        refresh_indexes(store, result.report, embedder=embedder)
    return result


def _replay(store: Store, batch: LakeBatch) -> IngestReport:
    report = write_records(store, batch.records) if batch.records else IngestReport()
    if batch.vectors and report.placed:
        store_batch_vectors(store, report.placed, batch.vectors)
    for change in batch.policies:
        principal = Principal(str(change["org"]), str(change["workspace"]), str(change["agent"]))
        if change["removed"]:
            remove_policy(store, principal)
        else:
            set_policy(store, principal, policy_of(change))
    return report


def policy_of(change: dict[str, Any]) -> Policy:
    authors = list(change["authors"] or [ALL_AUTHORS])
    return Policy(authors=None if ALL_AUTHORS in authors else tuple(authors),
                  visibilities=tuple(change["visibilities"] or ()), deny_kinds=tuple(change["deny_kinds"] or ()),
                  deny_tags=tuple(change["deny_tags"] or ()), writes=bool(change["writes"]))


def policy_change(principal: Principal, policy: Policy | None) -> dict[str, Any]:
    """A policy set (or removed, with None) as a row of the lake's policies log."""
    row: dict[str, Any] = {"org": principal.org, "workspace": principal.workspace, "agent": principal.agent,
                           "removed": policy is None}
    if policy is not None:
        row.update(authors=[ALL_AUTHORS] if policy.authors is None else list(policy.authors),
                   visibilities=list(policy.visibilities), deny_kinds=list(policy.deny_kinds),
                   deny_tags=list(policy.deny_tags), writes=policy.writes)
    return row


def _merge(into: IngestReport, report: IngestReport) -> None:
    into.read += report.read
    into.written += report.written
    into.unchanged += report.unchanged
    into.new_versions += report.new_versions
    into.historical += report.historical
    into.ahead += report.ahead
    if report.ahead_latest is not None:
        into.ahead_latest = max(into.ahead_latest or report.ahead_latest, report.ahead_latest)
    into.partitions |= report.partitions
    for key, rids in report.written_rids.items():
        into.written_rids.setdefault(key, []).extend(rids)
