"""The inputs every encoder variant is checked on before it replaces the stock model's path, and how
closely it must agree: one place, so the bulk kernels, the oneDNN copy and the query traces ask the same.

Short, typical and truncated (past 256 word pieces) inputs: a variant must agree on every length."""

from __future__ import annotations

PROBES = ("hi", "Where is the primary database these days? We moved it to the eu-west cluster.",
          " ".join(["the release checklist names every migration and its owner"] * 40))
AGREE = 0.99999  # cosine a float32 variant's vectors keep to the stock vectors, on every probe
# bfloat16 keeps 8 bits of mantissa: its query vectors sat at 0.99992-0.99999 of float32's on 60 bench
# queries. Below this a reduced-precision variant is not used (a model whose activations it cannot carry).
AGREE_REDUCED = 0.9995
