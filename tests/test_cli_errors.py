"""The CLI's own errors through the real console script: a reader that went away, a closed stdout,
store paths that do not exist, and errors that come before the model starts loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import RECALLFS, fact, run_cli, snapshot, write_jsonl

BASE = {"RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "tester", "RECALLFS_SEMANTIC": "false"}


def run_into(stdout: int | None, *args: str, env: dict[str, str], close_stdout: bool = False):
    return subprocess.run([str(RECALLFS), *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, **env}, timeout=300, stdin=subprocess.DEVNULL,
                          preexec_fn=(lambda: os.close(1)) if close_stdout else None)


@pytest.fixture
def store_env(tmp_path, cli, store_path):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [fact(f"f{i}", f"deploy note {i}") for i in range(50)])),
        check=True)
    cli("policy", "set", "--authors", "tester", check=True)  # so that `policy list` has a line to print
    return {**BASE, "RECALLFS_STORE": str(store_path)}


COMMANDS = [
    ("--help",),
    ("recall", "--help"),
    ("init",),
    ("ingest", "{more}"),
    ("recall", "deploy", "--arm", "lexical", "-k", "50"),
    ("recall", "deploy", "--arm", "lexical", "--format", "json"),
    ("recall", "deploy", "--arm", "lexical", "--format", "context"),
    ("status",),
    ("status", "--json"),
    ("policy", "set", "--authors", "*"),
    ("policy", "show"),
    ("policy", "list"),
]


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path, store_env, argv, unbuffered):
    """`recallfs status | head -1`: the pipe closes before the output is written. No traceback, no
    "Exception ignored" at exit: exit 1 and silence, as tools stopped by SIGPIPE. Whether Python
    buffers stdout (PYTHONUNBUFFERED) moves where the write fails, not the outcome."""
    more = write_jsonl(tmp_path / "more.jsonl", [fact("g1", "one more deploy note")])
    argv = tuple(str(more) if a == "{more}" else a for a in argv)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    try:
        proc = run_into(write_end, *argv, env={**store_env, "PYTHONUNBUFFERED": unbuffered})
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    # argparse itself ignores a failed write of --help and exits 0; a buffered one fails at our flush
    assert proc.returncode == (0 if "--help" in argv and unbuffered else 1)


@pytest.mark.parametrize("argv", [("status",), ("ingest", "{more}"), ("recall", "deploy", "--arm", "lexical")])
def test_a_closed_stdout_is_one_line_and_nothing_is_done(tmp_path, store_env, store_path, argv):
    more = write_jsonl(tmp_path / "more.jsonl", [fact("g1", "one more deploy note")])
    argv = tuple(str(more) if a == "{more}" else a for a in argv)
    before = snapshot(store_path)
    proc = run_into(None, *argv, env=store_env, close_stdout=True)
    assert proc.returncode == 1
    assert proc.stderr == f"recallfs {argv[0]}: standard output is closed; send it somewhere (> FILE, or > /dev/null)\n"
    assert snapshot(store_path) == before


@pytest.mark.parametrize("argv", [("ingest", "{file}"), ("init",), ("policy", "set")])
@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_explicit_store_in_a_missing_directory_is_an_error(tmp_path, argv, how):
    store = tmp_path / "no" / "such" / "dir" / "s.duckdb"
    src = write_jsonl(tmp_path / "m.jsonl", [fact("f1", "a note")])
    argv = tuple(str(src) if a == "{file}" else a for a in argv)
    if how == "flag":
        proc = run_cli(*argv, "--store", str(store), env=BASE)
    else:
        proc = run_cli(*argv, env={**BASE, "RECALLFS_STORE": str(store)})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"recallfs {argv[0]}: cannot create the store {store}: no directory {store.parent} "
                           "(only the default store's directory is created for you)\n")
    assert not (tmp_path / "no").exists()


def test_the_default_store_directory_is_created_on_demand(tmp_path):
    env = {**BASE, "RECALLFS_STORE": "", "XDG_DATA_HOME": str(tmp_path / "xdg")}
    src = write_jsonl(tmp_path / "m.jsonl", [fact("f1", "a note")])
    assert "1 written" in run_cli("ingest", str(src), env=env, check=True).stdout
    assert (tmp_path / "xdg" / "recallfs" / "store.duckdb").is_file()


def test_status_of_a_missing_store_says_so_and_exits_1(tmp_path):
    store = tmp_path / "missing.duckdb"
    env = {**BASE, "RECALLFS_STORE": str(store), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    proc = run_cli("status", env=env)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"store: {store} (missing)" and "mounts:" in proc.stdout
    assert proc.stderr == f"recallfs status: no store at {store}; create one with `recallfs init --store {store}`\n"
    proc = run_cli("status", "--json", env=env)
    assert proc.returncode == 1 and "no store at" in proc.stderr
    info = json.loads(proc.stdout)
    assert info["exists"] is False and "mounts" in info
    assert not store.exists()


MODEL_MODULES = ("torch", "transformers", "sentence_transformers")


def imported_modules(*argv: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the console script under `python -X importtime`: every module imported, by any thread."""
    proc = subprocess.run([sys.executable, "-X", "importtime", str(RECALLFS), *argv], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300, stdin=subprocess.DEVNULL)
    modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return proc, modules

def test_status_of_a_lake_this_host_has_not_joined_says_so_without_the_password(tmp_path):
    """Found 2026-12-07: status printed the lake URL with its password, and told the user to `init` the
    replica's path, which makes a single-file store instead of joining the lake."""
    url = f"ducklake:postgres:dbname=mem host=/nowhere password=s3cretpw;data={tmp_path}/lake/"
    env = {**BASE, "RECALLFS_STORE": url, "RECALLFS_REPLICA_DIR": str(tmp_path / "replicas"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    for argv in (["status"], ["status", "--json"]):
        proc = run_cli(*argv, env=env)
        assert proc.returncode == 1 and "s3cretpw" not in proc.stdout + proc.stderr, proc
        assert "password=***" in proc.stdout and "no copy of the lake" in proc.stderr, proc
        assert "init --store /" not in proc.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (("recall", "x"), "no store at"),
    (("recall", "x", "-k", "lots"), "-k lots: 'lots' is not a whole number"),
    (("recall", "x", "--workspace", "a/b/c"), "bad workspace"),
    (("ingest", "{file}", "--store", "{tmp}/no/dir/s.duckdb"), "no directory"),
    (("ingest", "{file}", "--workspace", "a/b/c"), "bad workspace"),
    (("reindex",), "no store at"),
    (("status",), "no store at"),
])
def test_errors_come_before_the_model_loads(tmp_path, argv, message):
    """Checked before the warm-up starts: no part of the model stack (seconds of imports) is loaded."""
    src = write_jsonl(tmp_path / "m.jsonl", [fact("f1", "a note")])
    argv = tuple(a.replace("{file}", str(src)).replace("{tmp}", str(tmp_path)) for a in argv)
    env = {**BASE, "RECALLFS_SEMANTIC": "true", "RECALLFS_STORE": str(tmp_path / "missing.duckdb"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    proc, modules = imported_modules(*argv, env=env)
    assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr
    loaded = sorted(m for m in modules if m.split(".")[0] in MODEL_MODULES)
    assert loaded == []


@pytest.mark.parametrize("argv", [("ingest", "{file}"), ("recall", "note"), ("status",), ("init",),
                                  ("mount", "{mnt}")])
def test_a_json_file_given_as_the_store_is_refused_and_kept(tmp_path, argv):
    """DuckDB opens an existing JSON file as an empty in-memory database: an ingest "succeeded" into it
    and kept nothing, and a read-only open was a CatalogException traceback."""
    src = write_jsonl(tmp_path / "m.jsonl", [fact("f1", "a note")])
    original = src.read_bytes()
    (tmp_path / "mnt").mkdir()
    argv = tuple({"{file}": str(src), "{mnt}": str(tmp_path / "mnt")}.get(a, a) for a in argv)
    proc = run_cli(*argv, "--store", str(src), env={**BASE, "XDG_RUNTIME_DIR": str(tmp_path / "run")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert f"{src} is not a DuckDB store" in proc.stderr
    assert src.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in ("run", "mnt")) == ["m.jsonl"]


def test_a_policy_for_a_workspace_that_holds_nothing_says_so(store_env):
    """Found 2026-12-07 by a README audit: a typo in --workspace set a policy nobody would ever meet, silently."""
    typo = run_cli("policy", "set", "--workspace", "acme/porj", "--deny-kind", "turn", env=store_env)
    assert typo.returncode == 0 and typo.stderr == (
        "note: acme/porj holds no memory yet; the policy applies to what is written there\n"), typo.stderr
    right = run_cli("policy", "set", "--workspace", "acme/proj", "--deny-kind", "turn", env=store_env)
    assert right.returncode == 0 and right.stderr == ""
