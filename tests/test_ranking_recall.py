"""The shaping stages inside recall() on a real DuckDB store: temporal intent, exact entity match,
near-duplicate collapse, the budget option and the stage switches."""

from __future__ import annotations

import pytest

from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.ranking.pipeline import StageConfig
from recallfs.ranking.provenance import SINGLE_ARM_WEIGHTS
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")
NEWER = "After the spring review the team moved its chat tool to Zulip"
OTHER = Principal("acme", "proj", "scout")

RECORDS = [
    # Two conflicting facts, both current: the older is shorter, so BM25 ranks it first, and the two
    # match about as well (within recency's band: a single arm is ordered by its scores, not ranks).
    fact("chat-old", "Team chat tool: Slack, set up in January", created_at="2026-01-10T09:00:00Z"),
    fact("chat-new", NEWER, created_at="2026-05-10T09:00:00Z"),
    fact("maya-1", "Maya prefers small pull requests", entity="Maya", kind="preference",
         created_at="2026-03-01T09:00:00Z"),
    fact("maya-2", "Maya owns the release process", entity="Maya", created_at="2026-04-01T09:00:00Z"),
    fact("priv", "Project Nightjar is the secret rewrite", entity="Nightjar", visibility="private",
         agent="scout"),
    # The same sentence as a fact and as a turn: collapse keeps the fact.
    fact("dup-fact", "Release notes are drafted in docs/CHANGES.md", created_at="2026-02-01T09:00:00Z"),
    turn("s1", 1, "maya", "Release notes are drafted in docs/CHANGES.md"),
    turn("s1", 2, "atlas", "Noted, the release checklist lives in docs/release.md too"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("rank") / "store.duckdb"
    with Store(path) as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in RECORDS],
                       embedder=None)
        yield s


def contents(result) -> list[str]:
    return [h.row["content"] for h in result.hits]


def test_latest_returns_the_newer_of_two_conflicting_facts_first(store):
    plain = recall(store, ME, "what is the team chat tool", arm="lexical")
    plain_off = recall(store, ME, "what is the team chat tool", arm="lexical", stages=StageConfig(recency="off"))
    latest = recall(store, ME, "what is the latest team chat tool", arm="lexical")
    assert contents(plain)[0].startswith("Team chat tool: Slack")
    assert contents(plain) == contents(plain_off)  # no temporal intent: the order is left alone
    assert plain.stages["recency"].startswith("neutral")
    assert contents(latest)[0] == NEWER
    assert latest.stages["recency"].startswith("auto: temporal intent 'latest'")


@pytest.mark.parametrize("phrasing", ["what is the current team chat tool", "team chat tool now",
                                      "most recent team chat tool", "team chat tool recent:7d"])
def test_other_temporal_phrasings(store, phrasing):
    assert contents(recall(store, ME, phrasing, arm="lexical"))[0] == NEWER


def test_recent_off_and_recency_off_keep_the_relevance_order(store):
    assert contents(recall(store, ME, "latest team chat tool recent:off", arm="lexical"))[0].startswith(
        "Team chat tool: Slack")
    assert contents(recall(store, ME, "latest team chat tool", arm="lexical",
                           stages=StageConfig(recency="off")))[0].startswith("Team chat tool: Slack")


def test_exact_entity_match_puts_the_card_first(store):
    result = recall(store, ME, "maya", arm="lexical")
    assert result.entity is not None and result.entity.name == "Maya"
    # both facts are also hits on this page: the card refers to them by rank rather than repeating them
    by_rank = {h.rank: h.row["content"] for h in result.hits}
    assert [by_rank[f["hit"]] for f in result.entity.facts] == ["Maya owns the release process",
                                                                "Maya prefers small pull requests"]
    assert all("content" not in f for f in result.entity.facts)
    assert result.entity.total_facts == 2
    out = result.as_json()
    assert out["entity"]["name"] == "Maya" and out["hits"]  # the ranked hits follow the card
    assert result.hits[0].rank == 1  # the card takes no rank


@pytest.mark.parametrize("query", ["what does maya prefer", "mayan", ""])
def test_no_card_unless_the_query_is_the_name(store, query):
    assert recall(store, ME, query, arm="lexical").entity is None


def test_entity_card_respects_scope_and_can_be_switched_off(store):
    assert recall(store, ME, "Nightjar", arm="lexical").entity is None  # someone else's private fact
    seen = recall(store, OTHER, "Nightjar", arm="lexical")
    assert seen.entity is not None and seen.entity.name == "Nightjar"
    assert recall(store, ME, "Maya", arm="lexical", stages=StageConfig(entity_first=False)).entity is None


def test_exact_duplicate_collapses_to_the_fact_and_keeps_the_turn_as_provenance(store):
    result = recall(store, ME, "release notes drafted", arm="lexical")
    dups = [h for h in result.hits if h.row["content"] == "Release notes are drafted in docs/CHANGES.md"]
    assert len(dups) == 1 and dups[0].table == "facts"
    also = dups[0].as_json()["provenance"]["also"]
    assert [(a["table"], a["source_id"]) for a in also] == [("turns", "s1#1")]
    assert "lexical:turns" in dups[0].ranks and "lexical:facts" in dups[0].ranks

    off = recall(store, ME, "release notes drafted", arm="lexical", stages=StageConfig(collapse=False))
    assert sum(h.row["content"] == "Release notes are drafted in docs/CHANGES.md" for h in off.hits) == 2


def test_budget_option_caps_the_tokens(store):
    full = recall(store, ME, "release", arm="lexical")
    capped = recall(store, ME, "release budget:16", arm="lexical")
    assert 0 < len(capped.hits) < len(full.hits)
    assert sum(len(h.row["content"]) for h in capped.hits) <= 16 * 4
    assert any("budget 16 tokens" in n for n in capped.notes)
    assert capped.total_candidates == len(capped.hits)


def test_min_score_and_a_bad_option_never_crash(store):
    result = recall(store, ME, "release k:zero", arm="lexical", stages=StageConfig(min_score=0.99))
    assert all(h.score >= 0.99 for h in result.hits)
    assert any("ignored k:zero" in n for n in result.notes)


def test_rerank_without_vectors_degrades_softly(store):
    result = recall(store, ME, "release", arm="lexical", stages=StageConfig(rerank=True))
    assert result.hits and result.stages["rerank"].startswith("skipped")


def test_provenance_weights_and_equal_weights(store):
    # A single arm merges its tables by its own scores; the lexical arm's turns weigh 0.8 by default
    # (ranking.provenance.SINGLE_ARM_WEIGHTS), and given weights replace that.
    # Session support with breadth is a noisy-OR, not linear in the scores: the weights are read with a
    # session backed by its best hit alone, where scaling every score scales the result.
    best_alone = StageConfig(session_breadth=0.0)
    default = recall(store, ME, "release", arm="lexical", stages=best_alone)
    equal = recall(store, ME, "release", arm="lexical", weights={}, stages=best_alone)
    halved = recall(store, ME, "release", arm="lexical", weights={"turns": 0.5}, stages=best_alone)

    def best_turn(result) -> float:
        return max(h.score for h in result.hits if h.table == "turns")
    assert best_turn(default) == pytest.approx(SINGLE_ARM_WEIGHTS["lexical:turns"] * best_turn(equal))
    assert best_turn(halved) == pytest.approx(0.5 * best_turn(equal))


def test_results_json_reports_the_stages(store):
    out = recall(store, ME, "release", arm="lexical").as_json()
    assert set(out["stages"]) >= {"dedup", "rerank", "collapse", "recency", "mmr", "min_score"}
    assert out["entity"] is None
    assert any(k.startswith("stage_") for k in out["timings_ms"])


def test_renderers_show_the_entity_card_before_the_hits(store):
    import xml.etree.ElementTree as ET

    from recallfs.query.formats import render_context, render_text

    result = recall(store, ME, "Maya", arm="lexical")
    root = ET.fromstring(render_context(result))
    assert root[0].tag == "entity" and root[0].get("name") == "Maya" and root[0].get("facts") == "2"
    assert [f.text for f in root[0]] == [None, None]  # both are hits: referred to, not repeated
    hits = {h.get("rank"): h.text for h in root.findall("hit")}
    assert [hits[f.get("hit")] for f in root[0]] == ["Maya owns the release process",
                                                     "Maya prefers small pull requests"]
    assert root[1].tag == "hit"
    text = render_text(result)
    assert text.index("entity Maya: 2 current facts") < text.index("  1. [")


def test_full_rows_load_only_for_the_page_and_what_it_folded_in(tmp_path):
    # Two-phase loading: ranking reads light columns of every candidate; full rows load for the page
    # (and the copies collapsed into it, named in `also`) only.
    from recallfs.query.rows import full_rows_held

    records = [fact(f"w{i}", f"widget number {i} ships in crate {i * 7}") for i in range(30)]
    spares = "widget spares are kept in bin A"
    records += [fact("dup-f", spares), turn("s9", 1, "maya", spares)]
    with Store(tmp_path / "s.duckdb") as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in records],
                       embedder=None)
        result = recall(s, ME, "widget", arm="lexical", k=2)
        assert result.total_candidates > 20
        page = {(h.table, h.rid) for h in result.hits}
        also = {(a["table"], a["source_id"]) for h in result.hits for a in h.also}
        assert ("turns", "s9#1") in also
        held = full_rows_held(s)
        assert {(t, r) for _, t, r in held} >= page
        assert len(held) == len(page) + len(also)


def test_recall_runs_blas_on_one_thread(tmp_path):
    # query/blas.py: recall's matrix products are a few hundred rows; OpenBLAS threads on a busy
    # machine wait at barriers for each other (collapse's product: 12-16 ms on 2 threads, ~1 ms on one).
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with Store(tmp_path / "s.duckdb") as s:
        ingest_records(s, [parse_record(fact("b1", "blas threads for small products"), org="acme",
                                        workspace="proj", agent="tester")], embedder=None)
        recall(s, ME, "blas", arm="lexical")
    # numpy's own OpenBLAS, which runs the products (a library loaded later, e.g. scipy's with the
    # model, is not limited and is not on recall's path)
    blas = [lib for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas" and "numpy" in lib["filepath"]]
    assert blas and all(lib["num_threads"] == 1 for lib in blas)


def test_a_memory_of_the_named_span_survives_fusions_cut(tmp_path, minilm):
    # Fusion keeps each table's best `candidates` rows of the two arms' union; the time-window stage
    # (x2 inside the span the question names) comes later, so the cut must not drop that span's memory
    # first. Here the lexical arm finds the day's log first, the semantic arm the volunteering facts,
    # and fused the log comes 5th: past a cut of 3.
    from recallfs.query.semantic import SemanticSearch

    said = ["Maria volunteered at the animal shelter", "Maria volunteered at the food bank",
            "Maria volunteered at the hospital", "Maria helped at the animal shelter",
            "Maria did charity work at the food bank", "Maria helped out at the soup kitchen",
            "Maria gave her weekend to the hospital charity"]
    records = [fact(f"s{i}", text, created_at=f"2023-0{1 + i}-11T10:00:00Z") for i, text in enumerate(said)]
    records.append(fact("log", "Volunteer log, 31 July 2023: the parking lot key was returned",
                        created_at="2023-07-31T14:00:00Z"))
    question = "Where did Maria volunteer on 31 July, 2023?"
    with Store(tmp_path / "s.duckdb") as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in records],
                       embedder=minilm)
        arm = SemanticSearch(minilm)
        off = recall(s, ME, question, candidates=3, semantic=arm, stages=StageConfig(window_weight=0.0))
        assert "log" not in [h.row["source_id"] for h in off.hits] and len(off.hits) == 3
        dated = recall(s, ME, question, candidates=3, semantic=arm)
        assert [h.row["source_id"] for h in dated.hits][:2] == ["log", "s2"]
        assert dated.stages["window"].startswith("x2 for memories of 2023-07-24")
        assert len(dated.hits) == 4  # the cut holds for the rest: 3, and the one of the span
