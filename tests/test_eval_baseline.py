"""The committed LoCoMo baseline holds: the CI subset, re-run, lowers no figure beyond the tolerance.

Refresh after a deliberate change with `recallfs eval --dataset locomo --write-baseline ci` and say
why in the commit. LoCoMo is eval-only data (CC BY-NC) that is not shipped: without it this skips.
"""

from __future__ import annotations

import pytest

from recallfs.evals import baseline, harness

from conftest import LOCOMO

pytestmark = [
    pytest.mark.locomo,
    pytest.mark.slow,
    pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not present at {LOCOMO} (eval-only data)"),
]


@pytest.fixture(scope="module")
def ci_run():
    committed = baseline.load()
    assert "ci" in committed, "evals/baseline.json has no ci section: run recallfs eval --write-baseline ci"
    ci = committed["ci"]
    report = harness.evaluate("locomo", data=LOCOMO, every=ci["subset"]["every"],
                              limit=ci["subset"]["limit_per_workspace"], arms=list(ci["arms"]))
    return committed, report


def test_ci_subset_keeps_the_baseline(ci_run):
    committed, report = ci_run
    ci = committed["ci"]
    assert report["questions"] == ci["questions"], "the CI subset changed size: refresh the baseline"
    current = baseline.figures(report)
    problems = baseline.regressions(ci["arms"], current["arms"], committed.get("tolerance", baseline.TOLERANCE))
    reasons = {arm: res.get("reason") for arm, res in report["arms"].items() if not res.get("available")}
    assert not problems, "recall quality dropped below evals/baseline.json:\n" + "\n".join(problems) + (
        f"\nunavailable arms: {reasons}" if reasons else "")


@pytest.mark.parametrize("metric", ["r@10", "ndcg@10"])
def test_the_pipeline_beats_the_best_single_arm(ci_run, metric):
    # Fusion must beat the best single arm (the README's Ranking section): the default pipeline is at
    # least as good as either arm.
    _, report = ci_run
    figures = {arm: report["arms"][arm]["turn"]["all_tables"][metric] for arm in ("lexical", "semantic", "fused")}
    assert figures["fused"] >= max(figures["lexical"], figures["semantic"]), figures
