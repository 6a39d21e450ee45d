"""Issue 14: below the relevance floor, once some hit passes it, the near-misses follow the hits instead
of being dropped (ranking/floor.py). Real DuckDB file, real MiniLM, real FAISS, and a real FUSE mount.

The shape is MT-Bench+'s: a thread of requests on one topic, where the question names the topic and
its follow-ups share neither its words nor much of its meaning (cosine 0.28 here, under the cosine
the floor asks of a semantic-only hit). A query memory has nothing on still answers nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, serve, wait_until

from recallfs.query.formats import render_context, render_text
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.recall import recall
from recallfs.query.semantic import SemanticSearch
from recallfs.query.store import Store
from recallfs.ranking.stage_config import DEFAULT_RELEVANCE_FLOOR, StageConfig
from recallfs.scope.principal import Principal

from conftest import turn, write_jsonl

ME = Principal("acme", "proj", "tester")
QUESTION = "Think about the kth smallest element problem. How many lists are there?"
OPENER = ("You are given two sorted lists of size m and n. Implement a function to find the kth smallest "
          "element in the union of the two lists.")
FOLLOW_UP = "Does there exist an algorithm with better time complexity? If so, implement it."
SPACE = "What is the space complexity of your first implementation?"
SECRET = "kvnearsecret: is there an algorithm with a better time complexity for the two lists?"
RECORDS = [
    turn("s-algo", 0, "maya", OPENER),
    turn("s-algo", 1, "maya", FOLLOW_UP),
    turn("s-algo", 2, "maya", SPACE),
    turn("s-algo", 3, "scout", SECRET, agent="scout", visibility="private"),
    # other topics: under the semantic arm's cosine floor (0.2); near-misses after the thread, nearest first
    turn("s-poem", 0, "maya", "Write a short poem about the autumn leaves falling in the park."),
    turn("s-poem", 1, "maya", "Now make it rhyme and add a verse about the first snow."),
    turn("s-trip", 0, "maya", "Plan a three day trip to Kyoto with temples and gardens."),
]


@pytest.fixture(scope="module")
def thread(tmp_path_factory, minilm):
    base = tmp_path_factory.mktemp("near")
    path = write_jsonl(base / "thread.jsonl", RECORDS)
    with Store(base / "thread.duckdb") as store:
        ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent="tester"),
                       embedder=minilm)
        yield store, SemanticSearch(minilm)


def contents(result) -> list[str]:
    return [str(h.row["content"]) for h in result.hits]


def test_a_thread_follow_up_follows_the_hit(thread):
    store, semantic = thread
    result = recall(store, ME, QUESTION, semantic=semantic)
    assert contents(result)[:3] == [OPENER, SPACE, FOLLOW_UP] and len(result.hits) == 6
    assert [bool(h.row.get("near_miss")) for h in result.hits] == [False, False, True, True, True, True]
    near = result.hits[2:]
    assert all(h.relevance < DEFAULT_RELEVANCE_FLOOR and h.cosine is not None and 0 < h.cosine < 0.3 for h in near)
    assert [h.cosine for h in near] == sorted((h.cosine for h in near), reverse=True)  # nearest first
    assert near[0].score < result.hits[1].score  # they follow, whatever their fused share
    assert result.stages["near_misses"] == "on (4 follow the hits)"
    assert result.stages["floor"].endswith(": 4 of 6 below it follow the hits")
    shown = render_text(result)
    assert shown.count("(near-miss)") == 4 and render_context(result).count('near_miss="true"') == 4
    assert [h.as_json().get("near_miss") for h in result.hits] == [None, None, True, True, True, True]


def test_off_they_are_dropped_as_before(thread):
    store, semantic = thread
    result = recall(store, ME, QUESTION, semantic=semantic, stages=StageConfig(near_misses=False))
    assert contents(result) == [OPENER, SPACE]
    assert result.stages["near_misses"] == "off" and result.stages["floor"].endswith(": dropped 4 of 6")


@pytest.mark.parametrize("query", ["zzqxv", "blorptang frizzle", "the price of bitcoin"])
def test_a_query_memory_has_nothing_on_still_answers_nothing(thread, query):
    store, semantic = thread
    result = recall(store, ME, query, semantic=semantic)
    assert result.hits == [] and "no memory matched the query" in result.notes


def test_the_other_agents_private_turn_is_no_near_miss(thread):
    store, semantic = thread
    for who in (ME, Principal("acme", "proj", "scout")):
        found = contents(recall(store, who, QUESTION, semantic=semantic))
        assert (SECRET in found) is (who.agent == "scout")


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    yield from serve(tmp_path_factory.mktemp("near-mount"), RECORDS, RECALLFS_SEMANTIC="true",
                     RECALLFS_AGENT="tester")


@needs_fuse
@pytest.mark.mount
def test_through_the_mount_ls_and_grep_see_the_follow_up_and_not_the_secret(mnt: Mount):
    assert wait_until(lambda: not mnt.mount_info().get("detail", {}).get("degraded", True), timeout=300), \
        "the semantic arm never became ready"
    query = mnt.path / "recall" / QUESTION.replace("?", "")
    names = subprocess.run(["ls", str(query)], capture_output=True, text=True, check=True).stdout.split()
    assert [n[:3] for n in names if n.endswith(".md")] == ["01-", "02-", "03-", "04-", "05-", "06-"]
    found = subprocess.run(["grep", "-rl", "better time complexity", str(query)], capture_output=True, text=True)
    assert found.returncode == 0 and any(line.endswith(".md") for line in found.stdout.split())
    # the front matter says which hits are near-misses: grep -L lists the hits above the floor
    above = subprocess.run(["grep", "-L", "^near_miss: true", *sorted(str(p) for p in query.glob("*.md"))],
                           capture_output=True, text=True).stdout.splitlines()
    assert [Path(p).name[:3] for p in above] in (["01-", "02-"], ["01-"])
    secret = subprocess.run(["grep", "-rl", "kvnearsecret", str(query)], capture_output=True, text=True)
    assert secret.returncode == 1 and secret.stdout == ""
    result = json.loads((query / "results.json").read_text())
    # Without its "?" the question is no question: the space question passes the floor no more, and
    # follows too.
    assert result["stages"]["near_misses"] in ("on (4 follow the hits)", "on (5 follow the hits)")
    assert [h["rank"] for h in result["hits"]] == [1, 2, 3, 4, 5, 6]
