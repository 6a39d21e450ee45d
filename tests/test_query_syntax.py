"""The inline-option parser, from a table: every option, good and malformed values, never a crash."""

from __future__ import annotations

import random
import string
from datetime import datetime, timedelta

import pytest

from recallfs.query.query_syntax import (
    MAX_K,
    RecallOptions,
    apply_option,
    parse_duration_days,
    parse_query,
    parse_when,
)
from recallfs.ranking.recency import DEFAULT_HALF_LIFE_DAYS

NOW = datetime(2026, 6, 11, 12, 0)


def opts(**kw: object) -> RecallOptions:
    return RecallOptions(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("raw", "text", "expected"), [
    ("how do I run tests", "how do I run tests", opts()),
    ("", "", opts()),
    ("kind:decision ci", "ci", opts(kinds=["decision"])),
    ("KIND:Decision ci", "ci", opts(kinds=["decision"])),
    ("kind:decision,constraint ci", "ci", opts(kinds=["decision", "constraint"])),
    ("kind:decision kind:fact", "", opts(kinds=["decision", "fact"])),
    ("tag:ci tag:Deploy", "", opts(tags=["ci", "Deploy"])),
    ("tag:ci,release notes", "notes", opts(tags=["ci", "release"])),
    ('tag:"two words" notes', "notes", opts(tags=["two words"])),
    ("session:2026-03-02-ci-setup what", "what", opts(session="2026-03-02-ci-setup")),
    ("agent:atlas plans", "plans", opts(agent="atlas")),
    ("since:2026-06-01 x", "x", opts(since=datetime(2026, 6, 1))),
    ("since:7d x", "x", opts(since=NOW - timedelta(days=7))),
    ("since:12h x", "x", opts(since=NOW - timedelta(hours=12))),
    ("since:2w x", "x", opts(since=NOW - timedelta(days=14))),
    ("since:1m x", "x", opts(since=NOW - timedelta(days=30))),
    ("since:1y x", "x", opts(since=NOW - timedelta(days=365))),
    ("since:2026-06-01T10:00:00Z x", "x", opts(since=datetime(2026, 6, 1, 10))),
    ("since:2026-06-01T10:00+02:00 x", "x", opts(since=datetime(2026, 6, 1, 8))),  # to UTC, like the store
    ("until:2026-06-01 x", "x", opts(until=datetime(2026, 6, 1, 23, 59, 59, 999999))),  # the whole day
    ("until:2026-06-01T09:30 x", "x", opts(until=datetime(2026, 6, 1, 9, 30))),
    ("since:2026-05-01 until:2026-06-01", "", opts(since=datetime(2026, 5, 1),
                                                   until=datetime(2026, 6, 1, 23, 59, 59, 999999))),
    # a month or a year: since: its first instant, until: its last (found 2026-12-07: refused, while
    # `since:2026-W23` was taken)
    ("since:2026-06 x", "x", opts(since=datetime(2026, 6, 1))),
    ("until:2024-02 x", "x", opts(until=datetime(2024, 2, 29, 23, 59, 59, 999999))),
    ("since:2025 until:2025", "", opts(since=datetime(2025, 1, 1), until=datetime(2025, 12, 31, 23, 59, 59, 999999))),
    ("k:20 x", "x", opts(k=20)),
    ("k:1", "", opts(k=1)),
    (f"k:{MAX_K}", "", opts(k=MAX_K)),
    ("k:+5", "", opts(k=5)),
    ("offset:0", "", opts(offset=0)),
    ("offset:30 x", "x", opts(offset=30)),
    ("budget:800 x", "x", opts(budget=800)),
    ("recent: x", "x", opts(recent_half_life_days=DEFAULT_HALF_LIFE_DAYS)),
    ("recent:on x", "x", opts(recent_half_life_days=DEFAULT_HALF_LIFE_DAYS)),
    ("recent:7d x", "x", opts(recent_half_life_days=7.0)),
    ("recent:12h", "", opts(recent_half_life_days=0.5)),
    ("recent:off x", "x", opts(recent_half_life_days=0.0)),
    ("recent:no", "", opts(recent_half_life_days=0.0)),
    # not options: stay in the text as written
    ("D1:3 what happened", "D1:3 what happened", opts()),
    ("meeting at 12:30", "meeting at 12:30", opts()),
    ("https://example.com/x docs", "https://example.com/x docs", opts()),
    ("kinds:decision", "kinds:decision", opts()),
    ("what's the plan", "what's the plan", opts()),
    ("  spaced   out  ", "spaced out", opts()),
])
def test_good_queries(raw, text, expected):
    parsed = parse_query(raw, now=NOW)
    assert parsed.errors == []
    assert parsed.text == text
    assert parsed.options == expected


@pytest.mark.parametrize(("raw", "text", "message"), [
    ("k:abc x", "x", "ignored k:abc ('abc' is not a whole number)"),
    ("k:0", "", "ignored k:0 (0 is outside 1..200)"),
    ("k:-3", "", "ignored k:-3 (-3 is outside 1..200)"),
    (f"k:{MAX_K + 1}", "", "is outside 1..200"),
    ("k:1e3", "", "not a whole number"),
    ("k:--5", "", "not a whole number"),
    ("k:٣", "", "not a whole number"),  # a non-ASCII digit is not taken silently
    ("k:99999999999999999999999", "", "is outside 1..200"),
    ("k:", "", "k: needs a value, e.g. k:20"),
    ("offset:-1", "", "ignored offset:-1"),
    ("offset:x", "", "not a whole number"),
    ("budget:10", "", "10 is outside 16..1000000"),
    ("budget:lots", "", "not a whole number"),
    ("since:yesterday q", "q",
     "'yesterday' is not a date (2026-06-11), a month (2026-06), a year (2026) or a duration (7d)"),
    ("since:2026-13-45", "", "is not a date"),
    ("since:2026-13", "", "'2026-13' is not a month (2026-06) or a year (2026)"),
    ("until:0000", "", "'0000' is not a month (2026-06) or a year (2026)"),
    ("since:2026-6", "", "is not a date"),
    ("since:0d", "", "a duration must be positive"),
    ("until:", "", "until: needs a value"),
    ("recent:soon", "", "'soon' is not a duration like 12h, 7d, 2w, 6m or 1y"),
    ("recent:0d", "", "a duration must be positive"),
    ("recent:-7d", "", "'-7d': a half-life is a positive duration, e.g. recent:7d"),
    # a duration's digits are ASCII, as an integer option's are (k:٣ above): each of these once meant 7d
    ("since:７d", "", "'７d' is not a date (2026-06-11), a month (2026-06), a year (2026) or a duration (7d)"),
    ("since:٧d", "", "'٧d' is not a date (2026-06-11), a month (2026-06), a year (2026) or a duration (7d)"),
    ("until:𝟕d", "", "'𝟕d' is not a date (2026-06-11), a month (2026-06), a year (2026) or a duration (7d)"),
    ("since:7\u3000d", "", "is not a date"),  # an ideographic space is not a space here either
    ("since:1٢h", "", "is not a date"),
    ("recent:７d", "", "'７d' is not a duration like 12h, 7d, 2w, 6m or 1y"),
    ("now:७d", "", "is not a date"),
    ("kind:", "", "kind: needs a value, e.g. kind:decision"),
    ("kind:,", "", "kind: needs a value"),
    ("tag:,,", "", "tag: needs a value"),
    ("session:", "", "session: needs a value"),
    ("agent:", "", "agent: needs a value"),
    ("since:2026-06-02 until:2026-06-01", "", "since: is after until: so nothing could match"),
])
def test_malformed_values_give_a_clear_message_and_drop_the_option(raw, text, message):
    check_dropped(raw, text, message)


def check_dropped(raw: str, text: str, message: str) -> None:
    parsed = parse_query(raw, now=NOW)
    assert parsed.text == text
    assert len(parsed.errors) == 1 and message in parsed.errors[0]
    assert parsed.options.k is None and parsed.options.offset is None and parsed.options.budget is None
    assert parsed.options.since is None and parsed.options.until is None
    assert parsed.options.kinds == [] and parsed.options.tags == []


HUGE = "9" * 5000  # past Python's int-from-text limit (4300 digits)


# Values no datetime or int of ours can hold: each is dropped with a reason, like any malformed value
# (an OverflowError here once escaped as a traceback, and as "internal error" from a mounted store).
@pytest.mark.parametrize(("raw", "text", "message"), [
    ("ci since:99999y", "ci", "ignored since:99999y ('99999y' is longer than 9999 years)"),
    ("since:9999y", "", "'9999y' before now is before the year 1"),
    ("since:3000y", "", "'3000y' before now is before the year 1"),
    ("until:99999999999999999999999d", "", "is longer than 9999 years"),
    ("since:1000000w", "", "is longer than 9999 years"),
    ("since:99999999999h", "", "is longer than 9999 years"),
    (f"since:{HUGE}d", "", "is longer than 9999 years"),
    ("recent:99999y", "", "'99999y' is longer than 9999 years"),
    (f"recent:{HUGE}m", "", "is longer than 9999 years"),
    ("since:0001-01-01T00:00+01:00", "", "'0001-01-01T00:00+01:00' is out of range once converted to UTC"),
    ("until:9999-12-31T23:30-01:00", "", "is out of range once converted to UTC"),
    (f"k:{HUGE}", "", "is outside 1..200"),
    (f"offset:{HUGE}", "", "is outside 0..100000"),
    (f"budget:{HUGE}", "", "is outside 16..1000000"),
    ("offset:-99999999999999999999999", "", "is outside 0..100000"),
])
def test_values_out_of_range_are_dropped_never_raised(raw, text, message):
    check_dropped(raw, text, message)


def test_a_huge_value_is_shortened_in_its_note():
    (note,) = parse_query(f"k:{HUGE}", now=NOW).errors
    assert len(note) < 120 and note.startswith("ignored k:" + "9" * 29 + "... (")


@pytest.mark.parametrize(("raw", "expected"), [
    ("until:9999-12-31", opts(until=datetime.max)),  # the last day there is: its end is datetime.max
    ("since:0001-01-01", opts(since=datetime.min)),
    ("since:0001-01-01 until:9999-12-31", opts(since=datetime.min, until=datetime.max)),
    ("since:2000y", opts(since=datetime(27, 10, 9, 12, 0))),  # 2,000 years of 365 days before 2026-06-11
])
def test_dates_at_the_edges_that_fit_are_kept(raw, expected):
    parsed = parse_query(raw, now=NOW)
    assert parsed.errors == [] and parsed.options == expected


def test_one_bad_option_keeps_the_good_ones():
    parsed = parse_query("k:zz kind:decision deploy offset:5", now=NOW)
    assert parsed.text == "deploy"
    assert parsed.options == opts(kinds=["decision"], offset=5)
    assert parsed.errors == ["ignored k:zz ('zz' is not a whole number)"]


@pytest.mark.parametrize(("raw", "expected", "notes"), [
    ("k:5 k:7", opts(k=7), ["k: given more than once; k:7 counts"]),
    ("K:5 k:7 k:2 since:7d SINCE:2026-06-01", opts(k=2, since=datetime(2026, 6, 1)),
     ["k: given more than once; k:2 counts", "since: given more than once; since:2026-06-01 counts"]),
    ("k:5 k:abc", opts(k=5), ["ignored k:abc ('abc' is not a whole number)", "k: given more than once; k:5 counts"]),
    ("kind:decision kind:fact tag:a tag:b", opts(kinds=["decision", "fact"], tags=["a", "b"]), []),  # lists add up
])
def test_a_one_value_option_given_twice_counts_the_last_and_says_so(raw, expected, notes):
    parsed = parse_query(raw, now=NOW)
    assert (parsed.text, parsed.options, parsed.errors) == ("", expected, notes)


def test_unbalanced_quote_falls_back_to_a_plain_split():
    parsed = parse_query('tag:"open notes k:3', now=NOW)
    assert parsed.errors == [] and parsed.options.k == 3
    assert parsed.options.tags == ['"open']


def test_quoted_phrase_that_is_not_an_option_loses_only_its_quotes():
    assert parse_query('"run tests" fast', now=NOW).text == "run tests fast"


@pytest.mark.parametrize("seed", range(200))
def test_never_raises_on_noise(seed):
    rng = random.Random(seed)
    alphabet = string.printable + "ÄéΩ中\u200b\"':"
    names = ["kind:", "tag:", "session:", "agent:", "since:", "until:", "k:", "offset:", "recent:", "budget:"]
    raw = "".join(rng.choice(names) if rng.random() < 0.15 else rng.choice(alphabet)
                  for _ in range(rng.randint(0, 80)))
    parsed = parse_query(raw, now=NOW)
    assert isinstance(parsed.text, str) and all(isinstance(e, str) for e in parsed.errors)


def test_a_duration_with_a_minus_is_the_same_time_ago():
    assert parse_query("since:-7d x", now=NOW).options == parse_query("since:7d x", now=NOW).options
    assert parse_query("since:-7d x", now=NOW).errors == []


def test_default_now_is_utc_and_naive():
    parsed = parse_query("since:1h")
    assert parsed.options.since is not None and parsed.options.since.tzinfo is None


def test_merged_inline_wins_and_lists_are_not_shared():
    cli = opts(kinds=["fact"], k=5, session="s1")
    inline = parse_query("kind:decision offset:0 x", now=NOW).options
    both = cli.merged(inline)
    assert both.kinds == ["decision"] and both.k == 5 and both.offset == 0 and both.session == "s1"
    both.kinds.append("more")
    assert inline.kinds == ["decision"] and cli.kinds == ["fact"]


@pytest.mark.parametrize(("value", "days"), [("12h", 0.5), ("7d", 7), ("7 d", 7), ("2W", 14), ("6m", 180),
                                             ("1y", 365)])
def test_durations(value, days):
    assert parse_duration_days(value) == pytest.approx(days)


def test_parse_when_end_of_day_only_for_bare_dates():
    assert parse_when("2026-06-01", NOW, end_of_day=True) == datetime(2026, 6, 1, 23, 59, 59, 999999)
    assert parse_when("2026-06-01T08:00", NOW, end_of_day=True) == datetime(2026, 6, 1, 8)
    assert parse_when("3d", NOW, end_of_day=True) == NOW - timedelta(days=3)


def test_apply_option_is_what_cli_flags_use():
    o = RecallOptions()
    apply_option(o, "budget", "500", NOW)
    apply_option(o, "Recent", "14d", NOW)
    assert o.budget == 500 and o.recent_half_life_days == 14
    with pytest.raises(ValueError, match="unknown option"):
        apply_option(o, "colour", "red", NOW)


@pytest.mark.parametrize(("raw", "now", "since"), [
    ("what changed since:7d now:2023-05-10", "2023-05-10", "2023-05-03"),  # now: first, wherever it stands
    ("now:2023-05-10 since:2023-01-01 notes", "2023-05-10", "2023-01-01"),
    ("notes now:2d", None, None),  # a duration ago: checked below against the clock
])
def test_now_says_when_the_question_is_asked(raw, now, since):
    parsed = parse_query(raw, now=datetime(2026, 1, 10))
    if now is None:
        assert parsed.options.now == datetime(2026, 1, 8) and parsed.text == "notes"
        return
    assert parsed.options.now == datetime.fromisoformat(now)
    assert parsed.options.since == datetime.fromisoformat(since)
    assert not parsed.errors


def test_a_bad_now_is_dropped_with_a_note_and_the_rest_counts_from_the_clock():
    parsed = parse_query("status now:green since:1d", now=datetime(2026, 1, 10))
    assert parsed.options.now is None and parsed.options.since == datetime(2026, 1, 9)
    assert parsed.text == "status" and parsed.errors[0].startswith("ignored now:green")
