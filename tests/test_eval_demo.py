"""The bundled demo sample's hand-written queries (query/data/demo_queries.json) keep their quality.

Runs everywhere (no LoCoMo needed): the figures must not drop below the `demo` section of
evals/baseline.json; refresh it with `recallfs eval --dataset demo --write-baseline demo`.
"""

from __future__ import annotations

import pytest

from recallfs.evals import baseline, datasets, harness

pytestmark = pytest.mark.skipif(
    not (datasets.DEMO_MEMORY.exists() and datasets.DEMO_QUERIES.exists()),
    reason=f"the demo sample is not written yet ({datasets.DEMO_MEMORY.name}, {datasets.DEMO_QUERIES.name})",
)


def test_every_demo_query_is_scored():
    report = harness.evaluate("demo", arms=["lexical"])
    ev = report["evidence"]
    assert ev["dropped_ids"] == [], "demo_queries.json names source ids the demo store does not hold"
    assert report["questions"] == ev["queries"] > 0


def test_demo_queries_keep_the_baseline():
    committed = baseline.load()
    assert "demo" in committed, "evals/baseline.json has no demo section: run recallfs eval --dataset demo " \
        "--write-baseline demo"
    demo = committed["demo"]
    report = harness.evaluate("demo", arms=baseline.harness_arms(list(demo["arms"])))
    problems = baseline.regressions(demo["arms"], baseline.figures(report)["arms"],
                                    committed.get("tolerance", baseline.TOLERANCE))
    assert not problems, "demo recall quality dropped below evals/baseline.json:\n" + "\n".join(problems)
