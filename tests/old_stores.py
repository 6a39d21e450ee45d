"""Stores as older recallfs versions wrote them, made from a current store: for the upgrade tests."""

from __future__ import annotations

import numpy as np

from recallfs.query.half_vectors import from_stored
from recallfs.query.store import Store
from recallfs.query.vector_meta import stored_model


def float_vectors(store: Store, schema: str, *, chunked: bool) -> None:
    """The vectors table as a recallfs before float16 wrote it (FLOAT[d]): with windows (v3), or also
    before windows (v2: one vector per rid, no chunk column)."""
    cur = store.cursor()
    dim = stored_model(cur).dim
    res = cur.execute(f"SELECT rid, chunk, tbl, model, embedding FROM {schema}.vectors "
                      f"{'' if chunked else 'WHERE chunk = 0'} ORDER BY rid, chunk").fetchnumpy()
    matrix = from_stored(res["embedding"], dim, half=True)
    batch = {"rid": res["rid"], "chunk": res["chunk"], "tbl": res["tbl"], "model": res["model"],
             **{f"e{j}": np.ascontiguousarray(matrix[:, j]) for j in range(dim)}}
    cur.register("old_batch", batch)
    key = "rid BIGINT NOT NULL, chunk SMALLINT NOT NULL," if chunked else "rid BIGINT PRIMARY KEY,"
    primary = ", PRIMARY KEY (rid, chunk)" if chunked else ""
    cur.execute(f"CREATE TABLE {schema}.old_vectors ({key} tbl VARCHAR NOT NULL, "
                f"model VARCHAR NOT NULL, embedding FLOAT[{dim}] NOT NULL{primary})")
    cols = ", ".join(f"e{j}" for j in range(dim))
    cur.execute(f"INSERT INTO {schema}.old_vectors SELECT rid, {'chunk, ' if chunked else ''}tbl, model, "
                f"[{cols}]::FLOAT[{dim}] FROM old_batch")
    cur.unregister("old_batch")
    cur.execute(f"DROP TABLE {schema}.vectors")
    cur.execute(f"ALTER TABLE {schema}.old_vectors RENAME TO vectors")
    cur.execute(f"UPDATE main.partitions SET schema_version = {3 if chunked else 2}")
