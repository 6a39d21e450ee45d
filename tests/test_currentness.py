"""Currentness: supersession chains from tables, then on a real DuckDB store through recall()."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from recallfs.query.currentness import MAX_CHAIN, FactState, chain_head, fact_links, head_queries, replaced_ids
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")


# -- chain walking, from tables --------------------------------------------------------------------
@pytest.mark.parametrize(("links", "start", "head", "path"), [
    ({}, "a", "a", ["a"]),
    ({"a": "b"}, "a", "b", ["a", "b"]),
    ({"a": "b", "b": "c"}, "a", "c", ["a", "b", "c"]),
    ({"a": "b", "b": "c"}, "b", "c", ["b", "c"]),
    ({"a": "b", "b": "c"}, "c", "c", ["c"]),
    ({"a": "b", "x": "y"}, "x", "y", ["x", "y"]),
    ({"a": "a"}, "a", "a", ["a"]),                        # a self-link is a cycle of one
    ({"a": "b", "b": "a"}, "a", "b", ["a", "b"]),         # cycle: the greatest id wins without ranks
    ({"a": "b", "b": "a"}, "b", "b", ["b", "a"]),         # ... the same head from either side
    ({"a": "b", "b": "c", "c": "b"}, "a", "c", ["a", "b", "c"]),  # a tail into a cycle
])
def test_chain_head(links, start, head, path):
    assert chain_head(links, start) == (head, path)


def test_chain_cycle_resolves_to_the_highest_rank():
    links = {"a": "b", "b": "c", "c": "a"}
    rank = {"a": 3, "b": 1, "c": 2}
    assert {chain_head(links, n, rank=rank)[0] for n in "abc"} == {"a"}


def test_chain_is_bounded():
    links = {f"n{i}": f"n{i + 1}" for i in range(10_000)}
    head, path = chain_head(links, "n0")
    assert len(path) == MAX_CHAIN + 1 and head == f"n{MAX_CHAIN}"
    assert chain_head(links, "n0", limit=3) == ("n3", ["n0", "n1", "n2", "n3"])


def st(fid: str, status: str = "active", supersedes: str | None = None, superseded_by: str | None = None,
       day: int = 1) -> FactState:
    return FactState(fid, status, supersedes, superseded_by, datetime(2026, 1, day), 1, day)


@pytest.mark.parametrize(("facts", "links", "replaced"), [
    ([], {}, set()),
    ([st("a")], {}, set()),
    ([st("a"), st("b", supersedes="a", day=2)], {"a": "b"}, {"a"}),
    ([st("a"), st("b", supersedes="a", day=2), st("c", supersedes="b", day=3)], {"a": "b", "b": "c"}, {"a", "b"}),
    # the other direction: the old fact names its successor
    ([st("a", "superseded", superseded_by="b"), st("b", day=2)], {"a": "b"}, {"a"}),
    # a pointer to a fact not ingested yet hides nothing
    ([st("a", superseded_by="zzz")], {}, set()),
    ([st("a", supersedes="zzz")], {}, set()),
    # deleting a correction brings back what it replaced
    ([st("a"), st("b", "deleted", supersedes="a", day=2)], {}, set()),
    ([st("a", superseded_by="b"), st("b", "deleted", day=2)], {}, set()),
    # a superseded middle link still carries the chain
    ([st("a"), st("b", "superseded", supersedes="a", day=2), st("c", supersedes="b", day=3)],
     {"a": "b", "b": "c"}, {"a", "b"}),
    # two successors: the newest is the link
    ([st("a"), st("b", supersedes="a", day=2), st("c", supersedes="a", day=3)], {"a": "c"}, {"a"}),
    # a cycle keeps its newest member instead of hiding both
    ([st("a", supersedes="b", day=1), st("b", supersedes="a", day=2)], {"a": "b", "b": "a"}, {"a"}),
    ([st("a", supersedes="a")], {}, set()),
])
def test_replaced_ids(facts, links, replaced):
    by_id = {f.id: f for f in facts}
    assert fact_links(by_id) == links
    assert replaced_ids(by_id) == replaced


# -- on a real store -------------------------------------------------------------------------------
def _ingest(store: Store, objs: list[dict]) -> None:
    ingest_records(store, [parse_record(o, org="acme", workspace="proj", agent="tester") for o in objs],
                   embedder=None)


def _recall_ids(store: Store, query: str) -> list[tuple[str, str]]:
    result = recall(store, ME, query, arm="lexical", k=50)
    return [(h.id, h.row["content"]) for h in result.hits]


def _versions(store: Store, fid: str) -> list[tuple[int, str]]:
    schema = store.partition("acme", "proj")
    return store.cursor().execute(
        f"SELECT version, content FROM {schema}.facts WHERE id = ? ORDER BY version", [fid]).fetchall()


def test_same_id_superseded_twice_recall_returns_only_the_last(store_path):
    with Store(store_path) as store:
        _ingest(store, [fact("v1", "The deploy target is the Hetzner box", id="deploy-target")])
        _ingest(store, [fact("v2", "The deploy target is the Fly.io app", id="deploy-target",
                             created_at="2026-06-02T10:00:00Z")])
        _ingest(store, [fact("v3", "The deploy target is the Cloudflare Pages site", id="deploy-target",
                             created_at="2026-06-03T10:00:00Z")])
        hits = _recall_ids(store, "deploy target")
        assert hits == [("deploy-target", "The deploy target is the Cloudflare Pages site")]
        # history keeps every version (history/ in the mount reads these rows)
        assert [v for v, _ in _versions(store, "deploy-target")] == [1, 2, 3]


def test_supersedes_chain_recall_returns_only_the_head(store_path):
    with Store(store_path) as store:
        _ingest(store, [
            fact("a", "Logging goes to syslog", id="log-a"),
            fact("b", "Logging goes to journald", id="log-b", supersedes="log-a", created_at="2026-06-02T10:00:00Z"),
        ])
        _ingest(store, [fact("c", "Logging goes to Loki", id="log-c", supersedes="log-b",
                             created_at="2026-06-03T10:00:00Z")])
        assert _recall_ids(store, "logging goes") == [("log-c", "Logging goes to Loki")]
        for fid in ("log-a", "log-b", "log-c"):
            assert len(_versions(store, fid)) == 1  # nothing was rewritten in place


def test_superseded_by_and_status_chain(store_path):
    with Store(store_path) as store:
        _ingest(store, [
            fact("a1", "Backups run nightly at 02:00", id="bk-a"),
            fact("b1", "Backups run nightly at 03:00", id="bk-b", created_at="2026-06-02T10:00:00Z"),
            fact("c1", "Backups run hourly", id="bk-c", created_at="2026-06-03T10:00:00Z"),
        ])
        assert len(_recall_ids(store, "backups run")) == 3
        # new versions of A and B mark them superseded and name their successors
        _ingest(store, [
            fact("a2", "Backups run nightly at 02:00", id="bk-a", status="superseded", superseded_by="bk-b"),
            fact("b2", "Backups run nightly at 03:00", id="bk-b", superseded_by="bk-c",
                 created_at="2026-06-02T10:00:00Z"),
        ])
        assert _recall_ids(store, "backups run") == [("bk-c", "Backups run hourly")]


def test_slot_keeps_the_newest_and_deleted_never_returns(store_path):
    with Store(store_path) as store:
        _ingest(store, [
            fact("s1", "The on-call rotation is weekly", slot="oncall.rotation"),
            fact("s2", "The on-call rotation is biweekly", slot="oncall.rotation",
                 created_at="2026-06-05T10:00:00Z"),
            fact("d1", "The on-call pager is PagerDuty", id="pager"),
        ])
        _ingest(store, [fact("d2", "The on-call pager is PagerDuty", id="pager", status="deleted")])
        assert _recall_ids(store, "on-call") == [(_id_of(store, "s2"), "The on-call rotation is biweekly")]


def test_cyclic_data_keeps_one_current_fact_and_recall_returns(store_path):
    with Store(store_path) as store:
        _ingest(store, [
            fact("x", "The API rate limit is 100 per minute", id="rl-x", supersedes="rl-y"),
            fact("y", "The API rate limit is 200 per minute", id="rl-y", supersedes="rl-x",
                 created_at="2026-06-02T10:00:00Z"),
        ])
        assert _recall_ids(store, "rate limit") == [("rl-y", "The API rate limit is 200 per minute")]


def _id_of(store: Store, source_id: str) -> str:
    schema = store.partition("acme", "proj")
    row = store.cursor().execute(f"SELECT id FROM {schema}.facts WHERE source_id = ?", [source_id]).fetchone()
    assert row is not None
    return str(row[0])


def test_a_slot_in_either_unicode_form_is_one_slot(store_path):
    """A slot written decomposed ("cafe" + U+0301) by a store before labels were normalized, and composed
    now: the newer fact replaces the older (each was current before, two slots that look the same)."""
    decomposed, composed = "menu.cafe\u0301", "menu.caf\u00e9"
    with Store(store_path) as store:
        _ingest(store, [fact("c1", "The cafe menu lists oat milk", slot=decomposed)])
        schema = store.partition("acme", "proj")
        with store.transaction() as cur:  # as the code before normalization stored it
            cur.execute(f"UPDATE {schema}.facts SET slot = ? WHERE source_id = 'c1'", [decomposed])
        _ingest(store, [fact("c2", "The cafe menu lists soy milk", slot=composed, created_at="2026-06-05T10:00:00Z")])
        assert _recall_ids(store, "cafe menu") == [(_id_of(store, "c2"), "The cafe menu lists soy milk")]


def _heads(store: Store, schema: str) -> set[tuple[int, str]]:
    return {(int(r), str(t)) for r, t in store.cursor().execute(f"SELECT rid, tbl FROM {schema}.heads").fetchall()}


def _heads_from_scratch(store: Store, schema: str) -> set[tuple[int, str]]:
    cur = store.cursor()
    return {(int(r[0]), table) for table, sql, params in head_queries(cur, schema)
            for r in cur.execute(sql, params).fetchall()}


def test_heads_kept_by_what_each_write_touched_equal_heads_computed_from_scratch(store_path):
    """rebuild_heads recomputes only the tables a write touched, and for summaries and turns only the ids
    it wrote: after every one of a random run of writes (new ids, new versions, older versions arriving
    late, deletions, supersessions, slots, a batch touching every table) the heads equal a full rebuild."""
    rnd = random.Random(13)
    with Store(store_path) as store:
        for step in range(40):
            batch = []
            for _ in range(rnd.randint(1, 4)):
                day = f"2026-06-{rnd.randint(1, 28):02d}T10:00:00Z"
                n = rnd.randint(0, 5)
                status = {"status": "deleted"} if rnd.random() < 0.15 else {}
                kind = rnd.choice(["fact", "summary", "turn"])
                if kind == "fact":
                    links = rnd.choice([{}, {"supersedes": f"f{rnd.randint(0, 5)}"}, {"slot": f"slot{n % 2}"}])
                    batch.append(fact(f"fs{step}-{n}-{rnd.random()}", f"fact {n} at {step}", id=f"f{n}",
                                      created_at=day, **links, **status))
                elif kind == "summary":
                    batch.append({"type": "summary", "source_id": f"ss{step}-{rnd.random()}", "session": f"s{n}",
                                  "id": f"sum{n}", "content": f"summary {n} at {step}", "created_at": day})
                else:
                    batch.append(turn(f"s{n % 2}", n, "maya", f"turn {n} at {step}", id=f"t{n}",
                                      source_id=f"ts{step}-{rnd.random()}", created_at=day))
            _ingest(store, batch)
            schema = store.partition("acme", "proj")
            assert _heads(store, schema) == _heads_from_scratch(store, schema), step
