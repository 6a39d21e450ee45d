"""The store side of ranking/replies.py: the reply to each question turn among recall's best candidates.

A reply is the next turn of the question's session (by time, then `seq`, then rid) that the principal
may read under the request's filters, when another speaker said it. Each turn's successor is derived once
per store generation for the whole partition (query/turn_order.py: rids and speaker codes, no content);
per recall, the candidate replies pass the gate (`authorize_in_store`) before anything else is asked of
them, and only a reply that passed is compared by speaker or has its light row loaded. The derivation
cost about 3-14 ms per recall when it was a query per recall (a join under the scope clause); the
lookup costs 0.1-0.2 ms (LoCoMo, every 10th question).
"""

from __future__ import annotations

import logging

from recallfs.query.loading import pull_in
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
from recallfs.query.turn_order import nearest_readable, turn_order
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


def _next_turns(scope: Scope, principal: Principal, asked: list[Candidate], options: RecallOptions) -> dict[int, int]:
    """question rid -> the next turn of its session this principal may read (with the request's
    filters), when another speaker said it. Speakers are compared only once the gate passed the turn."""
    order = turn_order(scope)
    nearest = nearest_readable(scope, principal, options, [c.rid for c in asked])[0]
    return {asker: reply for asker, reply in nearest.items()
            if order.speaker_of(reply) >= 0 and order.speaker_of(reply) != order.speaker_of(asker)}
