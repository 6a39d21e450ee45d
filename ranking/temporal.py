"""Temporal intent: does the query ask for the newest state of something?

Matched on word boundaries, after folding, so "now" matches but "know" and "nowhere" do not, and
"changed" matches but "unchanged" does not. A pure function, tested from a table.
"""

from __future__ import annotations

import re

from recallfs.ranking.stage_config import StageConfig
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


# A dialogue as the query (MADial: the talk before the turn that should recall a memory) or a long
# message says "now" in passing ("I'm so nervous now"); its question is the part that asks. Speaker
# tags as the dialogue sets write them ("<Tom>:", "User:") start a new utterance.
_UTTERANCE = re.compile(r"(?:^|\s)(?:<[^<>\n]{1,40}>|[A-Z][\w'-]{0,30}):\s")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?？。])|(?<=[.!?？。][\"'”’)]))\s+")
_CLOSING = "\"'”’)]» "


def question_of(query: str) -> str:
    """The part of a query that asks: its last non-empty line, from its last speaker tag on when the
    line is a dialogue (two tags or more); within that, the last sentence ending in '?', else the last
    sentence. A one-sentence query is itself."""
    lines = [ln for ln in query.splitlines() if ln.strip()]
    if not lines:
        return query
    last = lines[-1]
    tags = list(_UTTERANCE.finditer(last))
    utterance = last[tags[-1].end():] if len(tags) >= 2 else last
    sentences = [s for s in _SENTENCE_END.split(utterance.strip()) if s.strip()] or [utterance]
    asking = [s for s in sentences if s.rstrip(_CLOSING).endswith(("?", "？"))]
    return (asking or sentences)[-1]


def temporal_intent(query: str) -> str | None:
    """The first temporal phrase in the query, or None."""
    m = _PATTERN.search(fold(query))
    return m.group(1) if m else None


def time_anchor(query: str) -> str | None:
    """The first year (1900-2099) or ISO date the query names, or None."""
    m = _ANCHOR.search(query)
    return m.group(1) if m else None


def recency_half_life(config: StageConfig, query: str, recent_option: float | None) -> tuple[float, str]:
    """(half-life in days, 0 for off; why). `recent:` wins over the config, the config over intent."""
    if recent_option is not None:
        if recent_option <= 0:
            return 0.0, "off (recent:off)"
        return recent_option, f"on (recent:, half-life {recent_option:g}d)"
    if config.recency == "off":
        return 0.0, "off"
    if config.recency == "on":
        return config.half_life_days, f"on (half-life {config.half_life_days:g}d)"
    # The question decides, not a dialogue or message around it, which says "now" in passing.
    question = question_of(query)
    phrase = temporal_intent(question)
    if phrase:
        anchor = time_anchor(question)
        if anchor:
            return 0.0, f"neutral (temporal intent {phrase!r} anchored to {anchor})"
        return config.half_life_days, f"auto: temporal intent {phrase!r} (half-life {config.half_life_days:g}d)"
    return 0.0, "neutral (no temporal intent)"
