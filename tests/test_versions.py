"""Versions follow time: re-ingesting an older file never rewinds a memory (issue 12, item 1).

The rules from a table (query/versioning.py), then on real stores through the real CLI."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from recallfs.query.store import Store
from recallfs.query.versioning import CLOCK_SKEW, MemoryVersions, Outcome, dated_ahead, decide, overtakes_by_tie

from conftest import fact, snapshot, turn, write_jsonl

JAN, FEB, MAR = datetime(2026, 1, 10), datetime(2026, 2, 10), datetime(2026, 3, 10)


def known(*versions: tuple[str, datetime]) -> MemoryVersions:
    out = MemoryVersions()
    for n, (content_hash, created_at) in enumerate(versions, start=1):
        out.add(content_hash, n, created_at)
    return out


@pytest.mark.parametrize(("stored", "content_hash", "created_at", "outcome"), [
    (None, "a", JAN, Outcome.NEW),
    (known(), "a", JAN, Outcome.NEW),
    (known(("a", JAN)), "a", JAN, Outcome.UNCHANGED),
    (known(("a", JAN), ("b", FEB)), "a", JAN, Outcome.UNCHANGED),  # equal to an older version: nothing
    (known(("a", JAN), ("b", FEB)), "b", FEB, Outcome.UNCHANGED),
    (known(("a", JAN)), "b", FEB, Outcome.HEAD),
    (known(("b", FEB)), "a", JAN, Outcome.HISTORICAL),  # older than the head: history only
    (known(("a", JAN), ("b", MAR)), "c", FEB, Outcome.HISTORICAL),  # between two versions
    (known(("a", JAN)), "b", JAN, Outcome.HEAD),  # a tie goes to the later arrival
    (known(("b", FEB), ("a", JAN)), "c", FEB, Outcome.HEAD),  # the head is the newest, not the last arrived
])
def test_decide(stored, content_hash, created_at, outcome):
    assert decide(stored, content_hash, created_at) is outcome


NOW = datetime(2026, 11, 28, 12, 0)


@pytest.mark.parametrize(("created", "expected"), [
    ([], (0, None)),
    ([JAN, NOW], (0, None)),
    ([NOW + CLOCK_SKEW], (0, None)),  # within a clock's skew: not reported
    ([NOW + CLOCK_SKEW + timedelta(seconds=1)], (1, NOW + CLOCK_SKEW + timedelta(seconds=1))),
    ([datetime(2099, 1, 1), JAN, datetime(2027, 1, 1)], (2, datetime(2099, 1, 1))),
])
def test_dated_ahead(created, expected):
    assert dated_ahead(created, NOW) == expected


def test_a_record_dated_ahead_is_stored_and_the_summary_says_it_stays_current(tmp_path, cli, store_path):
    """A fact dated 2099 (a wrong clock, a synthetic set) is the newest of its slot, so a fact written
    now does not replace it; the ingest that stores it says so, rather than the agent finding out later."""
    ahead = fact("deploy-1", "The deploy target is mars", id="f-mars", slot="deploy.target",
                 created_at="2099-01-01T00:00:00Z")
    out = cli("ingest", str(write_jsonl(tmp_path / "ahead.jsonl", [ahead])), check=True).stdout
    assert ("1 written (0 new versions), 0 unchanged, into acme/proj; 1 dated after this machine's clock "
            "(the latest 2099-01-01 00:00:00): the newest version of a memory or slot is its current one, so "
            "each stays current until a newer-dated record arrives") in out, out
    now = fact("deploy-2", "The deploy target is venus", id="f-venus", slot="deploy.target",
               created_at=datetime.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
    out = cli("ingest", str(write_jsonl(tmp_path / "now.jsonl", [now])), check=True).stdout
    assert "dated after" not in out
    assert heads(store_path) == [("f-mars", 1, "active", "The deploy target is mars")]


def test_the_newest_is_kept_whatever_the_arrival_order():
    versions = known(("b", MAR), ("a", JAN), ("c", FEB))
    assert versions.newest == MAR and versions.max_version == 3


# -- on a real store, through the CLI ------------------------------------------------------------------
COFFEE_1 = fact("coffee", "Zoe drinks espresso", id="f-coffee", entity="zoe", created_at="2026-01-10T09:00:00Z")
TAGONLY = fact("tagonly", "The release checklist lives in the wiki", id="f-tagonly", tags=["release"],
               created_at="2026-01-10T09:05:00Z")
COFFEE_2 = fact("coffee", "Zoe drinks oat flat whites", id="f-coffee", entity="zoe",
                created_at="2026-02-10T09:00:00Z")
TAGONLY_GONE = dict(TAGONLY, status="deleted", created_at="2026-03-01T09:00:00Z")


def heads(store_path) -> list[tuple[str, int, str, str]]:
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        return store.cursor().execute(
            f"""SELECT id, version, status, content FROM {schema}.facts
                WHERE rid IN (SELECT rid FROM {schema}.heads) ORDER BY id""").fetchall()


def versions(store_path, mem_id: str, table: str = "facts") -> list[tuple[int, str]]:
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        return store.cursor().execute(
            f"SELECT version, content FROM {schema}.{table} WHERE id = ? ORDER BY version", [mem_id]).fetchall()


def test_reingesting_an_older_file_rewinds_nothing(tmp_path, cli, store_path):
    notes1 = write_jsonl(tmp_path / "notes1.jsonl", [COFFEE_1, TAGONLY])
    notes2 = write_jsonl(tmp_path / "notes2.jsonl", [COFFEE_2])
    notes3 = write_jsonl(tmp_path / "notes3.jsonl", [TAGONLY_GONE])
    for notes in (notes1, notes2, notes3):
        cli("ingest", str(notes), check=True)
    assert heads(store_path) == [("f-coffee", 2, "active", "Zoe drinks oat flat whites")]
    before = snapshot(store_path)

    again = cli("ingest", str(notes1), check=True)
    assert "0 written (0 new versions), 2 unchanged" in again.stdout
    assert snapshot(store_path) == before
    assert heads(store_path) == [("f-coffee", 2, "active", "Zoe drinks oat flat whites")]
    recalled = cli("recall", "what does Zoe drink", "--format", "json", check=True).stdout
    assert "oat flat whites" in recalled and "espresso" not in recalled


def test_an_older_changed_record_is_history_and_never_the_head(tmp_path, cli, store_path):
    cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", [COFFEE_1])), check=True)
    cli("ingest", str(write_jsonl(tmp_path / "b.jsonl", [COFFEE_2])), check=True)
    # an edit of the January record, found in an old export: written, but only as history
    edited = dict(COFFEE_1, content="Zoe drinks a double espresso")
    out = cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", [edited])), check=True).stdout
    assert "1 written (1 new versions, 1 older than their memory's current version: history only)" in out
    assert versions(store_path, "f-coffee") == [
        (1, "Zoe drinks espresso"), (2, "Zoe drinks oat flat whites"), (3, "Zoe drinks a double espresso")]
    assert heads(store_path) == [("f-coffee", 2, "active", "Zoe drinks oat flat whites")]

    # a newer record says otherwise: back to espresso (a record equal to v1 but newer is a new version)
    back = dict(COFFEE_1, created_at="2026-04-01T09:00:00Z")
    out = cli("ingest", str(write_jsonl(tmp_path / "d.jsonl", [back])), check=True).stdout
    assert "1 written (1 new versions), 0 unchanged" in out
    assert heads(store_path) == [("f-coffee", 4, "active", "Zoe drinks espresso")]


def test_deleted_stays_deleted_until_a_newer_record(tmp_path, cli, store_path):
    cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", [TAGONLY, TAGONLY_GONE])), check=True)
    assert heads(store_path) == []
    older_edit = dict(TAGONLY, content="The release checklist lives in the repository")
    cli("ingest", str(write_jsonl(tmp_path / "b.jsonl", [older_edit])), check=True)
    assert heads(store_path) == []  # older than the deletion
    # the same moment as the deletion, arriving later: a correction of that moment
    restored = dict(older_edit, created_at=TAGONLY_GONE["created_at"])
    cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", [restored])), check=True)
    assert heads(store_path) == [("f-tagonly", 4, "active", "The release checklist lives in the repository")]


def test_turns_and_summaries_follow_time_too(tmp_path, cli, store_path):
    new_turn = turn("s1", 0, "zoe", "I switched to oat flat whites", created_at="2026-02-10T09:00:00Z")
    old_turn = dict(new_turn, content="I drink espresso", created_at="2026-01-10T09:00:00Z")
    summary = {"type": "summary", "source_id": "s1#summary", "session": "s1", "content": "Zoe now drinks oat.",
               "created_at": "2026-02-10T10:00:00Z"}
    old_summary = dict(summary, content="Zoe drinks espresso.", created_at="2026-01-10T10:00:00Z")
    cli("ingest", str(write_jsonl(tmp_path / "new.jsonl", [new_turn, summary])), check=True)
    out = cli("ingest", str(write_jsonl(tmp_path / "old.jsonl", [old_turn, old_summary])), check=True).stdout
    assert "2 written (2 new versions, 2 older than their memory's current version: history only)" in out
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        current = sorted(str(r[0]) for r in store.cursor().execute(
            f"""SELECT content FROM (SELECT content, rid FROM {schema}.turns UNION ALL
                SELECT content, rid FROM {schema}.summaries) WHERE rid IN (SELECT rid FROM {schema}.heads)"""
        ).fetchall())
    assert current == ["I switched to oat flat whites", "Zoe now drinks oat."]


def test_the_head_links_are_the_newest_versions_and_a_tie_goes_to_the_later_arrival():
    stored = MemoryVersions()
    stored.add("b", 1, FEB, ("f-old", None))
    stored.add("a", 2, JAN, (None, None))  # older: history, the head's links stay
    assert stored.head_links == ("f-old", None)
    stored.add("c", 3, FEB, (None, "f-new"))  # the same moment, later: the head
    assert stored.head_links == (None, "f-new")


GO = fact("lang-1", "The project is written in Go", id="f-lang", created_at="2026-01-13T00:00:00Z")
RUST = fact("lang-2", "The project was rewritten in Rust", id="f-lang-2", supersedes="f-lang",
            created_at="2026-02-13T00:00:00Z")
MEMCACHED = fact("cache-1", "The cache is memcached", id="f-cache", superseded_by="f-cache-2",
                 created_at="2026-01-13T00:00:00Z")
@pytest.mark.parametrize(("stored", "copied", "created_at", "overtakes"), [
    (known(("a", JAN), ("b", JAN)), 1, JAN, True),  # v1 edited, dated as v2, the head: it would win the tie
    (known(("a", JAN), ("b", JAN)), 2, JAN, False),  # the head edited: its next version, as meant
    (known(("a", JAN), ("b", FEB)), 1, JAN, False),  # older than the head: history only, no tie
    (known(("a", JAN), ("b", FEB)), 1, MAR, False),  # re-dated past the head: current on purpose
    (known(("b", FEB), ("a", JAN)), 1, FEB, False),  # v1 is the head by time
    (known(("a", JAN), ("b", JAN)), None, JAN, False),  # not a copy of the mount's file
    (None, 1, JAN, False),
])
def test_a_copy_of_an_older_version_overtakes_only_by_a_tie(stored, copied, created_at, overtakes):
    assert overtakes_by_tie(stored, copied, created_at) is overtakes


REDIS = fact("cache-2", "The cache is redis", id="f-cache-2", created_at="2026-02-13T00:00:00Z")


def without_links(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("supersedes", "superseded_by")}


@pytest.mark.parametrize("order", ["links first", "old export first"])
def test_an_export_without_the_links_brings_back_nothing_a_link_retired(tmp_path, cli, store_path, order):
    """Found 2026-12-07: an older export that did not carry `supersedes` (the same record otherwise, at
    the same moment) became the head on the tie, without the link, and "written in Go" was current again;
    the file with the links, ingested again, was "unchanged" and did not repair it."""
    linked = write_jsonl(tmp_path / "linked.jsonl", [GO, RUST, MEMCACHED, REDIS])
    bare = write_jsonl(tmp_path / "bare.jsonl", [without_links(r) for r in (GO, RUST, MEMCACHED, REDIS)])
    files = [linked, bare] if order == "links first" else [bare, linked]
    for path in files:
        cli("ingest", str(path), check=True)
    expect = [("f-cache-2", 1, "active", "The cache is redis"),
              ("f-lang-2", 1 if order == "links first" else 2, "active", "The project was rewritten in Rust")]
    assert heads(store_path) == expect
    before = snapshot(store_path)
    for path in files:  # and again, either file: nothing changes
        assert "0 written" in cli("ingest", str(path), check=True).stdout
    assert snapshot(store_path) == before
    recalled = cli("recall", "what is the project written in", "--format", "json", check=True).stdout
    assert "Rust" in recalled and "in Go" not in recalled


def test_a_record_that_names_a_link_as_null_clears_it(tmp_path, cli, store_path):
    cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", [GO, RUST, MEMCACHED, REDIS])), check=True)
    later = "2026-03-01T00:00:00Z"
    cleared = [dict(RUST, supersedes=None, created_at=later), dict(MEMCACHED, superseded_by=None, created_at=later)]
    out = cli("ingest", str(write_jsonl(tmp_path / "b.jsonl", cleared)), check=True).stdout
    assert "2 written (2 new versions)" in out
    assert [h[0] for h in heads(store_path)] == ["f-cache", "f-cache-2", "f-lang", "f-lang-2"]
