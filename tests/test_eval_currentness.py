"""The currentness eval set (evals/currentness_data.py): shipped as generated, scored, and guarded.

Refresh the baseline with `recallfs eval --dataset currentness --write-baseline currentness`.
"""

from __future__ import annotations

import json

import pytest

from recallfs.evals import baseline, currentness_data, datasets, harness, metrics


def test_the_committed_files_are_the_generators_output():
    records, questions = currentness_data.build()
    lines = datasets.CURRENTNESS_MEMORY.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert json.loads(datasets.CURRENTNESS_QUERIES.read_text(encoding="utf-8")) == questions
    assert currentness_data.build() == (records, questions)  # deterministic


def test_the_set_covers_what_the_issue_asks():
    records, questions = currentness_data.build()
    assert len(questions) >= 40
    table = {r["source_id"]: r["type"] for r in records}
    stale_tables = {table[s] for q in questions for s in q["stale"]}
    assert stale_tables == {"fact", "turn", "summary"}
    assert {q["mechanism"] for q in questions} == set(currentness_data.MECHANISMS)
    assert {q["changes"] for q in questions} == {1, 2}
    assert any(not q["refs"] for q in questions)
    assert len({q["query"] for q in questions}) == len(questions)
    for q in questions:
        assert q["current"] and q["stale"] and not set(q["current"]) & set(q["stale"])
        assert all(s in table for s in q["current"] + q["stale"])


@pytest.mark.parametrize(("hits", "current1", "stale_above"), [
    (["c", "s"], 1.0, 0.0),
    (["s", "c"], 0.0, 1.0),
    (["x", "c", "s"], 0.0, 0.0),   # an unrelated first hit: not current, and nothing stale above
    (["x", "s"], 0.0, 1.0),        # stale with no current at all counts
    ([], 0.0, 0.0),
    (["x"], 0.0, 0.0),
])
def test_currentness_metrics(hits, current1, stale_above):
    assert metrics.currentness(hits, {"c"}, {"s"}) == {"current@1": current1, "stale_above_current": stale_above}


def test_a_rise_of_a_lower_is_better_figure_is_a_regression():
    base = {"fused": {"currentness": {"all_tables": {"current@1": 1.0, "stale_above_current": 0.0}}}}
    worse = {"fused": {"currentness": {"all_tables": {"current@1": 1.0, "stale_above_current": 0.1}}}}
    better = {"fused": {"currentness": {"all_tables": {"current@1": 1.0, "stale_above_current": 0.0}}}}
    assert baseline.regressions(base, worse) == ["fused currentness all_tables stale_above_current: 0.1000 > "
                                                 "baseline 0.0000 + 0.005"]
    assert baseline.regressions(base, better) == []


@pytest.fixture(scope="module")
def report():
    return harness.evaluate("currentness", arms=["lexical", "fused"])


def test_the_default_pipeline_tells_the_current_truth(report):
    figures = report["arms"]["fused"]["currentness"]["all_tables"]
    assert report["questions"] == report["evidence"]["queries"] >= 40
    assert figures["current@1"] >= 0.95 and figures["stale_above_current"] <= 0.05, figures


def test_the_currentness_set_keeps_the_baseline(report):
    committed = baseline.load()
    assert "currentness" in committed, "evals/baseline.json has no currentness section: run recallfs eval " \
        "--dataset currentness --write-baseline currentness"
    section = committed["currentness"]
    arms = {arm: figs for arm, figs in section["arms"].items() if arm in report["arms"]}
    problems = baseline.regressions(arms, baseline.figures(report)["arms"],
                                    committed.get("tolerance", baseline.TOLERANCE))
    assert not problems, "currentness figures fell below evals/baseline.json:\n" + "\n".join(problems)
