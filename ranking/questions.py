"""Question turns: a turn that only asks is weaker evidence than one that tells.

In a conversation the words of a question come back in its answer, so both match a query about it, but
an agent recalling "how do I run the tests" wants "CI runs cargo nextest ...", not "What's the
one-liner for running just the config tests?". A turn whose text ends in a question mark is scored
x `weight` (0.8 by default; 1 is off). Facts and summaries are never demoted: a distilled memory phrased
as a question was kept on purpose. The stage runs on calibrated scores only (question_weight): on
reciprocal-rank scores (a single arm, or RECALLFS_FUSION=rrf) the same factor would be worth some
fifteen ranks.

Measured in the ablation (developer-notes/ranking.md): neutral on LoCoMo and the demo set's figures,
and it puts the answer, not the question, first for the demo's headline query.
"""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.stage_config import DEFAULT_QUESTION_WEIGHT


def is_question(text: str) -> bool:
    """True when the text, trailing spaces and closing quotes or brackets aside, ends in '?'."""
    return text.rstrip().rstrip("\"')]»”’").rstrip().endswith(("?", "？"))


RANK_SCORES_OFF = "off (rank-fused scores; the factor applies to calibrated fusion)"


def question_weight(weight: float, *, calibrated: bool) -> tuple[float, str]:
    """(the factor the stage applies, 1 for none; what it reports). The factor is a prior on calibrated
    scores, where 0.8 means "matches a fifth less"; on reciprocal ranks it would move a hit some
    fifteen ranks, so there the stage is off."""
    if weight >= 1.0:
        return 1.0, "off"
    if not calibrated:
        return 1.0, RANK_SCORES_OFF
    return weight, f"question turns x{weight:g}"


def demote_questions(cands: list[Candidate], weight: float = DEFAULT_QUESTION_WEIGHT) -> list[Candidate]:
    """Question turns' scores x `weight`; pure: the demoted turns are new candidates, the others pass."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError("the question weight must lie in 0..1")
    if weight >= 1.0:
        return ordered(list(cands))
    return ordered([_demoted(c, weight) if c.table == "turns" and is_question(c.content) else c for c in cands])


def _demoted(cand: Candidate, weight: float) -> Candidate:
    out = cand.copy()
    out.score *= weight
    return out
