"""Find the semantic arm at run time, so that the harness runs (lexical figures, the other arms
reported unavailable) where query/semantic.py or its model is missing.

Returns (arm, None) once the arm has warmed up, or (None, reason) saying why the semantic and fused
figures are unavailable. Never raises.
"""

from __future__ import annotations

import time

from recallfs.query.recall import SemanticArm
from recallfs.query.settings import Settings

WARM_TIMEOUT_S = 600.0
# The eval measures quality, not latency: a generous query-embedding budget keeps a busy machine from
# turning into `timeout` degradations (any that still happen are counted in the report).
EVAL_EMBED_BUDGET_MS = 30_000


def load_semantic(
    cfg: Settings, *, warm_timeout_s: float = WARM_TIMEOUT_S
) -> tuple[SemanticArm | None, str | None]:
    try:
        from recallfs.query.semantic import SemanticSearch
    except ImportError as exc:
        return None, f"the semantic arm is not built (import recallfs.query.semantic: {exc})"
    try:
        budget = max(cfg.embed_timeout_ms, EVAL_EMBED_BUDGET_MS)
        arm = SemanticSearch.from_settings(cfg.replace(embed_timeout_ms=budget))
        deadline = time.monotonic() + warm_timeout_s
        ready, reason = arm.availability()
        while not ready and reason == "warming" and time.monotonic() < deadline:
            time.sleep(0.2)
            ready, reason = arm.availability()
        if ready:
            _serve_queries(arm, deadline)
    except Exception as exc:  # the probe reports; it never takes the eval down
        return None, f"the semantic arm could not be started: {type(exc).__name__}: {exc}"
    if not ready:
        return None, f"the semantic arm is not available: degraded_reason {reason!r}"
    return arm, None


def _serve_queries(arm: SemanticArm, deadline: float) -> None:
    """Embed queries as the mount does (its traced graph, at the precision it chose: query/query_encoder.py),
    so that the figures are those of the recall a mount serves. Waits for the trace (a few seconds)."""
    embedder = getattr(arm, "embedder", None)
    if embedder is None or embedder.device != "cpu":
        return
    embedder.serve_queries()
    limit = min(deadline, time.monotonic() + 120)  # a model that cannot be traced keeps the stock path
    while embedder.query_path == "stock" and time.monotonic() < limit:
        time.sleep(0.1)
