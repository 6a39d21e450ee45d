"""Ranking settings: provenance weights and every stage switch in the one settings table, reachable as
RECALLFS_*, and used by the CLI's recall (the mount's use is in test_ranking_mount.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from recallfs.query.settings import STAGE_SETTINGS, resolve, setting, weights_from
from recallfs.ranking.pipeline import StageConfig
from recallfs.ranking.provenance import DEFAULT_WEIGHTS, format_weights, parse_weights

from conftest import fact, write_jsonl


def test_every_stage_switch_is_a_setting_with_the_shipped_default():
    assert set(STAGE_SETTINGS) == {f.name for f in dataclasses.fields(StageConfig)}
    for name in STAGE_SETTINGS:
        assert setting(name).default == getattr(StageConfig(), name)


def test_defaults_are_the_shipped_pipeline():
    kw = resolve({}, env={}).ranking().recall_kwargs()
    assert kw["stages"] == StageConfig() and kw["weights"] is None  # each fusion's own defaults
    assert (kw["rrf_k"], kw["candidates"]) == (60, 100)


@pytest.mark.parametrize("weights", [DEFAULT_WEIGHTS, {"facts": 1.0, "turns": 0.5}, {"semantic:turns": 0.25}])
def test_format_weights_round_trips(weights):
    assert parse_weights(format_weights(weights)) == weights


@pytest.mark.parametrize(("text", "expected"), [
    ("equal", {}),
    (" EQUAL ", {}),
    ("facts=1,summaries=0.5", {"facts": 1.0, "summaries": 0.5}),
    ("lexical=0.7", {"lexical": 0.7}),
    ("semantic:turns=0", {"semantic:turns": 0.0}),
])
def test_weights_setting(text, expected):
    assert weights_from(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("", "RECALLFS_WEIGHTS is empty"),
    ("facts", "RECALLFS_WEIGHTS: weight 'facts' is not NAME=NUMBER"),
    ("facts=high", "is not a number"),
    ("turns=-1", "must be a finite number >= 0"),
])
def test_bad_weights_setting(text, message):
    with pytest.raises(ValueError, match=message):
        weights_from(text)


@pytest.mark.parametrize(("env", "field", "value"), [
    ({"RECALLFS_RECENCY": "off"}, "recency", "off"),
    ({"RECALLFS_RECENCY": "on"}, "recency", "on"),
    ({"RECALLFS_HALF_LIFE_DAYS": "30"}, "half_life_days", 30.0),
    ({"RECALLFS_DEDUP": "false"}, "dedup", False),
    ({"RECALLFS_RERANK": "true"}, "rerank", True),
    ({"RECALLFS_RERANK_MIX": "0.3"}, "rerank_mix", 0.3),
    ({"RECALLFS_RERANK_BUDGET_MS": "10"}, "rerank_budget_ms", 10.0),
    ({"RECALLFS_COLLAPSE": "off"}, "collapse", False),
    ({"RECALLFS_COLLAPSE_THRESHOLD": "0.95"}, "collapse_threshold", 0.95),
    ({"RECALLFS_MMR": "no"}, "mmr", False),
    ({"RECALLFS_MMR_LAMBDA": "0.5"}, "mmr_lambda", 0.5),
    ({"RECALLFS_MIN_SCORE": "0.2"}, "min_score", 0.2),
    ({"RECALLFS_TAG_BONUS": "0.1"}, "tag_bonus", 0.1),
    ({"RECALLFS_KIND_BONUS": "0.1"}, "kind_bonus", 0.1),
    ({"RECALLFS_ENTITY_FIRST": "false"}, "entity_first", False),
])
def test_each_stage_setting_from_the_environment(env, field, value):
    stages = resolve({}, env=env).ranking().stages
    assert getattr(stages, field) == value
    assert stages == StageConfig().replace(**{field: value})  # and nothing else moved


@pytest.mark.parametrize(("env", "message"), [
    ({"RECALLFS_RECENCY": "sometimes"}, "recency must be one of off, auto, on"),
    ({"RECALLFS_MMR_LAMBDA": "2"}, "mmr_lambda must lie in 0..1"),
    ({"RECALLFS_HALF_LIFE_DAYS": "0"}, "half_life_days must be positive"),
    ({"RECALLFS_WEIGHTS": "turns"}, "RECALLFS_WEIGHTS"),
    ({"RECALLFS_RRF_K": "0"}, "RECALLFS_RRF_K"),
])
def test_bad_stage_settings_are_named(env, message):
    with pytest.raises(ValueError, match=message):
        resolve({}, env=env).ranking()


@pytest.mark.parametrize(("env", "message"), [
    # found 2026-12-07 by a CLI probe: RECALLFS_K=-5 returned 48 hits and a next page at offset 0 forever,
    # RECALLFS_KIND_BONUS=inf printed "score": Infinity (not JSON), RECALLFS_HALF_LIFE_DAYS=nan passed "> 0"
    ({"RECALLFS_K": "-5"}, "RECALLFS_K='-5': expected a number from 1 to 200"),
    ({"RECALLFS_K": "0"}, "RECALLFS_K='0': expected a number from 1 to 200"),
    ({"RECALLFS_K": "99999999999999999999999"}, "RECALLFS_K=.*from 1 to 200"),
    ({"RECALLFS_KIND_BONUS": "inf"}, "RECALLFS_KIND_BONUS='inf': expected a finite number"),
    ({"RECALLFS_HALF_LIFE_DAYS": "nan"}, "RECALLFS_HALF_LIFE_DAYS='nan': expected a finite number"),
    ({"RECALLFS_MODEL_LOAD_TIMEOUT_S": "-inf"}, "expected a finite number"),
    ({"RECALLFS_QUERY_TIMEOUT_MS": "-5"}, "RECALLFS_QUERY_TIMEOUT_MS='-5': expected a number from 1 to"),
    ({"RECALLFS_SERVE_THREADS": "-1"}, "RECALLFS_SERVE_THREADS='-1'"),
    ({"RECALLFS_INBOX_MAX_BYTES": "0"}, "RECALLFS_INBOX_MAX_BYTES='0'"),
    ({"RECALLFS_RECALL_TTL_S": "-1"}, "RECALLFS_RECALL_TTL_S='-1'"),
])
def test_a_number_out_of_its_range_is_named_when_resolved(env, message):
    with pytest.raises(ValueError, match=message):
        resolve({}, env=env)


@pytest.mark.parametrize("env", [{"RECALLFS_K": "200"}, {"RECALLFS_SERVE_THREADS": "0"},
                                 {"RECALLFS_WARM_TIMEOUT_MS": "0"}, {"RECALLFS_RECALL_TTL_S": "0"}])
def test_the_ends_of_a_range_are_taken(env):
    resolve({}, env=env)


def test_bad_number_is_named_when_resolved():
    with pytest.raises(ValueError, match="RECALLFS_MIN_SCORE='lots': expected a number"):
        resolve({}, env={"RECALLFS_MIN_SCORE": "lots"})


# -- through the console script --------------------------------------------------------------------
CONFLICT = [
    fact("old", "The team chat tool is Slack", created_at="2026-01-10T10:00:00Z"),
    fact("new", "The team chat tool is Zulip", created_at="2026-06-10T10:00:00Z"),
]


def _recall(cli, query: str, env: dict[str, str] | None = None) -> dict:
    return json.loads(cli("recall", query, "--format", "json", "--arm", "lexical", env=env, check=True).stdout)


def test_cli_recall_uses_the_stage_settings(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", CONFLICT)), check=True)
    auto = _recall(cli, "what is the latest team chat tool")
    assert auto["stages"]["recency"].startswith("auto: temporal intent 'latest'")
    off = _recall(cli, "what is the latest team chat tool", env={"RECALLFS_RECENCY": "off"})
    assert off["stages"]["recency"] == "off"
    cut = _recall(cli, "team chat tool", env={"RECALLFS_MIN_SCORE": "0.99"})
    assert cut["stages"]["min_score"].startswith("0.99: dropped")


def test_cli_recall_uses_the_weights_setting(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [
        fact("f", "the build cache lives in target/"),
        {"type": "turn", "source_id": "s#0", "session": "s", "seq": 0, "speaker": "maya",
         "content": "the build cache lives in target/", "created_at": "2026-06-01T10:00:00Z"},
    ])), check=True)
    env = {"RECALLFS_COLLAPSE": "false"}  # keep both copies, to see which one leads
    default = _recall(cli, "build cache", env=env)
    assert [h["table"] for h in default["hits"]] == ["facts", "turns"]
    turns_first = _recall(cli, "build cache", env={**env, "RECALLFS_WEIGHTS": "facts=0.5"})
    assert [h["table"] for h in turns_first["hits"]] == ["turns", "facts"]


def test_cli_bad_ranking_setting_is_a_message(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", CONFLICT)), check=True)
    proc = cli("recall", "chat", env={"RECALLFS_RECENCY": "sometimes"})
    assert proc.returncode == 1 and "recency must be one of off, auto, on" in proc.stderr
    assert "Traceback" not in proc.stderr
