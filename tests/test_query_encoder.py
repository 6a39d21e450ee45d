"""The traced query encoder (query/query_encoder.py): the packaged model's own vectors, on one frozen
graph; and the stock path for a model of another shape. Real model, no stand-ins."""

from __future__ import annotations

import time

import numpy as np
import pytest

from recallfs.query.embedder import Embedder, default_model_path
from recallfs.query.query_encoder import AGREE, traced_query_encoder

# Lengths from two word pieces to past the model's 256, scripts, and text a query may carry.
QUERIES = [
    "",
    "ok",
    "Where is the primary database these days?",
    "naïve café résumé Straße — ŒUVRE ﬁle",
    "日本語のテキスト検索 東京タワーで会議をしました",
    "Привет: the Russian locale uses Cyrillic strings 🚀🔥",
    "SELECT * FROM facts; DROP TABLE turns; -- ../../etc/passwd",
    "what did maya say about the release checklist " * 12,
    "We moved it to eu-west last week. " * 60,  # past 256 word pieces: cut as the model cuts it
]


def _traced(minilm):
    """The shared embedder, serving queries as the daemon's does (serve_queries), its trace done."""
    if minilm.device != "cpu":
        pytest.skip("the traced query path is used on CPU only")
    minilm.serve_queries()
    deadline = time.monotonic() + 120
    while minilm.query_path != "traced" and time.monotonic() < deadline:
        time.sleep(0.05)
    return minilm


def test_an_embedder_that_serves_no_queries_keeps_the_stock_path():
    # ingest and a one-off CLI recall load the model without serve_queries: no ~2 s trace for them
    emb = Embedder()
    assert emb.wait_ready(300)
    time.sleep(0.5)
    assert emb.query_path == "stock"


@pytest.mark.parametrize("text", QUERIES)
def test_query_vectors_are_the_models_own(minilm, text):
    minilm = _traced(minilm)
    assert minilm.query_path == "traced"  # the packaged model is the plain shape: the fast path is on
    stock = minilm._encode([text], batch_size=1)[0]
    got = minilm._encode_query(text)
    assert got.dtype == np.float32 and got.shape == stock.shape
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5
    assert float(got @ stock) >= AGREE
    assert np.abs(got - stock).max() < 1e-5


def test_a_model_of_another_shape_keeps_the_stock_path():
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    word = Transformer(default_model_path())
    cls_pooled = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "cls")],
                                     device="cpu")
    assert traced_query_encoder(cls_pooled) is None
