"""A fast path for one query sentence: the model's own vector, made outside the GIL.

recall embeds its query on a worker thread while its lexical arm runs (query/semantic.py). Through
sentence-transformers, the forward pass is some hundred Python-level module calls; each holds the GIL
between kernels, so the "parallel" embedding and the BM25 arm took turns on one core (measured on
2 cores: the lexical arm went from 3.6 to 6-15 ms beside it). Both fast paths run the whole graph in
C++ with the GIL released, so the two really overlap:
- float32, by default: ONNX Runtime over a graph exported from the loaded model (query/onnx_query.py),
  about half the traced graph's time; where onnxruntime is missing or disagrees, a frozen TorchScript
  trace of the model;
- bfloat16 (RECALLFS_QUERY_PRECISION), on the traced graph only.

Precision: float32 by default; bfloat16 when asked for, or `auto`: where it is measured at least FASTER
times quicker on this CPU than the float32 path. On the development machine's AMD EPYC (AVX512-BF16) a
20-word-piece probe took 9.8-11.9 ms traced in float32, 5.7 ms traced in bfloat16 and 6.9 ms through
ONNX Runtime in float32, so `auto` keeps float32 there. bfloat16's query vectors sit at cosine
0.99992-0.99999 to float32's (stored memory vectors stay float32); it is not the default because those
small shifts moved calibrated fusion's floors for a few eval questions, and no eval figure may fall
(developer-notes/recall-performance.md has the figures). Where bfloat16 is emulated it is slower, and
`auto` keeps float32.

Used only when the model is the plain shape (transformer, mean pooling, optional normalize) and a
probe of short and long texts gives the same vectors as the model itself; otherwise None, and queries
take the stock path. Bulk embedding (ingest) takes query/bulk_encoder.py's kernels.
"""

from __future__ import annotations

import copy
import logging
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from recallfs.query.encoder_probes import AGREE, AGREE_REDUCED, PROBES
from recallfs.query.onnx_query import onnx_query_encoder

log = logging.getLogger("recallfs.embedder")

PRECISIONS = ("auto", "float32", "bfloat16")
# `auto` takes bfloat16 only when its probe encodes are at least this much faster than float32's: a
# near tie is not worth the (tiny) change in the vectors.
FASTER = 1.3
_TIMING_ROUNDS = 7


class QueryEncoder(Protocol):
    """text -> the model's L2-normalised sentence vector (float32, shape (d,)), and how it is made."""

    runtime: str  # "onnx" or "traced": Embedder.query_path
    precision: str  # "float32" or "bfloat16"

    def __call__(self, text: str) -> np.ndarray: ...

    def features(self, text: str) -> Any:
        """The model's input for `text` (tokenizing: Python, under the GIL, ~0.3 ms)."""

    def run(self, features: Any) -> np.ndarray:
        """The vector for features(text): the graph, with the GIL released."""


class TracedQueryEncoder:
    """text -> the model's L2-normalised sentence vector (float32, shape (d,)), by a frozen torch graph."""

    runtime = "traced"

    def __init__(self, tokenize: Any, module: Any, precision: str = "float32") -> None:
        self._tokenize = tokenize  # sentence-transformers' own Transformer.preprocess: same cut, same case
        self._module = module
        self.precision = precision

    def __call__(self, text: str) -> np.ndarray:
        return self.run(self.features(text))

    def features(self, text: str) -> Any:
        return self._tokenize([text])

    def run(self, features: Any) -> np.ndarray:
        import torch

        with torch.inference_mode():  # one call into the frozen graph: the GIL is released once
            vec = self._module(features["input_ids"], features["attention_mask"])
        return np.ascontiguousarray(vec[0].numpy(), dtype=np.float32)


def run_on_one_thread(fast: QueryEncoder, features: Any) -> np.ndarray:
    """fast.run(features) on one CPU thread, as every query runs (Embedder._encode_query says why);
    ONNX Runtime's session has one thread of its own, a torch graph takes torch's."""
    if fast.runtime == "onnx":
        return fast.run(features)
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fast.run(features)
    finally:
        torch.set_num_threads(before)


def fast_query_encoder(model: Any, precision: str = "float32", runtime: str = "auto") -> QueryEncoder | None:
    """The fast query path for a loaded SentenceTransformer on the CPU, or None (see the module doc).
    `precision`: one of PRECISIONS; `auto` measures both and keeps bfloat16 only when FASTER.
    `runtime` (float32 only): "onnx" or "traced" to ask for one; `auto` takes ONNX Runtime where it is
    installed and agrees (query/onnx_query.py), else the traced graph."""
    if precision not in PRECISIONS:
        raise ValueError(f"query precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    try:
        if not plain_shape(model):
            return None
        full = _full(model, runtime) if precision in ("auto", "float32") else None
        reduced = _checked(model, _trace(model, "bfloat16"), AGREE_REDUCED) if precision in (
            "auto", "bfloat16") else None
    except Exception as exc:  # an unusual model or torch build: queries keep the stock path
        log.info("fast query encoder not used: %s: %s", type(exc).__name__, exc)
        return None
    if full is None or reduced is None:
        return full or reduced
    ms_full, ms_reduced = timed_pair(full, reduced)
    log.info("query encoder: float32 %.1f ms, bfloat16 %.1f ms per probe", ms_full, ms_reduced)
    return reduced if prefer_reduced(ms_full, ms_reduced) else full


def _full(model: Any, runtime: str) -> QueryEncoder | None:
    """The float32 path: ONNX Runtime's graph when allowed, there and agreeing; else the traced one."""
    if runtime in ("auto", "onnx"):
        try:
            checked = _onnx(model)
        except Exception as exc:  # a model the exporter or the runtime cannot take: the traced graph
            log.info("onnx query encoder not used: %s: %s", type(exc).__name__, exc)
            checked = None
        if checked is not None or runtime == "onnx":
            return checked
    return _checked(model, _trace(model, "float32"), AGREE)


def _onnx(model: Any) -> QueryEncoder | None:
    first = model[0]
    tokenize = tokenizer_of(first)
    sentence = plain_sentence(first.auto_model)
    exported = onnx_query_encoder(tokenize, sentence, tokenize([PROBES[1]]))
    return _checked(model, exported, AGREE) if exported is not None else None


def prefer_reduced(ms_full: float, ms_reduced: float) -> bool:
    """Whether `auto` takes bfloat16, from each precision's measured ms per probe encode."""
    return ms_reduced > 0 and ms_reduced * FASTER <= ms_full


def _checked(model: Any, encoder: QueryEncoder, agree: float) -> QueryEncoder | None:
    """`encoder`, when every probe's vector agrees with the stock one."""
    worst = min(float(np.dot(encoder(t), stock_vector(model, t))) for t in PROBES)
    if worst < agree:
        log.info("%s %s query encoder not used: the probe vectors differ (cosine %.6f)", encoder.runtime,
                 encoder.precision, worst)
        return None
    return encoder


def timed_pair(a: Callable[[str], Any], b: Callable[[str], Any]) -> tuple[float, float]:
    """Median ms per encode of a typical probe, a and b alternating on one thread, as queries run."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    times: tuple[list[float], list[float]] = ([], [])
    try:
        for _ in range(_TIMING_ROUNDS):
            for fn, out in ((a, times[0]), (b, times[1])):
                t0 = time.perf_counter()
                fn(PROBES[1])
                out.append((time.perf_counter() - t0) * 1000)
    finally:
        torch.set_num_threads(before)
    return statistics.median(times[0]), statistics.median(times[1])


def plain_shape(model: Any) -> bool:
    modules = list(model)
    if len(modules) not in (2, 3) or not hasattr(modules[0], "auto_model"):
        return False
    config = modules[1].get_config_dict() if hasattr(modules[1], "get_config_dict") else {}
    mean = config.get("pooling_mode") == "mean" or bool(config.get("pooling_mode_mean_tokens"))
    return mean and (len(modules) == 2 or type(modules[2]).__name__ == "Normalize")


def _sentence_module(auto_model: Any) -> Any:
    """(input_ids, attention_mask) -> the mean of the token vectors over the mask, L2-normalised in
    float32: sentence-transformers' Transformer, Pooling(mean) and Normalize as one traceable module."""
    import torch

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = auto_model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            tokens = self.inner(input_ids=ids, attention_mask=mask, return_dict=False)[0].float()
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return Sentence().eval()


def plain_sentence(auto_model: Any) -> Any:
    """The float32 sentence module over a plain copy of the transformer: what ONNX exports."""
    return _sentence_module(_plain_copy(auto_model))


def _plain_copy(auto_model: Any) -> Any:
    """A copy of the transformer with plain Linear layers. The loaded model's may be oneDNN modules
    (query/onednn_layers.py), which hold their weights in oneDNN's layout: they cast to no other
    dtype, and the ONNX exporter does not know them."""
    import torch

    def plain(module: torch.nn.Module) -> None:
        for name, child in module.named_children():
            if getattr(child, "original_name", "") == "MkldnnLinear":
                held: Any = child  # a ScriptModule: its buffers are oneDNN tensors
                weight = held.weight.to_dense()
                linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
                with torch.no_grad():
                    linear.weight.copy_(weight)
                    linear.bias.copy_(held.bias.to_dense())
                setattr(module, name, linear)
            else:
                plain(child)

    clone = copy.deepcopy(auto_model)
    plain(clone)
    return clone.eval()


def tokenizer_of(first: Any) -> Any:
    # preprocess() is sentence-transformers' own cut (tokenize() before 6.x): the same input ids
    return first.preprocess if hasattr(first, "preprocess") else first.tokenize


def _trace(model: Any, precision: str = "float32") -> TracedQueryEncoder:
    import torch

    first = model[0]
    tokenize = tokenizer_of(first)
    example = tokenize([PROBES[1]])
    inner = first.auto_model if precision == "float32" else _plain_copy(first.auto_model).to(torch.bfloat16)
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches it fixed for this shape
        traced = torch.jit.trace(  # type: ignore[no-untyped-call]
            _sentence_module(inner), (example["input_ids"], example["attention_mask"]),
            check_trace=False)
    frozen = torch.jit.freeze(traced.eval())
    return TracedQueryEncoder(tokenize, frozen, precision)


def stock_vector(model: Any, text: str) -> np.ndarray:
    out = model.encode([text], batch_size=1, show_progress_bar=False, normalize_embeddings=True,
                       convert_to_numpy=True)
    vec: np.ndarray = np.asarray(out, dtype=np.float32)[0]
    return vec
