"""The semantic arm through the real `recallfs` console script: hybrid JSON, every degraded reason
caused for real, ingest without a model, and `recallfs reindex`."""

from __future__ import annotations

import json

import pytest
from semantic_data import records

from conftest import run_cli, write_jsonl

pytestmark = pytest.mark.slow

QUESTION = "when must the annual taxes be filed"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("semcli")
    base = {"RECALLFS_STORE": str(root / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
            "RECALLFS_AGENT": "tester"}
    run_cli("ingest", str(write_jsonl(root / "m.jsonl", records())), env=base, check=True)
    return base


def recall_json(env, *extra: str, **overrides: str) -> dict:
    proc = run_cli("recall", QUESTION, "--format", "json", *extra, env={**env, **overrides})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_hybrid_recall_json(env):
    out = recall_json(env)
    assert out["degraded"] is False and out["degraded_reason"] is None
    assert any("semantic" in h["arms"] for h in out["hits"])
    assert "f-tax" in [h["source_id"] for h in out["hits"]]  # shares no word with the question
    assert out["timings_ms"]["semantic"] >= 0


def test_text_format_says_hybrid(env):
    proc = run_cli("recall", QUESTION, env=env, check=True)
    assert "hybrid (lexical + semantic)" in proc.stdout.splitlines()[0]


def assert_lexical_fallback(out: dict, reason: str) -> None:
    assert out["degraded"] is True and out["degraded_reason"] == reason
    assert out["hits"] and all(h["arms"] == ["lexical"] for h in out["hits"])


def test_missing_model(env):
    assert_lexical_fallback(recall_json(env, RECALLFS_MODEL="/nonexistent"), "model-missing")


def test_semantic_off(env):
    assert_lexical_fallback(recall_json(env, RECALLFS_SEMANTIC="false"), "off")


def test_warming_when_recall_does_not_wait_for_the_model(env):
    assert_lexical_fallback(recall_json(env, RECALLFS_WARM_TIMEOUT_MS="1"), "warming")


def test_timeout_with_a_1ms_budget(env):
    out = recall_json(env, RECALLFS_EMBED_TIMEOUT_MS="1")
    assert_lexical_fallback(out, "timeout")
    assert any("budget" in note for note in out["notes"])


def test_error_with_a_corrupt_model(env, tmp_path):
    bad = tmp_path / "corrupt-model"
    bad.mkdir()
    (bad / "modules.json").write_text("[]")
    (bad / "config.json").write_text("{ truncated")
    assert_lexical_fallback(recall_json(env, RECALLFS_MODEL=str(bad)), "error")


def test_ingest_without_a_model_then_reindex(tmp_path):
    env = {"RECALLFS_STORE": str(tmp_path / "s.duckdb"), "RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "t"}
    proc = run_cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", records())),
                   env={**env, "RECALLFS_MODEL": "/nonexistent"})
    assert proc.returncode == 0, proc.stderr
    assert "recallfs reindex" in proc.stderr  # the rows are in, and the user is told how to embed them
    out = recall_json(env)
    assert_lexical_fallback(out, "error")
    assert any("recallfs reindex" in n for n in out["notes"])

    proc = run_cli("reindex", env=env, check=True)
    assert f"{len(records())} memories embedded" in proc.stdout
    out = recall_json(env)
    assert out["degraded"] is False and "f-tax" in [h["source_id"] for h in out["hits"]]
    # Nothing left to embed: a second reindex embeds nothing.
    assert "0 memories embedded" in run_cli("reindex", env=env, check=True).stdout
