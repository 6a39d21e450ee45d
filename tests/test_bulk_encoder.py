"""Bulk embedding's kernels, chosen by measurement on the real packaged MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from recallfs.query.bulk_encoder import CHOOSE_MIN, BulkEncoder
from recallfs.query.embedder import Embedder
from recallfs.query.model_files import default_model_path

_TEXTS = ["Where is the primary database these days?", "ok", "We moved it to eu-west last week. " * 30]


@pytest.fixture(scope="module")
def stock():
    """The model as sentence-transformers loads it (MKL's sgemm in its Linear layers)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)


def _vectors(model, texts):
    return np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True))


def _job(n: int) -> list[str]:
    return [f"note {i}: the deploy of service {i % 17} moved to region {i % 5} after review {i}" for i in range(n)]


def test_a_small_job_runs_the_model_as_loaded(stock):
    bulk = BulkEncoder(stock)
    bulk.prepare(_job(CHOOSE_MIN - 1))
    assert bulk.path == "mkl"
    assert np.array_equal(bulk.encode(_TEXTS, batch_size=64), _vectors(stock, _TEXTS))


def test_a_large_job_measures_the_kernels_once_and_keeps_the_vectors(stock):
    import torch

    bulk = BulkEncoder(stock)
    bulk.prepare(_job(CHOOSE_MIN))
    want = "onednn" if torch.backends.mkldnn.is_available() else "mkl"  # type: ignore[no-untyped-call]
    assert bulk.path in ("mkl", want)  # whichever was faster here
    assert np.abs(bulk.encode(_TEXTS, batch_size=64) - _vectors(stock, _TEXTS)).max() < 1e-5
    chosen = bulk.path
    bulk.prepare(_job(CHOOSE_MIN * 2))  # decided once per process: no second measurement
    assert bulk.path == chosen


def test_the_embedder_decides_at_its_first_large_job(minilm):
    emb = Embedder(encoder=minilm._encoder, model_id=minilm.model_id, dim=minilm.dim)
    emb.embed(_job(10))
    assert emb.bulk_path == "mkl"
    vecs = emb.embed(_job(CHOOSE_MIN))
    assert emb.bulk_path in ("mkl", "onednn")
    assert np.abs(vecs[:3] - minilm.embed(_job(3))).max() < 1e-5


def test_bfloat16_vectors_stay_within_its_tolerance(stock):
    bulk = BulkEncoder(stock, "bfloat16")
    if bulk.path != "bfloat16":
        pytest.skip("this CPU's torch build does not run the model in bfloat16 within tolerance")
    got, want = bulk.encode(_TEXTS, batch_size=64), _vectors(stock, _TEXTS)
    cosines = np.sum(np.asarray(got, dtype=np.float32) * want, axis=1)
    assert cosines.min() > 0.9995
    bulk.prepare(_job(CHOOSE_MIN))  # nothing to choose: bfloat16 was asked for
    assert bulk.path == "bfloat16"


def test_an_unknown_precision_is_refused(stock):
    with pytest.raises(ValueError, match="float32, bfloat16"):
        BulkEncoder(stock, "float16")
