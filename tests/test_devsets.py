"""The memory_dev adapters (evals/devsets.py) on tiny sets written by the test in the upstream layout,
their units, and the harness end to end on them (a real store, the real recall(), the real console
script, the plain reference beside the arms). No memory_dev data needed."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from recallfs.evals import devset_eval, devsets, eval_command, harness, metrics, questions, report_markdown
from recallfs.evals.relevance import HitRef
from recallfs.scope.principal import Principal

from conftest import run_cli


def _session(uuid: str, day: str, turns: list[dict]) -> dict:
    return {"session_identifier": f"topic {uuid}", "session_uuid": uuid, "current_time": f"{day} (Monday)",
            "dialogue_turns": turns, "extracted_memory": []}


def _user(text: str, *, query: bool = False) -> dict:
    return {"speaker": "User", "content": text, "is_query": query, "query_id": "q" if query else None}


def _assistant(text: str, gold: list[str] | None = None) -> dict:
    return {"speaker": "Assistant", "content": text, "memory_session_uuids": gold or []}


REALMEM = [
    _session("s-lisbon", "2025-03-01", [_user("I am moving to Lisbon in June for a new job at a bakery."),
                                       _assistant("Congratulations on the bakery job in Lisbon!")]),
    # The same day as the first: "before the query's session" is file order, not the date.
    _session("s-cat", "2025-03-01", [_user("My cat Miso hates the vet, any tips for the carrier?"),
                                    _assistant("Leave the carrier open at home for a few days.")]),
    _session("s-filler", "2025-03-02", [_user("What is the boiling point of water?"), _assistant("100 C.")]),
    # Listed after later dates: still after them in file order.
    _session("s-ask", "2025-02-20", [_user("Where am I moving, and what about my cat at the vet?", query=True),
                                    _assistant("To Lisbon; and Miso...", gold=["s-lisbon", "s-cat"]),
                                    _user("thanks"), _assistant("You are welcome.")]),
]

MADIAL_MEMORY = [
    {"1": {"time": "2023-12-25", "scene": "Activity", "emotion": "Happy",
           "event": "Bart danced at the Christmas party and felt very happy."}},
    {"2": {"time": "2023-05-15", "scene": "Preferences", "emotion": "Calm", "event": "Lisa likes quiet libraries."}},
    {"3": {"time": "2023-06-01", "scene": "Activity", "emotion": "Proud", "event": "A trophy was won at chess."}},
]
MADIAL_DIALOGUE = [
    {"dialogue": ["<BOD>\n", '<Bart>: "I will dance again at a party!"\n', '<Assistant>: "Lovely."\n',
                  '<Bart>: "Remember last Christmas?"\n', "<EOD>\n"],
     "test-turn": [3], "relevant-id": [1], "user-id": 1},
    {"dialogue": ["<BOD>\n", '<Lisa>: "I need somewhere quiet to read."\n', '<Assistant>: "Hmm."\n', "<EOD>\n"],
     "test-turn": [2], "relevant-id": [2, 3], "user-id": 2},
]

MTB = [{"id": "mt-bench-plus-7", "type": "conjunction", "conversations": [
    {"from": "human", "turn-info": "stem-143-0", "value": "Explain photosynthesis in plants."},
    {"from": "chatbot", "value": ""},
    {"from": "human", "turn-info": "math-111-0", "value": "What is the area of a triangle with sides 3, 4, 5?"},
    {"from": "chatbot", "value": ""},
    {"from": "human", "turn-info": "writing-84-0", "value": "Write a poem about autumn leaves."},
    {"from": "chatbot", "value": ""},
    {"from": "human", "turn-info": "stem-143-1", "value": "How much energy does a tree make?"},
    {"from": "chatbot", "value": ""},
    {"from": "human", "turn-info": "math-111-stem-143-Q", "value": "Relate the triangle to the tree's energy."},
    {"from": "chatbot", "value": ""},
]}]


@pytest.fixture
def dev_dir(tmp_path: Path) -> Path:
    base = tmp_path / "memory_dev"
    (base / "realmem" / "dataset").mkdir(parents=True)
    (base / "realmem" / "dataset" / "Ana_Test_dialogues_256k.json").write_text(
        json.dumps({"_metadata": {}, "dialogues": REALMEM}), encoding="utf-8")
    en = base / "madial" / "data" / "en"
    en.mkdir(parents=True)
    (en / "MADial-Bench-en-memory.json").write_text("\n".join(json.dumps(m) for m in MADIAL_MEMORY), "utf-8")
    (en / "MADial-Bench-en-dialogue.json").write_text("\n".join(json.dumps(d) for d in MADIAL_DIALOGUE), "utf-8")
    mtb = base / "mtbenchplus" / "data" / "mtbenchplus"
    mtb.mkdir(parents=True)
    (mtb / "mtbenchplus.json").write_text(json.dumps(MTB), encoding="utf-8")
    return base


def test_realmem_haystack_is_the_sessions_before_in_file_order(dev_dir: Path):
    dev = devsets.realmem(dev_dir)
    [q] = dev.questions
    assert q.workspace == "realmem/ana-test" and q.gold == {"s-lisbon", "s-cat"}
    assert q.query.startswith("Where am I moving")
    times = {r["session"]: datetime.fromisoformat(r["created_at"]) for r in dev.records if r["seq"] == 0}
    # Every earlier session is inside until:, the query's own is not, whatever the dates say.
    assert q.until is not None
    assert all(times[s] <= q.until for s in ("s-lisbon", "s-cat", "s-filler"))
    assert times["s-ask"] > q.until
    assert times["s-lisbon"] < times["s-cat"] < times["s-filler"] < times["s-ask"]
    assert [r["source_id"] for r in dev.records if r["session"] == "s-ask"] == [f"s-ask#{i}" for i in range(4)]


@pytest.mark.parametrize("days, expected", [
    (["2025-01-01", "2025-01-05"], ["2025-01-01T00:00", "2025-01-05T00:00"]),
    (["2025-01-01", "2025-01-01"], ["2025-01-01T00:00", "2025-01-01T01:00"]),
    (["2025-01-05", "2025-01-01", "2025-01-06"], ["2025-01-05T00:00", "2025-01-05T01:00", "2025-01-06T00:00"]),
])
def test_session_starts_follow_file_order(days, expected):
    assert [d.isoformat(timespec="minutes") for d in devsets._session_starts(days)] == expected


def test_madial_memories_belong_to_the_user_they_name(dev_dir: Path):
    dev = devsets.madial(dev_dir)
    owners = {(r["source_id"], r["workspace"]) for r in dev.records}
    # 1 names Bart (user 1), 2 names Lisa (user 2), 3 names neither: both users hold it.
    assert owners == {("1", "madial/u1"), ("2", "madial/u2"), ("3", "madial/u1"), ("3", "madial/u2")}
    first, second = dev.questions
    # The query is the dialogue before its test turn (which states the memory).
    assert first.query == '<Bart>: "I will dance again at a party!" <Assistant>: "Lovely."'
    assert (first.workspace, first.gold) == ("madial/u1", {"1"})
    assert (second.workspace, second.gold, second.until) == ("madial/u2", {"2", "3"}, None)


def test_mtbenchplus_conjunction_questions_count_both_topics(dev_dir: Path):
    dev = devsets.mtbenchplus(dev_dir)
    [q] = dev.questions
    assert q.query == "Relate the triangle to the tree's energy."
    assert q.gold == {"mt-bench-plus-7#0", "mt-bench-plus-7#1", "mt-bench-plus-7#3"}
    assert [r["source_id"] for r in dev.records] == [f"mt-bench-plus-7#{i}" for i in range(4)]
    assert {r["workspace"] for r in dev.records} == {"mtb/7"}


Q = questions.Question(qid="q", principal=Principal("dev", "x", "eval"), query="?", relevant={})


@pytest.mark.parametrize("level, hit, units", [
    ("session", HitRef("turns", "s1#0", "s1"), ["s1"]),
    ("session", HitRef("facts", "f1", None), []),
    ("memory", HitRef("facts", "7", None), ["7"]),
    ("memory", HitRef("turns", "t#1", "t"), ["t#1"]),
    ("turn", HitRef("turns", "c#2", "c"), ["c#2"]),
    ("turn", HitRef("summaries", "c-summary", "c"), []),
])
def test_units_per_level(level, hit, units):
    assert devset_eval.UNIT_FNS[level](hit, Q) == units


@pytest.mark.parametrize("level, hits, relevant, expected", [
    # RealMem: two turns of one session take one rank; the gold session is second.
    ("session", [HitRef("turns", "a#0", "a"), HitRef("turns", "a#1", "a"), HitRef("turns", "b#0", "b")], {"b"},
     {"r@1": 0.0, "r@5": 1.0, "mrr": 0.5}),
    ("memory", [HitRef("facts", "3"), HitRef("facts", "1")], {"1", "3"},
     {"r@1": 1.0, "mrr": 1.0, "ndcg@10": 1.0}),
    ("turn", [HitRef("turns", "x#5"), HitRef("turns", "x#0")], {"x#0"}, {"r@1": 0.0, "mrr": 0.5}),
])
def test_metrics_at_each_unit(level, hits, relevant, expected):
    ranking = metrics.unit_ranking(devset_eval.UNIT_FNS[level](h, Q) for h in hits)
    got = metrics.score(ranking, relevant)
    assert {k: got[k] for k in expected} == pytest.approx(expected)


@pytest.fixture
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("RECALLFS_SEMANTIC", "false")
    return {"RECALLFS_SEMANTIC": "false"}


@pytest.mark.parametrize("name, level", [("realmem", "session"), ("madial", "memory"), ("mtbenchplus", "turn")])
def test_harness_runs_each_set_with_the_reference(name, level, dev_dir: Path, tmp_path: Path,
                                                  lexical_only: dict[str, str]):
    report = harness.evaluate(name, data=dev_dir, store=tmp_path / f"{name}.duckdb")
    assert report["questions"] == len(devsets.load(name, dev_dir).questions)
    arms = report["arms"]
    assert arms["lexical"]["available"] and arms["plain_bm25"]["available"]
    assert not arms["plain_cosine"]["available"] and not arms["semantic"]["available"]
    assert set(arms["plain_bm25"][level]["all_tables"]) == set(metrics.METRICS)
    assert level in report["relevance"]


def test_realmem_recall_and_reference_see_only_earlier_sessions(dev_dir: Path, tmp_path: Path,
                                                                lexical_only: dict[str, str]):
    # Both gold sessions are found at ranks 1-2 by both; the query's own session is never ranked.
    report = harness.evaluate("realmem", data=dev_dir, store=tmp_path / "r.duckdb", arms=["lexical", "plain"])
    for arm in ("lexical", "plain_bm25"):
        assert report["arms"][arm]["session"]["all_tables"]["ndcg@10"] == 1.0, arm


def test_cli_dev_set_markdown_and_errors(dev_dir: Path, tmp_path: Path, lexical_only: dict[str, str]):
    proc = run_cli("eval", "--dataset", "madial", "--data", str(dev_dir), "--store", str(tmp_path / "m.duckdb"),
                   "--format", "markdown", env=lexical_only, check=True)
    assert "| memory | all_tables |" in proc.stdout and "**plain_bm25**" in proc.stdout
    for args, message in (
        (["--dataset", "madial", "--personas", "1"], "--personas is for --dataset realmem"),
        (["--dataset", "realmem", "--write-baseline", "realmem_ci", "--personas", "1"], "leave out --limit, --every"),
        (["--dataset", "all", "--store", "x"], "--dataset all runs every set"),
        (["--dataset", "madial", "--data", str(tmp_path / "nowhere")], "madial data not found under"),
    ):
        proc = run_cli("eval", *args, env=lexical_only)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)


def test_dataset_all_reports_a_missing_set_and_goes_on(dev_dir: Path, tmp_path: Path, lexical_only: dict[str, str],
                                                       monkeypatch: pytest.MonkeyPatch):
    import argparse
    import shutil

    shutil.rmtree(dev_dir / "realmem")
    monkeypatch.setattr(devsets, "DEV", dev_dir)
    monkeypatch.setattr(eval_command, "ALL_SETS", ("realmem", "madial"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = argparse.Namespace(dataset="all", data=None, store=None, every=None, limit=None, personas=None,
                              arm="lexical", ablate=False, write_baseline=None)
    report = eval_command._run_all(args)
    assert report["sets"]["realmem"]["available"] is False
    assert "realmem data not found" in report["sets"]["realmem"]["reason"]
    assert report["sets"]["madial"]["arms"]["lexical"]["available"]
    text = report_markdown.markdown_all(report)
    assert "### realmem\n\nunavailable: realmem data not found" in text and "### madial" in text


def test_a_dev_store_is_keyed_on_its_adapter_too(dev_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The adapter decides what the store holds (session times, workspaces): editing it must not reuse a
    # store of the old records.
    from recallfs.evals.store_cache import store_key

    files = devsets.data_files("madial", dev_dir)
    assert Path(devsets.__file__) in devset_eval.key_files(files)
    adapter = tmp_path / "devsets.py"
    adapter.write_text(Path(devsets.__file__).read_text("utf-8"), "utf-8")
    monkeypatch.setattr(devsets, "__file__", str(adapter))
    before = store_key(devset_eval.key_files(files))
    adapter.write_text(adapter.read_text("utf-8") + "\n# a change\n", "utf-8")
    assert store_key(devset_eval.key_files(files)) != before
