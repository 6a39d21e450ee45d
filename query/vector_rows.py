"""What a table's vector index is built from, read from DuckDB: its stamp (how many windows, up to which
rid) and the windows' vectors in (rid, chunk) order."""

from __future__ import annotations

import numpy as np

from recallfs.query.cursor import Cursor
from recallfs.query.half_vectors import from_stored
from recallfs.query.vector_meta import VECTORS, StoredModel, embedding_is_half, has_chunk_column, has_vectors_table
from recallfs.query.window_map import Stamp


def current_stamp(cur: Cursor, schema: str, table: str, stored: StoredModel) -> Stamp:
    if has_vectors_table(cur, schema):
        row = cur.execute(
            f"SELECT count(*), coalesce(max(rid), 0) FROM {schema}.{VECTORS} WHERE tbl = ? AND model = ?",
            [table, stored.model],
        ).fetchone()
    else:
        row = (0, 0)
    assert row is not None
    return Stamp(stored.store_uuid, stored.model, stored.dim, stored.epoch, int(row[0]), int(row[1]))


def load_vectors(
    cur: Cursor, schema: str, table: str, model: str, dim: int, above_rid: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    if not has_vectors_table(cur, schema):
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    # A store from before windows opened read-only (a mount) is not migrated: one vector per rid.
    order = "rid, chunk" if has_chunk_column(cur, schema) else "rid"
    res = cur.execute(
        f"SELECT rid, embedding FROM {schema}.{VECTORS} WHERE tbl = ? AND model = ? AND rid > ? ORDER BY {order}",
        [table, model, above_rid],
    ).fetchnumpy()
    rids = np.asarray(res["rid"], dtype=np.int64)
    if len(rids) == 0:
        return rids, np.zeros((0, dim), dtype=np.float32)
    return rids, from_stored(res["embedding"], dim, half=embedding_is_half(cur, schema))
