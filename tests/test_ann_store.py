"""The inverted lists in a real store (real DuckDB, the real model, FAISS): trained once and kept beside
the index, loaded by the next process without training, extended by an ingest (as the index itself is:
a saved index behind the store by another process's ingest is loaded and extended, not rebuilt),
trained again when their file is damaged (and the repair recorded), and reported in recall's stages.

The store is small, so the thresholds that keep small tables on the exact scan are lowered here (they
are module constants read at search time); tests/test_ann_search.py measures recall at 24k windows.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import faiss
import numpy as np
import pytest

from recallfs.query import ann_search, flat_vectors, ivf_files, ivf_lists
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.query.vector_meta import stored_model
from recallfs.query.vectors import VectorIndexes, index_dir
from recallfs.scope.principal import Principal

from conftest import turn

ME = Principal("acme", "proj", "tester")
TOPICS = ["the lake and the rowing boat", "a database migration to the eu-west cluster", "baking sourdough bread",
          "the quarterly budget review", "a hiking trip in the Alps", "the kitchen renovation",
          "learning to play the cello", "the dog's vet appointment"]
ROWS = 240


def _records(start: int, count: int) -> list[dict]:
    out = []
    for i in range(start, start + count):
        topic = TOPICS[i % len(TOPICS)]
        extra = {"agent": "scout", "visibility": "private"} if i % 6 == 5 else {}
        out.append(turn(f"s-{i // 4}", i % 4, "maya" if i % 2 else "atlas",
                        f"Note {i}: we talked about {topic}, part {i // len(TOPICS)}.", **extra))
    return out


def _ingest(store: Store, records: list[dict], minilm) -> None:
    ingest_records(store, [parse_record(r, org="acme", workspace="proj", agent=r.get("agent", "tester"))
                           for r in records], embedder=minilm)


@pytest.fixture
def small_thresholds(monkeypatch):
    monkeypatch.setattr(ivf_files, "ANN_MIN", 100)
    monkeypatch.setattr(ivf_lists, "TRAIN_PER_LIST", 10)  # 240 windows: 24 lists
    monkeypatch.setattr(ivf_lists, "MIN_LISTS", 2)
    monkeypatch.setattr(ann_search, "EXACT_MAX", 20)
    monkeypatch.setattr(ann_search, "PROBE_WINDOWS", 40)
    monkeypatch.setattr(ann_search, "PROBE_PER_HIT", 2)
    monkeypatch.setattr(flat_vectors, "RESIDENT_MAX", 0)  # every saved table's vectors stay on disk


@pytest.fixture
def store(tmp_path: Path, minilm, small_thresholds):
    with Store(tmp_path / "store.duckdb") as s:
        _ingest(s, _records(0, ROWS), minilm)
        yield s


def _turns_index(store: Store, indexes: VectorIndexes):
    stored = stored_model(store.cursor())
    assert stored is not None
    return indexes.index_for(store, store.schema_for(ME), "turns", stored)


def _trained(caplog) -> int:
    return sum("inverted lists over" in r.getMessage() for r in caplog.records)


def test_lists_are_trained_once_kept_and_loaded_by_the_next_process(store, caplog, minilm):
    caplog.set_level(logging.INFO, logger="recallfs.vectors")
    entry = _turns_index(store, VectorIndexes())
    assert entry.lists is not None and entry.lists.count == entry.ntotal and _trained(caplog) == 1
    base = index_dir(store) / f"{store.schema_for(ME)}.turns"
    saved = json.loads(Path(str(base) + ".lists.json").read_text())
    assert saved["windows"] == entry.ntotal and len(saved["sha256"]) == 64

    again = _turns_index(store, VectorIndexes())  # a new process's indexes: loaded, not trained
    assert _trained(caplog) == 1
    assert again.lists is not None and (again.lists.assigned == entry.lists.assigned).all()

    _ingest(store, _records(ROWS, 24), minilm)  # an ingest appends windows: assigned, no training
    indexes = VectorIndexes()  # the next process: the saved index is behind by the ingest's rows
    grown = _turns_index(store, indexes)
    assert grown.ntotal > entry.ntotal and grown.lists is not None and grown.lists.count == grown.ntotal
    assert _trained(caplog) == 1 and indexes.rebuilds == 0  # loaded and extended, neither rebuilt
    assert json.loads(Path(str(base) + ".lists.json").read_text())["windows"] == grown.ntotal


def test_a_damaged_lists_file_is_trained_again_and_recorded(store, caplog):
    caplog.set_level(logging.INFO, logger="recallfs.vectors")
    _turns_index(store, VectorIndexes())
    path = index_dir(store) / f"{store.schema_for(ME)}.turns.lists.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    indexes = VectorIndexes()
    entry = _turns_index(store, indexes)
    assert entry.lists is not None and entry.lists.count == entry.ntotal
    assert _trained(caplog) == 2
    assert any("inverted lists" in r.what and "checksum" in r.why for r in indexes.repairs)


def test_recall_reports_the_path_and_the_lists_find_what_the_exact_scan_finds(store, minilm):
    indexes = VectorIndexes(persist=False)
    ann = SemanticSearch(minilm, indexes=indexes)
    exact = SemanticSearch(minilm, indexes=indexes, exact=True)
    query = "when is the dog going to the vet"
    fast = recall(store, ME, query, k=10, semantic=ann)
    slow = recall(store, ME, query, k=10, semantic=exact)
    assert "turns: ivf: " in fast.stages["vector_search"]
    assert "turns: exact" in slow.stages["vector_search"]
    assert [h.rid for h in fast.hits][:3] == [h.rid for h in slow.hits][:3]
    assert all("vet" in h.row["content"] for h in fast.hits[:3])
    # scout's private turns are never among the hits, whichever path found them
    assert not any(h.row.get("visibility") == "private" for h in fast.hits + slow.hits)


def test_saved_vectors_stay_on_disk_and_an_extended_index_is_read_from_its_new_file(store, minilm):
    built = _turns_index(store, VectorIndexes())
    assert built.vectors.on_disk == built.ntotal  # saved, then served from the file
    loaded = _turns_index(store, VectorIndexes())
    assert loaded.vectors.on_disk == loaded.ntotal  # a new process leaves them there
    assert (loaded.vectors.gather(np.arange(loaded.ntotal)) == built.vectors.gather(np.arange(built.ntotal))).all()

    _ingest(store, _records(ROWS, 24), minilm)
    indexes = VectorIndexes()
    grown = _turns_index(store, indexes)  # behind by the ingest: loaded, extended, saved, read from disk again
    assert indexes.rebuilds == 0 and grown.ntotal > loaded.ntotal and grown.vectors.on_disk == grown.ntotal
    hits = recall(store, ME, "rowing on the lake", semantic=SemanticSearch(minilm, indexes=indexes))
    assert hits.hits


def test_an_index_file_of_the_faiss_format_is_rebuilt_once_and_removed(store, minilm, caplog):
    caplog.set_level(logging.INFO, logger="recallfs.vectors")
    schema = store.schema_for(ME)
    built = _turns_index(store, VectorIndexes())
    folder = index_dir(store)
    # what recallfs wrote before the vectors were left on disk: a FAISS flat index, a stamp without "file"
    flat = faiss.IndexFlatIP(built.vectors.dim)
    flat.add(built.vectors.gather(np.arange(built.ntotal)))
    faiss.write_index(flat, str(folder / f"{schema}.turns.index"))
    (folder / f"{schema}.turns.vectors.npy").unlink()
    stamp_path = folder / f"{schema}.turns.stamp.json"
    stamp = json.loads(stamp_path.read_text())
    del stamp["file"]
    stamp_path.write_text(json.dumps(stamp))

    indexes = VectorIndexes()
    entry = _turns_index(store, indexes)
    assert indexes.rebuilds == 1 and indexes.repairs == []  # an old format is not damage
    assert not (folder / f"{schema}.turns.index").exists() and entry.vectors.on_disk == entry.ntotal
    assert entry.lists is not None and _trained(caplog) == 1  # the lists fit the same windows: kept
