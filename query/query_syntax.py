"""Inline options in recall queries: `kind:` `tag:` `session:` `agent:` `since:` `until:` `k:`
`offset:` `recent:` `budget:`. A pure parser: text in, (clean query, options, errors) out.

Unknown `word:value` tokens stay in the query text (so "D1:3" or "12:30" are searched as written).
A malformed value never raises: the option is dropped and the reason is reported. That includes
values no datetime or int can hold (`since:99999y`, `k:` followed by thousands of digits). Times are
naive UTC, as the store keeps them.
"""

from __future__ import annotations

import calendar
import dataclasses
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from recallfs.ranking.recency import DEFAULT_HALF_LIFE_DAYS

MAX_K = 200
MAX_OFFSET = 100_000
MIN_BUDGET, MAX_BUDGET = 16, 1_000_000
MAX_DURATION_YEARS = 9999  # datetime's whole range: no longer duration can name a date
_MAX_DIGITS = 18  # longer numbers are out of every range here; int() refuses past 4,300 digits anyway

_OPTION = re.compile(r'^(kind|tag|session|agent|since|until|k|offset|recent|budget|now):(.*)$', re.I)
# `-7d` (7 days ago) is `7d`: both read as "before now". Digits and spaces are ASCII, as in k: (\d takes ７ and ٧,
# \s takes U+3000).
_DURATION = re.compile(r"^-?([0-9]+)[ \t]*([hdwmy])$", re.I)
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}
_DATE_ONLY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_MONTH_OR_YEAR = re.compile(r"^([0-9]{4})(?:-([0-9]{2}))?$")
_WHOLE = re.compile(r"^[+-]?[0-9]+$")


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
    now: datetime | None = None  # when the question is asked (None: the clock): durations and dates in
    # the question count from here (since:7d, "last week")

    def merged(self, other: RecallOptions) -> RecallOptions:
        """Values set in `other` win (inline options over CLI flags)."""
        out = RecallOptions()
        for name in (f.name for f in dataclasses.fields(self)):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(out, name, _copied(theirs if theirs not in (None, []) else mine))
        return out


def _copied(value: object) -> object:
    return list(value) if isinstance(value, list) else value


@dataclass(slots=True)
class ParsedQuery:
    text: str
    options: RecallOptions
    errors: list[str]


def parse_duration_days(value: str) -> float:
    m = _DURATION.match(value.strip())
    if not m:
        raise ValueError(f"{value!r} is not a duration like 12h, 7d, 2w, 6m or 1y")
    digits = m.group(1).lstrip("0")
    days = int(digits or "0") * _UNIT_DAYS[m.group(2).lower()] if len(digits) <= _MAX_DIGITS else float("inf")
    if days <= 0:
        raise ValueError(f"{shown(value)!r}: a duration must be positive")
    if days > MAX_DURATION_YEARS * 365:
        raise ValueError(f"{shown(value)!r} is longer than {MAX_DURATION_YEARS} years")
    return float(days)


def utc_now() -> datetime:
    """Now, as the store keeps time: naive UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


def parse_when(value: str, now: datetime, *, end_of_day: bool = False) -> datetime:
    """An ISO date/date-time, or a duration meaning that long before now. Naive UTC, like the store.

    With `end_of_day`, a bare date means the last instant of that day (so `until:2026-06-11`
    includes memories from June 11).
    """
    text = value.strip()
    if _DURATION.match(text):
        days = parse_duration_days(text)
        if days >= (now - datetime.min).days:
            raise ValueError(f"{shown(value)!r} before now is before the year 1")
        return now - timedelta(days=days)
    period = _period(text, value)
    if period is not None:
        return period[1] if end_of_day else period[0]
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{shown(value)!r} is not a date (2026-06-11), a month (2026-06), a year (2026) "
                         "or a duration (7d)") from None
    if ts.tzinfo is not None:
        try:  # 0001-01-01T00:00+01:00 is in the year 0 in UTC
            ts = ts.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:
            raise ValueError(f"{shown(value)!r} is out of range once converted to UTC") from None
    if end_of_day and _DATE_ONLY.match(text):
        ts = datetime.combine(ts.date(), time.max)  # not +1 day: the end of 9999-12-31 is datetime.max
    return ts


def _period(text: str, value: str) -> tuple[datetime, datetime] | None:
    """(first, last instant) of a month (`2026-06`) or a year (`2026`), or None for any other text:
    `since:2026-06` starts June 1 and `until:2026-06` ends June 30, as a bare date does its day."""
    m = _MONTH_OR_YEAR.match(text)
    if m is None:
        return None
    year, month = int(m.group(1)), m.group(2)
    if year < 1 or (month is not None and not 1 <= int(month) <= 12):
        raise ValueError(f"{shown(value)!r} is not a month (2026-06) or a year (2026)")
    first_month, last_month = (int(month), int(month)) if month is not None else (1, 12)
    last_day = calendar.monthrange(year, last_month)[1]
    return datetime(year, first_month, 1), datetime.combine(date(year, last_month, last_day), time.max)


def _int(value: str, lo: int, hi: int) -> int:
    text = value.strip()
    if not _WHOLE.match(text):
        raise ValueError(f"{shown(value)!r} is not a whole number")
    if len(text.lstrip("+-").lstrip("0")) > _MAX_DIGITS:
        raise ValueError(f"{shown(text)} is outside {lo}..{hi}")
    n = int(text)
    if not lo <= n <= hi:
        raise ValueError(f"{n} is outside {lo}..{hi}")
    return n


def shown(text: str, limit: int = 32) -> str:
    """A value as messages quote it: a 5,000-digit k: is named by its start."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(value: str, name: str) -> list[str]:
    out = [v.strip() for v in value.split(",") if v.strip()]
    if not out:
        raise ValueError(f"{name}: needs a value, e.g. {name}:{_EXAMPLES[name]}")
    return out


_EXAMPLES = {
    "kind": "decision", "tag": "ci", "session": "s-12", "agent": "atlas", "since": "7d", "until": "2026-06-11",
    "k": "20", "offset": "10", "recent": "7d", "budget": "800", "now": "2026-06-11",
}


def apply_option(opts: RecallOptions, name: str, value: str, now: datetime) -> None:
    """Set one option on `opts` from its text. Raises ValueError with a reason for the user.

    The one place that reads option values: inline options and the CLI's flags both come here.
    """
    name = name.lower()
    value = well_formed(value.strip())  # a flag's non-UTF-8 bytes, as an inline option's: U+FFFD
    if name not in _EXAMPLES:
        raise ValueError(f"unknown option {name}:")
    if not value and name != "recent":
        raise ValueError(f"{name}: needs a value, e.g. {name}:{_EXAMPLES[name]}")
    try:
        _set(opts, name, value, now)
    except OverflowError:  # the checks above should leave none; a user's value must never crash a recall
        raise ValueError(f"{shown(value)!r} is out of range") from None


def _recent(value: str) -> float:
    low = value.lower()
    if low in ("", "on", "true", "yes"):
        return DEFAULT_HALF_LIFE_DAYS
    if low in ("off", "false", "no"):
        return 0.0
    if low.lstrip().startswith("-"):  # `since:-7d` means 7 days ago; a half-life has no "ago"
        raise ValueError(f"{shown(value)!r}: a half-life is a positive duration, e.g. recent:7d")
    return parse_duration_days(value)


# option -> how its value is read and stored; every reader raises ValueError for a bad value
_SETTERS: dict[str, Callable[[RecallOptions, str, datetime], None]] = {
    "kind": lambda o, v, now: o.kinds.extend(x.lower() for x in _names(v, "kind")),
    "tag": lambda o, v, now: o.tags.extend(_names(v, "tag")),
    "session": lambda o, v, now: setattr(o, "session", v),
    "agent": lambda o, v, now: setattr(o, "agent", v),
    "since": lambda o, v, now: setattr(o, "since", parse_when(v, now)),
    "until": lambda o, v, now: setattr(o, "until", parse_when(v, now, end_of_day=True)),
    "k": lambda o, v, now: setattr(o, "k", _int(v, 1, MAX_K)),
    "offset": lambda o, v, now: setattr(o, "offset", _int(v, 0, MAX_OFFSET)),
    "budget": lambda o, v, now: setattr(o, "budget", _int(v, MIN_BUDGET, MAX_BUDGET)),
    "recent": lambda o, v, now: setattr(o, "recent_half_life_days", _recent(v)),
    "now": lambda o, v, now: setattr(o, "now", parse_when(v, now)),
}


def _set(opts: RecallOptions, name: str, value: str, now: datetime) -> None:
    _SETTERS[name](opts, value, now)


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
    """The query's words and inline options. A `now:` option is read first, wherever it stands: the
    other options' durations count from it."""
    opts = RecallOptions()
    errors: list[str] = []
    words: list[str] = []
    options: list[tuple[str, str]] = []
    for token in _split(raw):
        m = _OPTION.match(token)
        if m:
            options.append((m.group(1).lower(), m.group(2)))
        else:
            words.append(token)
    options.sort(key=lambda named: named[0] != "now")  # stable: the rest keep their order
    counted: dict[str, str] = {}  # option -> the value that was applied last
    for name, value in options:
        try:
            apply_option(opts, name, value, opts.now or now or utc_now())
            counted[name] = value
        except ValueError as exc:
            errors.append(f"ignored {name}:{shown(value.strip())} ({exc})")
    errors.extend(_repeated(options, counted))
    if opts.since and opts.until and opts.since > opts.until:
        errors.append("since: is after until: so nothing could match; both were ignored")
        opts.since = opts.until = None
    return ParsedQuery(text=" ".join(words), options=opts, errors=errors)


_LISTS = ("kind", "tag")  # options that add up; every other one holds one value


def _repeated(options: list[tuple[str, str]], counted: dict[str, str]) -> list[str]:
    """A note for each one-value option given more than once: the last valid one counts (as a repeated
    CLI flag does), and the user learns that the others were not used."""
    seen: set[str] = set()
    twice: list[str] = []
    for name, _value in options:
        if name in seen and name not in _LISTS and name not in twice and name in counted:
            twice.append(name)
        seen.add(name)
    return [f"{name}: given more than once; {name}:{shown(counted[name].strip())} counts" for name in twice]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD. A name that is not valid UTF-8 reaches us
    with its bad bytes as surrogates (Python's surrogateescape); they cannot be encoded, tokenized or
    written out, so the query runs on what can be read of it."""
    return _LONE_SURROGATE.sub("\ufffd", text)
