"""`recallfs recall` through the real console script: the JSON contract, context XML and text."""

from __future__ import annotations

import json
import os
import subprocess
import xml.dom.minidom
import xml.etree.ElementTree as ET

import pytest

from conftest import RECALLFS, fact, run_cli, turn, write_jsonl

RECORDS = [fact(f"f{i}", f"deploy note {i}: the docs deploy uses rsync to the static host", tags=["deploy"])
           for i in range(15)] + [turn("s1", 0, "maya", "how do we deploy the docs?")]


@pytest.fixture
def loaded(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", RECORDS)), check=True)
    return cli


def test_json_contract(loaded):
    out = json.loads(loaded("recall", "deploy docs", "--format", "json", "--arm", "lexical", "-k", "5",
                            check=True).stdout)
    assert set(out) >= {"query", "hits", "degraded", "degraded_reason", "total_candidates", "timings_ms"}
    assert out["query"] == "deploy docs" and out["total_candidates"] == 16
    assert len(out["hits"]) == 5
    for i, hit in enumerate(out["hits"], start=1):
        assert set(hit) >= {"rank", "id", "table", "score", "arms", "content", "session", "source_id",
                            "created_at"}
        assert hit["rank"] == i and hit["arms"] == ["lexical"] and 0 < hit["score"] <= 1
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert out["degraded"] is False and out["degraded_reason"] is None  # a chosen arm is not a degradation
    assert out["pagination"] == {"offset": 0, "k": 5, "returned": 5, "has_more": True, "next_offset": 5}


@pytest.mark.parametrize(("args", "degraded", "reason", "status"), [
    (["--arm", "lexical"], False, None, "lexical arm (chosen)"),
    ([], True, "off", "degraded: off"),  # fused asked for, and RECALLFS_SEMANTIC=false leaves no semantic arm
])
def test_a_chosen_arm_is_not_a_degradation(loaded, args, degraded, reason, status):
    out = json.loads(loaded("recall", "deploy docs", "--format", "json", *args, check=True).stdout)
    assert (out["degraded"], out["degraded_reason"]) == (degraded, reason)
    assert status in loaded("recall", "deploy docs", *args, check=True).stdout.splitlines()[0]
    block = loaded("recall", "deploy docs", "--format", "context", *args, check=True).stdout
    assert ("degraded_reason" in block) is degraded


def test_offset_and_inline_k(loaded):
    page2 = json.loads(loaded("recall", "deploy docs k:4", "--offset", "4", "--format", "json", "--arm",
                              "lexical", check=True).stdout)
    assert [h["rank"] for h in page2["hits"]] == [5, 6, 7, 8]


def test_context_block_has_pagination_hint(loaded):
    text = loaded("recall", "deploy docs", "--format", "context", "--arm", "lexical", "-k", "3",
                  check=True).stdout
    root = ET.fromstring(text)
    assert root.tag == "memory" and len(root.findall("hit")) == 3
    pag = root.find("pagination")
    assert pag is not None and pag.get("has_more") == "true" and pag.get("next_offset") == "3"
    assert "offset:3" in (pag.text or "")


def test_text_format_for_people(loaded):
    out = loaded("recall", "deploy docs", "--arm", "lexical", "-k", "2", check=True).stdout
    assert out.splitlines()[0].startswith("recall 'deploy docs' in acme/proj")
    assert "  1. [" in out and "--offset 2" in out


def test_no_match_exits_zero_and_says_so(loaded):
    proc = loaded("recall", "kubernetes", "--arm", "lexical")
    assert proc.returncode == 0 and "no memory matched the query" in proc.stdout
    out = json.loads(loaded("recall", "kubernetes", "--format", "json", "--arm", "lexical").stdout)
    assert out["hits"] == [] and "no memory matched the query" in out["notes"]


def test_malformed_inline_option_is_reported_not_fatal(loaded):
    out = json.loads(loaded("recall", "deploy k:lots since:someday", "--format", "json", "--arm", "lexical",
                            check=True).stdout)
    assert out["hits"] and any("k:lots" in n for n in out["notes"]) and any("someday" in n for n in out["notes"])


def test_missing_store_is_a_clear_error(tmp_path):
    proc = run_cli("recall", "x", env={"RECALLFS_STORE": str(tmp_path / "none.duckdb")})
    assert proc.returncode == 1 and "no store at" in proc.stderr and "recallfs init" in proc.stderr


def test_bad_workspace_is_a_clear_error(loaded):
    proc = loaded("recall", "x", "--workspace", "a/b/c")
    assert proc.returncode == 1 and "bad workspace" in proc.stderr


def test_known_locomo_answer(locomo_store):
    env = {"RECALLFS_STORE": str(locomo_store)}
    out = json.loads(run_cli("recall", "--workspace", "locomo/conv-26",
                             "When did Caroline go to the LGBTQ support group?", "--format", "json",
                             env=env, check=True).stdout)
    assert "D1:3" in [h["source_id"] for h in out["hits"][:5]]


# Characters XML 1.0 cannot carry, in content, a tag, a speaker and a session: one such memory once made
# every context block that returned it unreadable.
CONTROL_RECORDS = [
    fact("ctl-1", "deploy bell \x07 reset \x1b[0m nonchar \ufffe", tags=["t\x07ag", "deploy"], entity="ctl"),
    turn("s\x1b", 0, "ma\x1bya", "deploy \x07 ding"),
]


@pytest.fixture
def controls(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", CONTROL_RECORDS)), check=True)
    return cli


def test_context_block_with_control_characters_is_well_formed(controls):
    for query in ("deploy \x1b", "ctl", "deploy tag:t\x07ag"):
        text = controls("recall", query, "--format", "context", "--arm", "lexical", check=True).stdout
        xml.dom.minidom.parseString(text)
        root = ET.fromstring(text)
        assert root.get("query") == query.replace("\x1b", "\u241b").replace("\x07", "\u2407")
    hits = {h.get("source"): h for h in root.findall("hit")}
    assert hits["ctl-1"].text == "deploy bell \u2407 reset \u241b[0m nonchar \ufffd"


def test_turn_attributes_with_control_characters_are_well_formed(controls):
    text = controls("recall", "ding", "--format", "context", "--arm", "lexical", check=True).stdout
    (hit,) = ET.fromstring(text).findall("hit")
    assert (hit.get("speaker"), hit.get("session"), hit.text) == ("ma\u241bya", "s\u241b", "deploy \u2407 ding")


def test_text_format_prints_no_raw_control_character(controls):
    for query in ("deploy", "ctl"):
        out = controls("recall", query, "--arm", "lexical", check=True).stdout
        assert not set(out) & {"\x07", "\x1b"}, out
        assert "reset \\x1b[0m" in out and "bell \\x07" in out
    assert "ma\\x1bya: deploy \\x07 ding" in controls("recall", "ding", "--arm", "lexical", check=True).stdout


def suggested_command(block: str) -> str:
    pag = ET.fromstring(block).find("pagination")
    assert pag is not None and pag.text
    return pag.text.split("or run: ", 1)[1]


# The query is the last argument, after `--`: `recallfs recall -deploy --offset 3` once failed ("the
# following arguments are required: query"). The command is run by a shell, as a user would paste it.
@pytest.mark.parametrize(("query", "shown"), [
    ("-deploy", "-deploy"),
    ("--deploy docs", "--deploy docs"),
    ("deploy docs offset:2", "deploy docs offset:2 offset:5"),  # inline offset: wins over --offset
    ("deploy's \"docs\" $HOME `id` -k 1", "deploy's \"docs\" $HOME `id` -k 1"),
])
def test_the_suggested_next_page_command_runs(loaded, store_path, query, shown):
    block = loaded("recall", "--format", "context", "-k", "3", "--", query, check=True).stdout
    command = suggested_command(block)
    assert command.startswith("recallfs recall --offset ") and " -- " in command
    env = {**os.environ, "RECALLFS_STORE": str(store_path), "RECALLFS_WORKSPACE": "acme/proj",
           "RECALLFS_AGENT": "tester", "RECALLFS_SEMANTIC": "false",
           "PATH": f"{RECALLFS.parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = ET.fromstring(proc.stdout)
    first = ET.fromstring(block).find("pagination")
    assert page.get("query") == shown
    assert [h.get("rank") for h in page.findall("hit")][:1] == [str(int(first.get("next_offset")) + 1)]
