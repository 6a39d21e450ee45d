"""How the store lays out its bytes: the compression DuckDB may choose (query/store.py DISABLED_COMPRESSION)."""

from __future__ import annotations

import random

import numpy as np

from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.query.vector_meta import adopt_model
from recallfs.query.vector_write import write_vectors
from recallfs.scope.principal import Principal

from conftest import fact

ME = Principal("acme", "proj", "tester")
WORDS = "alpha beacon cinder delta ember flint garnet harbor iris juniper kettle lantern meadow".split()


def _compressions(store: Store, table: str, columns: tuple[str, ...]) -> set[str]:
    rows = store.cursor().execute(
        f"SELECT DISTINCT compression FROM pragma_storage_info('{table}') "
        f"WHERE persistent AND column_name IN ({', '.join('?' for _ in columns)})", list(columns)).fetchall()
    return {str(r[0]) for r in rows}


def test_store_writes_no_fsst_text_and_no_alprd_vectors(tmp_path):
    # ALPRD made the embeddings half again larger than raw float32; FSST made a fetch of a few hundred
    # rows by rid decode whole segments (the id column alone doubled the light-row load at 100k).
    rng = random.Random(3)
    records = [fact(f"note-{i:05d}", " ".join(rng.choice(WORDS) for _ in range(12))) for i in range(3000)]
    with Store(tmp_path / "s.duckdb") as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in records],
                       embedder=None)
        schema = s.schema_for(ME)
        assert schema is not None
        rids = np.array([r[0] for r in s.cursor().execute(f"SELECT rid FROM {schema}.facts ORDER BY rid").fetchall()],
                        dtype=np.int64)
        matrix = np.random.default_rng(3).standard_normal((len(rids), 64)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        with s.transaction() as tx:
            adopt_model(tx, "test-model", 64)
            write_vectors(tx, schema, "facts", "test-model", rids, matrix)
        s.cursor().execute("CHECKPOINT")
        text = _compressions(s, f"{schema}.facts", ("id", "content", "search_text", "source_id"))
        vectors = _compressions(s, f"{schema}.vectors", ("embedding",))
    assert text and "FSST" not in text
    assert vectors and "ALPRD" not in vectors
