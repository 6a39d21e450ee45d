"""Context (ranking/context.py, query/context.py) on a real DuckDB store with the real model and FAISS,
and through a real FUSE mount: a terse turn is read with the turns beside it, and only with those the
caller may read. A private turn never shapes the score of a public turn beside it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import numpy as np
import pytest
from mount_helpers import Mount, needs_fuse, serve, wait_until

from recallfs.query.context import context_cosines
from recallfs.query.gate import corpus_clause, scope_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall import recall
from recallfs.query.recall_scope import Scope, Trace
from recallfs.query.records import parse_record
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.query.vectors import VectorIndexes
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.context import context_cosine
from recallfs.ranking.pipeline import StageConfig
from recallfs.scope.principal import Principal

from conftest import turn

ME = Principal("acme", "proj", "tester")
SCOUT = Principal("acme", "proj", "scout")
TERSE = "Every Sunday since May, rain or shine."
QUESTION = "how often does maya take the rowing boat out on the lake"
SECRET = "kvctxsecret the rowing club takes the boats out on the lake at dawn"

RECORDS = [
    turn("s-lake", 0, "atlas", "Maya took the rowing boat out on the lake again this morning.", agent="atlas"),
    turn("s-lake", 1, "maya", TERSE),
    turn("s-lake", 2, "atlas", "Good for you, the water looked calm."),
    # distractors that share the query's words but not its meaning
    turn("s-shop", 0, "atlas", "The boat shop by the lake sells maps of the town."),
    turn("s-shop", 1, "maya", "How often does the ferry run on Sundays?"),
    # a public turn whose neighbour only scout may read
    turn("s-meet", 0, "atlas", "Where shall we meet on Friday?"),
    turn("s-meet", 1, "scout", SECRET, agent="scout", visibility="private"),
    turn("s-meet", 2, "atlas", "See you there then."),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory, minilm):
    path = tmp_path_factory.mktemp("context") / "store.duckdb"
    with Store(path) as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent=r.get("agent", "tester"))
                           for r in RECORDS], embedder=minilm)
        yield s


@pytest.fixture(scope="module")
def arm(minilm):
    return SemanticSearch(minilm, indexes=VectorIndexes(persist=False))


def rid_of(store: Store, source_id: str) -> int:
    schema = store.schema_for(ME)
    return int(store.cursor().execute(f"SELECT rid FROM {schema}.turns WHERE source_id = ?", [source_id]).fetchone()[0])


def score_of(result, content: str) -> float:
    return next(h.score for h in result.hits if h.row["content"] == content)


def test_a_terse_turn_is_lifted_by_the_turns_beside_it(store, arm):
    on = recall(store, ME, QUESTION, k=10, semantic=arm)
    off = recall(store, ME, QUESTION, k=10, semantic=arm, stages=StageConfig(context_weight=0.0))
    assert on.stages["context"].startswith("on (weight 0.2 x the cosine above 0.2;")
    assert off.stages["context"] == "off"
    assert score_of(on, TERSE) > score_of(off, TERSE)
    on_rank = [h.row["content"] for h in on.hits].index(TERSE)
    assert on_rank <= [h.row["content"] for h in off.hits].index(TERSE)


def test_a_single_arm_is_left_alone(store, arm):
    alone = recall(store, ME, QUESTION, k=10, semantic=arm, arm="semantic")
    assert alone.stages["context"].startswith("skipped: the scores are not calibrated")
    lexical = recall(store, ME, QUESTION, k=10)  # no semantic arm at all: no query embedding
    assert lexical.stages["context"].startswith("on (weight 0.2; no turn with a context")


def cosines_for(store: Store, arm: SemanticSearch, who: Principal, rid: int) -> dict[int, float]:
    schema = store.schema_for(who)
    where, params = scope_clause(who, schema, RecallOptions())
    scope = Scope(store, store.cursor(), schema, where, params, 100, corpus_clause(who, schema))
    return context_cosines(scope, who, [Candidate(rid=rid, table="turns")], RecallOptions(), arm.query(QUESTION),
                           arm, Trace(notes=[]))


def test_a_private_neighbour_never_shapes_a_public_turn(store, arm, minilm):
    after, secret, before = (rid_of(store, f"s-meet#{i}") for i in (2, 1, 0))
    vectors = arm.stored_vectors(store, store.schema_for(ME), {"turns": [after, secret, before]})
    q = minilm.embed_query(QUESTION)
    mine = cosines_for(store, arm, ME, after)
    # the caller cannot read the private turn: its context is the nearest turn it may read instead
    assert mine[after] == pytest.approx(context_cosine(q, [vectors[after], vectors[before]]), abs=1e-5)
    # its author reads it, and for them it is the neighbour (the lookup itself works)
    theirs = cosines_for(store, arm, SCOUT, after)
    assert theirs[after] == pytest.approx(context_cosine(q, [vectors[after], vectors[secret]]), abs=1e-5)
    assert not np.isclose(mine[after], theirs[after], atol=1e-3)


def test_filters_narrow_the_neighbours_too(store, arm, minilm):
    """`agent:` keeps one agent's rows: a neighbour the filter excludes is no context either."""
    schema = store.schema_for(ME)
    opener, terse, closer = (rid_of(store, f"s-lake#{i}") for i in range(3))
    options = RecallOptions(agent="tester")
    where, params = scope_clause(ME, schema, options)
    scope = Scope(store, store.cursor(), schema, where, params, 100, corpus_clause(ME, schema))
    narrowed = context_cosines(scope, ME, [Candidate(rid=terse, table="turns")], options, arm.query(QUESTION), arm,
                               Trace(notes=[]))
    plain = cosines_for(store, arm, ME, terse)
    vectors = arm.stored_vectors(store, schema, {"turns": [opener, terse, closer]})
    q = minilm.embed_query(QUESTION)
    assert narrowed[terse] == pytest.approx(context_cosine(q, [vectors[terse], vectors[closer]]), abs=1e-5)
    assert plain[terse] == pytest.approx(context_cosine(q, [vectors[opener], vectors[terse], vectors[closer]]),
                                         abs=1e-5)
    assert plain[terse] > narrowed[terse]  # the opener about rowing is what lifts the terse turn


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    yield from serve(tmp_path_factory.mktemp("context-mount"), RECORDS, RECALLFS_SEMANTIC="true",
                     RECALLFS_AGENT="tester")


@needs_fuse
@pytest.mark.mount
def test_through_the_mount_the_secret_neighbour_changes_nothing_the_caller_sees(mnt: Mount):
    assert wait_until(lambda: not mnt.mount_info().get("detail", {}).get("degraded", True), timeout=300), \
        "the semantic arm never became ready"
    query = mnt.path / "recall" / "where shall we meet on Friday at the rowing club"
    result = json.loads((query / "results.json").read_text())
    assert result["stages"]["context"].startswith("on (weight 0.2")
    # which vector search ran, per table: this store's tables are small, so every readable row is scanned
    assert "turns: exact" in result["stages"]["vector_search"]
    assert not result["degraded"]
    out = subprocess.run(["grep", "-rl", "kvctxsecret", str(query)], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    names = subprocess.run(["ls", str(query)], capture_output=True, text=True, check=True).stdout.split()
    assert names and not any("kvctxsecret" in n or "rowing-club" in n for n in names)
