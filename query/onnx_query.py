"""One query sentence through ONNX Runtime: the model's own float32 vector in about half the time.

A short query is a few small matrix products per layer, so its cost is mostly fixed per operator: the
traced torch graph (query/query_encoder.py) took 7.6 ms for a 3-word-piece query and 11.9 ms for
20 on one core of the development machine's AMD EPYC, ONNX Runtime 3.2 and 6.9 ms, with vectors at
cosine 0.9999997 or closer to sentence-transformers' own.

The graph is exported from the loaded model when the daemon starts (about 1 s, into an anonymous
in-memory file that lives only while the session loads it; nothing is downloaded), and kept only
when every probe gives the stock vector (AGREE); otherwise, or where onnxruntime or onnx is not
installed, queries take the traced torch path. Its session runs on the calling thread (one intra-op
thread, no spinning workers), and releases the GIL while it runs, so the lexical arm beside it keeps
its core.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger("recallfs.embedder")

_OPSET = 17


class OnnxQueryEncoder:
    """text -> the model's L2-normalised sentence vector (float32, shape (d,)), by ONNX Runtime."""

    runtime = "onnx"
    precision = "float32"

    def __init__(self, features: Callable[[str], dict[str, np.ndarray]], session: Any) -> None:
        self._features = features  # text -> {"ids", "mask"}: the model's own cut, the same ids
        self._session = session

    def __call__(self, text: str) -> np.ndarray:
        return self.run(self.features(text))

    def features(self, text: str) -> dict[str, np.ndarray]:
        return self._features(text)

    def run(self, features: dict[str, np.ndarray]) -> np.ndarray:
        out = self._session.run(None, features)
        return np.ascontiguousarray(out[0][0], dtype=np.float32)


def onnx_query_encoder(tokenize: Any, sentence: Any, example: dict[str, Any]) -> OnnxQueryEncoder | None:
    """An encoder over `sentence` (query_encoder's (ids, mask) -> vector module, plain Linear layers),
    exported with `example`'s features; None where onnxruntime or onnx is missing or the export fails.
    The caller checks its vectors against the model's."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.info("onnxruntime is not installed: queries take the traced torch path")
        return None
    try:
        # An anonymous in-memory file, so that a daemon killed mid-export leaves nothing behind on disk.
        fd = os.memfd_create("recallfs-query-onnx")
        try:
            graph = f"/proc/self/fd/{fd}"
            export_graph(sentence, example, graph)
            session = onnx_session(graph)
        finally:
            os.close(fd)
    except Exception as exc:  # no onnx package, an operator the exporter lacks: the torch path
        log.info("onnx query encoder not used: %s: %s", type(exc).__name__, exc)
        return None

    def features(text: str) -> dict[str, np.ndarray]:
        made = tokenize([text])  # sentence-transformers' own preprocess
        return {"ids": made["input_ids"].numpy(), "mask": made["attention_mask"].numpy()}

    return OnnxQueryEncoder(features, session)


def onnx_session(graph: str) -> Any:
    """An ONNX Runtime session over the graph file at `graph`, set up as every query runs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    # One query runs on the thread that asks; concurrent recalls each bring their own thread.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_cpu_mem_arena = False  # a query's activations are small: 11 MB less, no slower
    options.log_severity_level = 3
    # Loaded from a file, not from bytes: a session made from bytes keeps them (86 MB for MiniLM).
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def export_graph(sentence: Any, example: dict[str, Any], path: str) -> None:
    """The module as an ONNX graph with a free batch and sequence length, written to `path`."""
    import torch

    dynamic = {"ids": {0: "batch", 1: "tokens"}, "mask": {0: "batch", 1: "tokens"}, "vec": {0: "batch"}}
    with warnings.catch_warnings(), torch.no_grad():  # (inference tensors cannot be exported)
        warnings.simplefilter("ignore")  # the exporter's notes on the Python branches it fixes for this shape
        # The TorchScript exporter: it needs only `onnx`, where the newer one also needs onnxscript.
        torch.onnx.export(sentence, (example["input_ids"], example["attention_mask"]), path,
                          input_names=["ids", "mask"], output_names=["vec"], dynamic_axes=dynamic,
                          opset_version=_OPSET, dynamo=False)
