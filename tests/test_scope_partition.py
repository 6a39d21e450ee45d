"""Defense in depth: with the authorization predicate broken on purpose (it allows every row), a
principal still reads only its own workspace, through every channel: lexical recall, the semantic arm
over FAISS, the mount's browse catalog and the gate's `authorize`. Each partition is its own DuckDB
schema and its own FAISS indexes, and every query names only the principal's schema.
"""

from __future__ import annotations

import pytest

import recallfs.query.gate as gate
from recallfs.mount.browse import Browser
from recallfs.mount.paths import Kind
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact

ME = Principal("acme", "proj", "guest")
MINE = [fact("m-1", "The lighthouse keeper logs the ferry schedule every morning", agent="atlas"),
        fact("m-2", "Ferry tickets are sold at the harbor office", agent="atlas")]
# Another workspace with the same words (so every arm would rank it), marked so a leak is visible.
THEIRS = [fact(f"t-{i}", f"kvpartition{i} the lighthouse keeper logs the ferry schedule every morning",
               agent="guest", tags=["kvpartition-tag"], entity="kvpartition-ent") for i in range(5)]



@pytest.fixture
def store(tmp_path, minilm):
    with Store(tmp_path / "store.duckdb") as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="x") for r in MINE], embedder=minilm)
        ingest_records(s, [parse_record(r, org="acme", workspace="other", agent="x") for r in THEIRS],
                       embedder=minilm)
        yield s


@pytest.fixture
def broken(monkeypatch):
    """The predicate every channel uses, replaced by one that allows everything."""
    monkeypatch.setattr(gate, "authorization_predicate", lambda principal, alias="m": ("TRUE", []))
    where, params = gate.scope_clause(ME, "p_x", None, current_only=False)
    assert (where, params) == ("TRUE", [])


def test_recall_lexical_and_semantic_stay_in_the_partition(store, minilm, broken):
    arm = SemanticSearch(minilm)
    for kind in ("lexical", "semantic", "fused"):
        result = recall(store, ME, "lighthouse keeper ferry schedule k:50", arm=kind,
                        semantic=None if kind == "lexical" else arm)
        assert not result.degraded or kind == "lexical"
        seen = {h.row["source_id"] for h in result.hits}
        assert seen and seen <= {"m-1", "m-2"}, (kind, seen)
        assert result.total_candidates <= len(MINE)


def test_browse_catalog_and_authorize_stay_in_the_partition(store, broken):
    browser = Browser(store, ME)
    cat = browser.catalog()
    assert cat is not None
    own_rids = {int(r[0]) for r in store.cursor().execute(f"SELECT rid FROM {cat.schema}.facts").fetchall()}
    assert cat.readable["facts"] == own_rids  # the broken clause widened the policy, never the partition
    listing = browser.listing(Kind.FACTS, {})
    names = " ".join(e.name for e in listing.entries)
    assert "kvpartition" not in names and "lighthouse" in names
    assert "kvpartition" not in browser.index_bytes(cat, {}).decode()
    assert not any("kvpartition" in i for i in browser.history_ids(cat))
    # Rids of the other partition, handed to the gate as if an arm had returned them.
    other = store.partition("acme", "other")
    theirs = [int(r[0]) for r in store.cursor().execute(f"SELECT rid FROM {other}.facts").fetchall()]
    assert gate.authorize(store.cursor(), ME, cat.schema, "facts", theirs, current_only=False) == set()
