"""`recallfs migrate`: a single-file store into a lake and back keeps every version, head and policy,
and recall answers the same; refusals say why and leave nothing half made."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from lake_helpers import LakeSpec, host_env

from conftest import fact, run_cli, write_jsonl

QUERIES = ["deploy friday", "database upgrade", "quarterly figures", "ferry timetable"]


def rows(store: Path) -> list[tuple]:
    """Every version of every memory, and the policies, as a reader of the file sees them."""
    with duckdb.connect(str(store), read_only=True) as conn:
        out = []
        for (schema,) in conn.execute("SELECT schema_name FROM main.partitions ORDER BY 1").fetchall():
            for tbl in ("facts", "summaries", "turns"):
                out += conn.execute(f"SELECT '{tbl}', id, version, content, status, created_at, agent, visibility, "
                                    f"rid IN (SELECT rid FROM {schema}.heads) FROM {schema}.{tbl} "
                                    "ORDER BY id, version").fetchall()
        out += conn.execute("SELECT org, workspace, agent, authors, visibilities, writes FROM main.policies "
                            "ORDER BY 1, 2, 3").fetchall()
        return out


def recalls(env: dict[str, str]) -> list[list[str]]:
    out = []
    for q in QUERIES:
        proc = run_cli("recall", "--format", "json", "--arm", "lexical", q, env=env, check=True)
        out.append([h["id"] for h in json.loads(proc.stdout)["hits"]])
    return out


def test_into_a_lake_and_back_keeps_everything(lake: LakeSpec, tmp_path: Path) -> None:
    source = tmp_path / "source.duckdb"
    env = {"RECALLFS_STORE": str(source), "RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "atlas",
           "RECALLFS_SEMANTIC": "false"}
    first = [fact("deploy", "we deploy on friday afternoons"), fact("db", "the database upgrade is planned"),
             fact("fig", "quarterly figures draft", visibility="private"),
             fact("ferry", "the ferry timetable", created_at="2026-05-01T00:00:00Z")]
    run_cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", first)), env=env, check=True)
    second = [fact("deploy", "we never deploy on friday afternoons", created_at="2026-07-01T00:00:00Z"),
              fact("ferry", "the old ferry timetable", created_at="2026-01-01T00:00:00Z"),  # history only
              fact("db", "the database upgrade is planned", status="deleted", created_at="2026-08-01T00:00:00Z")]
    run_cli("ingest", str(write_jsonl(tmp_path / "b.jsonl", second)), env=env, check=True)
    run_cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", [fact("o", "other workspace deploy")])),
            env={**env, "RECALLFS_WORKSPACE": "acme/other"}, check=True)
    run_cli("policy", "set", "--agent", "guest", "--authors", "atlas", "--deny-writes", env=env, check=True)

    out = run_cli("migrate", "--from", str(source), "--to", lake.url, env=env, check=True).stdout
    assert "8 memory versions and 1 policies" in out, out
    back = tmp_path / "back.duckdb"
    out = run_cli("migrate", "--from", lake.url, "--to", str(back), env=env, check=True).stdout
    assert "8 memory versions and 1 policies" in out, out
    assert rows(back) == rows(source)
    assert recalls({**env, "RECALLFS_STORE": str(back)}) == recalls(env)
    # a host mounting the lake reads the same
    assert recalls({**host_env(tmp_path, "h", lake), "RECALLFS_AGENT": "atlas"}) == recalls(env)
    # the store written back is an ordinary store: nothing ties it to the lake
    with duckdb.connect(str(back), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM main.meta WHERE key LIKE 'lake%'").fetchone() == (0,)


def test_refusals(lake: LakeSpec, tmp_path: Path) -> None:
    taken = tmp_path / "taken.duckdb"
    taken.write_bytes(b"")
    cases = [(("--from", str(taken), "--to", str(tmp_path / "x.duckdb")), "one of --from and --to must be"),
             (("--from", lake.url, "--to", str(taken)), "exists: migrate writes a new store"),
             (("--from", lake.url, "--to", str(tmp_path / "no" / "x.duckdb")), "no directory"),
             (("--from", str(tmp_path / "none.duckdb"), "--to", lake.url), "no store at")]
    for args, why in cases:
        proc = run_cli("migrate", *args)
        assert proc.returncode != 0 and why in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "x.duckdb").exists()
