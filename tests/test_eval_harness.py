"""The harness end to end on a tiny LoCoMo-shaped conversation written for this test: a real store,
the real recall(), the real `recallfs eval` console script. No LoCoMo data needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallfs.evals import harness, report_markdown
from recallfs.evals.variants import ARM_VARIANTS

from conftest import run_cli

SAMPLE = [{
    "sample_id": "conv-t1",
    "conversation": {
        "speaker_a": "Ines", "speaker_b": "Olek",
        "session_1_date_time": "10:00 am on 3 March, 2024",
        "session_1": [
            {"speaker": "Ines", "dia_id": "D1:1", "text": "I finally repaired the old sailboat hull this weekend."},
            {"speaker": "Olek", "dia_id": "D1:2", "text": "Nice. I started learning the accordion at a music school."},
            {"speaker": "Ines", "dia_id": "D1:3", "text": "My sister is visiting from Lisbon next month."},
        ],
        "session_2_date_time": "4:30 pm on 20 April, 2024",
        "session_2": [
            {"speaker": "Olek", "dia_id": "D2:1", "text": "The accordion recital went well, people clapped a lot."},
            {"speaker": "Ines", "dia_id": "D2:2", "text": "We took the sailboat out to the lighthouse on Sunday.",
             "blip_caption": "a photo of a small sailboat near a lighthouse"},
            {"speaker": "Olek", "dia_id": "D2:3", "text": "I adopted a grey greyhound called Pixel."},
        ],
    },
    "session_summary": {
        "session_1_summary": "Ines repaired a sailboat hull; Olek began accordion lessons; a sister visits.",
        "session_2_summary": "Olek played an accordion recital; Ines sailed to the lighthouse; Olek adopted a dog.",
    },
    "observation": {
        "session_1_observation": {"Ines": [["Ines repaired the hull of her old sailboat.", "D1:1"]]},
        "session_2_observation": {"Olek": [["Olek adopted a greyhound named Pixel.", "D2:3"]]},
    },
    "event_summary": {},
    "qa": [
        {"question": "What did Ines repair on the sailboat?", "answer": "the hull", "evidence": ["D1:1"],
         "category": 1},
        {"question": "Which instrument was played at the recital?", "answer": "accordion",
         "evidence": ["D1:2; D2:1"], "category": 1},
        {"question": "What is the name of the greyhound Olek adopted?", "answer": "Pixel",
         "evidence": ["D2:3", "D9:99"], "category": 2},
        {"question": "Where is the sister visiting from?", "answer": "Lisbon", "evidence": ["D:1:3"], "category": 2},
        {"question": "What colour is the sky?", "answer": "blue", "category": 5},
    ],
}]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "mini-locomo.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    return path


@pytest.fixture
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Semantic arm off for this test (ingest embeds nothing, no model loads): it tests the harness."""
    monkeypatch.setenv("RECALLFS_SEMANTIC", "false")
    return {"RECALLFS_SEMANTIC": "false"}


def test_lexical_eval_on_a_known_conversation(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    report = harness.evaluate("locomo", data=sample, store=tmp_path / "eval.duckdb", arms=["lexical"])
    ev = report["evidence"]
    assert ev["qa_items"] == 5 and ev["without_evidence"] == 1
    # "D:1:3" names no turn: that question has no evidence left and is not scored
    assert ev["evidence_unresolvable"] == 1
    assert ev["dropped_ids"] == ["conv-t1#2:D9:99", "conv-t1#3:D:1:3"]
    assert report["questions"] == ev["scored"] == 3
    lex = report["arms"]["lexical"]
    assert lex["available"] and lex["degraded_queries"] == {}
    # Each question's words sit in its evidence turn (and in the fact citing it): all found at rank 1.
    for level in ("turn", "session"):
        assert lex[level]["all_tables"]["r@1"] == 1.0, (level, lex[level])
        assert lex[level]["all_tables"]["mrr"] == 1.0
    assert lex["turn"]["summaries"] is None  # a summary never counts at turn level
    assert lex["session"]["summaries"]["r@10"] == 1.0
    assert set(lex["by_category"]) == {"1", "2"}


def test_second_run_reuses_the_store(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    store = tmp_path / "eval.duckdb"
    first = harness.evaluate("locomo", data=sample, store=store, arms=["lexical"])
    second = harness.evaluate("locomo", data=sample, store=store, arms=["lexical"])
    assert first["store_action"] == "built" and second["store_action"] == "reused"
    assert first["arms"] == {"lexical": {**second["arms"]["lexical"], "seconds": first["arms"]["lexical"]["seconds"],
                                         "ms_per_query": first["arms"]["lexical"]["ms_per_query"]}}


def test_unavailable_semantic_arm_is_reported_not_fatal(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    # RECALLFS_SEMANTIC=false: the arm reports degraded "off", as it does without a model
    report = harness.evaluate("locomo", data=sample, store=tmp_path / "eval.duckdb")
    assert list(report["arms"]) == [*ARM_VARIANTS, "plain_bm25", "plain_cosine", "plain_rrf"]
    assert report["arms"]["lexical"]["available"] and report["arms"]["plain_bm25"]["available"]
    for arm in ("semantic", "fused", "plain_cosine", "plain_rrf"):
        assert report["arms"][arm]["available"] is False
        assert "'off'" in report["arms"][arm]["reason"] or "not built" in report["arms"][arm]["reason"]


def test_ablation_rows_and_skips(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    variants = {
        "lexical": {"arm": "lexical"},
        "semantic": {"arm": "semantic"},
        "a toggle recall() lacks": {"arm": "lexical", "no_such_stage": False},
    }
    report = harness.evaluate("locomo", data=sample, store=tmp_path / "eval.duckdb", ablation=variants,
                              probe_semantic=False)
    rows = report["ablation"]["rows"]
    assert [r["variant"] for r in rows] == ["lexical"]
    assert set(rows[0]["turn"]) == {"r@5", "r@10", "mrr", "ndcg@10"}
    skipped = {s["variant"]: s["reason"] for s in report["ablation"]["skipped"]}
    assert "no_such_stage" in skipped["a toggle recall() lacks"]
    assert "semantic" in skipped


def test_cli_prints_json(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    proc = run_cli("eval", "--dataset", "locomo", "--data", str(sample), "--store", str(tmp_path / "s.duckdb"),
                   "--arm", "lexical", "--limit", "2", env=lexical_only)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["questions"] == 2 and report["subset"] == {"every": None, "limit_per_workspace": 2}
    assert report["arms"]["lexical"]["turn"]["all_tables"]["r@1"] == 1.0


def test_cli_markdown(sample: Path, tmp_path: Path, lexical_only: dict[str, str]):
    proc = run_cli("eval", "--data", str(sample), "--store", str(tmp_path / "s.duckdb"), "--arm", "lexical",
                   "--format", "markdown", env=lexical_only)
    assert proc.returncode == 0, proc.stderr
    assert "| turn | all_tables | 1.000 |" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "/nonexistent/locomo10.json"], "LoCoMo data not found at /nonexistent/locomo10.json"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--write-baseline", "ci", "--limit", "3"], "leave out --limit"),
        (["--write-baseline", "demo"], "written by --dataset demo"),
    ],
)
def test_cli_errors(args: list[str], message: str, tmp_path: Path, lexical_only: dict[str, str]):
    proc = run_cli("eval", "--dataset", "locomo", "--store", str(tmp_path / "s.duckdb"), *args, env=lexical_only)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert proc.stdout == ""


def test_prune_cache_keeps_the_newest(tmp_path: Path):
    import os

    from recallfs.evals.store_cache import prune_cache

    for age, name in enumerate(["locomo-a", "locomo-b", "locomo-c", "locomo-d", "demo-a"]):
        path = tmp_path / f"{name}.duckdb"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))  # a is the newest
    (tmp_path / "locomo-d.duckdb.faiss").mkdir()
    gone = prune_cache("locomo", keep=2, folder=tmp_path)
    assert sorted(p.name for p in gone) == ["locomo-c.duckdb", "locomo-d.duckdb"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo-a.duckdb", "locomo-a.duckdb", "locomo-b.duckdb"]


def test_prune_cache_removes_what_killed_builds_left(tmp_path: Path):
    """A build killed mid-way (SIGTERM runs no finally) leaves `.<store>.building-<pid>` and its WAL;
    the next prune deletes them, of any data set, but never those of a process still running."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from recallfs.evals.store_cache import prune_cache

    code = ("import sys, time; from pathlib import Path; from recallfs.evals.store_cache import build_store; "
            "build_store(Path(sys.argv[1]), lambda: time.sleep(60) or [])")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "realmem-k.duckdb")])
    building = tmp_path / f".realmem-k.duckdb.building-{child.pid}"
    for _ in range(600):  # until the child has created its store
        if building.exists():
            break
        child.poll()
        assert child.returncode is None
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=30)
    assert building.exists()  # what a killed build leaves
    (tmp_path / f"{building.name}.wal").write_bytes(b"wal")
    mine = tmp_path / f".locomo-x.duckdb.building-{os.getpid()}"
    mine.write_bytes(b"x")  # a build in progress: this process is alive
    (tmp_path / "locomo-a.duckdb").write_bytes(b"x")
    prune_cache("locomo", keep=2, folder=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, "locomo-a.duckdb"]


def test_store_key_follows_data_and_settings(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from recallfs.evals.store_cache import store_key

    first = store_key([sample])
    assert store_key([sample]) == first
    monkeypatch.setenv("RECALLFS_MODEL", "/some/other/model")
    assert store_key([sample]) != first
    monkeypatch.delenv("RECALLFS_MODEL")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(SAMPLE[:0]), encoding="utf-8")
    assert store_key([other]) != first


def test_the_read_path_modules_left_out_of_the_key_exist():
    """A renamed module would silently join the key again (and rebuild every store on each edit)."""
    from recallfs.evals.store_cache import READ_PATH_MODULES, REPO

    assert [m for m in sorted(READ_PATH_MODULES) if not (REPO / m).is_file()] == []


@pytest.mark.slow
def test_semantic_and_fused_arms_run_when_the_arm_is_there(sample: Path, tmp_path: Path):
    pytest.importorskip("recallfs.query.semantic", reason="the semantic arm is not built")
    report = harness.evaluate("locomo", data=sample, store=tmp_path / "eval.duckdb", arms=["semantic", "fused"])
    for arm in ("semantic", "fused"):
        res = report["arms"][arm]
        assert res["available"], res
        assert res["degraded_queries"] == {}, res["degraded_queries"]
        assert res["session"]["all_tables"]["r@10"] > 0


def test_markdown_of_an_ablation():
    figs = {"r@5": 0.5, "r@10": 0.75, "mrr": 0.4, "ndcg@10": 0.45}
    report = {"ablation": {"rows": [{"variant": "default pipeline", "turn": figs, "session": figs}],
                           "skipped": [{"variant": "rerank on", "reason": "recall() has no rerank toggle yet"}]}}
    text = report_markdown.markdown(report)
    assert "| variant | turn R@5 | turn R@10 | turn MRR | turn nDCG@10 | session R@5 |" in text
    assert "| default pipeline | 0.500 | 0.750 | 0.400 | 0.450 | 0.500 | 0.750 | 0.400 | 0.450 |" in text
    assert "skipped: rerank on: recall() has no rerank toggle yet" in text


def test_every_ablation_row_measures_something_other_than_the_default():
    """A row whose keywords amount to the default pipeline measures it twice and reads as "no effect"
    (the session-evidence rows did, once the default weight moved onto one of their fixed values)."""
    from recallfs.evals.variants import ablations
    from recallfs.ranking.stage_config import StageConfig

    def canonical(variant: dict[str, object]) -> tuple[object, ...]:
        return (variant.get("arm", "fused"), variant.get("fusion"), repr(variant.get("weights")),
                variant.get("stages", StageConfig()), repr(variant.get("options")))

    rows = ablations()
    default = canonical(rows["default pipeline"])
    same = [name for name, variant in rows.items() if name != "default pipeline" and canonical(variant) == default]
    assert same == []
    assert len({canonical(v) for v in rows.values()}) == len(rows)  # nor do two rows measure one thing
