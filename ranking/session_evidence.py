"""Session evidence: a hit whose conversation holds other strong hits is more likely the one wanted.

Memories come from sessions, and what a question asks about is usually discussed across several turns
of one session (asked, answered, elaborated), and summarised there. A lone turn that shares a word with
the query is weaker evidence than a turn whose session the query keeps landing in. So each hit gains
`weight` x its session's support, and scores are divided by (1 + weight) to stay in 0..1. A hit tied to
no session gains from itself alone, which changes nothing in the order among such hits.

A session's support is a noisy-OR of its hits' scores: its best hit counts fully, and each of its next
SUPPORT_HITS hits closes `breadth` x its score squared of what is left to 1. So a session the query
lands in several times outranks one it lands in once at the same best score, while many weak hits add
little (squared, a hit at 0.2 adds a tenth of what one at 0.6 adds: a long session full of passing
mentions must not outrank the one strong match), and support stays in 0..1 however many hits a session
has. With breadth 0 it is the best hit alone (the stage as first shipped).

Measured in developer-notes/ranking.md (the ablation) and developer-notes/devsets.md (breadth, on every
set).
"""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.stage_config import DEFAULT_SESSION_BREADTH, DEFAULT_SESSION_WEIGHT

SUPPORT_HITS = 4  # hits after a session's best that add to its support: past a few, more say little


def session_support(scores: list[float], breadth: float = DEFAULT_SESSION_BREADTH) -> float:
    """The noisy-OR support of one session's hit scores (each in 0..1, any order)."""
    if not scores:
        return 0.0
    best, *rest = sorted(scores, reverse=True)
    missing = 1.0 - best
    for score in rest[:SUPPORT_HITS]:
        missing *= 1.0 - breadth * score * score
    return 1.0 - missing


def session_evidence(
    cands: list[Candidate], weight: float = DEFAULT_SESSION_WEIGHT, breadth: float = DEFAULT_SESSION_BREADTH,
) -> list[Candidate]:
    """Each hit's score blended with its session's support; pure, returns new candidates."""
    if weight < 0:
        raise ValueError("the session evidence weight must be >= 0")
    if not 0.0 <= breadth <= 1.0:
        raise ValueError("the session breadth must lie in 0..1")
    out = [c.copy() for c in cands]
    if weight == 0 or not out:
        return ordered(out)
    scores: dict[str, list[float]] = {}
    for c in out:
        if c.session is not None:
            scores.setdefault(c.session, []).append(c.score)
    support = {session: session_support(found, breadth) for session, found in scores.items()}
    for c in out:
        backing = support[c.session] if c.session is not None else c.score
        c.score = (c.score + weight * backing) / (1.0 + weight)
    return ordered(out)
