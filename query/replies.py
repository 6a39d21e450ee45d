"""The store side of ranking/replies.py: the reply to each question turn among recall's best candidates.

A reply is the next turn of the question's session (by time, then `seq`, then rid) that the principal
may read under the request's filters, when another speaker said it. Each turn's successor is derived once
per store generation for the whole partition (`turn_order`: rids and speaker codes, no content); per recall,
the candidate replies pass the gate (`authorize_in_store`) before anything else is asked of them, and
only a reply that passed is compared by speaker or has its light row loaded. The derivation cost about
3-14 ms per recall when it was a query per recall (a join under the scope clause); the lookup costs
0.1-0.2 ms (LoCoMo, every 10th question).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import store_state
from recallfs.query.gate import authorize_in_store
from recallfs.query.loading import pull_in
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
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
        pull_in(scope, "turns", sorted(set(found.values()) - have), REPLY, cands, rows)
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
    speaker: np.ndarray  # rid -> its speaker's code (equal codes: the same speaker; -1: none)

    def next_of(self, rid: int) -> int:
        return int(self.after[rid]) if 0 <= rid < len(self.after) else -1

    def speaker_of(self, rid: int) -> int:
        return int(self.speaker[rid]) if 0 <= rid < len(self.speaker) else -1


def turn_order(cur: Cursor, schema: str) -> TurnOrder:
    """One query; DuckDB orders each session and codes the speakers (65k turns: about 170 ms when this
    was a Python loop over the rows)."""
    cols = cur.execute(
        f"""SELECT rid,
                   coalesce(lead(rid) OVER (PARTITION BY session ORDER BY created_at, coalesce(seq, 0), rid), -1)
                       AS after,
                   CASE WHEN speaker IS NULL THEN -1 ELSE dense_rank() OVER (ORDER BY speaker) END AS speaker
            FROM {schema}.turns WHERE session IS NOT NULL AND rid IN (SELECT rid FROM {schema}.heads)""").fetchnumpy()
    rids = np.asarray(cols["rid"], dtype=np.int64)
    size = int(rids.max()) + 1 if len(rids) else 0
    after = np.full(size, -1, dtype=np.int64)
    speaker = np.full(size, -1, dtype=np.int64)
    after[rids] = np.asarray(cols["after"], dtype=np.int64)
    speaker[rids] = np.asarray(cols["speaker"], dtype=np.int64)
    return TurnOrder(after, speaker)


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
        said = order.speaker_of(reply) if reply is not None else -1
        if reply is not None and said >= 0 and said != order.speaker_of(asker):
            pairs[asker] = reply
    return pairs
