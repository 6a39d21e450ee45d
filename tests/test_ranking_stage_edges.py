"""Every stage on the three edge lists the issue names: empty input, a single candidate, and a tie.

One table, so a stage cannot be added without its edges: each row is a stage as a function from a
candidate list to a candidate list. A tie is two candidates with equal scores, different content and
orthogonal embeddings, one a day newer: every stage must put the newer first, whatever the input order.
The stages' own behaviour is in test_ranking_stages.py, _budget.py, _recency.py and _fusion.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.bonuses import metadata_bonus
from recallfs.ranking.budget import budget_select
from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.collapse import collapse_near_duplicates
from recallfs.ranking.cutoff import cut_below
from recallfs.ranking.dedup import dedup_identity
from recallfs.ranking.fusion import calibrated, rrf
from recallfs.ranking.pipeline import StageConfig, shape
from recallfs.ranking.questions import demote_questions
from recallfs.ranking.recency import dampen_recency
from recallfs.ranking.rerank import rerank
from recallfs.ranking.session_evidence import session_evidence

QUERY_VEC = [1.0, 1.0, 0.0]
# orthogonal to each other, and equally close to the query: no stage may tell the two apart by vector
VECTORS = {1: [1.0, 0.0, 0.0], 2: [0.0, 1.0, 0.0]}

Stage = Callable[[list[Candidate]], list[Candidate]]
STAGES: dict[str, Stage] = {
    "dedup": dedup_identity,
    "question turns": demote_questions,
    "session evidence": session_evidence,
    "rerank": lambda cs: rerank(cs, QUERY_VEC, VECTORS, mix=0.5)[0],
    "collapse": lambda cs: collapse_near_duplicates(cs, VECTORS)[0],
    "collapse (no vectors)": lambda cs: collapse_near_duplicates(cs, None)[0],
    "bonuses": lambda cs: metadata_bonus(cs, "ci notes", tag_bonus=0.5, kind_bonus=0.5),
    "recency": lambda cs: dampen_recency(cs, 90.0),
    "budget + MMR": lambda cs: budget_select(cs, 1000, VECTORS, diversity=True)[0],
    "budget, no MMR": lambda cs: budget_select(cs, 1000, None, diversity=False)[0],
    "min_score": lambda cs: cut_below(cs, 0.1),
    "tie-break": ordered,
    "every stage on": lambda cs: shape(cs, StageConfig(rerank=True, recency="on", tag_bonus=0.5, kind_bonus=0.5,
                                                        min_score=0.1), query="ci notes", query_vector=QUERY_VEC,
                                       vectors=VECTORS, budget_tokens=1000).cands,
    "every stage off": lambda cs: shape(cs, StageConfig(dedup=False, collapse=False, recency="off"),
                                        query="ci notes").cands,
}


def tie() -> list[Candidate]:
    # same score and table, same tag (so bonuses lift both alike), different words, one day apart
    return [cand(1, 0.5, "facts", day=0, content="the cache lives in target", tags=("ci",)),
            cand(2, 0.5, "facts", day=1, content="deploys go out on fridays", tags=("ci",))]


@pytest.mark.parametrize("name", STAGES)
def test_empty_input_gives_empty_output(name):
    assert STAGES[name]([]) == []


@pytest.mark.parametrize("name", STAGES)
def test_single_candidate_survives_alone(name):
    one = cand(7, 0.6, "facts", content="the only memory", tags=("ci",))
    out = STAGES[name]([one])
    assert rids(out) == [7]
    assert one.score == 0.6 and one.merged == []  # the input is never changed


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", STAGES)
def test_a_tie_goes_to_the_newer_in_any_input_order(name, reverse):
    pair = tie()[::-1] if reverse else tie()
    out = STAGES[name](pair)
    assert rids(out) == [2, 1]
    assert [c.score for c in pair] == [0.5, 0.5]


@pytest.mark.parametrize(("lists", "expected"), [
    ({}, []),                                                   # empty: no lists at all
    ({"lexical:turns": [], "semantic:turns": []}, []),          # empty lists
    ({"lexical:turns": [5]}, [5]),                              # single candidate
    ({"lexical:turns": [1], "semantic:turns": [2]}, [1, 2]),    # tie, no dates yet: by id, then rid
    ({"lexical:turns": [2], "semantic:turns": [1]}, [1, 2]),    # ... whichever list holds which
])
def test_fusion_edges(lists, expected):
    tables = {rid: "turns" for rids_ in lists.values() for rid in rids_}
    fused = rrf(lists, tables, weights={})
    assert rids(fused) == expected
    if len(fused) == 2:
        assert fused[0].score == fused[1].score
    # calibrated fusion on the same lists, every listed row scoring the same
    scores = {name: dict.fromkeys(ids, 0.5) for name, ids in lists.items()}
    fused = calibrated(scores, tables, weights={})
    assert rids(fused) == expected
    if len(fused) == 2:
        assert fused[0].score == fused[1].score
