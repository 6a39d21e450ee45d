"""When a question is about: the time window it names, if any ("in May 2023", "on 7 November, 2022",
"in 2022", "last month", "two weeks ago"), as the span in which its memories were written.

A pure function of the question and the time it is asked (`now`), tested from a table. Dates name the
time of an event; a memory about it is written then or soon after ("we went camping last week"), never
before. So a window starts where the named span starts and ends one span later (a day: a week later):
on LoCoMo, 237 of the 248 questions naming a month hold their evidence in that month or the next.

Month names count only capitalised, and alone (no year or day) only after a preposition ("in June"),
so that "may" and "March" as words are not dates. Relative phrases need `now`; without it they name
nothing. "Recently" and "lately" are not windows: they say when something happened, not which span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from recallfs.ranking.candidates import Candidate, ordered

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_SHORT = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"Sept": 9}
_MONTH = r"(" + "|".join(MONTHS) + r"|" + "|".join(sorted(_SHORT, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_AMOUNT = r"(\d{1,2}|" + "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True)) + r")"
_PREPOSITION = r"(?:in|during|since|of|early|late|mid|mid-|last|this|until|till|before|after|by|around|through)"

_ISO = re.compile(r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})(?![\w-])")
_DAY_MONTH_YEAR = re.compile(rf"(?<!\w){_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}(?!\w)")
_MONTH_DAY_YEAR = re.compile(rf"(?<!\w){_MONTH}\s+{_DAY},?\s+{_YEAR}(?!\w)")
_MONTH_YEAR = re.compile(rf"(?<!\w){_MONTH},?\s+(?:of\s+)?{_YEAR}(?!\w)")
_MONTH_ALONE = re.compile(rf"(?<!\w){_PREPOSITION}\s+{_MONTH}(?![\w-])")
_YEAR_ALONE = re.compile(rf"(?<![\w-]){_YEAR}(?![\w-])")
_AGO = re.compile(rf"(?<!\w){_AMOUNT}\s+(day|week|month|year)s?\s+ago(?!\w)", re.IGNORECASE)
_LAST = re.compile(r"(?<!\w)(last|past|previous|this)\s+(week(?:end)?|month|year)(?!\w)", re.IGNORECASE)
_YESTERDAY = re.compile(r"(?<!\w)(yesterday|today)(?!\w)", re.IGNORECASE)

_SPAN_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Memories written in [start, end) are about the span the question names."""

    start: datetime
    end: datetime
    phrase: str  # the words that named it, for the stage's note

    def holds(self, when: datetime | None) -> bool:
        """Whether a memory written at `when` is about this span."""
        return when is not None and self.start <= when < self.end


def time_window(question: str, now: datetime | None = None) -> TimeWindow | None:
    """The window the question names (the most precise, first found), or None. `now`: when the
    question is asked (naive UTC, like the store); relative phrases and a month without a year
    need it."""
    for find in (_absolute_day, _month_year, _month_alone, _relative, _year):
        try:
            found = find(question, now)
        except (OverflowError, ValueError):  # a span the calendar cannot hold: it names no window
            continue
        if found is not None:
            return found
    return None


def _plus(when: datetime, delta: timedelta) -> datetime:
    """`when + delta`, held at the calendar's ends (years 1 and 9999): "last week", asked as of
    9999-12-31, ends at the end of time rather than failing."""
    try:
        return when + delta
    except OverflowError:
        return datetime.max if delta > timedelta(0) else datetime.min


def _absolute_day(text: str, now: datetime | None) -> TimeWindow | None:
    m = _ISO.search(text)
    if m:
        return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(0))
    m = _DAY_MONTH_YEAR.search(text)
    if m:
        return _day(int(m.group(3)), _month_number(m.group(2)), int(m.group(1)), m.group(0))
    m = _MONTH_DAY_YEAR.search(text)
    if m:
        return _day(int(m.group(3)), _month_number(m.group(1)), int(m.group(2)), m.group(0))
    return None


def _month_year(text: str, now: datetime | None) -> TimeWindow | None:
    m = _MONTH_YEAR.search(text)
    return _month(int(m.group(2)), _month_number(m.group(1)), m.group(0)) if m else None


def _month_alone(text: str, now: datetime | None) -> TimeWindow | None:
    """"in June": the last June that began before `now`."""
    m = _MONTH_ALONE.search(text)
    if m is None or now is None:
        return None
    month = _month_number(m.group(1))
    year = now.year if now.month >= month else now.year - 1
    return _month(year, month, m.group(0))


def _year(text: str, now: datetime | None) -> TimeWindow | None:
    m = _YEAR_ALONE.search(text)
    if m is None:
        return None
    start = datetime(int(m.group(1)), 1, 1)
    return TimeWindow(start, datetime(start.year + 1, 2, 1), m.group(0))


def _relative(text: str, now: datetime | None) -> TimeWindow | None:
    if now is None:
        return None
    m = _AGO.search(text)
    if m:
        amount = _NUMBERS.get(m.group(1).lower()) or int(m.group(1))
        span = timedelta(days=_SPAN_DAYS[m.group(2).lower()])
        centre = _plus(now, -amount * span)
        return TimeWindow(_plus(centre, -span / 2), min(_plus(centre, span), _plus(now, timedelta(days=1))),
                          m.group(0))
    m = _LAST.search(text)
    if m:
        return TimeWindow(_period_start(m.group(1).lower(), m.group(2).lower(), now),
                          _plus(now, timedelta(days=1)), m.group(0))
    m = _YESTERDAY.search(text)
    if m:
        back = 1 if m.group(1).lower() == "yesterday" else 0
        day = _plus(datetime(now.year, now.month, now.day), -timedelta(days=back))
        return TimeWindow(day, _plus(now, timedelta(days=1)), m.group(0))
    return None


def _period_start(which: str, unit: str, now: datetime) -> datetime:
    """Where "this/last week|weekend|month|year" starts: calendar months and years, weeks as 7 days."""
    back = 0 if which == "this" else 1
    if unit == "year":
        return datetime(max(now.year - back, 1), 1, 1)
    if unit == "month":
        index = max(now.year * 12 + now.month - 1 - back, 12)  # not before January of year 1
        return datetime(index // 12, index % 12 + 1, 1)
    return _plus(datetime(now.year, now.month, now.day), -timedelta(days=7 * (back + 1)))


def _month_number(name: str) -> int:
    name = name.rstrip(".")
    return MONTHS.index(name) + 1 if name in MONTHS else _SHORT[name]


def _day(year: int, month: int, day: int, phrase: str) -> TimeWindow | None:
    try:
        start = datetime(year, month, day)
    except ValueError:  # "31 February": not a date
        return None
    # the week before it too: "the week before 9 June" and "by 7 November" name a day that ends a span
    return TimeWindow(_plus(start, -timedelta(days=7)), _plus(start, timedelta(days=8)), phrase)


def _month(year: int, month: int, phrase: str) -> TimeWindow:
    start = datetime(year, month, 1)
    after = datetime(year + month // 12, month % 12 + 1, 1)
    return TimeWindow(start, datetime(after.year + after.month // 12, after.month % 12 + 1, 1), phrase)


def favour_window(cands: list[Candidate], window: TimeWindow, weight: float) -> list[Candidate]:
    """Scores of the candidates written inside the window x (1 + weight); the others as they are. Pure."""
    if weight < 0:
        raise ValueError("the window weight must not be negative")
    out = []
    for cand in cands:
        if weight > 0 and window.holds(cand.created_at):
            cand = cand.copy()
            cand.score *= 1.0 + weight
        out.append(cand)
    return ordered(out)
