"""Currentness across tables: turns and summaries yield to the current fact that replaced what they say.

Facts carry currentness (versions, `supersedes`, slots: query/currentness.py), so recall only ever shows
a fact's current version. Turns and summaries are the record and stay findable, but a raw turn that
says "monthly releases" can match a query better than the fact that says "every two weeks", and an
agent acts on the first hit. Two links, derived from the store per ingest (query/staleness.py), say
which current fact a turn or summary yields to:

- **evidence**: the turn (or summary) is cited in the `refs` of a fact version that is no longer
  current (an older version, a superseded fact, the older fact of a slot, a deleted fact), and no
  current fact cites it. It is stale: it is marked (`stale: superseded by f-x`), and when it matched
  the query the current fact is the answer: that fact scores at least what its stale evidence scored
  (recall pulls it in when no arm found it) and the stale memory sits just below it. Evidence of a
  fact that is no longer current and has no successor (deleted) is marked and scores x DELETED_WEIGHT.
- **session**: the memory belongs to a conversation in which a fact of a changing attribute (one with
  more than one version or fact) was recorded. The current fact of that attribute is that
  conversation's distilled answer: when it is among the hits and scores at least COVER_RATIO of the
  memory's score, the memory sits just below it. Nothing is pulled in or marked for this link.

Facts are never moved down, so an order among facts is the fusion's; only turns and summaries yield.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recallfs.ranking.candidates import Candidate, ordered

EVIDENCE = "evidence"
SESSION = "session"
# Just below: a yielding memory keeps its place relative to everything else that outranks the fact.
YIELD_FACTOR = 0.999
# Session links are weaker than citations: a fact that barely matched does not pull a conversation's
# strongly matching turn below it.
COVER_RATIO = 0.5
DELETED_WEIGHT = 0.8  # evidence of a deleted fact with no successor: what it says is no longer true
PULLED = "currentness"  # the arm name of a current fact recall added for its stale evidence


@dataclass(frozen=True, slots=True)
class CurrentLink:
    """Which current fact a turn or summary yields to, and why."""

    link: str  # EVIDENCE or SESSION
    current_rid: int | None  # the current fact (None: the fact it was evidence of is deleted)
    current_id: str | None
    stale_id: str | None = None  # EVIDENCE: the non-current fact that cites it
    filtered: bool = False  # the current fact is one the request's filters leave out: mark, move nothing

    def mark(self) -> str:
        """The front-matter note of a stale memory ('' for a session link, which marks nothing)."""
        if self.link != EVIDENCE:
            return ""
        if self.current_id is None:
            return f"evidence of {self.stale_id}, which is no longer current"
        if self.current_id == self.stale_id:
            return f"superseded by a newer version of {self.current_id}"
        return f"superseded by {self.current_id} (was evidence of {self.stale_id})"


def yield_to_current(cands: list[Candidate], links: Mapping[int, Sequence[CurrentLink]]) -> list[Candidate]:
    """Turns and summaries below the current facts that replaced them; pure, returns new candidates.

    `links` maps a candidate's rid to its links (an evidence link first, if it has one). A pulled-in
    fact (arms == {PULLED}) that no stale evidence lifted is dropped: it matched nothing itself, and a
    score an earlier stage gave it (session evidence) is no match either."""
    out = [c.copy() for c in cands]
    facts = {c.rid: c for c in out if c.table == "facts"}
    yielding = [c for c in out if c.table != "facts" and links.get(c.rid)]
    lifted: set[int] = set()
    for c in sorted(yielding, key=Candidate.sort_key):  # the best-scoring evidence lifts first
        rid = _yield(c, links[c.rid], facts)
        if rid is not None:
            lifted.add(rid)
    return ordered([c for c in out if c.arms != {PULLED} or c.rid in lifted])


def _yield(cand: Candidate, links: Sequence[CurrentLink], facts: Mapping[int, Candidate]) -> int | None:
    """One turn or summary: marked, and placed below the current fact it yields to (if any). Returns
    the rid of the fact its stale evidence lifted, if any."""
    evidence = next((link for link in links if link.link == EVIDENCE), None)
    if evidence is not None:
        cand.stale = evidence.mark()
        if evidence.filtered:  # `kind:turn`, `until:`: the answer is not on this page, the order stands
            return None
        fact = facts.get(evidence.current_rid) if evidence.current_rid is not None else None
        if fact is None:  # deleted: recall passes only links whose current fact it may show
            cand.score *= DELETED_WEIGHT
            return None
        fact.score = max(fact.score, cand.score)
        cand.score = min(cand.score, fact.score * YIELD_FACTOR)
        return fact.rid
    covering = [facts[link.current_rid] for link in links
                if link.current_rid is not None and link.current_rid in facts]
    best = max(covering, key=lambda f: f.score, default=None)
    if best is not None and best.score >= COVER_RATIO * cand.score:
        cand.score = min(cand.score, best.score * YIELD_FACTOR)
    return None
