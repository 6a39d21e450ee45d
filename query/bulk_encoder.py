"""The model as bulk jobs (ingest, reindex) run it, on the kernels this CPU runs fastest.

A Linear layer can run through MKL's sgemm, as sentence-transformers loads the model, or through
oneDNN (query/onednn_layers.py): the same float32 math (vectors agree to about 2e-7), but which is
faster depends on the CPU. On an AMD EPYC (Zen 5, AVX-512) oneDNN embedded 1.6-1.7x the rows/s; on an
Intel Xeon with AMX it embedded 0.75-0.85x of MKL's (README, "Recall latency and ingest"). So neither is
fixed: the first job of at least CHOOSE_MIN distinct texts times both on a sample of its own texts and
keeps the faster for the rest of the process. Smaller jobs (a file dropped in the inbox) run the model
as loaded; the daemon that never ingests much never pays for a second copy of the weights.

`precision="bfloat16"` (RECALLFS_EMBED_PRECISION) runs the model under torch's bfloat16 autocast
instead: on a CPU with AMX about 1.7x float32's rows/s, with stored vectors at cosine 0.99997 or
closer to float32's. It is not the default: those small shifts moved one MADial question out of the
fused top 5, and vectors that depend on the CPU would make eval figures differ between machines.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from recallfs.query.encoder_probes import AGREE_REDUCED, PROBES
from recallfs.query.onednn_layers import onednn_linears

log = logging.getLogger("recallfs.embedder")

PRECISIONS = ("float32", "bfloat16")
CHOOSE_MIN = 512  # distinct texts in a job before its kernels are measured (the sample costs ~0.3 s)
SAMPLE = 24  # texts timed per kernel, spread over the job's lengths
ROUNDS = 2  # alternating rounds; each kernel keeps its best (the first call pays for its set-up)


class BulkEncoder:
    """encode() over the loaded SentenceTransformer `model` on the CPU, with its kernels chosen by
    measurement at the first large job (`prepare`); thread-safe."""

    def __init__(self, model: Any, precision: str = "float32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"embed precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        self._model = model
        self._precision = precision
        self._kernels = "mkl"  # until measured: the model as loaded
        self._decided = False
        self._lock = threading.Lock()
        if precision == "bfloat16" and not self._bfloat16_agrees():
            self._precision = "float32"

    @property
    def path(self) -> str:
        """What bulk jobs run on now: "bfloat16", or float32 on "mkl" or "onednn" kernels."""
        return "bfloat16" if self._precision == "bfloat16" else self._kernels

    def prepare(self, texts: list[str]) -> None:
        """Choose the float32 kernels by timing each on a sample of `texts`, once per process, when the
        job is large enough to be worth it."""
        if self._decided or self._precision != "float32" or len(texts) < CHOOSE_MIN:
            return
        with self._lock:
            if self._decided:
                return
            self._decided = True
            converted = onednn_linears(self._model)
            if converted is self._model:
                return
            sample = sorted(texts, key=len)[:: max(1, len(texts) // SAMPLE)][:SAMPLE]
            mkl, onednn = _timed_pair(self._model, converted, sample)
            log.info("bulk embedding: MKL %.0f ms, oneDNN %.0f ms per %d texts", mkl * 1e3, onednn * 1e3,
                     len(sample))
            if onednn < mkl:
                self._model, self._kernels = converted, "onednn"

    def encode(self, texts: list[str], batch_size: int) -> Any:
        with self._autocast():
            return self._model.encode(texts, batch_size=batch_size, show_progress_bar=False,
                                      normalize_embeddings=True, convert_to_numpy=True)

    @contextlib.contextmanager
    def _autocast(self) -> Iterator[None]:
        if self._precision != "bfloat16":
            yield
            return
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield

    def _bfloat16_agrees(self) -> bool:
        kw: dict[str, Any] = {"batch_size": 8, "normalize_embeddings": True, "convert_to_numpy": True,
                              "show_progress_bar": False}
        try:
            full = np.asarray(self._model.encode(list(PROBES), **kw))
            with self._autocast():
                reduced = np.asarray(self._model.encode(list(PROBES), **kw))
            agree = float(np.min(np.sum(full * reduced, axis=1)))
        except Exception as exc:  # a torch build without bfloat16 on this CPU: float32
            log.info("bfloat16 bulk embedding not used: %s: %s", type(exc).__name__, exc)
            return False
        if agree < AGREE_REDUCED:
            log.info("bfloat16 bulk embedding not used: the probe vectors differ (cosine %.6f)", agree)
            return False
        return True


def _timed_pair(a: Any, b: Any, sample: list[str]) -> tuple[float, float]:
    """Seconds each model takes to embed `sample`, alternating, best of ROUNDS."""
    best = [float("inf"), float("inf")]
    for _ in range(ROUNDS):
        for i, model in enumerate((a, b)):
            t0 = time.perf_counter()
            model.encode(sample, batch_size=len(sample), show_progress_bar=False, normalize_embeddings=True,
                         convert_to_numpy=True)
            best[i] = min(best[i], time.perf_counter() - t0)
    return best[0], best[1]
