"""The eval's pure parts, from tables: metrics, what a hit counts for, subsets, baseline comparison."""

from __future__ import annotations

import math

import pytest

from recallfs.evals import baseline, metrics, relevance
from recallfs.evals.questions import Question, subset
from recallfs.evals.relevance import HitRef
from recallfs.evals.variants import describe, unsupported_keywords
from recallfs.query.query_syntax import RecallOptions
from recallfs.scope.principal import Principal

# -- metrics ---------------------------------------------------------------------------------------
RANKING = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]


@pytest.mark.parametrize(
    ("relevant", "k", "expected"),
    [
        ({"a"}, 1, 1.0),
        ({"b"}, 1, 0.0),
        ({"e"}, 5, 1.0),
        ({"f"}, 5, 0.0),
        ({"j"}, 10, 1.0),
        ({"k"}, 10, 0.0),
        ({"f", "a"}, 5, 1.0),  # any relevant unit in the top k is a hit
        ({"zz"}, 10, 0.0),
        (set(), 10, 0.0),
    ],
)
def test_recall_at(relevant, k, expected):
    assert metrics.recall_at(RANKING, relevant, k) == expected


@pytest.mark.parametrize(
    ("ranking", "relevant", "expected"),
    [
        (["a", "b"], {"a"}, 1.0),
        (["a", "b"], {"b"}, 0.5),
        (["a", "b", "c", "d"], {"d", "c"}, 1 / 3),  # the first relevant one counts
        (["a", "b"], {"z"}, 0.0),
        ([], {"a"}, 0.0),
    ],
)
def test_reciprocal_rank(ranking, relevant, expected):
    assert metrics.reciprocal_rank(ranking, relevant) == pytest.approx(expected)


def _dcg(ranks):
    return sum(1 / math.log2(r + 1) for r in ranks)


@pytest.mark.parametrize(
    ("ranking", "relevant", "expected"),
    [
        (["a", "b"], {"a"}, 1.0),
        (["x", "a"], {"a"}, _dcg([2]) / _dcg([1])),
        (["a", "x", "b"], {"a", "b"}, _dcg([1, 3]) / _dcg([1, 2])),
        (["x", "y"], {"a"}, 0.0),
        ([], {"a"}, 0.0),
        (["a"], set(), 0.0),
        # more relevant units than 10: the ideal list is cut at 10
        ([f"u{i}" for i in range(10)], {f"u{i}" for i in range(12)}, 1.0),
        # a relevant unit past rank 10 adds nothing
        ([*"xxxxxxxxxx", "a"], {"a"}, 0.0),
    ],
)
def test_ndcg_at_10(ranking, relevant, expected):
    assert metrics.ndcg_at(ranking, relevant, 10) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("hit_units", "expected"),
    [
        ([], []),
        ([["a"], ["b"]], ["a", "b"]),
        ([["a"], ["a"], ["b"]], ["a", "b"]),  # a unit ranks once, at its first hit
        ([[], ["a"]], ["a"]),  # a hit that counts for nothing takes no rank
        ([["a", "b"], ["c"]], ["a", "b", "c"]),  # a fact citing two turns ranks both, in ref order
        ([["b"], ["a", "b"]], ["b", "a"]),
    ],
)
def test_unit_ranking(hit_units, expected):
    assert metrics.unit_ranking(hit_units) == expected


def test_score_and_mean():
    one = metrics.score(["x", "a"], {"a"})
    assert one == {"r@1": 0.0, "r@5": 1.0, "r@10": 1.0, "mrr": 0.5, "ndcg@10": pytest.approx(1 / math.log2(3))}
    two = metrics.score(["a"], {"a"})
    avg = metrics.mean([one, two])
    assert avg["r@1"] == 0.5 and avg["mrr"] == 0.75
    assert metrics.mean([]) == {m: 0.0 for m in metrics.METRICS}


# -- relevance: what a hit counts for --------------------------------------------------------------
TURN_SESSION = {"D1:1": "session_1", "D1:2": "session_1", "D2:1": "session_2", "D3:4": "session_3"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),
        (["D1:1", "D1:1,D1:2"], ["D1:1", "D1:2"]),
        (["", " ; "], []),
    ],
)
def test_split_ids(values, expected):
    assert relevance.split_ids(values) == expected


@pytest.mark.parametrize(
    ("evidence", "turns", "sessions", "dropped"),
    [
        (["D1:1"], ["D1:1"], ["session_1"], []),
        (["D1:1; D2:1", "D1:2"], ["D1:1", "D2:1", "D1:2"], ["session_1", "session_2"], []),
        (["D:11:26", "D1:2"], ["D1:2"], ["session_1"], ["D:11:26"]),
        (["D"], [], [], ["D"]),
        ([], [], [], []),
    ],
)
def test_resolve_evidence(evidence, turns, sessions, dropped):
    assert relevance.resolve_evidence(evidence, TURN_SESSION) == (turns, sessions, dropped)


@pytest.mark.parametrize(
    ("hit", "turn_units", "session_units"),
    [
        (HitRef("turns", "D1:2", "session_1"), ["D1:2"], ["session_1"]),
        # a turn this conversation does not know counts for nothing at turn level
        (HitRef("turns", "X:1", "session_9"), [], ["session_9"]),
        # a fact counts through its provenance, at both levels
        (HitRef("facts", "O2:a:0", "session_2", ("D2:1",)), ["D2:1"], ["session_2"]),
        (HitRef("facts", "O1:a:0", "session_1", ("D1:1", "D3:4")), ["D1:1", "D3:4"], ["session_1", "session_3"]),
        (HitRef("facts", "O1:a:1", "session_1", ("D1:1; D1:2",)), ["D1:1", "D1:2"], ["session_1"]),
        # refs that resolve win over the fact's own session
        (HitRef("facts", "O5:a:0", "session_5", ("D3:4",)), ["D3:4"], ["session_3"]),
        # no resolvable ref: nothing at turn level, its own session at session level
        (HitRef("facts", "O4:a:0", "session_4", ("D:bad",)), [], ["session_4"]),
        (HitRef("facts", "O4:a:1", None, ()), [], []),
        # a summary is never a turn; it counts for its session
        (HitRef("summaries", "S2", "session_2"), [], ["session_2"]),
        (HitRef("summaries", "S9", None), [], []),
    ],
)
def test_hit_units(hit, turn_units, session_units):
    assert relevance.units(hit, "turn", TURN_SESSION) == turn_units
    assert relevance.units(hit, "session", TURN_SESSION) == session_units


def test_unknown_level():
    with pytest.raises(ValueError, match="unknown relevance level"):
        relevance.units(HitRef("turns", "D1:1"), "word", TURN_SESSION)


@pytest.mark.parametrize(
    ("hit", "expected"),
    [
        (HitRef("facts", "fact-016"), ["fact-016"]),
        (HitRef("facts", "fact-001", refs=("s#1", "s#2")), ["fact-001", "s#1", "s#2"]),
        (HitRef("turns", "s#3", "s"), ["s#3"]),
    ],
)
def test_source_units(hit, expected):
    assert relevance.source_units(hit) == expected


# -- subsets ---------------------------------------------------------------------------------------
def _questions(spec):
    """spec: workspace names in file order."""
    counts: dict[str, int] = {}
    out = []
    for ws in spec:
        counts[ws] = counts.get(ws, 0) + 1
        out.append(Question(qid=f"{ws}#{counts[ws] - 1}", principal=Principal("locomo", ws, "eval"), query="q",
                            relevant={}))
    return out


QS = _questions(["a", "a", "b", "a", "b", "b", "a", "b"])


@pytest.mark.parametrize(
    ("every", "limit", "expected"),
    [
        (None, None, ["a#0", "a#1", "b#0", "a#2", "b#1", "b#2", "a#3", "b#3"]),
        (None, 1, ["a#0", "b#0"]),
        (None, 2, ["a#0", "a#1", "b#0", "b#1"]),
        (2, None, ["a#0", "b#0", "a#2", "b#2"]),  # per workspace, starting with the first
        (3, None, ["a#0", "b#0", "a#3", "b#3"]),
        (2, 1, ["a#0", "b#0"]),
        (100, None, ["a#0", "b#0"]),
    ],
)
def test_subset(every, limit, expected):
    assert [q.qid for q in subset(QS, every, limit)] == expected


# -- baseline comparison ---------------------------------------------------------------------------
BASE = {
    "lexical": {
        "turn": {"all_tables": {"r@10": 0.60, "mrr": 0.40}, "summaries": None},
        "session": {"all_tables": {"r@5": 0.80}},
    }
}


@pytest.mark.parametrize(
    ("current", "problems"),
    [
        (BASE, []),
        # within tolerance, exactly at it, and higher are fine
        ({"lexical": {"turn": {"all_tables": {"r@10": 0.597, "mrr": 0.395}}, "session": {"all_tables": {"r@5": 0.9}}}},
         []),
        ({"lexical": {"turn": {"all_tables": {"r@10": 0.59, "mrr": 0.40}}, "session": {"all_tables": {"r@5": 0.8}}}},
         ["lexical turn all_tables r@10"]),
        ({"lexical": {"turn": {"all_tables": {"r@10": 0.60}}, "session": {"all_tables": {"r@5": 0.7}}}},
         ["lexical turn all_tables mrr: missing", "lexical session all_tables r@5"]),
        ({}, ["lexical: no figures now"]),
    ],
)
def test_regressions(current, problems):
    found = baseline.regressions(BASE, current, tolerance=0.005)
    assert len(found) == len(problems)
    for got, want in zip(found, problems, strict=True):
        assert got.startswith(want)


def test_new_figures_are_not_judged():
    current = {**BASE, "semantic": {"turn": {"all_tables": {"r@10": 0.1}}}}
    assert baseline.regressions(BASE, current) == []


@pytest.mark.parametrize(
    ("section", "dataset", "every", "limit", "ablate", "problem"),
    [
        ("ci", "locomo", None, None, False, None),
        ("full", "locomo", None, None, False, None),
        ("demo", "demo", None, None, False, None),
        ("demo", "locomo", None, None, False, "written by --dataset demo"),
        ("ci", "demo", None, None, False, "written by --dataset locomo"),
        ("ci", "locomo", None, 5, False, "leave out --limit"),
        ("ci", "locomo", 3, None, False, "leave out --limit"),
        ("full", "locomo", None, None, True, "not an ablation"),
        ("nope", "locomo", None, None, False, "unknown baseline section"),
    ],
)
def test_section_problem(section, dataset, every, limit, ablate, problem):
    got = baseline.section_problem(section, dataset, every, limit, ablate)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got


def test_write_section_keeps_other_sections(tmp_path):
    path = tmp_path / "baseline.json"
    report = {"questions": 3, "subset": {"every": 10, "limit_per_workspace": None},
              "arms": {"lexical": {"available": True, "turn": {"all_tables": {"r@1": 0.5}}, "session": {}},
                       "semantic": {"available": False, "reason": "not built"}}}
    baseline.write_section("ci", report, path)
    baseline.write_section("full", {**report, "questions": 30}, path)
    data = baseline.load(path)
    assert data["ci"]["questions"] == 3 and data["full"]["questions"] == 30
    assert data["ci"]["arms"] == {"lexical": {"turn": {"all_tables": {"r@1": 0.5}}, "session": {}}}
    assert data["ci"]["unavailable"] == {"semantic": "not built"}
    assert data["tolerance"] == baseline.TOLERANCE


# -- variants --------------------------------------------------------------------------------------
def _recall_like(store, principal, query, *, k=10, arm="fused", collapse=True):
    return None


def _takes_anything(store, **kwargs):
    return None


@pytest.mark.parametrize(
    ("variant", "fn", "missing"),
    [
        ({"arm": "lexical"}, _recall_like, []),
        ({"arm": "fused", "collapse": False}, _recall_like, []),
        ({"arm": "fused", "rerank": True, "budget": 5}, _recall_like, ["budget", "rerank"]),
        ({"rerank": True}, _takes_anything, []),
    ],
)
def test_unsupported_keywords(variant, fn, missing):
    assert unsupported_keywords(variant, fn) == missing


def test_describe_variant_is_json_safe():
    assert describe({"arm": "fused", "options": RecallOptions(budget=512)}) == {
        "arm": "fused", "options": {"budget": 512}}


@pytest.mark.parametrize("arms, expected", [
    (["lexical", "semantic", "fused"], ["lexical", "semantic", "fused"]),
    (["lexical", "fused", "plain_bm25", "plain_cosine", "plain_rrf"], ["lexical", "fused", "plain"]),
    (["plain_bm25"], ["plain"]),
])
def test_harness_arms_of_a_section(arms, expected):
    assert baseline.harness_arms(arms) == expected
