"""Replies and time windows inside recall() on a real DuckDB store, and through a real FUSE mount: the
reply to a matching question comes back beside it (never one the caller may not read, nor one its
filters exclude), and a question that names a span favours what was written in it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from mount_helpers import Mount, needs_fuse, serve

from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.ranking.pipeline import StageConfig
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")
SCOUT = Principal("acme", "proj", "scout")
REPLY = "Patience. Sanding the hull by hand took three weekends."
SECRET = "kvsecretreply in the blue drawer under the map"

RECORDS = [
    turn("s-boat", 0, "maya", "I finally finished the old sailboat this weekend."),
    turn("s-boat", 1, "atlas", "What was the toughest part of restoring the sailboat?", tags=["boat"]),
    turn("s-boat", 2, "maya", REPLY),
    turn("s-boat", 3, "maya", "And the varnish smelled for days."),
    # the same speaker again: not a reply
    turn("s-roof", 0, "atlas", "What was the toughest part of restoring the cabin roof?"),
    turn("s-roof", 1, "atlas", "Thinking aloud: the rafters, probably."),
    # a reply only its author may read
    turn("s-vault", 0, "atlas", "Where is the spare vault key kept these days?"),
    turn("s-vault", 1, "scout", SECRET, agent="scout", visibility="private"),
    fact("ledger-may", "The team chose Postgres for the ledger", created_at="2026-05-10T09:00:00Z"),
    fact("ledger-aug", "The team chose DuckDB for the ledger reports", created_at="2026-08-10T09:00:00Z"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("replies") / "store.duckdb"
    with Store(path) as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent=r.get("agent", "tester"))
                           for r in RECORDS], embedder=None)
        yield s


def contents(result) -> list[str]:
    return [h.row["content"] for h in result.hits]


def test_the_reply_to_a_matching_question_comes_back_right_after_it(store):
    result = recall(store, ME, "toughest part of restoring the sailboat", arm="lexical")
    assert contents(result)[:2] == ["What was the toughest part of restoring the sailboat?", REPLY]
    assert result.hits[1].arms == ["reply"]
    assert result.stages["replies"].startswith("on (weight 0.9; 1 question turns")
    off = recall(store, ME, "toughest part of restoring the sailboat", arm="lexical",
                 stages=StageConfig(reply_weight=0.0))
    assert REPLY not in contents(off) and off.stages["replies"] == "off"


def test_a_turn_by_the_same_speaker_is_not_a_reply(store):
    result = recall(store, ME, "toughest part of restoring the cabin roof", arm="lexical")
    assert "Thinking aloud: the rafters, probably." not in contents(result)


def test_a_reply_the_caller_may_not_read_never_comes_back(store):
    mine = recall(store, ME, "where is the spare vault key kept", arm="lexical", k=50)
    assert all("kvsecretreply" not in c for c in contents(mine))
    assert all("kvsecretreply" not in note for note in mine.notes)
    theirs = recall(store, SCOUT, "where is the spare vault key kept", arm="lexical")
    assert contents(theirs)[1] == SECRET  # its author reads it: the lookup itself works


def test_a_reply_the_filters_exclude_is_not_brought_in(store):
    result = recall(store, ME, "toughest part of restoring the sailboat tag:boat", arm="lexical")
    assert contents(result) == ["What was the toughest part of restoring the sailboat?"]


def test_a_named_month_favours_what_was_written_in_it(store):
    plain = recall(store, ME, "what did the team choose for the ledger", arm="lexical")
    may = recall(store, ME, "what did the team choose for the ledger in May 2026", arm="lexical")
    august = recall(store, ME, "what did the team choose for the ledger last week now:2026-08-14", arm="lexical")
    assert plain.stages["window"] == "neutral (the question names no time)"
    assert contents(may)[0] == "The team chose Postgres for the ledger"
    assert "'May 2026'" in may.stages["window"]
    assert contents(august)[0] == "The team chose DuckDB for the ledger reports"
    assert "'last week'" in august.stages["window"]
    assert contents(recall(store, ME, "what did the team choose for the ledger in May 2026", arm="lexical",
                           stages=StageConfig(window_weight=0.0))) == contents(plain)


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    yield from serve(tmp_path_factory.mktemp("replies-mount"), RECORDS, RECALLFS_SEMANTIC="false",
                     RECALLFS_AGENT="tester")


@needs_fuse
@pytest.mark.mount
def test_through_the_mount_ls_shows_the_reply_and_cat_reads_it(mnt: Mount):
    query = mnt.path / "recall" / "toughest part of restoring the sailboat"
    names = subprocess.run(["ls", str(query)], capture_output=True, text=True, check=True).stdout.split()
    hits = [n for n in names if n.endswith(".md")]
    assert hits[0].startswith("01-turn-atlas-what-was-the-toughest") and hits[1].startswith("02-turn-maya-patience")
    assert REPLY in subprocess.run(["cat", str(query / hits[1])], capture_output=True, text=True,
                                   check=True).stdout
    result = json.loads((query / "results.json").read_text())
    assert result["hits"][1]["arms"] == ["reply"]
    grep = subprocess.run(["grep", "-rl", "kvsecretreply", str(mnt.path / "recall" / "spare vault key kept")],
                          capture_output=True, text=True)
    assert grep.returncode == 1 and grep.stdout == ""


@needs_fuse
@pytest.mark.mount
@pytest.mark.parametrize("asked", ["now:9999-12-31", "now:0001-01-01"])
def test_a_relative_phrase_asked_at_the_ends_of_the_calendar_is_answered_not_an_error(mnt: Mount, asked: str):
    # once EIO from the mount: "last week" as of 9999-12-31 ran past the year 9999
    for phrase in ("last week", "today", "yesterday", "last month", "two months ago", "this year"):
        query = mnt.path / "recall" / f"what did the team choose for the ledger {phrase} {asked}"
        ls = subprocess.run(["ls", str(query)], capture_output=True, text=True)
        assert ls.returncode == 0, (phrase, ls.stderr)
        result = json.loads((query / "results.json").read_text())
        assert result["hits"] and result["hits"][0]["content"].startswith("The team chose")


def test_a_reply_ingested_later_is_found_by_the_next_recall(tmp_path):
    asked = turn("s-late", 0, "maya", "Which harbour did the ferry leave from?")
    with Store(tmp_path / "store.duckdb") as s:
        ingest_records(s, [parse_record(asked, org="acme", workspace="proj", agent="tester")], embedder=None)
        first = recall(s, ME, "which harbour did the ferry leave from", arm="lexical")
        assert contents(first) == ["Which harbour did the ferry leave from?"]
        reply = turn("s-late", 1, "atlas", "Kirkwall, at dawn.")
        ingest_records(s, [parse_record(reply, org="acme", workspace="proj", agent="tester")], embedder=None)
        again = recall(s, ME, "which harbour did the ferry leave from", arm="lexical")
        assert contents(again) == ["Which harbour did the ferry leave from?", "Kirkwall, at dawn."]
