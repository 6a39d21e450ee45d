"""Named recall variants: the harness's one extension point.

A variant is a name and the keyword arguments it passes to `recall()`. The arm comparison is three
variants; an ablation (`ablations()`) is a longer list: the arms, then one row per shaping stage of
`ranking.pipeline.STAGES` flipped from its default through `recall(stages=...)`. To measure a new
idea, add a row there: variants whose keywords `recall()` does not accept (a toggle not built yet,
or renamed) are reported as skipped instead of failing the run.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from recallfs.query.query_syntax import RecallOptions

Variant = dict[str, Any]  # keyword arguments for recall()

ARM_VARIANTS: dict[str, Variant] = {
    "lexical": {"arm": "lexical"},
    "semantic": {"arm": "semantic"},
    "fused": {"arm": "fused"},
}

def ablations() -> dict[str, Variant]:
    """One row per stage toggled against the default pipeline ("fused" with every default)."""
    rows: dict[str, Variant] = {
        "default pipeline": {"arm": "fused"},
        "lexical arm only": {"arm": "lexical"},
        "semantic arm only": {"arm": "semantic"},
        "equal provenance weights": {"arm": "fused", "weights": {}},
        "rank fusion (rrf) instead of calibrated": {"arm": "fused", "fusion": "rrf"},
    }
    # The default weights' two parts measured apart: the table gradient and the lexical arm's weight.
    from recallfs.ranking.provenance import DEFAULT_WEIGHTS, RANK_WEIGHTS

    lexical = DEFAULT_WEIGHTS.get("lexical", 1.0)
    rows["shallow tables (1 / 0.995 / 0.99)"] = {"arm": "fused", "weights": RANK_WEIGHTS}
    rows["tables equal, lexical arm weighted"] = {"arm": "fused", "weights": {"lexical": lexical}}
    rows["steeper tables (1 / 0.7 / 0.65)"] = {
        "arm": "fused", "weights": {"facts": 1.0, "summaries": 0.7, "turns": 0.65, "lexical": lexical}}
    rows["lexical arm at full weight"] = {"arm": "fused", "weights": {**DEFAULT_WEIGHTS, "lexical": 1.0}}
    try:
        from recallfs.ranking.pipeline import STAGES, StageConfig
    except ImportError:  # no switchable stages: the arm rows still run
        return rows
    default = StageConfig()
    for stage in STAGES:
        if stage == "mmr":
            continue  # MMR only acts under a token budget: measured by the budget rows below
        toggled = default.toggled(stage)
        rows[f"{stage} {'off' if default.is_on(stage) else 'on'}"] = {"arm": "fused", "stages": toggled}
    rows["no shaping stages (plain fusion)"] = {
        "arm": "fused",
        "stages": default.replace(dedup=False, relevance_floor=0.0, floor_cosine=0.0, question_weight=1.0,
                                  reply_weight=0.0, window_weight=0.0, context_weight=0.0, session_weight=0.0,
                                  collapse=False,
                                  recency="off", currentness=False)}
    for factor in (0.5, 1.5):  # around the default, whatever it is now (a fixed pair went stale once)
        weight = round(default.session_weight * factor, 3)
        rows[f"session evidence at {weight:g}"] = {"arm": "fused", "stages": default.replace(session_weight=weight)}
    rows["session support from its best hit alone (breadth 0)"] = {
        "arm": "fused", "stages": default.replace(session_breadth=0.0)}
    rows["budget:1000 with MMR"] = {"arm": "fused", "options": RecallOptions(budget=1000)}
    rows["budget:1000 without MMR"] = {"arm": "fused", "options": RecallOptions(budget=1000),
                                       "stages": default.replace(mmr=False)}
    return rows


def uses_semantic(variant: Variant) -> bool:
    return variant.get("arm", "fused") in ("semantic", "fused")


def unsupported_keywords(variant: Mapping[str, Any], fn: Callable[..., Any]) -> list[str]:
    """The keywords of `variant` that `fn` does not take (none when it takes **kwargs)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    return sorted(k for k in variant if k not in params)


def describe(variant: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-safe form of a variant for the report."""
    out: dict[str, Any] = {}
    for key, value in variant.items():
        if isinstance(value, RecallOptions):
            out[key] = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)
                        if getattr(value, f.name) not in (None, [])}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            # a stage config: only what differs from its defaults
            default = type(value)()
            out[key] = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)
                        if getattr(value, f.name) != getattr(default, f.name)}
        else:
            out[key] = value
    return out
