"""Currentness across tables: the yield stage from tables, then real stores through recall()."""

from __future__ import annotations

import pytest
from ranking_helpers import cand, rids

from recallfs.query.formats import render_context, render_text
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.ranking.currentness import (
    DELETED_WEIGHT,
    EVIDENCE,
    PULLED,
    SESSION,
    CurrentLink,
    yield_to_current,
)
from recallfs.ranking.pipeline import StageConfig
from recallfs.scope.principal import Principal

from conftest import fact, turn


def ev(current: int | None, stale: str = "f-old", current_id: str | None = "f-new") -> list[CurrentLink]:
    return [CurrentLink(EVIDENCE, current, current_id if current is not None else None, stale)]


def sess(*current: int) -> list[CurrentLink]:
    return [CurrentLink(SESSION, c, f"f{c}") for c in current]


# (candidates as (rid, score, table), links, expected order, expected scores rounded or None)
CASES = [
    # stale evidence above its current fact: the fact inherits the match, the turn sits just below
    ([(1, 0.76, "turns"), (2, 0.58, "facts")], {1: ev(2)}, [2, 1]),
    # a session link: the turn yields when the fact scores at least half of it
    ([(1, 0.76, "turns"), (2, 0.58, "facts")], {1: sess(2)}, [2, 1]),
    # ... and not when the fact barely matched
    ([(1, 0.76, "turns"), (2, 0.30, "facts")], {1: sess(2)}, [1, 2]),
    # no link: the fused order stands
    ([(1, 0.76, "turns"), (2, 0.58, "facts")], {}, [1, 2]),
    # facts never move down, summaries yield too
    ([(1, 0.9, "summaries"), (3, 0.8, "facts"), (2, 0.5, "facts")], {1: ev(2)}, [2, 1, 3]),
    # the yielding memory keeps its place against others above the fact
    ([(5, 0.95, "turns"), (1, 0.76, "turns"), (2, 0.58, "facts")], {1: sess(2)}, [5, 2, 1]),
    # of two covering facts, the best-scoring one is yielded to
    ([(1, 0.8, "turns"), (2, 0.6, "facts"), (3, 0.7, "facts")], {1: sess(2, 3)}, [3, 1, 2]),
    # a link to a fact that is not among the candidates does nothing (session) ...
    ([(1, 0.8, "turns"), (2, 0.6, "facts")], {1: sess(9)}, [1, 2]),
    # ... and evidence of a deleted fact is demoted
    ([(1, 0.8, "turns"), (2, 0.7, "facts")], {1: ev(None)}, [2, 1]),
    ([], {}, []),
]


@pytest.mark.parametrize(("spec", "links", "order"), CASES)
def test_yield_to_current(spec, links, order):
    cands = [cand(rid, score, table) for rid, score, table in spec]
    before = [(c.rid, c.score) for c in cands]
    out = yield_to_current(cands, links)
    assert rids(out) == order
    assert [(c.rid, c.score) for c in cands] == before  # pure


def test_marks_say_what_replaced_the_evidence():
    out = yield_to_current([cand(1, 0.5), cand(2, 0.4, "facts", id="f-new")],
                           {1: ev(2, "f-old", "f-new")})
    assert {c.rid: c.stale for c in out} == {2: "", 1: "superseded by f-new (was evidence of f-old)"}
    same = yield_to_current([cand(1, 0.5)], {1: [CurrentLink(EVIDENCE, None, None, "f-x")]})
    assert same[0].stale == "evidence of f-x, which is no longer current"
    assert same[0].score == pytest.approx(0.5 * DELETED_WEIGHT)
    version = CurrentLink(EVIDENCE, 2, "f-x", "f-x")
    assert version.mark() == "superseded by a newer version of f-x"
    # a current fact the request's filters leave out: marked, the order and the score stand
    kept = yield_to_current([cand(1, 0.5), cand(3, 0.45)], {1: [CurrentLink(EVIDENCE, None, "f-x", "f-x", True)]})
    assert [(c.rid, c.score, c.stale) for c in kept] == [
        (1, 0.5, "superseded by a newer version of f-x"), (3, 0.45, "")]
    assert CurrentLink(SESSION, 2, "f-x").mark() == ""


def test_pulled_fact_is_lifted_by_its_evidence_or_dropped():
    pulled = cand(2, 0.0, "facts", arms=(PULLED,))
    out = yield_to_current([cand(1, 0.7), pulled], {1: ev(2)})
    assert rids(out) == [2, 1] and out[0].score == pytest.approx(0.7)
    assert rids(yield_to_current([cand(1, 0.7), pulled], {})) == [1]
    # A score an earlier stage gave it (session evidence) is no match: without its evidence it goes.
    scored = cand(2, 0.3, "facts", arms=(PULLED,))
    assert rids(yield_to_current([cand(1, 0.7), scored], {})) == [1]


def test_the_stage_is_switchable():
    assert StageConfig().currentness is True
    assert StageConfig().toggled("currentness").currentness is False


# -- real stores ---------------------------------------------------------------------------------------
ME = Principal("acme", "ops", "tester")


def _ingest(store: Store, objs: list[dict], agent: str = "tester") -> None:
    ingest_records(store, [parse_record(o, org="acme", workspace="ops", agent=agent) for o in objs], embedder=None)


def _summary(session: str, content: str, created_at: str) -> dict:
    return {"type": "summary", "source_id": f"{session}#summary", "session": session, "content": content,
            "created_at": created_at}


DB_HOST = [
    turn("s1", 0, "maya", "Where is the primary database now?", created_at="2026-01-05T10:00:00Z"),
    turn("s1", 1, "atlas", "The primary database runs on db1.internal.", created_at="2026-01-05T10:01:00Z"),
    fact("fa", "Primary database host: db1.internal", id="f-db-host", slot="db.primary", entity="database",
         session="s1", refs=["s1#1"], created_at="2026-01-05T10:02:00Z"),
    _summary("s1", "The primary database is on db1.internal; backups were discussed.", "2026-01-05T10:03:00Z"),
    turn("s2", 0, "maya", "Where is the primary database now?", created_at="2026-03-05T10:00:00Z"),
    turn("s2", 1, "atlas", "We moved the primary database to db2.internal for the disks.",
         created_at="2026-03-05T10:01:00Z"),
    fact("fb", "Primary database host: db2.internal (moved for disk space)", id="f-db-host-2", slot="db.primary",
         supersedes="f-db-host", entity="database", session="s2", refs=["s2#1"], created_at="2026-03-05T10:02:00Z"),
    _summary("s2", "The primary database moved from db1 to db2.internal for disk space.", "2026-03-05T10:03:00Z"),
    turn("s3", 0, "maya", "Moving day again: what changed?", created_at="2026-05-05T10:00:00Z"),
    turn("s3", 1, "atlas", "It is on pg-main.internal, the new cluster.", created_at="2026-05-05T10:01:00Z"),
    fact("fc", "The primary database host is pg-main.internal on the new cluster", id="f-db-host-3",
         slot="db.primary", supersedes="f-db-host-2", entity="database", session="s3", refs=["s3#1"],
         created_at="2026-05-05T10:02:00Z"),
]


def test_the_current_fact_outranks_stale_turns_summaries_and_bare_questions(store_path):
    with Store(store_path) as store:
        _ingest(store, DB_HOST)
        result = recall(store, ME, "where is the primary database", arm="lexical", k=10)
        hits = [(h.table, h.id) for h in result.hits]
        assert hits[0] == ("facts", "f-db-host-3"), hits
        stale = {h.row["source_id"]: h.row.get("stale") for h in result.hits if h.table != "facts"}
        assert stale["s1#1"] == "superseded by f-db-host-3 (was evidence of f-db-host)"
        assert stale["s2#1"] == "superseded by f-db-host-3 (was evidence of f-db-host-2)"
        assert all(h.table != "facts" or h.id == "f-db-host-3" for h in result.hits)  # turns stay findable
        assert {"s1#summary", "s2#summary"} <= set(stale)
        # The two bare questions collapse to one, the one whose session holds the stronger evidence.
        assert len({"s1#0", "s2#0"} & set(stale)) == 1


ZOE = [
    turn("c1", 0, "zoe", "I drink a double espresso every morning before work.", created_at="2026-02-01T08:00:00Z"),
    fact("z1", "Zoe drinks a double espresso every morning", id="f-zoe-drink", entity="zoe", session="c1",
         refs=["c1#0"], created_at="2026-02-01T08:05:00Z"),
    turn("c2", 0, "zoe", "Cut the caffeine: it is oat flat whites from now on, decaf.",
         created_at="2026-04-01T08:00:00Z"),
    fact("z2", "Zoe has switched to decaf oat flat whites", id="f-zoe-drink", entity="zoe", session="c2",
         refs=["c2#0"], created_at="2026-04-01T08:05:00Z"),
]


def test_a_stale_turn_yields_and_is_marked_and_the_answer_is_pulled_in(store_path):
    with Store(store_path) as store:
        _ingest(store, ZOE)
        # the query's words are only in the stale turn; the current fact is the answer all the same
        result = recall(store, ME, "double espresso every morning", arm="lexical", k=10)
        assert [(h.table, h.row["source_id"]) for h in result.hits][:2] == [("facts", "z2"), ("turns", "c1#0")]
        assert result.hits[1].as_json()["stale"] == "superseded by a newer version of f-zoe-drink"
        assert result.hits[0].arms == [PULLED]
        assert 'stale="superseded by a newer version of f-zoe-drink"' in render_context(result)
        assert "stale: superseded by a newer version of f-zoe-drink" in render_text(result)
        off = recall(store, ME, "double espresso every morning", arm="lexical", k=10,
                     stages=StageConfig(currentness=False))
        assert [h.row["source_id"] for h in off.hits] == ["c1#0"]
        assert "stale" not in off.hits[0].as_json()


@pytest.mark.parametrize("options", ["kind:turn", "until:2026-03-01", "kind:turn,summary since:2026-01-01"])
def test_a_stale_turn_is_marked_when_the_filters_leave_its_current_fact_out(store_path, options):
    """Found 2026-12-07: a turns-only or dated question dropped the mark with the link, so the replaced
    decision came back unflagged; the fact is not pulled into a page its filters exclude."""
    with Store(store_path) as store:
        _ingest(store, ZOE)
        result = recall(store, ME, f"double espresso every morning {options}", arm="lexical", k=10)
        assert [(h.table, h.row["source_id"]) for h in result.hits][:1] == [("turns", "c1#0")]
        assert all(h.table != "facts" for h in result.hits)
        assert result.hits[0].as_json()["stale"] == "superseded by a newer version of f-zoe-drink"


def test_a_private_replacement_is_invisible_to_others(store_path):
    with Store(store_path) as store:
        _ingest(store, ZOE[:2])
        _ingest(store, [dict(ZOE[3], visibility="private")], agent="owner")
        # the other agent may not read the new version: no mark names it, nothing of it is pulled in
        # and the fact it replaced is current for this reader, as in a store without the private version
        result = recall(store, ME, "double espresso every morning", arm="lexical", k=10)
        assert sorted(h.row["source_id"] for h in result.hits) == ["c1#0", "z1"]
        assert all("stale" not in h.as_json() for h in result.hits)
        assert all("oat" not in h.row["content"] for h in result.hits)


def test_a_private_deletion_leaves_the_fact_and_its_evidence_as_they_were_for_others(store_path):
    with Store(store_path) as store:
        _ingest(store, ZOE[:2])
        # the deletion cites nothing: the only citation of the turn is the version this reader may read
        gone = dict(ZOE[1], visibility="private", status="deleted", refs=[], created_at="2026-04-01T08:05:00Z")
        _ingest(store, [gone], agent="owner")
        result = recall(store, ME, "double espresso every morning", arm="lexical", k=10)
        assert sorted(h.row["source_id"] for h in result.hits) == ["c1#0", "z1"]
        assert all("stale" not in h.as_json() for h in result.hits)  # no mark says the fact went
        owner = recall(store, Principal("acme", "ops", "owner"), "double espresso every morning", arm="lexical")
        assert [h.row["source_id"] for h in owner.hits] == ["c1#0"]
