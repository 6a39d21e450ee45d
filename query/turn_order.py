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
from recallfs.query.derived import by_table_generation, table_state
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
                     sides: tuple[bool, ...] = (True,)) -> list[dict[int, int]]:
    """For each side (True: after, False: before), rid -> the nearest turn on that side in its session
    that `principal` may read with the request's filters, within MAX_SKIP turns. Each round gates one
    step of every walk at once, so a session the caller reads whole costs one gate call."""
    order = turn_order(scope)
    wanted = np.fromiter(rids, dtype=np.int64)
    owner = np.tile(wanted, len(sides))
    side = np.repeat(np.arange(len(sides)), len(wanted))
    forward = np.array(sides, dtype=bool)[side]
    at = _step(order, owner, forward)
    found: list[dict[int, int]] = [{} for _ in sides]
    for _ in range(MAX_SKIP):
        live = at >= 0
        owner, side, forward, at = owner[live], side[live], forward[live], at[live]
        if not len(at):
            break
        allowed = authorize_in_store(scope.store, principal, scope.schema, "turns", at.tolist(), options)
        ok = np.fromiter((r in allowed for r in at.tolist()), dtype=bool, count=len(at))
        for who, which, where in zip(owner[ok].tolist(), side[ok].tolist(), at[ok].tolist(), strict=True):
            found[which][who] = where
        keep = ~ok
        owner, side, forward = owner[keep], side[keep], forward[keep]
        at = _step(order, at[keep], forward)
    return found


def _step(order: TurnOrder, at: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Each walk's next turn (after where `forward`, else before); -1 past a session's end."""
    size = len(order.after)
    inside = (at >= 0) & (at < size)
    safe = np.where(inside, at, 0)
    return np.where(inside, np.where(forward, order.after[safe], order.before[safe]), -1)


def turn_order(scope: Scope) -> TurnOrder:
    """The partition's order, from the cache while the store's generation holds."""
    # the turns' rows and heads alone: a write of facts or summaries leaves it as it was
    key = (str(scope.store.path), *table_state(scope.store, scope.schema, "turns"), scope.schema, "turns")
    return _ORDER.get_or_compute(key, lambda: _derive(scope))


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


_ORDER: LruCache[tuple[Any, ...], TurnOrder] = LruCache(64, generation=by_table_generation)
