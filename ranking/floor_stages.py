"""The relevance floor and its near-misses as pipeline stages (ranking/pipeline.py): the floor holds
back what falls below it, but for the rows a later stage lifts for a hit; the near-misses stage puts
the rest after the shaped hits. The rules themselves are ranking/floor.py's pure functions."""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate
from recallfs.ranking.currentness import EVIDENCE
from recallfs.ranking.floor import below, promote, split_at_floor
from recallfs.ranking.stage_run import StageRun


def floor_stage(run: StageRun) -> None:
    floor, cosine = run.config.relevance_floor, run.config.floor_cosine
    if floor <= 0 and cosine <= 0:
        run.out.stages["floor"] = "off"
        return
    before = len(run.out.cands)

    def step() -> list[Candidate]:
        passing, near = split_at_floor(run.out.cands, floor, cosine)
        passing, run.near_misses = promote(passing, near, _lifted_later(run, passing))
        return passing
    run.timed("floor", step)
    below = before - len(run.out.cands)
    what = (f"{below} of {before} below it follow the hits" if run.config.near_misses and run.near_misses
            else f"dropped {below} of {before}")
    run.out.stages["floor"] = f"relevance {floor:g}, semantic-only cosine {cosine:g}: {what}"


def _lifted_later(run: StageRun, passing: list[Candidate]) -> set[int]:
    """The rows a later stage lifts for these candidates: their replies, the current facts they are
    stale evidence of."""
    rids = {c.rid for c in passing}
    wanted = {reply for asked, reply in run.replies.items() if asked in rids}
    wanted.update(link.current_rid for rid in rids for link in run.links.get(rid, ())
                  if link.link == EVIDENCE and link.current_rid is not None)
    return wanted


def near_misses_stage(run: StageRun) -> None:
    """Below the floor, once some hit passed it: they follow the shaped hits, in their fused order. The
    stages between do not see them: a near-miss is no evidence for a session, a reply or a context."""
    if not run.config.near_misses:
        run.near_misses = []
        run.out.stages["near_misses"] = "off"
        return
    count = len(run.near_misses)
    if count:
        run.timed("near_misses", lambda: below(run.out.cands, run.near_misses))
    run.out.stages["near_misses"] = f"on ({count} follow the hits)"
