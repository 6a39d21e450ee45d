"""The shaping stages in their fixed order (developer-notes/ranking.md), each one switchable for ablation.

    fused candidates -> identity dedup -> relevance floor (0.01; semantic-only: cosine 0.3)
      -> question turns (x0.8 on calibrated scores) -> session evidence (on)
      -> context (a turn read with its neighbours) -> replies (a question's reply just below it)
      -> rerank (off) -> near-duplicate collapse (on)
      -> metadata bonuses (off) -> time window (x2 inside the span the question names)
      -> recency (neutral; auto on temporal intent; reorders the top band only)
      -> near-misses (below the floor, once a hit passed it: they follow the hits, in fused order)
      -> currentness (turns and summaries yield to the current fact that replaced them)
      -> token budget + MMR (opt-in: budget:N) -> min_score -> tie-break

Pure: the caller passes everything in (query embedding, stored embeddings, a clock) and gets the
candidates back with notes on what each stage did and how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from recallfs.ranking.bonuses import metadata_bonus
from recallfs.ranking.budget import budget_select
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.collapse import collapse_near_duplicates
from recallfs.ranking.context import OFFSET, favour_context
from recallfs.ranking.currentness import PULLED, CurrentLink, yield_to_current
from recallfs.ranking.cutoff import cut_below
from recallfs.ranking.dedup import dedup_identity
from recallfs.ranking.floor_stages import floor_stage, near_misses_stage
from recallfs.ranking.questions import demote_questions, question_weight
from recallfs.ranking.recency import recency_in_band
from recallfs.ranking.replies import lift_replies
from recallfs.ranking.rerank import rerank
from recallfs.ranking.session_evidence import session_evidence
from recallfs.ranking.similarity import Vector
from recallfs.ranking.stage_config import RECENCY_MODES, STAGES, StageConfig
from recallfs.ranking.stage_run import Shaped, StageRun
from recallfs.ranking.temporal import question_of, recency_half_life
from recallfs.ranking.time_window import favour_window, time_window

__all__ = ["RECENCY_MODES", "STAGES", "Shaped", "StageConfig", "recency_half_life", "shape"]


def _dedup(run: StageRun) -> None:
    if run.config.dedup:
        run.timed("dedup", lambda: dedup_identity(run.out.cands))
    run.out.stages["dedup"] = "on" if run.config.dedup else "off"


def _questions(run: StageRun) -> None:
    weight, run.out.stages["questions"] = question_weight(run.config.question_weight, calibrated=run.calibrated)
    if weight < 1:
        run.timed("questions", lambda: demote_questions(run.out.cands, weight))


def _replies(run: StageRun) -> None:
    weight = run.config.reply_weight
    if weight <= 0:
        run.out.stages["replies"] = "off"
        return
    if not run.replies:
        run.out.stages["replies"] = f"on (weight {weight:g}; no question turn among the best with a reply)"
        return
    run.timed("replies", lambda: lift_replies(run.out.cands, run.replies, weight))
    run.out.stages["replies"] = f"on (weight {weight:g}; {len(run.replies)} question turns with a reply)"


def _context(run: StageRun) -> None:
    weight = run.config.context_weight
    if weight <= 0:
        run.out.stages["context"] = "off"
    elif not run.calibrated:  # an additive gain needs scores on the calibrated 0..1 scale
        run.out.stages["context"] = "skipped: the scores are not calibrated (a single arm or rank fusion)"
    elif not run.context:
        run.out.stages["context"] = f"on (weight {weight:g}; no turn with a context: no query embedding or vectors)"
    else:
        run.timed("context", lambda: favour_context(run.out.cands, run.context, weight))
        run.out.stages["context"] = (f"on (weight {weight:g} x the cosine above {OFFSET:g}; "
                                     f"{len(run.context)} turns read with their neighbours)")


def _session(run: StageRun) -> None:
    weight, breadth = run.config.session_weight, run.config.session_breadth
    if weight > 0:
        run.timed("session", lambda: session_evidence(run.out.cands, weight, breadth))
    run.out.stages["session"] = f"on (weight {weight:g}, breadth {breadth:g})" if weight > 0 else "off"


def _rerank(run: StageRun) -> None:
    if not run.config.rerank:
        run.out.stages["rerank"] = "off"
        return

    def step() -> list[Candidate]:
        ranked, note = rerank(run.out.cands, run.query_vector, run.vectors, mix=run.config.rerank_mix,
                              budget_ms=run.config.rerank_budget_ms, clock=run.clock)
        run.out.stages["rerank"] = "on" if note is None else f"skipped: {note}"
        if note:
            run.out.notes.append(note)
        return ranked
    run.timed("rerank", step)


def _collapse(run: StageRun) -> None:
    if not run.config.collapse:
        run.out.stages["collapse"] = "off"
        return

    def step() -> list[Candidate]:
        kept, note = collapse_near_duplicates(run.out.cands, run.vectors, threshold=run.config.collapse_threshold)
        # A fallback to exact text is reported in `stages` only: it is routine while fresh rows
        # wait for their embeddings, and it never hides a hit.
        run.out.stages["collapse"] = "on" if note is None else "on; " + note
        return kept
    run.timed("collapse", step)


def _bonuses(run: StageRun) -> None:
    tag, kind = run.config.tag_bonus, run.config.kind_bonus
    if tag > 0 or kind > 0:
        words_in = list(run.terms) if run.terms else run.query
        run.timed("bonuses", lambda: metadata_bonus(run.out.cands, words_in, tag_bonus=tag, kind_bonus=kind))
        run.out.stages["bonuses"] = f"tag x{1 + tag:g}, kind x{1 + kind:g}"
    else:
        run.out.stages["bonuses"] = "off"


def _window(run: StageRun) -> None:
    weight = run.config.window_weight
    window = time_window(question_of(run.query), run.now) if weight > 0 else None
    if window is None:
        run.out.stages["window"] = "off" if weight <= 0 else "neutral (the question names no time)"
        return
    run.timed("window", lambda: favour_window(run.out.cands, window, weight))
    run.out.stages["window"] = (f"x{1 + weight:g} for memories of {window.start:%Y-%m-%d} to {window.end:%Y-%m-%d} "
                                f"({window.phrase!r})")


def _recency(run: StageRun) -> None:
    half_life, run.out.stages["recency"] = recency_half_life(run.config, run.query, run.recent_half_life_days)
    if half_life > 0:
        band = run.config.recency_band
        run.timed("recency", lambda: recency_in_band(run.out.cands, half_life, band))
        if band > 0:
            run.out.stages["recency"] += f"; reorders hits within {band:g} x the best score"


def _currentness(run: StageRun) -> None:
    if not run.config.currentness:
        run.out.stages["currentness"] = "off"
        # Facts recall pulled in for their stale evidence matched nothing themselves.
        run.out.cands = [c for c in run.out.cands if c.arms != {PULLED}]
        return
    touched = sum(1 for c in run.out.cands if c.rid in run.links and c.table != "facts")
    if not touched:
        run.out.stages["currentness"] = "on (no turn or summary linked to a current fact)"
        # A fact pulled in for stale evidence that an earlier stage (the floor) dropped has no reason left.
        run.out.cands = [c for c in run.out.cands if c.arms != {PULLED}]
        return
    run.timed("currentness", lambda: yield_to_current(run.out.cands, run.links))
    run.out.stages["currentness"] = f"on ({touched} turns or summaries linked to a current fact)"


def _budget(run: StageRun) -> None:
    budget = run.budget_tokens
    if budget is None:
        run.out.stages["mmr"] = "off (no budget:N)"
        return

    def step() -> list[Candidate]:
        kept, note = budget_select(run.out.cands, budget, run.vectors, diversity=run.config.mmr,
                                   mmr_lambda=run.config.mmr_lambda)
        run.out.notes.append(note)
        run.out.stages["mmr"] = note
        return kept
    run.timed("budget", step)


def _min_score(run: StageRun) -> None:
    floor = run.config.min_score
    if floor > 0:
        before = len(run.out.cands)
        run.timed("min_score", lambda: cut_below(run.out.cands, floor))
        run.out.stages["min_score"] = f"{floor:g}: dropped {before - len(run.out.cands)}"
    else:
        run.out.stages["min_score"] = "off"


# The stages in their fixed order (the module docstring); each records in `stages` what it did.
PIPELINE: tuple[Callable[[StageRun], None], ...] = (
    _dedup, floor_stage, _questions, _session, _context, _replies, _rerank, _collapse, _bonuses, _window, _recency,
    near_misses_stage, _currentness, _budget, _min_score,
)


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
    calibrated: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    links: Mapping[int, Sequence[CurrentLink]] | None = None,
    replies: Mapping[int, int] | None = None,
    context: Mapping[int, float] | None = None,
    now: datetime | None = None,
) -> Shaped:
    """Run the stages in order over authorized, loaded candidates. `query` is the search text (inline
    options removed); `terms` its searchable words; `vectors` maps rid -> stored embedding.
    `calibrated`: the scores come from calibrated fusion (False: reciprocal ranks, a single arm or rrf).
    `links`: rid -> the current fact a turn or summary yields to (ranking/currentness.py).
    `replies`: question rid -> its reply's rid (ranking/replies.py). `context`: turn rid -> its context
    cosine (ranking/context.py). `now`: when the question is asked."""
    # No copy here: each stage copies only the candidates it changes (Candidate.copy).
    run = StageRun(Shaped(cands=ordered(list(cands))), config, query, terms, query_vector, vectors,
               recent_half_life_days, budget_tokens, calibrated, clock, dict(links or {}), dict(replies or {}),
               dict(context or {}), now)
    for stage in PIPELINE:
        stage(run)
    run.timed("tie_break", lambda: ordered(run.out.cands))
    return run.out
