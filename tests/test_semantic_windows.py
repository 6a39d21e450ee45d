"""Long memories read whole (issue 14): a memory longer than the model's 256 word pieces is embedded
as overlapping windows, and the semantic arm scores the row by its best window.

Real model, real FAISS, a real DuckDB file, the real ingest path.
"""

from __future__ import annotations

import numpy as np
import pytest
from old_stores import float_vectors
from semantic_data import records

from recallfs.query.gate import scope_clause
from recallfs.query.half_vectors import from_stored, rounded
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.migrations import windows_pending_key
from recallfs.query.policies import remove_policy, set_policy
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.query.vector_meta import stored_model
from recallfs.query.vector_write import embed_missing
from recallfs.query.vectors import VectorIndexes, ensure_indexes, index_dir
from recallfs.scope.policy import Policy
from recallfs.scope.principal import Principal

from conftest import turn, write_jsonl

ME = Principal("acme", "proj", "tester")
_TOPICS = ["tomato seedlings", "sourdough starter", "compost heap", "basil cuttings", "rhubarb crowns",
           "pickled onions", "apple chutney", "bean trellis", "strawberry runners", "onion sets"]
_VERBS = ["needs watering every", "should be turned every", "is best checked every", "grows fastest when fed every",
          "was repotted every"]
# Stated only at the end of the long turn, far past its 256th word piece.
FACT = ("One more thing about the boathouse. The spare key to the boathouse is hidden under the blue "
        "flowerpot by the jetty. If the boathouse key is not under the flowerpot, ask the neighbour, who keeps "
        "a second boathouse key. Please put the boathouse key back under the flowerpot when you leave.")
QUESTION = "where is the boathouse key hidden"


def long_answer() -> str:
    sentences = [f"The {t} {v} {d} days in late spring, and the {u} likes a sunny corner."
                 for i, (t, v, d) in enumerate((t, v, d) for t in _TOPICS for v in _VERBS for d in ("two", "three"))
                 for u in [_TOPICS[(i + 3) % len(_TOPICS)]]]
    return " ".join(sentences[:20]) + " " + FACT


def windows_of(store: Store, schema: str, source_id: str) -> int:
    return int(store.cursor().execute(
        f"SELECT count(*) FROM {schema}.vectors v JOIN {schema}.turns t USING (rid) WHERE t.source_id = ?",
        [source_id]).fetchone()[0])


def ingest(store: Store, tmp_path, rows: list[dict], minilm, *, agent: str = "tester", name: str = "m") -> None:
    path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
    ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent=agent), embedder=minilm)


@pytest.fixture
def store(tmp_path, minilm):
    s = Store(tmp_path / "store.duckdb")
    ingest(s, tmp_path, [*records(), turn("s-garden", 1, "assistant", long_answer())], minilm)
    yield s
    s.close()


def ids(result) -> list[str]:
    return [h.row["source_id"] for h in result.hits]


def test_the_fact_is_past_the_models_window(minilm):
    tokenizer = minilm._require().tokenizer
    pieces = tokenizer(long_answer(), add_special_tokens=False)["input_ids"]
    before_fact = tokenizer(long_answer().removesuffix(FACT), add_special_tokens=False)["input_ids"]
    assert len(before_fact) > 256 and len(pieces) > len(before_fact)


def test_a_fact_past_word_piece_256_is_found_by_the_semantic_arm(store, minilm):
    schema = store.schema_for(ME)
    assert windows_of(store, schema, "s-garden#1") >= 2
    arm = SemanticSearch(minilm, indexes=VectorIndexes(persist=False))
    alone = recall(store, ME, QUESTION, k=5, arm="semantic", semantic=arm)
    assert alone.degraded is False
    assert ids(alone)[:1] == ["s-garden#1"]
    assert len(ids(alone)) == len(set(ids(alone)))  # a row's windows are one hit
    fused = recall(store, ME, QUESTION, k=5, arm="fused", semantic=arm)
    assert "s-garden#1" in ids(fused)


def test_short_rows_stay_one_vector_and_reingest_embeds_nothing(tmp_path, store, minilm):
    schema = store.schema_for(ME)
    cur = store.cursor()
    multi = cur.execute(f"SELECT count(*) FROM (SELECT rid FROM {schema}.vectors GROUP BY rid "
                        "HAVING count(*) > 1)").fetchone()[0]
    assert multi == 1  # only the long turn
    before = cur.execute(f"SELECT count(*) FROM {schema}.vectors").fetchone()[0]
    ingest(store, tmp_path, [*records(), turn("s-garden", 1, "assistant", long_answer())], minilm)
    assert store.cursor().execute(f"SELECT count(*) FROM {schema}.vectors").fetchone()[0] == before


def test_the_chunk_map_is_saved_checked_and_rebuilt_when_damaged(store, minilm):
    schema = store.schema_for(ME)
    stored = stored_model(store.cursor())
    first = VectorIndexes()
    ensure_indexes(store, first)
    entry = first.index_for(store, schema, "turns", stored)
    chunk_map = index_dir(store) / f"{schema}.turns.chunks.npy"
    assert chunk_map.exists() and len(np.load(chunk_map)) == entry.ntotal
    arm = SemanticSearch(minilm, indexes=VectorIndexes())
    assert ids(recall(store, ME, QUESTION, k=3, arm="semantic", semantic=arm))[:1] == ["s-garden#1"]
    assert arm.indexes.repairs == [] and arm.indexes.rebuilds == 0  # loaded as saved

    raw = bytearray(chunk_map.read_bytes())
    raw[-8:] = (999_999).to_bytes(8, "little")  # the last window now names another row, same size
    chunk_map.write_bytes(bytes(raw))
    arm = SemanticSearch(minilm, indexes=VectorIndexes())
    assert ids(recall(store, ME, QUESTION, k=3, arm="semantic", semantic=arm))[:1] == ["s-garden#1"]
    assert any("chunk map" in r.why and "checksum" in r.why for r in arm.indexes.repairs)

    chunk_map.unlink()
    arm = SemanticSearch(minilm, indexes=VectorIndexes())
    assert ids(recall(store, ME, QUESTION, k=3, arm="semantic", semantic=arm))[:1] == ["s-garden#1"]
    assert any("the chunk map file is missing" in r.why for r in arm.indexes.repairs)
    assert chunk_map.exists()  # rewritten


def test_a_tight_scope_never_returns_a_window_of_a_forbidden_row(tmp_path, store, minilm):
    schema = store.schema_for(ME)
    secret = long_answer().replace("boathouse", "wine cellar")
    # Workspace-visible, but the tester's policy reads only its own memories.
    ingest(store, tmp_path, [turn("s-secret", 1, "assistant", secret)], minilm, agent="mallory", name="secret")
    set_policy(store, ME, Policy(authors=("tester",)))
    assert windows_of(store, schema, "s-secret#1") >= 2
    secret_rid = store.cursor().execute(f"SELECT rid FROM {schema}.turns WHERE source_id = 's-secret#1'").fetchone()[0]
    question = "where is the wine cellar key hidden"
    for arm_name in ("semantic", "fused"):
        arm = SemanticSearch(minilm, indexes=VectorIndexes(persist=False))
        got = recall(store, ME, question, k=50, arm=arm_name, semantic=arm)
        assert "s-secret#1" not in ids(got)
    # The index itself, asked for every window: the forbidden row's windows are never scored.
    indexes = VectorIndexes(persist=False)
    where, params = scope_clause(ME, schema)
    qvec = minilm.embed_query(question)
    found, _path = indexes.search(store, schema, "turns", qvec, where=where, params=params, limit=10_000,
                           stored=stored_model(store.cursor()))
    assert found and secret_rid not in {rid for rid, _ in found}
    assert len(found) == len({rid for rid, _ in found})
    # Without the policy it is readable, and found by a window past the first.
    remove_policy(store, ME)
    got = recall(store, ME, question, k=3, arm="semantic", semantic=SemanticSearch(minilm))
    assert ids(got)[:1] == ["s-secret#1"]
    owner = Principal("acme", "proj", "mallory")
    got = recall(store, owner, question, k=3, arm="semantic", semantic=SemanticSearch(minilm))
    assert ids(got)[:1] == ["s-secret#1"]


def _answers_read_only(path, minilm) -> None:
    ro = Store(path, read_only=True, create=False)
    try:
        arm = SemanticSearch(minilm, indexes=VectorIndexes(persist=False))
        got = recall(ro, ME, "how often do the tomato seedlings need watering", k=5, arm="fused", semantic=arm)
        assert got.degraded is False and "s-garden#1" in ids(got)
    finally:
        ro.close()


def _downgrade_to_v2(store: Store, schema: str) -> None:
    float_vectors(store, schema, chunked=False)


def test_an_old_store_opens_answers_and_an_embed_fills_its_windows(tmp_path, minilm):
    path = tmp_path / "old.duckdb"
    s = Store(path)
    ingest(s, tmp_path, [*records(), turn("s-garden", 1, "assistant", long_answer())], minilm)
    schema = s.schema_for(ME)
    _downgrade_to_v2(s, schema)
    s.close()

    s = Store(path)  # migrates
    try:
        cur = s.cursor()
        assert windows_of(s, schema, "s-garden#1") == 1
        assert cur.execute("SELECT value FROM main.meta WHERE key = ?", [windows_pending_key(schema)]).fetchone()
        arm = SemanticSearch(minilm, indexes=VectorIndexes(persist=False))
        old = recall(s, ME, "how often do the tomato seedlings need watering", k=5, arm="semantic", semantic=arm)
        assert old.degraded is False and "s-garden#1" in ids(old)  # works on what it has

        report = embed_missing(s, minilm)  # what the next ingest or reindex runs
        assert report.embedded == 0  # no row lacked a vector; the windows were added
        assert windows_of(s, schema, "s-garden#1") >= 2
        assert not cur.execute("SELECT value FROM main.meta WHERE key = ?", [windows_pending_key(schema)]).fetchone()
        arm = SemanticSearch(minilm, indexes=VectorIndexes(persist=False))
        assert ids(recall(s, ME, QUESTION, k=5, arm="semantic", semantic=arm))[:1] == ["s-garden#1"]
    finally:
        s.close()


def test_an_old_store_opened_read_only_answers_unmigrated(tmp_path, minilm):
    """A read-only open (`recallfs recall` on an unmounted store) does not migrate: the v2 table is read as it is."""
    path = tmp_path / "old.duckdb"
    s = Store(path)
    ingest(s, tmp_path, [*records(), turn("s-garden", 1, "assistant", long_answer())], minilm)
    schema = s.schema_for(ME)
    _downgrade_to_v2(s, schema)
    s.close()
    _answers_read_only(path, minilm)


def test_a_float32_store_migrates_to_float16_and_its_indexes_rebuild(tmp_path, minilm):
    """Migration v4: a store whose vectors are FLOAT[d] answers read-only as it is, and opened for writing
    holds the same vectors as float16 (each within float16's rounding of the float32 one), with the
    persisted indexes made stale (the epoch moves), so every copy holds the same values."""
    path = tmp_path / "v3.duckdb"
    s = Store(path)
    ingest(s, tmp_path, [*records(), turn("s-garden", 1, "assistant", long_answer())], minilm)
    schema = s.schema_for(ME)
    ensure_indexes(s, VectorIndexes())  # saved to disk: float16 files, stale once the epoch moves
    before = s.cursor().execute(f"SELECT rid, chunk, embedding FROM {schema}.vectors ORDER BY rid, chunk").fetchnumpy()
    exact = from_stored(before["embedding"], 384, half=True)
    float_vectors(s, schema, chunked=True)
    epoch = stored_model(s.cursor()).epoch
    s.close()

    _answers_read_only(path, minilm)  # a read-only open does not migrate: FLOAT[d] is read as it is

    s = Store(path)  # migrates
    try:
        cur = s.cursor()
        kind = cur.execute(f"SELECT data_type FROM duckdb_columns() WHERE schema_name = '{schema}' "
                           "AND table_name = 'vectors' AND column_name = 'embedding'").fetchone()[0]
        assert kind == "SMALLINT[384]"
        after = cur.execute(f"SELECT rid, chunk, embedding FROM {schema}.vectors ORDER BY rid, chunk").fetchnumpy()
        assert after["rid"].tolist() == before["rid"].tolist() and after["chunk"].tolist() == before["chunk"].tolist()
        assert np.array_equal(from_stored(after["embedding"], 384, half=True), rounded(exact))
        assert stored_model(cur).epoch == epoch + 1  # the saved indexes are stale
        arm = SemanticSearch(minilm, indexes=VectorIndexes())
        assert ids(recall(s, ME, QUESTION, k=5, arm="semantic", semantic=arm))[:1] == ["s-garden#1"]
        saved = np.load(next(index_dir(s).glob(f"{schema}.turns.vectors.npy")))
        assert saved.dtype == np.float16
    finally:
        s.close()
