"""The plain reference beside recallfs's arms: what a textbook retriever gets on the same haystack.

- `plain_bm25`: evals/plain_bm25.py over each row's `content` (one document per row, every table);
- `plain_cosine`: cosine top-k over the MiniLM vectors the store holds (the query embedded by the same
  model), no floor, no z filter;
- `plain_rrf`: RRF (k = 60) of those two rankings.

No recallfs ranking code runs. The haystack of a question is exactly recall's: the rows the gate's
`reader_scope_clause` lets its principal see with its options (RealMem's `until:`), read per question, so the
reference and recallfs rank the same rows. Each ranking is cut at the harness's DEPTH and scored by the
harness's own unit mapping and metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.evals.plain_bm25 import PlainBM25, rrf, top
from recallfs.evals.relevance import HitRef
from recallfs.query.gate import reader_scope_clause
from recallfs.query.half_vectors import from_stored
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.store import Store
from recallfs.query.vector_meta import embedding_is_half
from recallfs.scope.principal import Principal

REFERENCE_ARMS = ("plain_bm25", "plain_cosine", "plain_rrf")
RRF_K = 60


@dataclass(slots=True)
class _Corpus:
    """Every row of one partition, in one order shared by the BM25 index and the vector matrix."""

    schema: str
    position: dict[int, int]  # rid -> row position
    hits: list[HitRef]
    bm25: PlainBM25
    vectors: np.ndarray  # (rows, d); zeros where a row has no vector
    has_vector: np.ndarray


def _load_corpus(store: Store, schema: str) -> _Corpus:
    cur = store.cursor()
    rids: list[int] = []
    hits: list[HitRef] = []
    docs: list[str] = []
    for table in MEMORY_TABLES:
        sql = f"SELECT rid, source_id, session, refs, content FROM {schema}.{table} ORDER BY rid"
        for rid, source_id, session, refs, content in cur.execute(sql).fetchall():
            rids.append(int(rid))
            hits.append(HitRef(table=table, source_id=str(source_id), session=session,
                               refs=tuple(str(r) for r in (refs or []))))
            docs.append(str(content))
    position = {rid: i for i, rid in enumerate(rids)}
    vectors, has_vector = _load_vectors(store, schema, position)
    return _Corpus(schema, position, hits, PlainBM25(docs), vectors, has_vector)


def _load_vectors(store: Store, schema: str, position: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    cur = store.cursor()
    exists = cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND "
                         "table_name = 'vectors'", [schema]).fetchone()
    has_vector = np.zeros(len(position), dtype=bool)
    if not exists or not exists[0]:
        return np.zeros((len(position), 1), dtype=np.float32), has_vector
    # One vector per row, as a plain top-k has: the row's first window (its opening, what the model
    # reads of a long text without windows: query/chunks.py)
    res = cur.execute(f"SELECT rid, embedding FROM {schema}.vectors WHERE chunk = 0").fetchnumpy()
    dim = len(res["embedding"][0]) if len(res["rid"]) else 1
    stored = from_stored(res["embedding"], dim, half=embedding_is_half(cur, schema))
    vectors = np.zeros((len(position), dim), dtype=np.float32)
    for rid, embedding in zip(res["rid"].tolist(), stored, strict=True):
        pos = position.get(int(rid))
        if pos is not None:
            vectors[pos] = embedding
            has_vector[pos] = True
    return vectors, has_vector


class PlainReference:
    """The three reference rankings of a question, per partition loaded once."""

    def __init__(self, store: Store, semantic: Any | None, depth: int) -> None:
        self.store, self.semantic, self.depth = store, semantic, depth
        self._corpora: dict[str, _Corpus | None] = {}

    def arms(self) -> tuple[str, ...]:
        return REFERENCE_ARMS if self.semantic is not None else ("plain_bm25",)

    def _corpus(self, principal: Principal) -> _Corpus | None:
        schema = self.store.schema_for(principal)
        if schema is None:
            return None
        if schema not in self._corpora:
            self._corpora[schema] = _load_corpus(self.store, schema)
        return self._corpora[schema]

    def haystack(self, corpus: _Corpus, principal: Principal, options: RecallOptions | None) -> np.ndarray:
        """The rows recall may rank for this question, as a mask over the corpus."""
        mask = np.zeros(len(corpus.hits), dtype=bool)
        where, params = reader_scope_clause(self.store, principal, corpus.schema, options)
        cur = self.store.cursor()
        for table in MEMORY_TABLES:
            for (rid,) in cur.execute(f"SELECT m.rid FROM {corpus.schema}.{table} m WHERE {where}", params).fetchall():
                mask[corpus.position[int(rid)]] = True
        return mask

    def rankings(self, principal: Principal, query: str, options: RecallOptions | None) -> dict[str, list[HitRef]]:
        corpus = self._corpus(principal)
        if corpus is None:
            return {arm: [] for arm in self.arms()}
        mask = self.haystack(corpus, principal, options)
        lexical = top(corpus.bm25.scores(query, mask), mask, self.depth, positive=True)
        out = {"plain_bm25": [corpus.hits[i] for i in lexical]}
        if self.semantic is not None:
            qvec = np.asarray(self.semantic.query(query).vector(), dtype=np.float32)
            cosine = corpus.vectors @ qvec
            semantic = top(cosine, mask & corpus.has_vector, self.depth, positive=False)
            out["plain_cosine"] = [corpus.hits[i] for i in semantic]
            fused = rrf([lexical, semantic], RRF_K)[: self.depth]
            out["plain_rrf"] = [corpus.hits[i] for i in fused]
        return out
