"""A model of another dimension: a clear error naming `recallfs reindex`, and the reindex that fixes it.

The 768-d model is a real sentence-transformers directory: the packaged MiniLM with a Dense 384->768
layer on top, saved by sentence-transformers itself (no download).
"""

from __future__ import annotations

import json

import pytest
from semantic_data import records

from recallfs.query.embedder import Embedder
from recallfs.query.ingest import IngestError
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.model_files import default_model_path
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.shared_embedders import shared_embedder
from recallfs.query.store import Store
from recallfs.query.vector_meta import stored_model
from recallfs.scope.principal import Principal

from conftest import fact, run_cli, write_jsonl

pytestmark = pytest.mark.slow
ME = Principal("acme", "proj", "tester")
QUESTION = "when must the annual taxes be filed"


@pytest.fixture(scope="module")
def model_768(tmp_path_factory) -> str:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    base = SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)
    torch.manual_seed(0)
    dense = modules.Dense(in_features=384, out_features=768, bias=False, activation_function=torch.nn.Identity())
    path = tmp_path_factory.mktemp("models") / "wide-768"
    SentenceTransformer(modules=[*base, dense], device="cpu").save(str(path))
    return str(path)


def test_dimension_mismatch_is_refused_and_reindex_fixes_it(tmp_path, model_768):
    minilm = shared_embedder()
    assert minilm.wait_ready(), minilm.problem
    wide = Embedder(model_768)
    assert wide.wait_ready(), wide.problem
    assert wide.dim == 768

    store_path = tmp_path / "store.duckdb"
    data = write_jsonl(tmp_path / "m.jsonl", records())
    with Store(store_path) as store:
        ingest_records(store, load_file(data, "jsonl", org="acme", workspace="proj", agent="tester"),
                       embedder=minilm)
        assert stored_model(store.cursor()).dim == 384

        # Ingest with the 768-d model: refused before anything is written, with the fix in the message.
        more = write_jsonl(tmp_path / "more.jsonl", [fact("f-more", "A brand new memory.")])
        with pytest.raises(IngestError, match=r"768-d.*384-d.*recallfs reindex"):
            ingest_records(store, load_file(more, "jsonl", org="acme", workspace="proj", agent="tester"),
                           embedder=wide)
        assert store.cursor().execute(
            f"SELECT count(*) FROM {store.schema_for(ME)}.facts WHERE source_id = 'f-more'").fetchone()[0] == 0

        # Recall with it: lexical answer, degraded `error`, and a note that names the fix.
        result = recall(store, ME, QUESTION, semantic=SemanticSearch(wide))
        assert result.degraded is True and result.degraded_reason == "error"
        assert result.hits and all(h.arms == ["lexical"] for h in result.hits)
        assert any("recallfs reindex" in n and "768-d" in n for n in result.notes)

    env = {"RECALLFS_STORE": str(store_path), "RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "tester",
           "RECALLFS_MODEL": model_768}
    proc = run_cli("reindex", env=env, check=True)
    assert "768-d" in proc.stdout and f"{len(records())} memories embedded" in proc.stdout

    with Store(store_path) as store:
        stored = stored_model(store.cursor())
        assert stored.dim == 768 and stored.model == wide.model_id
        schema = store.schema_for(ME)
        kind = store.cursor().execute(
            f"SELECT data_type FROM duckdb_columns() WHERE schema_name = '{schema}' AND table_name = 'vectors' "
            "AND column_name = 'embedding'").fetchone()[0]
        assert kind == "SMALLINT[768]"
        result = recall(store, ME, QUESTION, semantic=SemanticSearch(wide))
        assert result.degraded is False
        # The old 384-d model is now the mismatched one.
        old = recall(store, ME, QUESTION, semantic=SemanticSearch(minilm))
        assert old.degraded_reason == "error" and any("recallfs reindex" in n for n in old.notes)

    out = json.loads(run_cli("recall", QUESTION, "--format", "json", env=env, check=True).stdout)
    assert out["degraded"] is False and any("semantic" in h["arms"] for h in out["hits"])
