"""One query sentence through a frozen TorchScript copy of the model: the same vector, made outside the GIL.

recall embeds its query on a worker thread while its lexical arm runs (query/semantic.py). Through
sentence-transformers, the forward pass is some hundred Python-level module calls; each holds the GIL
between kernels, so the "parallel" embedding and the BM25 arm took turns on one core (measured on
2 cores: the lexical arm went from 3.6 to 6-15 ms beside it). A traced, frozen module runs its whole
graph in C++ with the GIL released, and the two really overlap.

Used only when the model is the plain shape (transformer, mean pooling, optional normalize) and a
probe of short and long texts gives the same vectors as the model itself; otherwise None, and queries
take the stock path. Bulk embedding (ingest) always takes the stock path.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

log = logging.getLogger("recallfs.embedder")

# Short, typical and truncated (past 256 word pieces) inputs: a trace must agree on every length.
_PROBES = ("hi", "Where is the primary database these days? We moved it to the eu-west cluster.",
           " ".join(["the release checklist names every migration and its owner"] * 40))
AGREE = 0.99999  # cosine between the traced and the stock vector of each probe


class TracedQueryEncoder:
    """text -> the model's L2-normalised sentence vector (float32, shape (d,))."""

    def __init__(self, tokenize: Any, module: Any) -> None:
        self._tokenize = tokenize  # sentence-transformers' own Transformer.preprocess: same cut, same case
        self._module = module

    def __call__(self, text: str) -> np.ndarray:
        import torch

        features = self._tokenize([text])
        with torch.inference_mode():  # one call into the frozen graph: the GIL is released once
            vec = self._module(features["input_ids"], features["attention_mask"])
        return np.ascontiguousarray(vec[0].numpy(), dtype=np.float32)


def traced_query_encoder(model: Any) -> TracedQueryEncoder | None:
    """A TracedQueryEncoder for a loaded SentenceTransformer on the CPU, or None (see the module doc)."""
    try:
        if not _plain_shape(model):
            return None
        encoder = _trace(model)
        worst = min(float(np.dot(encoder(t), _stock(model, t))) for t in _PROBES)
    except Exception as exc:  # an unusual model or torch build: queries keep the stock path
        log.info("traced query encoder not used: %s: %s", type(exc).__name__, exc)
        return None
    if worst < AGREE:
        log.info("traced query encoder not used: the probe vectors differ (cosine %.6f)", worst)
        return None
    return encoder


def _plain_shape(model: Any) -> bool:
    modules = list(model)
    if len(modules) not in (2, 3) or not hasattr(modules[0], "auto_model"):
        return False
    config = modules[1].get_config_dict() if hasattr(modules[1], "get_config_dict") else {}
    mean = config.get("pooling_mode") == "mean" or bool(config.get("pooling_mode_mean_tokens"))
    return mean and (len(modules) == 2 or type(modules[2]).__name__ == "Normalize")


def _sentence_module(auto_model: Any) -> Any:
    """(input_ids, attention_mask) -> the mean of the token vectors over the mask, L2-normalised:
    sentence-transformers' Transformer, Pooling(mean) and Normalize as one traceable module."""
    import torch

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = auto_model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            tokens = self.inner(input_ids=ids, attention_mask=mask, return_dict=False)[0]
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return Sentence().eval()


def _trace(model: Any) -> TracedQueryEncoder:
    import torch

    first = model[0]
    # preprocess() is sentence-transformers' own cut (tokenize() before 6.x): the same input ids
    tokenize = first.preprocess if hasattr(first, "preprocess") else first.tokenize
    example = tokenize([_PROBES[1]])
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches it fixed for this shape
        traced = torch.jit.trace(  # type: ignore[no-untyped-call]
            _sentence_module(first.auto_model), (example["input_ids"], example["attention_mask"]),
            check_trace=False)
    frozen = torch.jit.freeze(traced.eval())
    return TracedQueryEncoder(tokenize, frozen)


def _stock(model: Any, text: str) -> np.ndarray:
    out = model.encode([text], batch_size=1, show_progress_bar=False, normalize_embeddings=True,
                       convert_to_numpy=True)
    vec: np.ndarray = np.asarray(out, dtype=np.float32)[0]
    return vec
