"""Temporal intent: does the query ask for the newest state of something?

Matched on word boundaries, after folding, so "now" matches but "know" and "nowhere" do not, and
"changed" matches but "unchanged" does not. A pure function, tested from a table.
"""

from __future__ import annotations

import re

from recallfs.ranking.text import fold

# Words that ask for the present state of something. Deliberately absent: "recent(ly)", "lately",
# "still", "today": they mostly describe when an event happened ("what did Mel paint recently?"),
# not which version is wanted. On LoCoMo 68 of 1986 questions use them that way, and dampening
# those by age loses their evidence. `recent:` turns recency on explicitly.
TEMPORAL_PHRASES: tuple[str, ...] = (
    "most recent", "most recently", "these days", "right now", "as of now", "up to date", "up-to-date",
    "at the moment", "at present", "any more",
    "latest", "newest", "current", "currently", "now", "nowadays", "presently",
    "changed", "updated", "anymore",
)

_PATTERN = re.compile(
    r"(?<!\w)(" + "|".join(re.escape(p) for p in sorted(TEMPORAL_PHRASES, key=len, reverse=True)) + r")(?!\w)"
)


# A year or an ISO date in the query anchors it in time: "the latest project in July 2023" asks for
# the newest as of then, which dampening by age from the newest candidate would get wrong.
_ANCHOR = re.compile(r"(?<!\w)(\d{4}-\d{2}-\d{2}|(?:19|20)\d{2})(?!\w)")


def temporal_intent(query: str) -> str | None:
    """The first temporal phrase in the query, or None."""
    m = _PATTERN.search(fold(query))
    return m.group(1) if m else None


def time_anchor(query: str) -> str | None:
    """The first year (1900-2099) or ISO date the query names, or None."""
    m = _ANCHOR.search(query)
    return m.group(1) if m else None
