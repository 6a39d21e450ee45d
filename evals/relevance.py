"""What a recall hit counts for, at each relevance level: pure functions, tested from tables.

LoCoMo judges relevance on turns (the QA item's evidence `dia_id`s) and, one level up, on the
sessions holding them. Hits come from three tables, and each counts through its provenance:

| hit from    | turn level                               | session level                                  |
|-------------|------------------------------------------|------------------------------------------------|
| `turns`     | its own turn (`source_id` = dia_id)      | its session                                    |
| `facts`     | every turn in its `refs` that resolves   | the sessions of those turns; its own `session` |
|             | (a fact with no resolvable ref: nothing) | only when no ref resolves                      |
| `summaries` | nothing (a summary is not a turn)        | its session                                    |

So a fact (a LoCoMo observation) that cites the evidence turn is as good as the turn itself, and
a summary can only ever help at session level. Ids are split on `;`, `,` and whitespace, because
LoCoMo sometimes packs several ids into one string ("D8:6; D9:17").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LEVELS = ("turn", "session")
_ID_SEPARATORS = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class HitRef:
    """The parts of a recall hit that relevance looks at."""

    table: str
    source_id: str
    session: str | None = None
    refs: tuple[str, ...] = ()


def split_ids(values: Iterable[str]) -> list[str]:
    """Evidence or ref strings -> distinct ids, in order ("D8:6; D9:17" -> D8:6, D9:17)."""
    out: dict[str, None] = {}
    for value in values:
        for token in _ID_SEPARATORS.split(str(value)):
            if token:
                out[token] = None
    return list(out)


def resolve_evidence(
    evidence: Iterable[str], turn_session: Mapping[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """(turns, sessions, dropped): evidence ids that name a turn of this conversation, the sessions
    holding them, and the ids that do not resolve (typos in the data set such as "D:11:26")."""
    turns: list[str] = []
    dropped: list[str] = []
    for token in split_ids(evidence):
        (turns if token in turn_session else dropped).append(token)
    sessions = list(dict.fromkeys(turn_session[t] for t in turns))
    return turns, sessions, dropped


def turn_units(hit: HitRef, turn_session: Mapping[str, str]) -> list[str]:
    if hit.table == "turns":
        return [hit.source_id] if hit.source_id in turn_session else []
    if hit.table == "facts":
        return [t for t in split_ids(hit.refs) if t in turn_session]
    return []


def session_units(hit: HitRef, turn_session: Mapping[str, str]) -> list[str]:
    if hit.table == "turns":
        session = turn_session.get(hit.source_id, hit.session)
        return [session] if session else []
    if hit.table == "facts":
        via_refs = list(dict.fromkeys(turn_session[t] for t in split_ids(hit.refs) if t in turn_session))
        if via_refs:
            return via_refs
    return [hit.session] if hit.session else []


def units(hit: HitRef, level: str, turn_session: Mapping[str, str]) -> list[str]:
    if level == "turn":
        return turn_units(hit, turn_session)
    if level == "session":
        return session_units(hit, turn_session)
    raise ValueError(f"unknown relevance level {level!r}; use one of {', '.join(LEVELS)}")


def source_units(hit: HitRef) -> list[str]:
    """The demo set's single level: a hit counts for its own source id and the ids it cites."""
    return [hit.source_id, *split_ids(hit.refs)]
