"""The traced query encoder (query/query_encoder.py): the packaged model's own vectors, on one frozen
graph; and the stock path for a model of another shape. Real model, no stand-ins."""

from __future__ import annotations

import numpy as np
import pytest

from recallfs.query.embedder import default_model_path
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


@pytest.mark.parametrize("text", QUERIES)
def test_query_vectors_are_the_models_own(minilm, text):
    if minilm.device != "cpu":
        pytest.skip("the traced query path is used on CPU only")
    assert minilm._query_fast is not None  # the packaged model is the plain shape: the fast path is on
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
