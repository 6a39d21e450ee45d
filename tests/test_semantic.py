"""The semantic arm in recall, in process: real model, real FAISS, a real DuckDB file.

Each degraded reason is caused for real: the setting off, a model still loading, a missing model
directory, a 1 ms budget, and an encoder that raises.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import numpy as np
import pytest
from semantic_data import PARAPHRASES, records

from recallfs.query.embedder import Embedder
from recallfs.query.gate import scope_clause
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.model_files import default_model_path
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.semantic_query import QuerySearch
from recallfs.query.store import Store
from recallfs.query.vector_meta import stored_model
from recallfs.query.vector_write import embed_missing
from recallfs.query.vectors import VectorIndexes, index_dir
from recallfs.ranking.calibration import Z_FLOOR, standout_floor, weak_score
from recallfs.ranking.stage_config import StageConfig
from recallfs.scope.principal import Principal

from conftest import fact, write_jsonl

ME = Principal("acme", "proj", "tester")



@pytest.fixture
def store(tmp_path, minilm):
    path = write_jsonl(tmp_path / "m.jsonl", records())
    s = Store(tmp_path / "store.duckdb")
    ingest_records(s, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=minilm)
    yield s
    s.close()


def source_ids(result) -> list[str]:
    return [h.row["source_id"] for h in result.hits]


@pytest.mark.parametrize(("question", "answer"), [(q, sid) for q, sid, _ in PARAPHRASES])
def test_paraphrase_found_by_fusion_and_not_by_lexical(store, minilm, question, answer):
    arm = SemanticSearch(minilm)
    # The default page (k=10), as `ls recall/<q>/` shows it. Every question here has distractors that
    # share one of its rarer words; calibrated fusion ranks the paraphrase 1st to 6th among them.
    fused = recall(store, ME, question, k=10, arm="fused", semantic=arm)
    lexical = recall(store, ME, question, k=50, arm="lexical", semantic=arm)
    assert fused.degraded is False and fused.degraded_reason is None
    assert answer in source_ids(fused)
    hit = next(h for h in fused.hits if h.row["source_id"] == answer)
    assert hit.arms == ["semantic"]
    assert answer not in source_ids(lexical)  # it shares no word with the question
    alone = recall(store, ME, question, k=5, arm="semantic", semantic=arm)
    assert answer in source_ids(alone) and all(h.arms == ["semantic"] for h in alone.hits)


def test_every_row_has_one_vector_from_the_model(store, minilm):
    cur = store.cursor()
    schema = store.schema_for(ME)
    rows = cur.execute(f"""SELECT (SELECT count(*) FROM {schema}.facts) + (SELECT count(*) FROM {schema}.turns),
                                  count(*), count(DISTINCT model), min(model) FROM {schema}.vectors""").fetchone()
    assert rows[0] == rows[1] == len(records()) and rows[2] == 1 and rows[3] == minilm.model_id
    assert stored_model(cur).dim == 384
    kind = cur.execute(f"SELECT data_type FROM duckdb_columns() WHERE schema_name = '{schema}' "
                       "AND table_name = 'vectors' AND column_name = 'embedding'").fetchone()[0]
    assert kind == "SMALLINT[384]"  # float16 bits (query/half_vectors.py)


class _CountingEncoder:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, model: Embedder) -> None:
        self.inner = model._require()
        self.texts = 0

    def encode(self, inputs, **kwargs):
        self.texts += len(inputs)
        return self.inner.encode(inputs, **kwargs)


def test_reingest_embeds_only_rows_without_a_vector(tmp_path, store, minilm):
    counting = Embedder(encoder=_CountingEncoder(minilm), model_id=minilm.model_id, dim=minilm.dim)
    path = write_jsonl(tmp_path / "m.jsonl", records())
    again = load_file(path, "jsonl", org="acme", workspace="proj", agent="tester")
    ingest_records(store, again, embedder=counting)
    assert counting._encoder.texts == 0  # nothing new, nothing embedded

    changed = [*records(), fact("f-lang", "Our server code is all Rust, built with cargo and nextest."),
               fact("f-new", "The on-call rotation changes every Monday at noon.")]
    path = write_jsonl(tmp_path / "m2.jsonl", changed)
    ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"),
                   embedder=counting)
    assert counting._encoder.texts == 2  # the new version and the new fact
    assert embed_missing(store, counting).embedded == 0


def test_reingesting_an_older_file_writes_and_embeds_nothing(tmp_path, store, minilm):
    counting = Embedder(encoder=_CountingEncoder(minilm), model_id=minilm.model_id, dim=minilm.dim)
    older = write_jsonl(tmp_path / "older.jsonl", records())
    newer = write_jsonl(tmp_path / "newer.jsonl", [
        *records()[1:], fact(records()[0]["source_id"], "The first memory, rewritten since the older file.")])
    ingest_records(store, load_file(newer, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=counting)
    assert counting._encoder.texts == 1  # the new version
    report = ingest_records(store, load_file(older, "jsonl", org="acme", workspace="proj", agent="tester"),
                            embedder=counting)
    assert report.as_dict()["written"] == 0 and counting._encoder.texts == 1


def test_search_is_restricted_to_readable_rows(tmp_path, store, minilm):
    schema = store.schema_for(ME)
    # A private memory of another agent, and another workspace holding the same text.
    secret = [fact("p-1", "Our server code is all Rust, compiled with cargo.", agent="mallory",
                   visibility="private")]
    path = write_jsonl(tmp_path / "p.jsonl", secret)
    ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="mallory"), embedder=minilm)
    other = write_jsonl(tmp_path / "o.jsonl", [fact("o-1", "Our server code is all Rust, compiled with cargo.")])
    ingest_records(store, load_file(other, "jsonl", org="acme", workspace="other", agent="tester"), embedder=minilm)

    arm = SemanticSearch(minilm)
    where, params = scope_clause(ME, schema)
    rids = arm.search(store, schema, "facts", "which language is the server written in", where, params, 100,
                      alone=True)
    rows = store.cursor().execute(
        f"SELECT source_id, agent FROM {schema}.facts WHERE rid IN (SELECT unnest(?::BIGINT[]))", [rids]).fetchall()
    assert ("f-lang", "tester") in rows
    assert all(sid != "p-1" for sid, _ in rows)
    for result in (recall(store, ME, "which language is the server written in", k=50, semantic=arm),
                   recall(store, ME, "which language is the server written in", k=50, arm="semantic", semantic=arm)):
        assert {"p-1", "o-1"}.isdisjoint(source_ids(result))
    mallory = Principal("acme", "proj", "mallory")
    # p-1 has f-lang's exact text, so near-duplicate collapse shows the two as one hit, naming the other
    # copy in its provenance: either way mallory's recall reaches her private memory.
    result = recall(store, mallory, "which language is the server written in", k=5, semantic=arm)
    reached = source_ids(result) + [also["source_id"] for h in result.hits for also in h.also]
    assert "p-1" in reached


def test_scores_are_cosines_mapped_to_unit_interval(store, minilm):
    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema)
    hits = SemanticSearch(minilm).search_scored(store, schema, "facts", "Paperwork for the IRS is due on April 15.",
                                                where, params, 10, alone=True)
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # the identical sentence: cosine 1
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_calibrated_scores_rate_standouts_and_the_other_arms_rows(store, minilm):
    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema)
    rid_of = dict(store.cursor().execute(f"SELECT source_id, rid FROM {schema}.facts").fetchall())
    arm = SemanticSearch(minilm)
    question = "when must the annual taxes be filed"
    own = arm.search_calibrated(store, schema, "facts", question, where, params, 10)
    assert own and all(0.0 < s <= 1.0 for s in own.values())
    assert max(own, key=own.get) == rid_of["f-tax"]  # the paraphrase stands out most
    # A row outside its own top 3, passed in as the lexical arm's, is scored from its stored vector;
    # one that does not stand out from the background gets no score at all.
    top3 = arm.search_calibrated(store, schema, "facts", question, where, params, 3)
    extra = [rid for rid in own if rid not in top3][:1]
    unrelated = rid_of["d-morning-0"]
    scored = arm.search_calibrated(store, schema, "facts", question, where, params, 3, also=[*extra, unrelated])
    for rid in extra:
        assert scored[rid] == pytest.approx(own[rid], abs=1e-5)
    assert unrelated not in scored


def test_a_weak_lexical_match_lowers_the_standout_bar(store, minilm):
    """Issue 14: when the lexical arm matched little, neighbours that stand out only modestly count as
    semantic evidence instead of near-misses (ranking/calibration.standout_floor)."""
    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema)
    arm = SemanticSearch(minilm)
    question = "when must the annual taxes be filed"
    full_bar = arm.search_calibrated(store, schema, "facts", question, where, params, 10,
                                     z_floor=standout_floor(1.0))
    low_bar = arm.search_calibrated(store, schema, "facts", question, where, params, 10,
                                    z_floor=standout_floor(0.0))
    assert set(low_bar) == set(full_bar)  # the same neighbours take part; only their shares move
    assert all(low_bar[rid] >= full_bar[rid] for rid in full_bar)
    lifted = [rid for rid in full_bar if full_bar[rid] <= weak_score(1.0) < low_bar[rid]]
    assert lifted  # a near-miss under the full bar is evidence under the low one
    assert max(low_bar, key=low_bar.get) == max(full_bar, key=full_bar.get)  # the standout stays first
    # recall says which bar it used; the arm alone has none; the setting can hold the bar fixed
    said = recall(store, ME, question, semantic=arm).stages["standout"]
    assert said.startswith("z ") and "the lexical arm's best match" in said
    paraphrase = recall(store, ME, "the revenue service wants its forms by mid spring", semantic=arm)
    assert ", lowered: the lexical arm's best match is 0.1" in paraphrase.stages["standout"]  # a weak match
    fixed = recall(store, ME, "the revenue service wants its forms by mid spring", semantic=arm,
                   stages=StageConfig(standout_weak_z=Z_FLOOR))
    assert fixed.stages["standout"].startswith("z 1.75 (")
    assert "standout" not in recall(store, ME, question, arm="semantic", semantic=arm).stages


def test_faiss_indexes_persist_and_follow_the_store(tmp_path, store, minilm):
    indexes = VectorIndexes()
    arm = SemanticSearch(minilm, indexes=indexes)
    question = PARAPHRASES[0][0]
    recall(store, ME, question, semantic=arm)
    folder = index_dir(store)
    files = sorted(p.name for p in folder.iterdir())
    schema = store.schema_for(ME)
    assert f"{schema}.facts.vectors.npy" in files and f"{schema}.facts.stamp.json" in files
    stamp = json.loads((folder / f"{schema}.facts.stamp.json").read_text())
    assert stamp["model"] == minilm.model_id and stamp["count"] > 0

    # A fresh process (a new cache) loads the persisted index instead of rebuilding it.
    fresh = VectorIndexes()
    recall(store, ME, question, semantic=SemanticSearch(minilm, indexes=fresh))
    assert fresh.rebuilds == 0

    # New rows are added to the index; the answer to a new question is found at once.
    path = write_jsonl(tmp_path / "n.jsonl", [fact("f-boat", "Lee keeps a small sailing dinghy at the marina.")])
    ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=minilm)
    found = recall(store, ME, "does anyone own a boat", k=5, arm="semantic", semantic=arm)
    assert "f-boat" in source_ids(found)
    assert json.loads((folder / f"{schema}.facts.stamp.json").read_text())["count"] == stamp["count"] + 1

    # A deleted or damaged cache is rebuilt.
    (folder / f"{schema}.facts.vectors.npy").write_bytes(b"garbage")
    (folder / f"{schema}.facts.stamp.json").unlink()
    again = VectorIndexes()
    assert "f-boat" in source_ids(recall(store, ME, "does anyone own a boat", k=5, arm="semantic",
                                         semantic=SemanticSearch(minilm, indexes=again)))
    assert again.rebuilds >= 1


# -- degraded reasons, each caused for real ---------------------------------------------------------
QUESTION = "when must the annual taxes be filed"


def assert_lexical_answer(result, reason: str) -> None:
    assert result.degraded is True and result.degraded_reason == reason
    assert result.hits, "the lexical arm still answers"
    assert all(h.arms == ["lexical"] for h in result.hits)


def test_off(store):
    assert_lexical_answer(recall(store, ME, QUESTION, semantic=SemanticSearch(None, enabled=False)), "off")
    assert_lexical_answer(recall(store, ME, QUESTION, semantic=None), "off")


def test_warming(store):
    loading = Embedder(default_model_path())  # not started: the first availability() starts the loader
    result = recall(store, ME, QUESTION, semantic=SemanticSearch(loading))
    assert_lexical_answer(result, "warming")
    assert loading.wait_ready(120)
    assert recall(store, ME, QUESTION, semantic=SemanticSearch(loading)).degraded is False


def test_warming_until_the_indexes_and_the_postings_beside_them_are_loaded(store, minilm):
    """The daemon's warm-up (mount/daemon_start.warm): the arm says `warming`, and recall answers lexically,
    until the vector indexes and the work run beside them (the full-text postings) are both done."""
    release, ran = threading.Event(), threading.Event()

    def postings() -> None:
        ran.set()
        release.wait(60)

    arm = SemanticSearch(minilm, indexes=VectorIndexes())
    arm.warm_indexes(store, store.schema_for(ME), then=postings)
    assert ran.wait(60)
    assert_lexical_answer(recall(store, ME, QUESTION, semantic=arm), "warming")
    release.set()
    arm.wait_indexes()
    assert recall(store, ME, QUESTION, semantic=arm).degraded is False


def test_model_missing(store):
    missing = Embedder("/nonexistent")
    missing.wait_ready(30)
    assert_lexical_answer(recall(store, ME, QUESTION, semantic=SemanticSearch(missing)), "model-missing")


def test_timeout_with_a_1ms_budget(store, minilm):
    result = recall(store, ME, "a question nobody asked before: " + QUESTION,
                    semantic=SemanticSearch(minilm, budget_ms=1))
    assert_lexical_answer(result, "timeout")
    assert any("1 ms budget" in n for n in result.notes)


class _RaisingEncoder:
    def encode(self, inputs, **kwargs):
        raise RuntimeError("injected encoder fault")


def test_error_from_an_encoder_that_raises(store, minilm):
    faulty = Embedder(encoder=_RaisingEncoder(), model_id=minilm.model_id)
    result = recall(store, ME, QUESTION, semantic=SemanticSearch(faulty))
    assert_lexical_answer(result, "error")
    assert any("injected encoder fault" in n for n in result.notes)


def test_error_from_a_corrupt_model_directory(tmp_path, store):
    bad = tmp_path / "corrupt-model"
    bad.mkdir()
    (bad / "modules.json").write_text("[]")
    (bad / "config.json").write_text("{ truncated")
    (bad / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    broken = Embedder(str(bad))
    broken.wait_ready(120)
    assert_lexical_answer(recall(store, ME, QUESTION, semantic=SemanticSearch(broken)), "error")


class _StuckEncoder:
    def __init__(self) -> None:
        self.release = threading.Event()

    def encode(self, inputs, **kwargs):
        self.release.wait(60)
        return np.zeros((len(inputs), 384), dtype=np.float32)


def test_a_hung_encoder_never_hangs_recall(store, minilm):
    stuck = _StuckEncoder()
    try:
        result = recall(store, ME, QUESTION,
                        semantic=SemanticSearch(Embedder(encoder=stuck, model_id=minilm.model_id), budget_ms=100))
        assert_lexical_answer(result, "timeout")
    finally:
        stuck.release.set()


def test_store_ingested_without_vectors_says_to_reindex(tmp_path, minilm):
    path = write_jsonl(tmp_path / "m.jsonl", records())
    s = Store(tmp_path / "plain.duckdb")
    try:
        ingest_records(s, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=None)
        result = recall(s, ME, QUESTION, semantic=SemanticSearch(minilm))
        assert_lexical_answer(result, "error")
        assert any("recallfs reindex" in n for n in result.notes)
    finally:
        s.close()


class CountingIndexes(VectorIndexes):
    """The real in-memory indexes, counting the flat searches they run."""

    def __init__(self) -> None:
        super().__init__()
        self.searches: list[str] = []

    def search(self, store, schema, table, qvec, **kw):
        self.searches.append(table)
        return super().search(store, schema, table, qvec, **kw)


def test_rank_fusion_searches_each_table_once(store, minilm):
    # Rank fusion ranks by the arms' lists, then measures each hit's calibrated relevance for the floor
    # (arms.calibrated_evidence), which asks the semantic arm the same question again: the handle
    # answers the second time from the first search instead of scanning every vector again.
    indexes = CountingIndexes()
    arm = SemanticSearch(minilm, indexes=indexes)
    result = recall(store, ME, PARAPHRASES[0][0], fusion="rrf", semantic=arm)
    assert result.degraded is False and result.hits
    assert indexes.searches and len(indexes.searches) == len(set(indexes.searches))


@pytest.mark.parametrize("fusion", ["calibrated", "rrf"])
def test_fusion_keeps_no_more_rows_per_table_than_one_arm_brings(store, minilm, fusion):
    # Both arms find rows of every table here; the stages see each table's best `candidates` only.
    arm = SemanticSearch(minilm)
    # the lexical arm finds the distractors that share the question's words, the semantic arm the answer
    question = PARAPHRASES[0][0]
    wide = recall(store, ME, question, k=100, semantic=arm, fusion=fusion)
    narrow = recall(store, ME, question, k=100, semantic=arm, fusion=fusion, candidates=2)
    per_table = Counter(h.table for h in narrow.hits)
    assert per_table and max(per_table.values()) <= 2
    assert narrow.total_candidates <= 2 * len(per_table) < wide.total_candidates
    assert max(Counter(h.table for h in wide.hits).values()) > 2 and not narrow.degraded


class _SignallingEncoder:
    """The real model's encoder, saying when an encode begins."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.began = threading.Event()

    def encode(self, inputs, **kwargs):
        self.began.set()
        return self.inner.encode(inputs, **kwargs)


def test_recall_embeds_the_query_while_its_lexical_arm_searches(store, minilm, monkeypatch):
    """The query embedding starts before the lexical arm (on the embedder's worker), so the two overlap;
    the answer is the one the plain arm gives. The lexical search is only observed: each call notes
    whether the encode had begun by then (waiting for it a bounded while), then runs as it would."""
    import recallfs.query.arms as arms

    enc = _SignallingEncoder(minilm._encoder)
    seen: list[bool] = []
    real = arms.search_calibrated

    def observed(*args, **kwargs):
        seen.append(enc.began.wait(5))
        return real(*args, **kwargs)

    question = "a question asked once, for the overlap: " + QUESTION
    monkeypatch.setattr(arms, "search_calibrated", observed)
    result = recall(store, ME, question, semantic=SemanticSearch(Embedder(encoder=enc, model_id=minilm.model_id)))
    monkeypatch.undo()
    assert seen and all(seen), "the encode had not begun when the lexical arm searched"
    # the same (stock) embedding path as `result`'s: the shared embedder may serve queries through
    # ONNX Runtime by now, whose vectors differ in the seventh decimal
    plain = recall(store, ME, question, semantic=SemanticSearch(Embedder(encoder=minilm._encoder,
                                                                         model_id=minilm.model_id)))
    assert not result.degraded
    assert [(h.id, round(h.score, 6)) for h in result.hits] == [(h.id, round(h.score, 6)) for h in plain.hits]


class ThreadNotingIndexes(VectorIndexes):
    """The real in-memory indexes, noting which thread ran each flat search."""

    def __init__(self) -> None:
        super().__init__()
        self.searches: list[tuple[str, str]] = []

    def search(self, store, schema, table, qvec, **kw):
        self.searches.append((table, threading.current_thread().name))
        return super().search(store, schema, table, qvec, **kw)


class UnprefetchedQuery(QuerySearch):
    """A query handle that searches each table only when asked, on recall's thread."""

    __slots__ = ()

    def prefetch(self, *args: object) -> None:
        return None


class Unprefetched(SemanticSearch):
    def query(self, text: str) -> QuerySearch:
        return UnprefetchedQuery(self, text)


@pytest.mark.parametrize("fusion", ["calibrated", "rrf"])
def test_vector_searches_run_beside_the_lexical_arm_once_per_table(store, minilm, fusion):
    # recall starts the tables' vector searches on a worker before its lexical arm (QuerySearch.prefetch);
    # under calibrated fusion its own thread, once its lexical work is done, takes those the worker has
    # not begun (QuerySearch.prepare). Either way each table is searched once, and the answer is the one
    # a handle that searches each table only when asked gives.
    indexes = ThreadNotingIndexes()
    question = f"a question asked once, for the prefetch under {fusion} fusion: " + QUESTION
    result = recall(store, ME, question, semantic=SemanticSearch(minilm, indexes=indexes), fusion=fusion)
    assert result.degraded is False and result.hits
    tables = [table for table, _ in indexes.searches]
    assert tables and len(tables) == len(set(tables)), indexes.searches  # (a table without vectors: none)
    callers = {"recallfs-semantic", threading.current_thread().name} if fusion == "calibrated" else {
        "recallfs-semantic"}
    assert {name.rsplit("_", 1)[0] for _, name in indexes.searches} <= callers, indexes.searches

    plain = recall(store, ME, question, semantic=Unprefetched(minilm), fusion=fusion)
    assert [(h.id, round(h.score, 6)) for h in result.hits] == [(h.id, round(h.score, 6)) for h in plain.hits]


def test_recalls_at_once_answer_as_each_alone(store, minilm):
    """Eight recalls at once on one arm: their encodes queue on the one query worker (none waits to see
    another's begin), and each recall's thread and worker share its own searches. Every answer is the
    one the same recall gives alone."""
    from concurrent.futures import ThreadPoolExecutor

    arm = SemanticSearch(minilm)
    questions = [f"question {i} asked at once: {QUESTION}" for i in range(8)] + [p[0] for p in PARAPHRASES[:8]]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda q: recall(store, ME, q, semantic=arm), questions * 2))
    for question, result in zip(questions * 2, together, strict=True):
        alone = recall(store, ME, question, semantic=arm)
        assert not result.degraded and not alone.degraded, result.notes
        assert [(h.id, round(h.score, 6)) for h in result.hits] == [(h.id, round(h.score, 6)) for h in alone.hits]


def test_lexical_hits_are_gated_and_loaded_once_while_the_vector_searches_finish(store, minilm, monkeypatch):
    import recallfs.query.loading as loading

    loaded: list[int] = []
    real = loading.load_light

    def noted(store_, schema, table, rids):
        rids = list(rids)
        loaded.extend(rids)
        return real(store_, schema, table, rids)

    question = "a question asked once, for the preload: " + QUESTION
    monkeypatch.setattr(loading, "load_light", noted)
    result = recall(store, ME, question, semantic=SemanticSearch(minilm))
    monkeypatch.undo()
    assert result.hits and len(loaded) == len(set(loaded))
    plain = recall(store, ME, question, semantic=SemanticSearch(minilm))  # the same embedding path
    assert [(h.id, round(h.score, 6)) for h in result.hits] == [(h.id, round(h.score, 6)) for h in plain.hits]
