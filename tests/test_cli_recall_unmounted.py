"""`recallfs recall` on a store no mount holds, through real processes: the lexical arm never imports
torch, a call that loads the model says in one line how to get the fast path, parallel calls all
answer, and a call made while an ingest writes the store waits for it instead of failing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import duckdb
import pytest

from conftest import RECALLFS, fact, run_cli, write_jsonl

pytestmark = pytest.mark.slow

NOTES = [fact(f"f{i}", f"deploy note {i}: the docs deploy uses rsync to the static host") for i in range(12)]
MODEL_MODULES = {"torch", "sentence_transformers", "transformers"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("unmounted")
    base = {"RECALLFS_STORE": str(root / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
            "RECALLFS_AGENT": "tester"}
    run_cli("ingest", str(write_jsonl(root / "m.jsonl", NOTES)), env=base, check=True)  # with vectors
    return base


def test_lexical_recall_never_imports_the_model(env):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "recallfs.mount.cli", "recall", "deploy docs",
                           "--arm", "lexical", "--format", "json"], capture_output=True, text=True,
                          env={**_os_env(), **env}, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["hits"]
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not MODEL_MODULES & imported
    assert "recallfs mount" not in proc.stderr


def test_a_call_that_loads_the_model_says_how_to_get_the_fast_path(env, tmp_path):
    # a cache with no saved query graph (tests/test_query_graph.py has the call that needs no model)
    proc = run_cli("recall", "deploy docs", "--format", "json", env={**env, "XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["degraded"] is False and any("semantic" in h["arms"] for h in out["hits"])
    [line] = proc.stderr.splitlines()
    assert f"recallfs mount --store {env['RECALLFS_STORE']} DIR" in line and "--arm lexical" in line

    off = run_cli("recall", "deploy docs", env={**env, "RECALLFS_SEMANTIC": "false"}, check=True)
    assert off.stderr == ""  # nothing to load, nothing to say
    missing = run_cli("recall", "deploy docs", env={**env, "RECALLFS_MODEL": "/nonexistent"}, check=True)
    assert "recallfs mount" not in missing.stderr


def test_parallel_calls_all_answer(env):
    calls = [["--arm", "lexical"]] * 6 + [["--arm", "fused"]] * 2
    procs = [subprocess.Popen([str(RECALLFS), "recall", "rsync static host", "--format", "json", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**_os_env(), **env},
                              stdin=subprocess.DEVNULL) for extra in calls]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert len(json.loads(out)["hits"]) == 10
        assert "Traceback" not in err


def test_a_call_during_an_ingest_waits_for_it(env, tmp_path):
    backlog = [fact(f"b{i}", f"backlog item {i}: triage ticket {i * 7919 % 10007} for the billing team")
               for i in range(3000)]
    path = write_jsonl(tmp_path / "backlog.jsonl", backlog)
    ingest = subprocess.Popen([str(RECALLFS), "ingest", str(path), "--no-progress"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**_os_env(), **env}, stdin=subprocess.DEVNULL)
    try:
        held = _wait_until_held(env["RECALLFS_STORE"], ingest)
        recall = run_cli("recall", "backlog triage billing", "--arm", "lexical", "--format", "json", env=env)
    finally:
        _out, err = ingest.communicate(timeout=600)
    assert ingest.returncode == 0, err
    if not held:
        pytest.fail("the ingest ended before it was seen holding the store: make the backlog larger")
    assert recall.returncode == 0, recall.stderr
    # it opened the store once the ingest had committed: the new rows are there
    assert all(h["source_id"].startswith("b") for h in json.loads(recall.stdout)["hits"])


def _wait_until_held(store: str, ingest: subprocess.Popen[str]) -> bool:
    """Poll until the ingest holds the store's lock (True), or has ended (False)."""
    while ingest.poll() is None:
        try:
            duckdb.connect(store, read_only=True).close()
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                return True
            raise
        time.sleep(0.05)
    return False


def _os_env() -> dict[str, str]:
    return dict(os.environ)
