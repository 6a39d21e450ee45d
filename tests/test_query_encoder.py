"""The fast query encoders (query/query_encoder.py, query/onnx_query.py): the packaged model's own vectors
through ONNX Runtime (float32) or one frozen torch graph (float32 or bfloat16); and the stock path for a
model of another shape. Real model, real onnxruntime, no stand-ins."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

from recallfs.query.embedder import Embedder
from recallfs.query.encoder_probes import AGREE, AGREE_REDUCED
from recallfs.query.model_files import default_model_path
from recallfs.query.query_encoder import fast_query_encoder, prefer_reduced, run_on_one_thread
from recallfs.query.settings import SettingsError, resolve
from recallfs.query.shared_embedders import embedder_from_settings

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
# How far each precision's vector may sit from the stock float32 one: cosine, and the largest
# difference in any coordinate (bfloat16 keeps 8 bits of mantissa).
TOLERANCE = {"float32": (AGREE, 1e-5), "bfloat16": (AGREE_REDUCED, 2e-2)}


def _served(minilm):
    """The shared embedder, serving queries as the daemon's does (serve_queries), its fast path ready."""
    if minilm.device != "cpu":
        pytest.skip("the fast query paths are used on CPU only")
    minilm.serve_queries()
    deadline = time.monotonic() + 120
    while minilm.query_path == "stock" and time.monotonic() < deadline:
        time.sleep(0.05)
    return minilm


# Every fast path, asked for by name: (RECALLFS_QUERY_PRECISION, runtime).
PATHS = [("float32", "onnx"), ("float32", "traced"), ("bfloat16", "auto")]


@pytest.fixture(scope="module", params=PATHS, ids=["onnx-float32", "traced-float32", "traced-bfloat16"])
def forced(request, minilm):
    if minilm.device != "cpu":
        pytest.skip("the fast query paths are used on CPU only")
    precision, runtime = request.param
    encoder = fast_query_encoder(minilm._require(), precision, runtime)
    assert encoder is not None and encoder.precision == precision
    assert encoder.runtime == ("onnx" if runtime == "onnx" else "traced")
    return encoder


def test_an_embedder_that_serves_no_queries_keeps_the_stock_path():
    # ingest and a one-off CLI recall load the model without serve_queries: no ~2 s trace for them
    emb = Embedder()
    assert emb.wait_ready(300)
    time.sleep(0.5)
    assert emb.query_path == "stock"
    assert emb.query_dtype == "float32"


@pytest.mark.parametrize("text", QUERIES)
def test_served_query_vectors_are_the_models_own(minilm, text):
    minilm = _served(minilm)
    # the packaged model is the plain shape and onnxruntime is installed: the fastest path is on
    assert (minilm.query_path, minilm.query_dtype) == ("onnx", "float32")
    stock = minilm._encode([text], batch_size=1)[0]
    got = minilm._encode_query(text)
    agree, largest = TOLERANCE[minilm.query_dtype]
    assert got.dtype == np.float32 and got.shape == stock.shape
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5
    assert float(got @ stock) >= agree
    assert np.abs(got - stock).max() < largest


@pytest.mark.parametrize("text", QUERIES)
def test_each_precision_gives_the_models_vectors(minilm, forced, text):
    stock = minilm._encode([text], batch_size=1)[0]
    got = forced(text)
    agree, largest = TOLERANCE[forced.precision]
    assert got.dtype == np.float32 and got.shape == stock.shape  # bfloat16 inside, float32 out
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5
    assert float(got @ stock) >= agree
    assert np.abs(got - stock).max() < largest


def test_a_started_query_is_tokenized_by_its_caller_and_run_as_a_whole_call_would(minilm, forced):
    """start_query tokenizes on the calling thread and runs only the graph on the query worker (it then
    needs the GIL only to return): the vector is the one the whole encode gives on one thread, as every
    query runs, on every fast path. Against the graph on all threads it agrees within the precision's
    tolerance only: on a CPU with AMX, oneDNN's bfloat16 kernels round differently by thread count."""
    emb = Embedder(encoder=minilm._require(), model_id=minilm.model_id)
    emb._query_fast = forced  # this path, whichever the shared embedder serves
    agree, largest = TOLERANCE[forced.precision]
    for text in QUERIES:
        asked = f"started on the {forced.runtime} {forced.precision} path: {text}"  # not in the query cache
        np.testing.assert_array_equal(forced.run(forced.features(asked)), forced(asked))
        got = emb.start_query(asked).result(60_000)
        np.testing.assert_array_equal(got, run_on_one_thread(forced, forced.features(asked)))
        assert float(got @ forced(asked)) >= agree and np.abs(got - forced(asked)).max() < largest


@pytest.mark.parametrize(("ms_full", "ms_reduced", "reduced"), [
    (10.0, 5.7, True),  # the development machine's AVX512-BF16 EPYC
    (10.0, 7.6, True),  # just past 1.3x
    (10.0, 8.0, False),  # a near tie keeps float32's exact vectors
    (6.0, 14.0, False),  # bfloat16 emulated in software: slower
    (0.0, 0.0, False),
])
def test_auto_takes_bfloat16_only_when_clearly_faster(ms_full, ms_reduced, reduced):
    assert prefer_reduced(ms_full, ms_reduced) is reduced


@pytest.mark.parametrize("value", ["fp16", "BF16", "double", "int8"])
def test_an_unknown_precision_is_a_settings_error(value):
    with pytest.raises(SettingsError, match="RECALLFS_QUERY_PRECISION"):
        embedder_from_settings(resolve(env={"RECALLFS_QUERY_PRECISION": value}))


def test_a_model_of_another_shape_keeps_the_stock_path():
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    word = Transformer(default_model_path())
    cls_pooled = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "cls")],
                                     device="cpu")
    assert fast_query_encoder(cls_pooled) is None
    assert fast_query_encoder(cls_pooled, "float32", "traced") is None
    assert fast_query_encoder(cls_pooled, "bfloat16") is None


def test_without_onnxruntime_float32_takes_the_traced_graph(minilm, monkeypatch):
    # An install without the optional runtime (or one whose export fails) still gets a fast path.
    if minilm.device != "cpu":
        pytest.skip("the fast query paths are used on CPU only")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError
    encoder = fast_query_encoder(minilm._require(), "float32")
    assert encoder is not None and (encoder.runtime, encoder.precision) == ("traced", "float32")
    assert fast_query_encoder(minilm._require(), "float32", "onnx") is None  # asked for by name: none
    text = QUERIES[2]
    assert float(encoder(text) @ minilm._encode([text], batch_size=1)[0]) >= AGREE
