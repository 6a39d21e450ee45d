"""Inline options in recall queries: `kind:` `tag:` `session:` `agent:` `since:` `until:` `k:`
`offset:` `recent:` `budget:`. A pure parser: text in, (clean query, options, errors) out.

Unknown `word:value` tokens stay in the query text (so "D1:3" or "12:30" are searched as written).
A malformed value never raises: the option is dropped and the reason is reported.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timedelta

MAX_K = 200

_OPTION = re.compile(r'^(kind|tag|session|agent|since|until|k|offset|recent|budget):(.*)$', re.I)
_DURATION = re.compile(r"^(\d+)\s*([hdwmy])$", re.I)
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


@dataclass(slots=True)
class RecallOptions:
    kinds: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    session: str | None = None
    agent: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    k: int | None = None
    offset: int | None = None
    recent_half_life_days: float | None = None  # None: not asked for
    budget: int | None = None

    def merged(self, other: RecallOptions) -> RecallOptions:
        """Values set in `other` win (inline options over CLI flags)."""
        out = RecallOptions(**{f: getattr(self, f) for f in self.__slots__})  # type: ignore[attr-defined]
        for name in self.__slots__:  # type: ignore[attr-defined]
            value = getattr(other, name)
            if value not in (None, []):
                setattr(out, name, value)
        return out


@dataclass(slots=True)
class ParsedQuery:
    text: str
    options: RecallOptions
    errors: list[str]


def parse_duration_days(value: str) -> float:
    m = _DURATION.match(value.strip())
    if not m:
        raise ValueError(f"{value!r} is not a duration like 12h, 7d, 2w, 6m or 1y")
    n = int(m.group(1))
    if n <= 0:
        raise ValueError(f"{value!r}: a duration must be positive")
    return n * _UNIT_DAYS[m.group(2).lower()]


def parse_when(value: str, now: datetime) -> datetime:
    """An ISO date/date-time, or a duration meaning that long before now."""
    text = value.strip()
    if _DURATION.match(text):
        return now - timedelta(days=parse_duration_days(text))
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is not a date (2026-06-11) or a duration (7d)") from None
    return ts.replace(tzinfo=None) if ts.tzinfo else ts


def _int(value: str, name: str, lo: int, hi: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{name}:{value} is not a whole number") from None
    if not lo <= n <= hi:
        raise ValueError(f"{name}:{value} must be between {lo} and {hi}")
    return n


def _split(text: str) -> list[str]:
    """Whitespace split that honours double quotes around option values; never raises."""
    try:
        lexer = shlex.shlex(text, posix=True)
        lexer.whitespace_split = True
        lexer.quotes = '"'
        lexer.commenters = ""
        lexer.escape = ""
        return list(lexer)
    except ValueError:  # an unbalanced quote: fall back to a plain split
        return text.split()


def parse_query(raw: str, now: datetime | None = None) -> ParsedQuery:
    now = now or datetime.now()
    opts = RecallOptions()
    errors: list[str] = []
    words: list[str] = []
    for token in _split(raw):
        m = _OPTION.match(token)
        if not m:
            words.append(token)
            continue
        name, value = m.group(1).lower(), m.group(2).strip()
        try:
            if not value and name != "recent":
                raise ValueError(f"{name}: needs a value")
            if name == "kind":
                opts.kinds.extend(v.lower() for v in value.split(",") if v)
            elif name == "tag":
                opts.tags.extend(v for v in value.split(",") if v)
            elif name == "session":
                opts.session = value
            elif name == "agent":
                opts.agent = value
            elif name == "since":
                opts.since = parse_when(value, now)
            elif name == "until":
                opts.until = parse_when(value, now)
            elif name == "k":
                opts.k = _int(value, "k", 1, MAX_K)
            elif name == "offset":
                opts.offset = _int(value, "offset", 0, 100_000)
            elif name == "budget":
                opts.budget = _int(value, "budget", 16, 1_000_000)
            elif name == "recent":
                low = value.lower()
                if low in ("", "on", "true", "yes"):
                    opts.recent_half_life_days = 30.0
                elif low in ("off", "false", "no"):
                    opts.recent_half_life_days = 0.0
                else:
                    opts.recent_half_life_days = parse_duration_days(value)
        except ValueError as exc:
            errors.append(str(exc))
    if opts.since and opts.until and opts.since > opts.until:
        errors.append("since: is after until: so nothing can match; both were dropped")
        opts.since = opts.until = None
    return ParsedQuery(text=" ".join(words), options=opts, errors=errors)
