"""The cross-set summary table (evals/summary.py) from small synthetic reports."""

from __future__ import annotations

import pytest

from recallfs.evals import summary


def _figs(value: float) -> dict:
    return {"all_tables": {m: value for m in ("r@1", "r@5", "r@10", "mrr", "ndcg@10")}}


def _report(level: str, **arms: float | None) -> dict:
    out = {name: ({"available": True, level: _figs(v)} if v is not None else {"available": False, "reason": "off"})
           for name, v in arms.items()}
    return {"questions": 7, "arms": out}


@pytest.mark.parametrize("arms, bold, absent", [
    # below its counterpart by more than 0.005: bold
    ({"lexical": 0.5, "plain_bm25": 0.6}, ["lexical arm"], []),
    # within 0.005, or above: plain
    ({"lexical": 0.596, "plain_bm25": 0.6, "semantic": 0.9, "plain_cosine": 0.8}, [], []),
    # the default pipeline against plain RRF
    ({"fused": 0.7, "plain_rrf": 0.71}, ["**default pipeline**"], []),
    # an unavailable counterpart bolds nothing; an unavailable ranker has no row
    ({"semantic": 0.1, "plain_cosine": None}, [], ["plain cosine"]),
])
def test_rows_bold_what_is_below_its_plain_counterpart(arms, bold, absent):
    rows = summary.rows_of("set", _report("memory", **arms))
    assert len(rows) == sum(v is not None for v in arms.values())
    for row in rows:
        ranker = row.split(" | ")[1]
        assert ("**0." in row) == (ranker in bold), row
        assert ranker not in absent


def test_table_orders_levels_and_skips_unavailable_sets():
    report = {"questions": 3, "arms": {"lexical": {"available": True, **{"session": _figs(0.5), "turn": _figs(0.4)}}}}
    text = summary.table({"a": report, "b": {"available": False, "reason": "no data"}})
    lines = text.splitlines()
    assert lines[0].startswith("| set (unit, questions) | ranker | R@1")
    assert lines[2] == "| a (turn, 3) | lexical arm | 0.400 | 0.400 | 0.400 | 0.400 | 0.400 |"
    assert lines[3].startswith("| a (session, 3) | lexical arm | 0.500")
    assert len(lines) == 4
