"""Each turn's neighbours in its session, derived once per store generation (rids and speaker codes, no
content), for the stages that look beside a hit: replies (query/replies.py) and context
(query/context.py).

A session's turns are ordered by time, then `seq`, then rid. The order ignores the gate: callers walk
a chain of neighbours and pass it through `authorize_in_store` before they use any of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.derived import store_state
from recallfs.query.gate import authorize_in_store
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall_scope import Scope
from recallfs.scope.principal import Principal

# How far past unreadable turns a neighbour is looked for: the nearest turn the caller may read, within
# this many.
MAX_SKIP = 8


@dataclass(frozen=True, slots=True)
class TurnOrder:
    """Every current turn's neighbours in its session. Indexed by rid: -1 where there is none."""

    after: np.ndarray  # rid -> the next turn's rid
    before: np.ndarray  # rid -> the previous turn's rid
    speaker: np.ndarray  # rid -> its speaker's code (equal codes: the same speaker; -1: none)

    def next_of(self, rid: int) -> int:
        return int(self.after[rid]) if 0 <= rid < len(self.after) else -1

    def previous_of(self, rid: int) -> int:
        return int(self.before[rid]) if 0 <= rid < len(self.before) else -1

    def speaker_of(self, rid: int) -> int:
        return int(self.speaker[rid]) if 0 <= rid < len(self.speaker) else -1


def nearest_readable(scope: Scope, principal: Principal, options: RecallOptions, rids: Iterable[int], *,
                     forward: bool) -> dict[int, int]:
    """rid -> the nearest turn after (or before) it in its session that `principal` may read with the
    request's filters, within MAX_SKIP turns. Each round gates one step of every walk at once, so a
    session the caller reads whole costs one gate call."""
    order = turn_order(scope)
    step = order.next_of if forward else order.previous_of
    found: dict[int, int] = {}
    probe = {rid: step(rid) for rid in rids}
    for _ in range(MAX_SKIP):
        probe = {rid: at for rid, at in probe.items() if at >= 0}
        if not probe:
            break
        allowed = authorize_in_store(scope.store, principal, scope.schema, "turns", probe.values(), options)
        found.update((rid, at) for rid, at in probe.items() if at in allowed)
        probe = {rid: step(at) for rid, at in probe.items() if at not in allowed}
    return found


def turn_order(scope: Scope) -> TurnOrder:
    """The partition's order, from the cache while the store's generation holds."""
    return _ORDER.get_or_compute((str(scope.store.path), *store_state(scope.store), scope.schema),
                                 lambda: _derive(scope))


def _derive(scope: Scope) -> TurnOrder:
    """One query; DuckDB orders each session and codes the speakers (65k turns: about 170 ms when this
    was a Python loop over the rows)."""
    window = "OVER (PARTITION BY session ORDER BY created_at, coalesce(seq, 0), rid)"
    cols = scope.store.cursor().execute(
        f"""SELECT rid, coalesce(lead(rid) {window}, -1) AS after, coalesce(lag(rid) {window}, -1) AS before,
                   CASE WHEN speaker IS NULL THEN -1 ELSE dense_rank() OVER (ORDER BY speaker) END AS speaker
            FROM {scope.schema}.turns
            WHERE session IS NOT NULL AND rid IN (SELECT rid FROM {scope.schema}.heads)""").fetchnumpy()
    rids = np.asarray(cols["rid"], dtype=np.int64)
    size = int(rids.max()) + 1 if len(rids) else 0
    arrays = {name: np.full(size, -1, dtype=np.int64) for name in ("after", "before", "speaker")}
    for name, array in arrays.items():
        array[rids] = np.asarray(cols[name], dtype=np.int64)
    return TurnOrder(arrays["after"], arrays["before"], arrays["speaker"])


_ORDER: LruCache[tuple[Any, ...], TurnOrder] = LruCache(64)
