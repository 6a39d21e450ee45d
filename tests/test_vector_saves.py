"""When an extended vector index is written back to its file (query/vectors.save_due), and that a file
left behind is extended when it is loaded: real model, real FAISS files, a real DuckDB file."""

from __future__ import annotations

import json

import pytest
from semantic_data import records

from recallfs.query import vectors
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.query.vectors import VectorIndexes, index_dir, save_due
from recallfs.scope.principal import Principal

from conftest import fact, write_jsonl

ME = Principal("acme", "proj", "tester")
DIM = 384
SMALL = vectors.SAVE_SMALL_BYTES // (DIM * 4)  # windows of a file still small enough to write each time


@pytest.mark.parametrize(("saved", "ntotal", "due"), [
    (100, 100, False),  # nothing new
    (100, 101, True),  # a small file: written at once
    (SMALL - 1, SMALL, True),
    (SMALL, SMALL + 1, False),  # a large one: one more window waits
    (100_000, 105_000, False),  # 5% exactly
    (100_000, 105_001, True),  # past 5%
    (0, 1, True),  # never saved
])
def test_when_an_extended_index_is_written_again(saved: int, ntotal: int, due: bool) -> None:
    assert save_due(saved, ntotal, DIM) is due


def _ingest(store: Store, tmp_path, name: str, recs: list[dict], minilm) -> None:
    path = write_jsonl(tmp_path / f"{name}.jsonl", recs)
    ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=minilm)


def test_an_index_left_behind_its_store_is_extended_when_loaded(tmp_path, minilm, monkeypatch) -> None:
    """With saves deferred (as for a large table), a small ingest extends the index in memory and leaves
    its file as it was; another process loading that file extends it from DuckDB and finds the new row,
    without a rebuild."""
    monkeypatch.setattr(vectors, "SAVE_SMALL_BYTES", 0)  # every file is "large" here
    store = Store(tmp_path / "store.duckdb")
    _ingest(store, tmp_path, "m", records(), minilm)
    indexes = VectorIndexes()
    arm = SemanticSearch(minilm, indexes=indexes)
    recall(store, ME, "who owns a boat", semantic=arm)  # built and saved
    schema = store.schema_for(ME)
    stamp_path = index_dir(store) / f"{schema}.facts.stamp.json"
    before = json.loads(stamp_path.read_text())

    _ingest(store, tmp_path, "n", [fact("f-boat", "Lee keeps a small sailing dinghy at the marina.")], minilm)
    found = recall(store, ME, "does anyone own a boat", k=5, arm="semantic", semantic=arm)
    assert "f-boat" in {h.row.get("source_id") for h in found.hits}
    assert json.loads(stamp_path.read_text()) == before  # one row past a large file: not written again

    fresh = VectorIndexes()  # another process: loads the file, extends it by the row it lacks
    found = recall(store, ME, "does anyone own a boat", k=5, arm="semantic",
                   semantic=SemanticSearch(minilm, indexes=fresh))
    assert "f-boat" in {h.row.get("source_id") for h in found.hits}
    assert fresh.rebuilds == 0
    store.close()
