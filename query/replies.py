"""The store side of ranking/replies.py: the reply to each question turn among recall's best candidates.

A reply is the next turn of the question's session (by time, then `seq`, then rid) when another speaker
said it. Only turns the principal may read are looked at (the scope clause is on the reply's side of the
join), and a reply not already a candidate passes the gate again before its light row loads, like every
row recall loads.
"""

from __future__ import annotations

import logging

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
    asked = [c.rid for c in cands[:QUESTIONS_AMONG] if c.table == "turns" and is_question(c.content)]
    if not asked:
        return {}

    def step() -> dict[int, int]:
        found = _next_turns(scope, asked)
        have = {c.rid for c in cands}
        new = sorted(set(found.values()) - have)
        allowed = authorize_in_store(scope.store, principal, scope.schema, "turns", new, options) if new else set()
        for rid, row in load_light(scope.store, scope.schema, "turns", sorted(allowed)).items():
            rows[rid] = row
            cand = Candidate(rid=rid, table="turns", arms={REPLY})
            fill(cand, row)
            cands.append(cand)
        return {q: r for q, r in found.items() if r in have or r in allowed}
    try:
        return trace.timed("replies", step)
    except Exception as exc:  # an extra: recall answers without it
        log.exception("reply lookup failed")
        trace.notes.append(f"replies unavailable ({type(exc).__name__}); question turns were not followed")
        return {}


def _next_turns(scope: Scope, asked: list[int]) -> dict[int, int]:
    """question rid -> the rid of the next readable turn of its session, where another speaker said it."""
    wanted = ", ".join(str(int(r)) for r in asked)  # our own integers, inlined as the loaders do
    after = """(m.created_at > q.created_at OR (m.created_at = q.created_at AND (coalesce(m.seq, 0) > coalesce(q.seq, 0)
                OR (coalesce(m.seq, 0) = coalesce(q.seq, 0) AND m.rid > q.rid))))"""
    found = scope.cur.execute(
        f"""SELECT asked, rid FROM (
                SELECT q.rid AS asked, m.rid, m.speaker, q.speaker AS asker,
                       row_number() OVER (PARTITION BY q.rid ORDER BY m.created_at, coalesce(m.seq, 0), m.rid) AS n
                FROM {scope.schema}.turns q JOIN {scope.schema}.turns m ON m.session = q.session AND {after}
                WHERE q.rid IN ({wanted}) AND {scope.where})
            WHERE n = 1 AND speaker IS DISTINCT FROM asker""",
        scope.params,
    ).fetchall()
    return {int(q): int(r) for q, r in found}
