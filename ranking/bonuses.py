"""Optional metadata bonuses (off by default): a multiplicative lift for a candidate whose tag, or
whose kind word ("decision", "preference", ...), appears among the query's words.

A bonus of 0 is no bonus. Plurals count: "decisions" names kind "decision".
"""

from __future__ import annotations

from collections.abc import Iterable

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.text import fold, words


def _forms(word: str) -> set[str]:
    w = fold(word)
    return {w, w + "s", w + "es"} if w else set()


def tag_hit(cand: Candidate, query_words: set[str]) -> bool:
    return any(_forms(tag) & query_words for tag in cand.tags)


def kind_hit(cand: Candidate, query_words: set[str]) -> bool:
    return bool(cand.kind) and bool(_forms(cand.kind) & query_words)


def metadata_bonus(
    cands: list[Candidate], query: str | Iterable[str], *, tag_bonus: float = 0.0, kind_bonus: float = 0.0
) -> list[Candidate]:
    """score x (1 + tag_bonus) on a tag hit, x (1 + kind_bonus) on a kind-word hit."""
    out = [c.copy() for c in cands]
    if tag_bonus <= 0 and kind_bonus <= 0:
        return out
    query_words = set(words(query)) if isinstance(query, str) else {fold(w) for w in query}
    for cand in out:
        if tag_bonus > 0 and tag_hit(cand, query_words):
            cand.score *= 1.0 + tag_bonus
        if kind_bonus > 0 and kind_hit(cand, query_words):
            cand.score *= 1.0 + kind_bonus
    return ordered(out)
