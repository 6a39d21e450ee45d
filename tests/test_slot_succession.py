"""A fact replaces only the facts of its slot that its author may read (query/slot_succession.py).

Found 2026-12-07 on a `--map-uid` mount: an inbox write into a slot that held another agent's private
fact had its `slot` dropped, so the writer's file lost the slot it wrote and the visible fact it meant to
replace stayed current beside it; without that defence, the write would have retired a fact its writer
may not read. The pure rule is tested from a table; then a real store, its heads, links and a policy change.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from recallfs.query.gate import reader_scope_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.lineage import Links, partition_links, reader_links
from recallfs.query.policies import remove_policy, set_policy
from recallfs.query.records import parse_record
from recallfs.query.slot_succession import SlotMember, blind_pairs, slot_successors
from recallfs.query.store import Store
from recallfs.scope.policy import PolicySpec, build_policy
from recallfs.scope.principal import Principal

from conftest import fact

ORG, WS = "acme", "proj"


def _m(rid: int, author: str, day: int, slot: str = "db.host") -> SlotMember:
    return SlotMember(rid, slot, author, datetime(2026, 6, day))


SUCCESSION = {
    "the newest replaces each older one, step by step": (
        [_m(1, "a", 1), _m(2, "b", 2), _m(3, "a", 3)], set(), {1: 2, 2: 3}),
    "a fact its author may not read is skipped, not replaced": (
        [_m(1, "a", 1), _m(2, "s", 2), _m(3, "a", 3)], {("a", 2)}, {1: 2}),
    "the skipped fact's older neighbour is replaced by the first that may read it": (
        [_m(1, "a", 1), _m(2, "s", 2), _m(3, "a", 3)], {("s", 1), ("a", 2)}, {1: 3}),
    "a later author who reads both replaces both": (
        [_m(1, "a", 1), _m(2, "s", 2), _m(3, "a", 3), _m(4, "s", 4)], {("a", 2)}, {1: 2, 2: 4, 3: 4}),
    "slots apart, and one slot in either Unicode form": (
        [_m(1, "a", 1, "caf\u00e9"), _m(2, "a", 2, "cafe\u0301"), _m(3, "a", 3, "other")], set(), {1: 2}),
    "order by time, not by arrival": (
        [_m(5, "a", 3), _m(6, "a", 1)], set(), {6: 5}),
}


@pytest.mark.parametrize("case", sorted(SUCCESSION))
def test_slot_successors(case: str) -> None:
    members, blind, expected = SUCCESSION[case]
    assert slot_successors(members, blind) == expected


# atlas (default policy) may not read scout's private fact; scout may read atlas's workspace facts.
RECORDS = [
    fact("a", "the db host is alpha", id="f-a", slot="db.host", agent="atlas", created_at="2026-06-01T10:00:00Z"),
    fact("s", "the db host is sigma", id="f-s", slot="db.host", agent="scout", visibility="private",
         created_at="2026-06-02T10:00:00Z"),
    fact("n", "the db host is nova", id="f-n", slot="db.host", agent="atlas", created_at="2026-06-03T10:00:00Z"),
]
ATLAS, SCOUT = Principal(ORG, WS, "atlas"), Principal(ORG, WS, "scout")


def _store(path: Path, records: list[dict]) -> Store:
    store = Store(path)
    ingest_records(store, [parse_record(r, org=ORG, workspace=WS, agent="atlas") for r in records], embedder=None)
    return store


def _heads(store: Store) -> set[str]:
    schema = store.partition(ORG, WS)
    return {str(r[0]) for r in store.cursor().execute(
        f"SELECT id FROM {schema}.facts WHERE rid IN (SELECT rid FROM {schema}.heads)").fetchall()}


def _current_for(store: Store, reader: Principal) -> set[str]:
    schema = store.schema_for(reader)
    assert schema is not None
    where, params = reader_scope_clause(store, reader, schema)
    return {str(r[0]) for r in store.cursor().execute(f"SELECT m.id FROM {schema}.facts m WHERE {where}",
                                                      params).fetchall()}


def _names(store: Store, links: dict[int, Links]) -> dict[str, tuple[str | None, list[str]]]:
    """id -> (the id that replaced it, the ids it replaced)"""
    schema = store.partition(ORG, WS)
    ids = dict(store.cursor().execute(f"SELECT rid, id FROM {schema}.facts").fetchall())
    return {ids[rid]: (by.id if by else None, [r.id for r in older]) for rid, (by, older) in links.items()}


def test_a_fact_leaves_what_its_author_may_not_read_current(tmp_path: Path) -> None:
    with _store(tmp_path / "s.duckdb", RECORDS) as store:
        schema = store.partition(ORG, WS)
        assert schema is not None
        rid_s = store.cursor().scalar(f"SELECT rid FROM {schema}.facts WHERE id = 'f-s'")
        assert blind_pairs(store.cursor(), schema).pairs == {("atlas", rid_s)}
        assert _heads(store) == {"f-s", "f-n"}  # whoever reads all: nova did not replace sigma
        assert _current_for(store, SCOUT) == {"f-s", "f-n"}
        assert _current_for(store, ATLAS) == {"f-n"}  # as in a store that never held sigma
        assert _names(store, partition_links(store, schema).links) == {
            "f-a": ("f-s", []), "f-s": (None, ["f-a"])}
        assert _names(store, reader_links(store, ATLAS, schema).links) == {"f-a": ("f-n", []), "f-n": (None, ["f-a"])}
    with _store(tmp_path / "clean.duckdb", [RECORDS[0], RECORDS[2]]) as clean:
        assert _current_for(clean, ATLAS) == {"f-n"}


def test_a_later_fact_by_an_author_who_reads_both_replaces_both(tmp_path: Path) -> None:
    later = fact("z", "the db host is zeta", id="f-z", slot="db.host", agent="scout",
                 created_at="2026-06-04T10:00:00Z")
    with _store(tmp_path / "s.duckdb", [*RECORDS, later]) as store:
        assert _heads(store) == {"f-z"}
        assert _current_for(store, ATLAS) == {"f-z"}


def test_a_policy_change_works_the_slot_out_again(tmp_path: Path) -> None:
    with _store(tmp_path / "s.duckdb", RECORDS) as store:
        set_policy(store, ATLAS, build_policy(PolicySpec(visibilities=["workspace", "private"])))
        assert _heads(store) == {"f-n"}  # atlas may read sigma now: nova replaced it
        assert remove_policy(store, ATLAS)
        assert _heads(store) == {"f-s", "f-n"}


def test_what_holds_a_slot_does_not_move_when_another_slot_is_written(tmp_path: Path) -> None:
    """A lone author whose stored policy denies a tag on its own facts is blind to them (found 2026-12-07:
    a shortcut for one author made the answer flip once a second author wrote any slot)."""
    band = [fact("b1", "the pay band is four", id="f-band1", slot="pay.band", tags=["hr"], agent="guest",
                 created_at="2026-01-01T10:00:00Z"),
            fact("b2", "the pay band is five", id="f-band2", slot="pay.band", agent="guest",
                 created_at="2026-01-02T10:00:00Z")]
    with _store(tmp_path / "s.duckdb", band) as store:
        set_policy(store, Principal(ORG, WS, "guest"), build_policy(PolicySpec(deny_tags=["hr"])))
        before = _heads(store)
        office = fact("o", "the office is on floor three", id="f-o", slot="office.floor", agent="scout")
        ingest_records(store, [parse_record(office, org=ORG, workspace=WS, agent="atlas")], embedder=None)
        assert _heads(store) - {"f-o"} == before == {"f-band1", "f-band2"}  # guest could not read band1
