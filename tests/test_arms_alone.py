"""Issue 14: an arm alone ranks like its plain counterpart. Real DuckDB file, real MiniLM, real FAISS.

Alone, the semantic arm keeps every neighbour above its cosine floor (no standout filter), and each arm's
tables are merged by the arm's own scores, not by rank: merged by rank, the best fact came first
however weakly it matched, beside a turn that said the very thing asked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from semantic_data import PARAPHRASES, records

from recallfs.query.gate import scope_clause
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.semantic_query import ALONE_MIN_COSINE
from recallfs.query.store import Store
from recallfs.ranking.stage_config import StageConfig
from recallfs.scope.principal import Principal

from conftest import fact, turn, write_jsonl

ME = Principal("acme", "proj", "tester")
QUESTION = "which city is the team offsite in this year"
# One fact, loosely related; and a turn of the same session that says what is asked.
MIXED = [
    fact("f-travel", "Travel expenses of the team are booked through the finance portal."),
    turn("s-plan", 0, "maya", "This year the team offsite is in Lisbon, the city by the sea."),
    turn("s-plan", 1, "atlas", "Noted."),
]


@pytest.fixture(scope="module")
def stores(tmp_path_factory, minilm):
    base = tmp_path_factory.mktemp("alone")
    opened = []
    for name, recs in (("paraphrases", records()), ("mixed", MIXED)):
        path = write_jsonl(base / f"{name}.jsonl", recs)
        store = Store(base / f"{name}.duckdb")
        ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"),
                       embedder=minilm)
        opened.append(store)
    yield dict(zip(("paraphrases", "mixed"), opened, strict=True))
    for store in opened:
        store.close()


@pytest.mark.parametrize("question", [q for q, _, _ in PARAPHRASES])
def test_the_semantic_arm_alone_keeps_every_neighbour_above_its_cosine_floor(stores, minilm, question):
    store = stores["paraphrases"]
    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema)
    arm = SemanticSearch(minilm)
    hits = arm.search_scored(store, schema, "facts", question, where, params, 100, alone=True)
    # the plain top-k: every readable fact's cosine, from its stored vector
    rids = [r[0] for r in store.cursor().execute(f"SELECT rid FROM {schema}.facts").fetchall()]
    vectors = arm.stored_vectors(store, schema, {"facts": rids}) or {}
    qvec = arm.query(question).vector()
    cosines = {rid: float(np.dot(vec, qvec)) for rid, vec in vectors.items()}
    plain = {rid for rid, cos in cosines.items() if cos >= ALONE_MIN_COSINE + 1e-6}
    assert plain <= {h.rid for h in hits}
    assert [h.rid for h in hits] == sorted((h.rid for h in hits), key=lambda r: -cosines[r])


def test_the_semantic_arm_alone_merges_tables_by_cosine(stores, minilm):
    result = recall(stores["mixed"], ME, QUESTION, arm="semantic", semantic=SemanticSearch(minilm),
                    stages=StageConfig(session_weight=0.0))
    assert [h.row["source_id"] for h in result.hits][:1] == ["s-plan#0"]
    cosines = [h.cosine for h in result.hits]
    assert all(a is not None and b is not None and a >= b - 0.01 for a, b in itertools.pairwise(cosines))


def test_the_lexical_arm_alone_merges_tables_by_bm25(stores):
    # The fact shares one word ("team") once; the turn holds every word of the query.
    store = stores["mixed"]
    result = recall(store, ME, "team offsite city Lisbon this year", arm="lexical")
    assert [h.row["source_id"] for h in result.hits][:1] == ["s-plan#0"]
