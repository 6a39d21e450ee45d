"""The shaping stages in their fixed order (design.md section 4), each one switchable for ablation.

    fused candidates -> identity dedup -> question turns (x0.8) -> session evidence (on) -> rerank (off)
      -> near-duplicate collapse (on)
      -> metadata bonuses (off) -> recency (neutral; auto on temporal intent)
      -> token budget + MMR (opt-in: budget:N) -> min_score -> tie-break

Pure: the caller passes everything in (query embedding, stored embeddings, a clock) and gets the
candidates back with notes on what each stage did and how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from recallfs.ranking.bonuses import metadata_bonus
from recallfs.ranking.budget import budget_select
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.collapse import collapse_near_duplicates
from recallfs.ranking.cutoff import cut_below
from recallfs.ranking.dedup import dedup_identity
from recallfs.ranking.questions import demote_questions
from recallfs.ranking.recency import dampen_recency
from recallfs.ranking.rerank import rerank
from recallfs.ranking.session_evidence import session_evidence
from recallfs.ranking.similarity import Vector
from recallfs.ranking.stage_config import RECENCY_MODES, STAGES, StageConfig
from recallfs.ranking.temporal import temporal_intent, time_anchor

__all__ = ["RECENCY_MODES", "STAGES", "Shaped", "StageConfig", "shape"]


@dataclass(slots=True)
class Shaped:
    cands: list[Candidate]
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # stage -> what it did, for results.json ("on", "off", "skipped: ...", "auto: 'latest'", ...)
    stages: dict[str, str] = field(default_factory=dict)


def recency_half_life(config: StageConfig, query: str, recent_option: float | None) -> tuple[float, str]:
    """(half-life in days, 0 for off; why). `recent:` wins over the config, the config over intent."""
    if recent_option is not None:
        if recent_option <= 0:
            return 0.0, "off (recent:off)"
        return recent_option, f"on (recent:, half-life {recent_option:g}d)"
    if config.recency == "off":
        return 0.0, "off"
    if config.recency == "on":
        return config.half_life_days, f"on (half-life {config.half_life_days:g}d)"
    phrase = temporal_intent(query)
    if phrase:
        anchor = time_anchor(query)
        if anchor:
            return 0.0, f"neutral (temporal intent {phrase!r} anchored to {anchor})"
        return config.half_life_days, f"auto: temporal intent {phrase!r} (half-life {config.half_life_days:g}d)"
    return 0.0, "neutral (no temporal intent)"


def shape(
    cands: list[Candidate],
    config: StageConfig,
    *,
    query: str,
    terms: Sequence[str] = (),
    query_vector: Vector | None = None,
    vectors: Mapping[int, Vector] | None = None,
    recent_half_life_days: float | None = None,
    budget_tokens: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Shaped:
    """Run the stages in order over authorized, loaded candidates. `query` is the search text (inline
    options removed); `terms` its searchable words; `vectors` maps rid -> stored embedding."""
    out = Shaped(cands=ordered([c.copy() for c in cands]))

    def timed(name: str, fn: Callable[[], list[Candidate]]) -> None:
        t0 = clock()
        out.cands = fn()
        out.timings_ms[name] = (clock() - t0) * 1000

    if config.dedup:
        timed("dedup", lambda: dedup_identity(out.cands))
    out.stages["dedup"] = "on" if config.dedup else "off"

    if config.question_weight < 1:
        timed("questions", lambda: demote_questions(out.cands, config.question_weight))
        out.stages["questions"] = f"question turns x{config.question_weight:g}"
    else:
        out.stages["questions"] = "off"

    if config.session_weight > 0:
        timed("session", lambda: session_evidence(out.cands, config.session_weight))
        out.stages["session"] = f"on (weight {config.session_weight:g})"
    else:
        out.stages["session"] = "off"

    if config.rerank:
        def _rerank() -> list[Candidate]:
            ranked, note = rerank(out.cands, query_vector, vectors, mix=config.rerank_mix,
                                  budget_ms=config.rerank_budget_ms, clock=clock)
            out.stages["rerank"] = "on" if note is None else f"skipped: {note}"
            if note:
                out.notes.append(note)
            return ranked
        timed("rerank", _rerank)
    else:
        out.stages["rerank"] = "off"

    if config.collapse:
        def _collapse() -> list[Candidate]:
            kept, note = collapse_near_duplicates(out.cands, vectors, threshold=config.collapse_threshold)
            # A fallback to exact text is reported in `stages` only: it is routine while fresh rows
            # wait for their embeddings, and it never hides a hit.
            out.stages["collapse"] = "on" if note is None else "on; " + note
            return kept
        timed("collapse", _collapse)
    else:
        out.stages["collapse"] = "off"

    if config.tag_bonus > 0 or config.kind_bonus > 0:
        words_in = list(terms) if terms else query
        timed("bonuses", lambda: metadata_bonus(out.cands, words_in, tag_bonus=config.tag_bonus,
                                                kind_bonus=config.kind_bonus))
        out.stages["bonuses"] = f"tag x{1 + config.tag_bonus:g}, kind x{1 + config.kind_bonus:g}"
    else:
        out.stages["bonuses"] = "off"

    half_life, why = recency_half_life(config, query, recent_half_life_days)
    out.stages["recency"] = why
    if half_life > 0:
        timed("recency", lambda: dampen_recency(out.cands, half_life))

    if budget_tokens is not None:
        def _budget() -> list[Candidate]:
            kept, note = budget_select(out.cands, budget_tokens, vectors, diversity=config.mmr,
                                       mmr_lambda=config.mmr_lambda)
            out.notes.append(note)
            out.stages["mmr"] = note
            return kept
        timed("budget", _budget)
    else:
        out.stages["mmr"] = "off (no budget:N)"

    if config.min_score > 0:
        before = len(out.cands)
        timed("min_score", lambda: cut_below(out.cands, config.min_score))
        out.stages["min_score"] = f"{config.min_score:g}: dropped {before - len(out.cands)}"
    else:
        out.stages["min_score"] = "off"

    timed("tie_break", lambda: ordered(out.cands))
    return out
