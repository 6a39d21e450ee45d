"""The committed baselines hold: LoCoMo's CI subset and the memory_dev sets' (RealMem's first persona,
all of MADial-Bench and MT-Bench+), re-run, lower no figure beyond the tolerance, the plain reference's
rows included.

Refresh after a deliberate change with `recallfs eval --dataset locomo --write-baseline ci` (or
`--dataset realmem --write-baseline realmem_ci`, `--dataset madial --write-baseline madial`,
`--dataset mtbenchplus --write-baseline mtbenchplus`) and say why in the commit. The data is eval-only
and not shipped: without it a test skips and says which file is missing.
"""

from __future__ import annotations

import pytest

from recallfs.evals import baseline, devsets, harness

from conftest import LOCOMO

pytestmark = [pytest.mark.slow]
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not present at {LOCOMO} (eval-only data)")


@pytest.fixture(scope="module")
def ci_run():
    committed = baseline.load()
    assert "ci" in committed, "evals/baseline.json has no ci section: run recallfs eval --write-baseline ci"
    ci = committed["ci"]
    report = harness.evaluate("locomo", data=LOCOMO, every=ci["subset"]["every"],
                              limit=ci["subset"]["limit_per_workspace"],
                              arms=baseline.harness_arms(list(ci["arms"])))
    return committed, report


@pytest.mark.locomo
@needs_locomo
def test_ci_subset_keeps_the_baseline(ci_run):
    committed, report = ci_run
    ci = committed["ci"]
    assert report["questions"] == ci["questions"], "the CI subset changed size: refresh the baseline"
    current = baseline.figures(report)
    problems = baseline.regressions(ci["arms"], current["arms"], committed.get("tolerance", baseline.TOLERANCE))
    reasons = {arm: res.get("reason") for arm, res in report["arms"].items() if not res.get("available")}
    assert not problems, "recall quality dropped below evals/baseline.json:\n" + "\n".join(problems) + (
        f"\nunavailable arms: {reasons}" if reasons else "")


@pytest.mark.locomo
@needs_locomo
@pytest.mark.parametrize("metric", ["r@10", "ndcg@10"])
def test_the_pipeline_beats_the_best_single_arm(ci_run, metric):
    # Fusion must beat the best single arm (the README's Ranking section): the default pipeline is at
    # least as good as either arm.
    _, report = ci_run
    figures = {arm: report["arms"][arm]["turn"]["all_tables"][metric] for arm in ("lexical", "semantic", "fused")}
    assert figures["fused"] >= max(figures["lexical"], figures["semantic"]), figures


# -- the memory_dev sets (../shared/data/memory_dev/): each section's subset re-run, like the ci one --------
DEV_SECTIONS = ("realmem_ci", "madial", "mtbenchplus")


def _dev_missing(section: str) -> str | None:
    dataset = baseline.SECTION_DATASET[section]
    files = devsets.data_files(dataset)[: baseline.SECTION_SUBSET.get(section, {}).get("personas")]
    gone = [str(p) for p in files if not p.exists()] if files else [str(devsets.DEV / dataset)]
    return f"{dataset} data not present ({', '.join(gone)}; eval-only data, CI has it)" if gone else None


@pytest.fixture(scope="module", params=DEV_SECTIONS)
def dev_run(request):
    section = request.param
    missing = _dev_missing(section)
    if missing:
        pytest.skip(missing)
    committed = baseline.load()
    assert section in committed, f"evals/baseline.json has no {section} section: run recallfs eval --write-baseline"
    subset = baseline.SECTION_SUBSET.get(section, {})
    report = harness.evaluate(baseline.SECTION_DATASET[section], every=subset.get("every"),
                              personas=subset.get("personas"),
                              arms=baseline.harness_arms(list(committed[section]["arms"])))
    return section, committed, report


def test_dev_set_keeps_the_baseline(dev_run):
    section, committed, report = dev_run
    base = committed[section]
    assert report["questions"] == base["questions"], f"the {section} subset changed size: refresh the baseline"
    current = baseline.figures(report)
    problems = baseline.regressions(base["arms"], current["arms"], committed.get("tolerance", baseline.TOLERANCE))
    reasons = {arm: res.get("reason") for arm, res in report["arms"].items() if not res.get("available")}
    assert not problems, f"{section}: recall quality dropped below evals/baseline.json:\n" + "\n".join(problems) + (
        f"\nunavailable arms: {reasons}" if reasons else "")
