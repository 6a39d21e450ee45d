"""Replies: the turn that answers a matching question is evidence too, often the evidence.

In a conversation the question repeats the words of what is asked ("What's the toughest part of car
restoration?") and the reply holds the answer in other words ("It takes a lot of patience ..."), so the
arms find the question and miss its reply. recall brings in the next turn of the same session, by
another speaker, of each question turn among its best candidates (query/replies.py), and this stage
scores each such reply at least `weight` x its question's score. A reply that came in only for its
question (arms == {REPLY}) leaves with it when an earlier stage dropped the question.

On LoCoMo's full set, 44 of the 306 questions whose evidence turn was not in the first 10 units had
a question turn in the first 10 hits whose reply was that evidence (developer-notes/ranking.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from recallfs.ranking.candidates import Candidate, ordered

REPLY = "reply"  # the provenance of a turn recall brought in as the reply to a question it found


def lift_replies(cands: list[Candidate], replies: Mapping[int, int], weight: float) -> list[Candidate]:
    """Each reply (`replies`: question rid -> reply rid) scores at least `weight` x its question's score;
    replies brought in for a question no longer among `cands` leave. Pure: changed replies are copies."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError("the reply weight must lie in 0..1")
    present = {c.rid: c for c in cands}
    lifted: dict[int, float] = {}
    for asked, reply in replies.items():
        question = present.get(asked)
        if question is not None and reply in present and weight > 0:
            lifted[reply] = max(lifted.get(reply, 0.0), weight * question.score)
    out: list[Candidate] = []
    for cand in cands:
        if cand.arms == {REPLY} and cand.rid not in lifted:
            continue  # its question is gone: nothing of the query is left in it
        floor = lifted.get(cand.rid, 0.0)
        if floor > cand.score:
            cand = cand.copy()
            cand.score = floor
        out.append(cand)
    return ordered(out)
