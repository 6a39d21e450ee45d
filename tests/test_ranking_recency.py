"""Recency dampening and the temporal-intent detector, from tables."""

from __future__ import annotations

import pytest
from ranking_helpers import DAY0, cand, rids

from recallfs.ranking.pipeline import StageConfig, recency_half_life
from recallfs.ranking.recency import DEFAULT_HALF_LIFE_DAYS, dampen_recency, recency_factor
from recallfs.ranking.temporal import question_of, temporal_intent, time_anchor


@pytest.mark.parametrize(("query", "phrase"), [
    ("what is the latest CI setup", "latest"),
    ("Latest CI setup?", "latest"),
    ("current deploy target", "current"),
    ("who currently owns billing", "currently"),
    ("where does she live now", "now"),
    ("now, what about tests", "now"),
    ("the most recent release", "most recent"),
    ("what changed in the release process", "changed"),
    ("newest decision on logging", "newest"),
    ("what are you working on these days", "these days"),
    ("anything updated about the API?", "updated"),
    ("does maya use vim anymore", "anymore"),
    ("is the docs site up to date", "up to date"),
    ("is it up-to-date", "up-to-date"),
    ("what did we decide most recently", "most recently"),
    ("what is the state at the moment", "at the moment"),
    ("what are we using nowadays", "nowadays"),
    ("LATEST", "latest"),
    ("¿cuál es lo más reciente? the latest", "latest"),
    # not temporal: the words only appear inside other words, or there are none
    ("what do I know about CI", None),
    ("nowhere to deploy", None),
    ("snow on the roof", None),
    ("currency conversion rules", None),
    ("the config is unchanged", None),
    ("exchange rates", None),
    ("when did we first deploy", None),
    # event words, not state words: left alone on purpose (see ranking/temporal.py)
    ("what did Melanie paint recently", None),
    ("recent incidents", None),
    ("what has Jolene been doing lately", None),
    ("would she still want that", None),
    ("latestness", None),
    ("", None),
    ("   ", None),
])
def test_temporal_intent(query, phrase):
    assert temporal_intent(query) == phrase


@pytest.mark.parametrize(("query", "anchor"), [
    ("What did Mel paint in their latest project in July 2023?", "2023"),
    ("current deploy target as of 2026-06-01", "2026-06-01"),
    ("the latest release in 1999", "1999"),
    ("what is the latest CI setup", None),
    ("latest build 12345", None),        # a number, not a year
    ("latest 2100 plan", None),          # outside 1900-2099
    ("error 2023a in the latest run", None),
    ("", None),
])
def test_time_anchor(query, anchor):
    assert time_anchor(query) == anchor


@pytest.mark.parametrize(("age", "half_life", "factor"), [
    (0, 30, 1.0), (30, 30, 0.5), (60, 30, 0.25), (-5, 30, 1.0), (15, 30, 2 ** -0.5), (100, 0, 1.0),
])
def test_recency_factor(age, half_life, factor):
    assert recency_factor(age, half_life) == pytest.approx(factor)


def test_dampen_empty_and_single():
    assert dampen_recency([], 30) == []
    out = dampen_recency([cand(1, 0.6, day=-400)], 30)
    assert rids(out) == [1] and out[0].score == pytest.approx(0.6)  # the newest keeps its score


def test_dampen_is_relative_to_the_newest_candidate():
    out = dampen_recency([cand(1, 0.8, day=0), cand(2, 0.5, day=30)], 30)
    assert rids(out) == [2, 1]
    assert {c.rid: c.score for c in out} == {1: pytest.approx(0.4), 2: pytest.approx(0.5)}


def test_dampen_with_an_explicit_reference():
    from datetime import timedelta

    out = dampen_recency([cand(1, 0.8, day=0)], 10, reference=DAY0 + timedelta(days=10))
    assert out[0].score == pytest.approx(0.4)


def test_dampen_neutral_half_life_changes_nothing():
    pool = [cand(1, 0.8, day=0), cand(2, 0.5, day=300)]
    out = dampen_recency(pool, 0)
    assert [(c.rid, c.score) for c in out] == [(1, 0.8), (2, 0.5)]


def test_dampen_ties_break_newest_first():
    out = dampen_recency([cand(1, 0.5, day=5), cand(2, 0.5, day=5)], 30)
    assert rids(out) == [1, 2]
    out = dampen_recency([cand(1, 1.0, day=0), cand(2, 0.5, day=30)], 30)
    assert out[0].score == out[1].score and rids(out) == [2, 1]


def test_undated_candidates_count_as_the_oldest():
    out = dampen_recency([cand(1, 0.9, day=None), cand(2, 0.9, day=0), cand(3, 0.5, day=30)], 30)
    assert rids(out) == [3, 2, 1]
    assert out[1].score == pytest.approx(out[2].score)


def test_dampen_without_any_dates_keeps_scores():
    out = dampen_recency([cand(1, 0.4, day=None), cand(2, 0.9, day=None)], 30)
    assert [(c.rid, c.score) for c in out] == [(2, 0.9), (1, 0.4)]


@pytest.mark.parametrize(("mode", "query", "option", "half_life", "why"), [
    ("auto", "where does maya live", None, 0.0, "neutral"),
    ("auto", "where does maya live now", None, DEFAULT_HALF_LIFE_DAYS, "auto: temporal intent 'now'"),
    ("auto", "where did maya live in 2024 latest", None, 0.0, "neutral (temporal intent 'latest' anchored to 2024)"),
    ("auto", "latest address 2024", 30.0, 30.0, "on (recent:"),     # recent: wins over the anchor too
    ("auto", "where does maya live", 7.0, 7.0, "on (recent:"),
    ("auto", "latest address", 0.0, 0.0, "off (recent:off)"),
    ("off", "latest address", None, 0.0, "off"),
    ("off", "address", 3.0, 3.0, "on (recent:"),
    ("on", "address", None, DEFAULT_HALF_LIFE_DAYS, f"on (half-life {DEFAULT_HALF_LIFE_DAYS:g}d)"),
])
def test_recency_resolution(mode, query, option, half_life, why):
    got, reason = recency_half_life(StageConfig(recency=mode), query, option)
    assert got == half_life and reason.startswith(why)



def test_recency_in_band_copies_only_the_hits_it_rescales():
    # Stages copy only the candidates they change (ranking/candidates.Candidate.copy). Inside the band
    # every hit is dampened (new); below it, a hit whose scale stays 1 passes through as it was.
    from recallfs.ranking.recency import recency_in_band

    pool = [cand(1, 1.0, day=10), cand(2, 0.95, day=10), cand(3, 0.3, day=0)]
    before = [(c.rid, c.score) for c in pool]
    out = recency_in_band(pool, 180.0, 0.8)
    assert [(c.rid, c.score) for c in pool] == before
    by_rid = {c.rid: c for c in out}
    assert by_rid[1] is not pool[0] and by_rid[2] is not pool[1]
    assert by_rid[3] is pool[2]


def test_the_tie_break_remembers_timestamps():
    # datetime.timestamp() of a naive datetime asks the C library for the local zone each call, and
    # every stage sorts every candidate again: the tie-break computes each instant's once.
    from recallfs.ranking.candidates import _timestamp, ordered

    pool = [cand(i, 0.5, day=i) for i in range(5)]
    ordered(pool)
    hits = _timestamp.cache_info().hits
    ordered(pool)
    assert _timestamp.cache_info().hits >= hits + 5


@pytest.mark.parametrize(("query", "question"), [
    ("what is the latest CI setup", "what is the latest CI setup"),
    ("latest docs deployment", "latest docs deployment"),
    ("", ""),
    # a message: its question is the last sentence that asks, else its last sentence
    ("I moved to Berlin now. Where do I live?", "Where do I live?"),
    ("I am now in Berlin. What is the latest news? Thanks.", "What is the latest news?"),
    ("I will send this now. Thank you.", "Thank you."),
    ("So, when do I see the updated program, then?", "So, when do I see the updated program, then?"),
    # lines: the last one that holds anything
    ("Where is it now?\nwhich host runs the database?\n\n", "which host runs the database?"),
    # a dialogue on one line (MADial): the last utterance, from its speaker tag on
    ('<Tom>: "I am so nervous now." <Assistant>: "Why?" <Tom>: "What should I do? I have an exam."',
     '"What should I do?'),
    ("User: I now work at Acme Assistant: Noted. User: which team am I on?", "which team am I on?"),
    # one tag is not a dialogue: "Status: ..." keeps its words
    ("Current status: what is new?", "Current status: what is new?"),
])
def test_question_of(query, question):
    assert question_of(query) == question


@pytest.mark.parametrize(("query", "on"), [
    ("what is the latest CI setup", True),
    ('<Ann>: "I miss him so much now." <Assistant>: "I see." <Ann>: "Do you remember the lake trip?"', False),
    ('<Ann>: "Long story." <Assistant>: "Go on." <Ann>: "What is my current job?"', True),
    ("I'm so nervous now. Can you help me plan the talk?", False),
    ("I changed teams. What is my newest project?", True),
])
def test_recency_reads_the_question_not_the_talk_around_it(query, on):
    half_life, why = recency_half_life(StageConfig(), query, None)
    assert (half_life > 0) is on, why
