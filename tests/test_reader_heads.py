"""One reader's current rows (query/reader_heads.py), against a store that never held what it may not read.

Each case is a list of records by two agents and a reader. The oracle is built, not computed by the code
under test: a second store holding only the records the reader may read. Through the gate's clause the
reader must find the same current memories (table, id, content) in both; and the reader's recall must
answer with the visible memory, not lose it to one it may not read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recallfs.query.gate import reader_scope_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.policies import set_policy
from recallfs.query.reader_heads import NO_CHANGES, head_changes
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.policy import PolicySpec, build_policy
from recallfs.scope.principal import Principal

from conftest import fact, turn

ORG, WS = "acme", "proj"
DAY2, DAY3 = "2026-06-02T10:00:00Z", "2026-06-03T10:00:00Z"


def private(rec: dict, agent: str = "scout") -> dict:
    return {**rec, "agent": agent, "visibility": "private"}


TRAIN = fact("train", "the release train leaves on thursdays", id="f-train", agent="atlas")
CASES = {
    "a hidden fact supersedes a visible one": [
        TRAIN, private(fact("new-train", "the train leaves on fridays", id="f-new", supersedes="f-train",
                            created_at=DAY2))],
    "a hidden fact takes a visible fact's slot": [
        fact("a", "standup at ten", id="f-a", slot="standup", agent="atlas"),
        private(fact("b", "standup at nine", id="f-b", slot="standup", created_at=DAY2))],
    "a fact takes a slot that also holds a fact hidden from its author": [
        fact("a", "standup at ten", id="f-a", slot="standup", agent="atlas"),
        private(fact("b", "standup at nine", id="f-b", slot="standup", created_at=DAY2)),
        fact("c", "standup at eleven", id="f-c", slot="standup", agent="atlas", created_at=DAY3)],
    "a hidden newer version of a visible id": [
        TRAIN, private(fact("train-2", "the train leaves on mondays", id="f-train", created_at=DAY2))],
    "a hidden newer version deletes a visible id": [
        TRAIN, private(fact("train-2", "gone", id="f-train", status="deleted", created_at=DAY2))],
    "a visible fact names a hidden one as its successor": [
        fact("train", "the release train leaves on thursdays", id="f-train", agent="atlas",
             superseded_by="f-new"),
        private(fact("new-train", "the train leaves on fridays", id="f-new", created_at=DAY2))],
    "a chain through a hidden fact": [
        TRAIN,
        private(fact("mid", "the train leaves on fridays", id="f-mid", supersedes="f-train", created_at=DAY2)),
        fact("last", "the train leaves on saturdays", id="f-last", supersedes="f-mid", agent="atlas",
             created_at=DAY3)],
    "a cycle through a hidden fact": [
        fact("x", "the gate code is one", id="f-x", agent="atlas", superseded_by="f-y"),
        fact("y", "the gate code is two", id="f-y", agent="atlas", superseded_by="f-h", created_at=DAY2),
        private(fact("h", "the gate code is three", id="f-h", superseded_by="f-x", created_at=DAY3))],
    "a hidden newer version of a visible turn": [
        turn("s1", 0, "atlas", "we ship on thursdays", agent="atlas"),
        private(turn("s1", 0, "atlas", "we ship on fridays", created_at=DAY2))],
    "hidden rows that replace nothing": [
        TRAIN, private(fact("other", "scout keeps a spare key", id="f-other", slot="key", created_at=DAY2))],
    "a fact the reader's policy denies by kind supersedes a visible one": [
        TRAIN, fact("new-train", "the train leaves on fridays", id="f-new", supersedes="f-train", kind="secret",
                    agent="atlas", created_at=DAY2)],
}
READERS = {"atlas": Principal(ORG, WS, "atlas"), "guest": Principal(ORG, WS, "guest")}
GUEST_POLICY = PolicySpec(authors=["atlas"], deny_kinds=["secret"])


def _store(path: Path, records: list[dict]) -> Store:
    store = Store(path)
    ingest_records(store, [parse_record(r, org=ORG, workspace=WS, agent="atlas") for r in records], embedder=None)
    set_policy(store, READERS["guest"], build_policy(GUEST_POLICY))
    return store


def _may_read(reader: str, rec: dict) -> bool:
    """Written down by hand: the default policy (own memories, and every author's `workspace` ones) for
    atlas; only atlas's memories and no kind `secret` for guest."""
    mine = rec.get("agent", "atlas") == reader
    if rec.get("visibility") == "private" and not mine:
        return False
    return not (reader == "guest" and (rec.get("agent", "atlas") != "atlas" or rec.get("kind") == "secret"))


def _current(store: Store, reader: Principal) -> set[tuple[str, str, str]]:
    schema = store.schema_for(reader)
    assert schema is not None
    where, params = reader_scope_clause(store, reader, schema)
    return {(table, str(i), str(c)) for table in MEMORY_TABLES for i, c in store.cursor().execute(
        f"SELECT m.id, m.content FROM {schema}.{table} m WHERE {where}", params).fetchall()}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_reader_sees_what_a_store_without_the_hidden_memories_shows(tmp_path: Path, case: str, reader: str) -> None:
    records = CASES[case]
    visible = [r for r in records if _may_read(reader, r)]
    with _store(tmp_path / "full.duckdb", records) as full, _store(tmp_path / "clean.duckdb", visible) as clean:
        assert _current(full, READERS[reader]) == _current(clean, READERS[reader])


@pytest.mark.parametrize("case", ["a hidden fact supersedes a visible one", "a hidden newer version of a visible id"])
def test_the_readers_recall_answers_with_the_visible_memory(tmp_path: Path, case: str) -> None:
    with _store(tmp_path / "full.duckdb", CASES[case]) as store:
        hits = recall(store, READERS["atlas"], "release train thursdays", arm="lexical").hits
        assert [(h.id, h.row["content"]) for h in hits] == [("f-train", "the release train leaves on thursdays")]
        scout = recall(store, Principal(ORG, WS, "scout"), "release train thursdays", arm="lexical").hits
        assert "the release train leaves on thursdays" not in {h.row["content"] for h in scout}  # replaced for scout


def test_hidden_rows_that_replace_nothing_cost_no_recomputation(tmp_path: Path) -> None:
    records = [TRAIN, private(fact("other", "scout keeps a spare key", id="f-other", created_at=DAY2))]
    with _store(tmp_path / "s.duckdb", records) as store:
        schema = store.schema_for(READERS["atlas"])
        assert schema is not None
        assert head_changes(store, READERS["atlas"], schema) is NO_CHANGES


def test_a_new_policy_is_seen_by_an_open_store(tmp_path: Path) -> None:
    """What was hidden is remembered per store and only new rows are looked at after a write; a policy
    set on the same open store must still count, or a reader would keep an answer made under the old one."""
    secret = fact("new-train", "the train leaves on fridays", id="f-new", supersedes="f-train", kind="secret",
                  agent="atlas", created_at=DAY2)
    with _store(tmp_path / "s.duckdb", [TRAIN, secret]) as store:
        scout = Principal(ORG, WS, "scout")
        assert ("facts", "f-train", TRAIN["content"]) not in _current(store, scout)  # default policy: reads both
        set_policy(store, scout, build_policy(PolicySpec(deny_kinds=["secret"])))
        assert ("facts", "f-train", TRAIN["content"]) in _current(store, scout)
