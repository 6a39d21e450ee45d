"""The time window a question names (ranking/time_window.py), from tables: which phrases name one, the
span each gives, and how the stage favours the memories written inside it."""

from __future__ import annotations

from datetime import datetime

import pytest
from ranking_helpers import DAY0, cand, rids

from recallfs.ranking.time_window import TimeWindow, favour_window, time_window

NOW = datetime(2023, 10, 20, 15, 30)


@pytest.mark.parametrize(("question", "now", "start", "end", "phrase"), [
    # a day: the week before it too, and a week after (talk about it comes later)
    ("What did John do on 7 November, 2022?", None, "2022-10-31", "2022-11-15", "7 November, 2022"),
    ("what happened on November 7th, 2022", None, "2022-10-31", "2022-11-15", "November 7th, 2022"),
    ("the week before 9 June 2023", None, "2023-06-02", "2023-06-17", "9 June 2023"),
    ("standup notes 2023-05-04", None, "2023-04-27", "2023-05-12", "2023-05-04"),
    # a month: it and the next
    ("What did Maria donate in December 2023?", None, "2023-12-01", "2024-02-01", "December 2023"),
    ("plans for Sept 2021", None, "2021-09-01", "2021-11-01", "Sept 2021"),
    ("the error of 31 February 2023", None, "2023-02-01", "2023-04-01", "February 2023"),  # no such day
    ("When did Melanie go camping in June?", NOW, "2023-06-01", "2023-08-01", "in June"),
    ("what did we ship in November?", NOW, "2022-11-01", "2023-01-01", "in November"),  # the last one begun
    # a year: it and the next month
    ("Which cities did Dave travel to in 2023?", None, "2023-01-01", "2024-02-01", "2023"),
    # relative to when it is asked
    ("what did I say last week", NOW, "2023-10-06", "2023-10-21 15:30", "last week"),
    ("what did we plan last month", NOW, "2023-09-01", "2023-10-21 15:30", "last month"),
    ("anything from this year", NOW, "2023-01-01", "2023-10-21 15:30", "this year"),
    ("the bug from two weeks ago", NOW, "2023-10-03 03:30", "2023-10-13 15:30", "two weeks ago"),
    ("the call 3 days ago", NOW, "2023-10-17 03:30", "2023-10-18 15:30", "3 days ago"),
    ("what did Sam say yesterday", NOW, "2023-10-19", "2023-10-21 15:30", "yesterday"),
])
def test_windows(question, now, start, end, phrase):
    got = time_window(question, now)
    assert got == TimeWindow(datetime.fromisoformat(start), datetime.fromisoformat(end), phrase)


@pytest.mark.parametrize(("question", "now"), [
    ("May I ask what the deploy key is?", NOW),  # "May" as a verb
    ("what may break the build", NOW),
    ("we march on the 2nd floor", NOW),  # a lower-case month word, no year
    ("what did Melanie paint recently?", NOW),  # when it happened, not which span
    ("what did I say last week", None),  # relative, and nobody said when it was asked
    ("camping in June", None),  # a month without a year needs to know the year
    ("D1:3 and 12:30", NOW),
    ("", NOW),
])
def test_no_window_or_no_false_date(question, now):
    assert time_window(question, now) is None


LAST_DAY, FIRST_DAY = datetime(9999, 12, 31, 12), datetime(1, 1, 1, 12)
END, START = datetime.max, datetime.min


@pytest.mark.parametrize(("question", "now", "start", "end"), [
    # asked as of the calendar's ends (`now:9999-12-31`): a span past them is held at them, never an error
    ("what did I say last week", LAST_DAY, datetime(9999, 12, 17), END),
    ("what happened today", LAST_DAY, datetime(9999, 12, 31), END),
    ("the bug from two weeks ago", LAST_DAY, datetime(9999, 12, 14), datetime(9999, 12, 24, 12)),
    ("anything from this year", LAST_DAY, datetime(9999, 1, 1), END),
    ("what did we plan last month", FIRST_DAY, datetime(1, 1, 1), datetime(1, 1, 2, 12)),
    ("what did Sam say yesterday", FIRST_DAY, START, datetime(1, 1, 2, 12)),
    ("last week", FIRST_DAY, START, datetime(1, 1, 2, 12)),
    ("three years ago", FIRST_DAY, START, datetime(1, 1, 2, 12)),
    ("standup notes 0001-01-03", None, START, datetime(1, 1, 11)),
    ("standup notes 9999-12-30", None, datetime(9999, 12, 23), END),
])
def test_windows_at_the_ends_of_the_calendar(question, now, start, end):
    got = time_window(question, now)
    assert got is not None and (got.start, got.end) == (start, end)


@pytest.mark.parametrize("question", ["camping in December", "what changed last year", "in 2023"])
def test_spans_the_calendar_cannot_hold_name_nothing_or_hold_at_its_end(question):
    got = time_window(question, LAST_DAY)  # "in December" as of 9999 would end in year 10000
    assert got is None or got.end <= END


@pytest.mark.parametrize(("when", "inside"), [
    (DAY0, True),  # the start is inside
    (datetime(2026, 1, 4, 23, 59), True),
    (datetime(2026, 1, 5), False),  # the end is not
    (datetime(2025, 12, 31), False),
    (None, False),  # an undated memory is about no span
])
def test_window_holds(when, inside):
    assert TimeWindow(DAY0, datetime(2026, 1, 5), "x").holds(when) is inside


def test_favour_window_lifts_the_inside_and_leaves_the_rest():
    window = TimeWindow(DAY0, datetime(2026, 1, 5), "x")
    pool = [cand(1, 0.9, day=10), cand(2, 0.5, day=1), cand(3, 0.4, day=None), cand(4, 0.3, day=3)]
    out = favour_window(pool, window, 1.0)
    assert rids(out) == [2, 1, 4, 3]
    assert [c.score for c in out] == [1.0, 0.9, 0.6, 0.4]
    assert [c.score for c in pool] == [0.9, 0.5, 0.4, 0.3]  # pure: the input is not changed
    assert rids(favour_window(pool, window, 0.0)) == [1, 2, 3, 4]
    with pytest.raises(ValueError):
        favour_window(pool, window, -1.0)
