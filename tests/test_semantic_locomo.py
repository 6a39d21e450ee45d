"""Paraphrase recall on real LoCoMo data: an evidence turn that shares no content word with its
question is found by fused recall in the top 10 and not by lexical-only recall.

Needs ../shared/data/locomo10.json (CC BY-NC, never copied into the repository): only the question
string and the evidence dia_id are written here; the conversation is read from the data at test time.
"""

from __future__ import annotations

import json

import pytest

from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.lexical import query_terms
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.shared_embedders import shared_embedder
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import LOCOMO, needs_locomo

pytestmark = [needs_locomo(), pytest.mark.locomo, pytest.mark.slow]

QUESTION = "Which city have both Jean and John visited?"
EVIDENCE = "D15:1"  # a turn that answers it without any of its words


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    sample = next(s for s in data if any(qa["question"] == QUESTION for qa in s["qa"]))
    qa = next(qa for qa in sample["qa"] if qa["question"] == QUESTION)
    assert EVIDENCE in qa["evidence"]
    root = tmp_path_factory.mktemp("locomo")
    one = root / "one-conversation.json"  # a temporary file, outside the repository
    one.write_text(json.dumps([sample]), encoding="utf-8")
    emb = shared_embedder()
    assert emb.wait_ready(), emb.problem
    store = Store(root / "store.duckdb")
    ingest_records(store, load_file(one, "locomo", org="locomo", workspace="-", agent="default"), embedder=emb)
    yield store, Principal("locomo", str(sample["sample_id"]), "default"), SemanticSearch(emb)
    store.close()


def evidence_in(result) -> list[int]:
    """Ranks at which the evidence turn appears: as the turn itself, or as a fact that cites it."""
    return [h.rank for h in result.hits
            if (h.table == "turns" and h.row["source_id"] == EVIDENCE)
            or (h.table == "facts" and EVIDENCE in (h.row["refs"] or []))]


def test_evidence_shares_no_content_word_with_the_question(conversation):
    store, principal, _ = conversation
    cur = store.cursor()
    (text,) = cur.execute(f"SELECT search_text FROM {store.schema_for(principal)}.turns WHERE source_id = ?",
                          [EVIDENCE]).fetchone()

    def stems(s: str) -> set[str]:
        return {cur.execute("SELECT stem(?, 'porter')", [t]).fetchone()[0] for t in query_terms(s)}

    assert stems(QUESTION) and stems(text)
    assert not stems(QUESTION) & stems(text)


def test_fused_finds_the_paraphrase_and_lexical_does_not(conversation):
    store, principal, arm = conversation
    fused = recall(store, principal, QUESTION, k=10, arm="fused", semantic=arm)
    lexical = recall(store, principal, QUESTION, k=10, arm="lexical", semantic=arm)
    assert fused.degraded is False
    assert evidence_in(fused), [h.row["source_id"] for h in fused.hits]
    assert not evidence_in(lexical)
