"""The store side of ranking/replies.py: the reply to each question turn among recall's best candidates.

A reply is the next turn of the question's session (by time, then `seq`, then rid) that the principal
may read under the request's filters, when another speaker said it. Each turn's successor is derived once
per store generation for the whole partition (`turn_order`: rids and speakers, no content); per recall,
the candidate replies pass the gate (`authorize_in_store`) before anything else is asked of them, and
only a reply that passed is compared by speaker or has its light row loaded. The derivation cost about
3-14 ms per recall when it was a query per recall (a join under the scope clause); the lookup costs
0.1-0.2 ms (LoCoMo, every 10th question).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import store_state
from recallfs.query.gate import authorize_in_store
from recallfs.query.loading import fill
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
from recallfs.query.rows import load_light
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.questions import is_question
from recallfs.ranking.replies import REPLY
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.recall")

# Question turns among this many of the best candidates get their replies: one further down cannot lift
# its reply onto a page.
QUESTIONS_AMONG = 30


def reply_links(
    scope: Scope, principal: Principal, cands: list[Candidate], rows: dict[int, Row], options: RecallOptions,
    trace: Trace,
) -> dict[int, int]:
    """question rid -> its reply's rid, for the question turns among the first QUESTIONS_AMONG of `cands`
    (in order). Replies that are not candidates join `cands` (arms {REPLY}) and `rows`. Never raises:
    without replies the stage has nothing to lift."""
    asked = [c for c in cands[:QUESTIONS_AMONG] if c.table == "turns" and is_question(c.content)]
    if not asked:
        return {}

    def step() -> dict[int, int]:
        found = _next_turns(scope, principal, asked, options)
        have = {c.rid for c in cands}
        for rid, row in load_light(scope.store, scope.schema, "turns", sorted(set(found.values()) - have)).items():
            rows[rid] = row
            cand = Candidate(rid=rid, table="turns", arms={REPLY})
            fill(cand, row)
            cands.append(cand)
        return found
    try:
        return trace.timed("replies", step)
    except Exception as exc:  # an extra: recall answers without it
        log.exception("reply lookup failed")
        trace.notes.append(f"replies unavailable ({type(exc).__name__}); question turns were not followed")
        return {}


@dataclass(frozen=True, slots=True)
class TurnOrder:
    """Every current turn's successor in its session (by time, then `seq`, then rid), the gate aside;
    derived once per store generation. Indexed by rid: -1 where there is none."""

    after: np.ndarray  # rid -> the next turn's rid
    speaker: np.ndarray  # rid -> index into `names` (-1: none)
    names: tuple[str, ...]

    def next_of(self, rid: int) -> int:
        return int(self.after[rid]) if 0 <= rid < len(self.after) else -1

    def said_by(self, rid: int) -> str | None:
        code = int(self.speaker[rid]) if 0 <= rid < len(self.speaker) else -1
        return self.names[code] if code >= 0 else None


def turn_order(cur: Cursor, schema: str) -> TurnOrder:
    rows = cur.execute(
        f"""SELECT rid, session, speaker FROM {schema}.turns
            WHERE session IS NOT NULL AND rid IN (SELECT rid FROM {schema}.heads)
            ORDER BY session, created_at, coalesce(seq, 0), rid""").fetchall()
    size = max((int(r[0]) for r in rows), default=-1) + 1
    after = np.full(size, -1, dtype=np.int64)
    speaker = np.full(size, -1, dtype=np.int32)
    names: dict[str, int] = {}
    for (rid, session, said), (following, next_session, _) in pairwise([*rows, (-1, None, None)]):
        if said is not None:
            speaker[rid] = names.setdefault(str(said), len(names))
        if next_session == session:
            after[rid] = following
    return TurnOrder(after, speaker, tuple(names))


_ORDER: LruCache[tuple[Any, ...], TurnOrder] = LruCache(64)

# How far past unreadable turns a question's reply is looked for: the next turn the caller may read,
# within this many.
MAX_SKIP = 8


def _next_turns(scope: Scope, principal: Principal, asked: list[Candidate], options: RecallOptions) -> dict[int, int]:
    """question rid -> the next turn of its session this principal may read (with the request's
    filters), when another speaker said it. Speakers are compared only once the gate passed the turn."""
    order = _ORDER.get_or_compute((str(scope.store.path), *store_state(scope.store), scope.schema),
                                  lambda: turn_order(scope.store.cursor(), scope.schema))
    chains: dict[int, list[int]] = {}
    for cand in asked:
        chain: list[int] = []
        rid = order.next_of(cand.rid)
        while rid >= 0 and len(chain) < MAX_SKIP:
            chain.append(rid)
            rid = order.next_of(rid)
        chains[cand.rid] = chain
    allowed = authorize_in_store(scope.store, principal, scope.schema, "turns",
                                 [r for chain in chains.values() for r in chain], options)
    pairs: dict[int, int] = {}
    for asker, chain in chains.items():
        reply = next((r for r in chain if r in allowed), None)
        said = order.said_by(reply) if reply is not None else None
        if reply is not None and said is not None and said != order.said_by(asker):
            pairs[asker] = reply
    return pairs
