"""Damaged FAISS files are detected, rebuilt from the vectors in DuckDB and reported (issue 10, item 6).

Real model, real FAISS, a real DuckDB file: the index files are damaged on disk the ways a disk or a
person damages them (bytes flipped at the same size, truncated, deleted, replaced by garbage); a fresh
VectorIndexes (as in a fresh process), a fresh `recallfs recall` process and a fresh mount must each
notice, rebuild, answer as before the damage and say what they repaired.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mount_helpers import base_env, needs_fuse, start_mount, stop_mount, wait_until
from semantic_data import PARAPHRASES, records

from recallfs.query.embedder import Embedder
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.query.vectors import VectorIndexes, index_dir
from recallfs.scope.principal import Principal

from conftest import run_cli, write_jsonl

pytestmark = pytest.mark.slow
ME = Principal("acme", "proj", "tester")
QUESTIONS = [q for q, _, _ in PARAPHRASES]



@pytest.fixture
def store(tmp_path, minilm):
    path = write_jsonl(tmp_path / "m.jsonl", records())
    s = Store(tmp_path / "store.duckdb")
    ingest_records(s, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"), embedder=minilm)
    yield s
    s.close()


def semantic_hits(store: Store, minilm: Embedder, indexes: VectorIndexes) -> list[list[tuple[str, float]]]:
    """Each question's semantic-arm hits (source id, score), through recall."""
    arm = SemanticSearch(minilm, indexes=indexes)
    out = []
    for question in QUESTIONS:
        result = recall(store, ME, question, k=5, arm="semantic", semantic=arm)
        assert result.degraded is False, result.notes
        out.append([(h.row["source_id"], round(h.score, 5)) for h in result.hits])
    return out


def facts_index(store: Store) -> Path:
    return index_dir(store) / f"{store.schema_for(ME)}.facts.vectors.npy"


def flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 4, 3 * len(data) // 4):  # the vectors; the size stays the same
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


DAMAGE = {
    "flipped": (flip_bytes, "do not match its checksum"),
    "truncated": (truncate, "(truncated?)"),
    "deleted": (Path.unlink, "the index file is missing"),
    "garbage": (garbage, "do not match its checksum"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_index_is_rebuilt_and_reported(store, minilm, damage):
    before = semantic_hits(store, minilm, VectorIndexes())  # builds and persists the indexes
    assert any(hits for hits in before)
    harm, why = DAMAGE[damage]
    harm(facts_index(store))

    fresh = VectorIndexes()  # as in a fresh process: nothing in memory
    assert semantic_hits(store, minilm, fresh) == before
    (repair,) = fresh.repairs
    assert (repair.index, repair.what, repair.ok) == ("faiss", "acme/proj facts", True)
    assert why in repair.why

    # The rebuilt file was written back and verifies: the next process loads it as it is.
    again = VectorIndexes()
    assert semantic_hits(store, minilm, again) == before
    assert again.rebuilds == 0 and again.repairs == []


def test_a_damaged_stamp_is_rebuilt_and_reported(store, minilm):
    before = semantic_hits(store, minilm, VectorIndexes())
    stamp = facts_index(store).parent / facts_index(store).name.replace(".vectors.npy", ".stamp.json")
    stamp.write_text("{not json")
    fresh = VectorIndexes()
    assert semantic_hits(store, minilm, fresh) == before
    assert [r.why for r in fresh.repairs] == ["its stamp is unreadable (Expecting property name enclosed in "
                                              "double quotes: line 1 column 2 (char 1))"]
    assert json.loads(stamp.read_text())["sha256"]


def test_a_fresh_process_rebuilds_and_warns(tmp_path, store, minilm):
    question = "when must the annual taxes be filed"
    env = {"RECALLFS_STORE": str(store.path), "RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "tester"}
    before = semantic_hits(store, minilm, VectorIndexes())
    index = facts_index(store)
    store.close()  # the recall below opens the store itself
    flip_bytes(index)

    proc = run_cli("recall", question, "--format", "json", env=env, check=True)
    out = json.loads(proc.stdout)
    assert out["degraded"] is False
    assert "f-tax" in [h["source_id"] for h in out["hits"] if "semantic" in h["arms"]]
    assert "the FAISS index of acme/proj facts was damaged" in proc.stderr
    assert "Traceback" not in proc.stderr
    with Store(store.path, read_only=True) as again:
        assert semantic_hits(again, minilm, VectorIndexes()) == before


def _schema(store_path: Path) -> str:
    with Store(store_path, read_only=True) as s:
        return str(s.schema_for(ME))


@needs_fuse
@pytest.mark.mount
def test_a_mount_rebuilds_a_damaged_index_and_says_so(tmp_path):
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true")
    question = "when must the annual taxes be filed"
    run_cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", records())), env=env, check=True)
    run_cli("recall", question, env=env, check=True)  # builds and persists the FAISS indexes
    store_path = Path(env["RECALLFS_STORE"])
    index = Path(f"{store_path}.faiss") / f"{_schema(store_path)}.facts.vectors.npy"
    flip_bytes(index)

    mount = start_mount(tmp_path, env)
    try:
        assert wait_until(lambda: mount.mount_info()["detail"]["degraded"] is False, timeout=180), \
            "the daemon's model did not load"
        results = json.loads((mount.path / "recall" / question / "results.json").read_text())
        assert results["degraded"] is False
        assert "f-tax" in [h["source_id"] for h in results["hits"] if "semantic" in h["arms"]]
        detail = mount.mount_info()["detail"]
        assert detail["index_repairs"] == {"faiss": 1}
        (repair,) = detail["recent_index_repairs"]
        assert (repair["index"], repair["what"]) == ("faiss", "acme/proj facts")
        assert "do not match its checksum" in repair["why"]
    finally:
        stop_mount(mount)
