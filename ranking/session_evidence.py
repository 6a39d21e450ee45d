"""Session evidence: a hit whose conversation holds other strong hits is more likely the one wanted.

Memories come from sessions, and what a question asks about is usually discussed across several turns
of one session (asked, answered, elaborated), and summarised there. A lone turn that shares a word with
the query is weaker evidence than a turn whose session the query keeps landing in. So each hit gains
`weight` x the best score among the hits of its session (itself included), and scores are divided by
(1 + weight) to stay in 0..1. A hit tied to no session gains from itself alone, which changes nothing
in the order among such hits.

Measured in the ablation (developer-notes/ranking.md): on LoCoMo it lifts turn R@10 and nDCG@10; on
the demo set it changes nothing up to 0.2 and helps a little from 0.3.
"""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.stage_config import DEFAULT_SESSION_WEIGHT


def session_evidence(cands: list[Candidate], weight: float = DEFAULT_SESSION_WEIGHT) -> list[Candidate]:
    """Each hit's score blended with the best score of its session; pure, returns new candidates."""
    if weight < 0:
        raise ValueError("the session evidence weight must be >= 0")
    out = [c.copy() for c in cands]
    if weight == 0 or not out:
        return ordered(out)
    best: dict[str, float] = {}
    for c in out:
        if c.session is not None:
            best[c.session] = max(best.get(c.session, 0.0), c.score)
    for c in out:
        support = best[c.session] if c.session is not None else c.score
        c.score = (c.score + weight * support) / (1.0 + weight)
    return ordered(out)
