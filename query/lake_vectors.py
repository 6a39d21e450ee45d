"""Vectors carried by a lake batch, so that only the host that ingests embeds.

The ingesting host embeds a batch's records before it commits them (each record as the windows the model
reads whole, query/chunks.py) and commits the vectors with the records, in the same lake transaction, as
float16 bits. A replica replaying the batch stores them for the rows the batch wrote, when they come from
the model its store uses; rows left without a vector (a batch committed with no model at hand, or by a
host with another model) are embedded by the replica's own model as before.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallfs.query.half_vectors import HALF, half_bits
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.query.vector_meta import adopt_model, stored_model, vectors_ddl

if TYPE_CHECKING:
    from recallfs.query.embedder import Embedder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchVector:
    item: int  # the record's position in its batch
    chunk: int  # its window
    model: str
    bits: list[int]  # float16 bits of the vector


def embed_records(embedder: Embedder | None, records: list[MemoryRecord]) -> list[BatchVector]:
    """Every window of every record embedded, or [] when no model is ready (the replicas embed then)."""
    from recallfs.query.embedder_errors import EmbedderError, ModelMissingError

    if embedder is None or not records or not embedder.wait_ready():
        return []
    try:
        windows = embedder.windows([r.search_text for r in records])
        flat = [text for w in windows for text in w]
        matrix = half_bits(embedder.embed(flat))
    except (ModelMissingError, EmbedderError) as exc:
        log.warning("batch committed without vectors (%s); each host embeds it", exc)
        return []
    out, row = [], 0
    for item, w in enumerate(windows):
        for chunk in range(len(w)):
            out.append(BatchVector(item, chunk, embedder.model_id, matrix[row].tolist()))
            row += 1
    return out


def store_batch_vectors(store: Store, placed: dict[int, tuple[str, str, int]], vectors: list[BatchVector]) -> int:
    """Store the batch's vectors for the rows its replay wrote (`placed`: item -> schema, table, rid).
    Returns vectors stored; 0 when they come from another model than the store's."""
    from recallfs.query.vector_write import write_vectors

    mine = [v for v in vectors if v.item in placed]
    if not mine:
        return 0
    model, dim = mine[0].model, len(mine[0].bits)
    known = stored_model(store.cursor())
    if known is not None and (known.model != model or known.dim != dim):
        return 0
    groups: dict[tuple[str, str], list[BatchVector]] = defaultdict(list)
    for v in mine:
        schema, table, _ = placed[v.item]
        groups[(schema, table)].append(v)
    with store.transaction() as tx:
        adopt_model(tx, model, dim)
        for (schema, table), part in groups.items():
            tx.execute(vectors_ddl(schema, dim))
            rids = np.array([placed[v.item][2] for v in part], dtype=np.int64)
            chunks = np.array([v.chunk for v in part], dtype=np.int16)
            matrix = np.array([v.bits for v in part], dtype=np.int16).view(HALF).astype(np.float32)
            write_vectors(tx, schema, table, model, rids, matrix, chunks)
    return len(mine)


def vector_row(batch: str, v: BatchVector) -> dict[str, Any]:
    return {"batch": batch, "item": v.item, "chunk": v.chunk, "model": v.model, "embedding": v.bits}


def vector_from_row(row: dict[str, Any]) -> BatchVector:
    return BatchVector(int(row["item"]), int(row["chunk"]), str(row["model"]), [int(b) for b in row["embedding"]])
