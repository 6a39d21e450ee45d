"""Exact entity match: when the query is an entity's name, that entity's card comes first.

The match is on the whole query, folded (case, accents, punctuation and spacing ignored), as
alpha-recall does: "Caroline" or "caroline?" names the entity Caroline; "what does Caroline like"
is a question about her and is left to ranking. `mode="contains"` also accepts a name found inside
the query on word boundaries (the longest such name wins).
"""

from __future__ import annotations

from collections.abc import Iterable

from recallfs.ranking.text import words


def _key(text: str) -> tuple[str, ...]:
    return tuple(words(text))


def match_entity(query: str, names: Iterable[str], *, mode: str = "exact") -> str | None:
    """The entity name the query names, or None. Names that fold alike resolve to the first in sorted order."""
    if mode not in ("exact", "contains"):
        raise ValueError("mode must be 'exact' or 'contains'")
    q = _key(query)
    if not q:
        return None
    best: str | None = None
    best_len = 0
    for name in sorted(set(names)):
        n = _key(name)
        if not n:
            continue
        if n == q:
            return name
        if mode == "contains" and len(n) > best_len and _contains(q, n):
            best, best_len = name, len(n)
    return best


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    size = len(needle)
    return any(haystack[i: i + size] == needle for i in range(len(haystack) - size + 1))
