"""Rows stored without vectors (an ingest killed between its commit and its embedding, or run while the
model was off) are outside the semantic arm. Recall names them instead of answering "hybrid" as if whole,
and a mount embeds them at start, saying so in its health. Real CLI, real model, real FUSE mount."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mount_helpers import base_env, fuse_problem, start_mount, stop_mount, wait_until
from semantic_data import PARAPHRASES, records

from conftest import fact, run_cli, write_jsonl

pytestmark = pytest.mark.skipif(fuse_problem() is not None, reason=fuse_problem() or "")

# no word in common (MiniLM cosine 0.40)
QUESTION, LATE_ID, LATE = "where will the employee retreat be held", "f-retreat", \
    "Our annual staff getaway takes place at a lodge by the lake."


def _recall(env: dict[str, str], query: str, *args: str) -> dict:
    out = run_cli("recall", query, "--format", "json", *args, env=env, check=True, timeout=300).stdout
    return json.loads(out)


def test_rows_left_without_vectors_are_named_by_recall_and_embedded_by_a_mount(tmp_path: Path) -> None:
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true")
    run_cli("ingest", str(write_jsonl(tmp_path / "first.jsonl", records())), env=env, check=True, timeout=300)
    # the late fact is written with the model off: the state an ingest killed before its embedding leaves
    # and a summary: a table with no vector at all, in a store that has some
    late = write_jsonl(tmp_path / "late.jsonl", [
        fact(LATE_ID, LATE, created_at="2026-05-02"),
        # another agent's private fact: counted for nobody else (the note names readable rows only)
        fact("f-private", "Zed keeps a private diary.", agent="zed", visibility="private", created_at="2026-05-02"),
        {"type": "summary", "source_id": "sum-1", "session": "s-office", "content": "Office chores were shared out.",
         "created_at": "2026-05-02"}])
    run_cli("ingest", str(late), env={**env, "RECALLFS_SEMANTIC": "false"}, check=True)

    before = _recall(env, QUESTION)
    gap = [n for n in before["notes"] if "semantic arm cannot see" in n]
    assert gap and "cannot see 1 of 61 facts, 1 of 1 summaries:" in gap[0], before["notes"]
    assert not before["degraded"]  # the rest is searched by both arms (a vector-less table failed them all)
    # a paraphrase the lexical arm cannot see: with no vector, it cannot come back
    assert LATE_ID not in [h["source_id"] for h in before["hits"]]
    question, source_id, _ = PARAPHRASES[0]  # the other facts' vectors still serve
    assert source_id in [h["source_id"] for h in _recall(env, question, "--arm", "semantic")["hits"][:3]]

    mount = start_mount(tmp_path, env)
    try:
        def health() -> dict:
            return mount.mount_info()["detail"]["health"]

        assert wait_until(lambda: any("embedded the rows that had no vectors" in n for n in health()["notes"]),
                          timeout=120), health()
        assert health()["state"] == "ok", health()
        names = os.listdir(mount.path / "recall" / QUESTION)
        assert any("getaway" in name for name in names), names
        after = _recall(env, QUESTION)  # through the daemon now
        assert not any("semantic arm cannot see" in n for n in after["notes"]), after["notes"]
        assert LATE_ID in [h["source_id"] for h in after["hits"][:3]]
    finally:
        stop_mount(mount)
    # the vectors were written to the store: an unmounted recall sees the fact too
    assert LATE_ID in [h["source_id"] for h in _recall(env, QUESTION)["hits"][:3]]


def test_an_ingest_says_when_it_embedded_rows_an_earlier_one_left_without_vectors(tmp_path: Path) -> None:
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true")
    data = write_jsonl(tmp_path / "first.jsonl", records())
    run_cli("ingest", str(data), env={**env, "RECALLFS_SEMANTIC": "false"}, check=True)
    again = run_cli("ingest", str(data), env=env, check=True, timeout=300).stdout
    assert f"0 written (0 new versions), {len(records())} unchanged" in again
    assert f"embedded {len(records())} rows an earlier ingest left without vectors" in again, again
    assert "left without vectors" not in run_cli("ingest", str(data), env=env, check=True, timeout=300).stdout


BIG = 3000  # turns in one inbox file: about 10 s of embedding on two cores, most of it after the write returns


def test_a_large_write_through_the_mount_leaves_its_embedding_to_the_mount_and_holds_no_writer(
        tmp_path: Path) -> None:
    """Found 2026-12-07: a one-line inbox write waited 72 s behind a 3,000-turn file's embedding. A write
    now embeds its own rows up to a part and leaves the rest to the mount's embedding loop, which takes the
    writer a part at a time; health says what waits, and the last turn of the file is found by meaning."""
    import threading

    from conftest import turn

    env = base_env(tmp_path, RECALLFS_SEMANTIC="true")
    run_cli("ingest", str(write_jsonl(tmp_path / "first.jsonl", records())), env=env, check=True, timeout=300)
    mount = start_mount(tmp_path, env)
    try:
        assert wait_until(lambda: "recall hybrid" in mount.cli("status").stdout, timeout=120)
        lines = [json.dumps(turn("s-big", i, "maya", f"Routine log line {i} about the nightly batch job."))
                 for i in range(BIG - 1)]
        lines.append(json.dumps(turn("s-big", BIG - 1, "maya", LATE)))  # the newest row: a part of its own
        big_done: list[str] = []

        def big() -> None:
            (mount.path / "inbox" / "big.jsonl").write_text("\n".join(lines) + "\n")
            big_done.append("closed")

        writer = threading.Thread(target=big)
        writer.start()
        try:
            assert wait_until(lambda: "s-big" in os.listdir(mount.path / "sessions"), timeout=300)
            (mount.path / "inbox" / "one.md").write_text("The espresso machine on floor 3 is fixed.\n")
            # the one-line write returned while the big file's rows still wait for their vectors (before, it
            # waited for all of them, and nothing was left waiting once it returned)
            def waiting() -> bool:
                problems = mount.mount_info()["detail"]["health"]["problems"]
                return any("rows that have no vectors yet" in p for p in problems)
            assert wait_until(waiting, timeout=10), mount.mount_info()["detail"]["health"]
        finally:
            writer.join(timeout=300)
        assert big_done == ["closed"]
        assert wait_until(lambda: mount.mount_info()["detail"]["health"]["state"] == "ok", timeout=300), \
            mount.mount_info()["detail"]["health"]
        found = _recall(env, "where is the staff getaway held", "--arm", "semantic")  # only by its vector
        assert any(LATE in h["content"] for h in found["hits"][:3]), json.dumps(found)[:3000]
    finally:
        stop_mount(mount)
