"""Bulk embedding over the Embedder's loaded model: many texts at once (ingest, reindex, a mount's
backlog), each distinct text once, similar lengths in one forward pass, on the kernels
query/bulk_encoder.py chooses; and the windows a long text is read as (query/chunks.py). Embedder
(query/embedder.py) is the model and its loading; this is the mixin it takes its bulk methods from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from recallfs.query.bulk_encoder import BulkEncoder
from recallfs.query.chunks import encoder_windows
from recallfs.query.embedder_errors import EmbedderError

Progress = Callable[[int, int], None]  # (done, total)

CHUNK = 512  # sentences between progress reports


class Encoder(Protocol):
    """The slice of SentenceTransformer the embedder uses (an injected encoder must provide it)."""

    def encode(self, inputs: list[str], *, batch_size: int, show_progress_bar: bool,
               normalize_embeddings: bool, convert_to_numpy: bool) -> Any: ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Row-normalised float32; a zero row stays zero rather than becoming NaN."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(m / norms, dtype=np.float32)


class BulkEmbedding:
    """Bulk embedding over the Embedder's loaded model (the attributes below are the Embedder's)."""

    device: str
    batch_size: int
    embed_precision: str
    _lock: threading.Lock
    _encoder: Any
    _bulk: BulkEncoder | None
    _dim: int | None

    @property
    def dim(self) -> int:
        raise NotImplementedError  # the Embedder's

    def _require(self) -> Encoder:
        raise NotImplementedError  # the Embedder's

    @property
    def bulk_path(self) -> str:
        """What bulk jobs run on: "mkl" until the first large job measures (query/bulk_encoder.py),
        then "mkl" or "onednn"; "bfloat16" when asked for; "model" for an injected or GPU model."""
        return self._bulk.path if self._bulk is not None else "mkl" if self._bulkable() else "model"

    def _bulkable(self) -> bool:
        return self.device == "cpu" and hasattr(self._encoder, "forward")

    def _bulk_encoder(self) -> BulkEncoder | None:
        if self._bulk is None and self._bulkable():
            with self._lock:
                if self._bulk is None:
                    self._bulk = BulkEncoder(self._encoder, self.embed_precision)
        return self._bulk

    def _encode(self, texts: list[str], batch_size: int | None = None, *, bulk: bool = False) -> np.ndarray:
        encoder = self._require()
        runner = self._bulk_encoder() if bulk else None
        size = batch_size or self.batch_size
        out = runner.encode(texts, size) if runner is not None else encoder.encode(
            texts, batch_size=size, show_progress_bar=False, normalize_embeddings=True, convert_to_numpy=True)
        matrix = np.asarray(out, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbedderError(f"the encoder returned shape {matrix.shape} for {len(texts)} texts")
        return l2_normalize(matrix)

    def embed(self, texts: Sequence[str], *, progress: Progress | None = None) -> np.ndarray:
        """Embed many texts (waits for the model). Rows come back in input order, L2-normalised.

        Each distinct text is embedded once (a batch repeats short turns such as "ok, thanks"), and
        similar lengths share a forward pass, so little of it is padding."""
        total = len(texts)
        if total == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        slots: dict[str, int] = {}
        where = np.fromiter((slots.setdefault(t, len(slots)) for t in texts), dtype=np.int64, count=total)
        distinct = list(slots)
        copies = np.bincount(where, minlength=len(distinct))
        order = sorted(range(len(distinct)), key=lambda i: len(distinct[i]))
        self._require()
        runner = self._bulk_encoder()
        if runner is not None:
            runner.prepare(distinct)
        out: np.ndarray | None = None
        done = 0
        for start in range(0, len(distinct), CHUNK):
            idx = order[start:start + CHUNK]
            vecs = self._encode([distinct[i] for i in idx], bulk=True)
            if out is None:
                out = np.empty((len(distinct), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            done += int(copies[idx].sum())
            if progress:
                progress(done, total)
        assert out is not None
        if self._dim is None:
            self._dim = int(out.shape[1])
        return out[where]

    def windows(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text as the windows the model reads whole (query/chunks.encoder_windows)."""
        return encoder_windows(self._require(), texts)
