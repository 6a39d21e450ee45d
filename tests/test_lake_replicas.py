"""A DuckLake store shared by hosts, through the real CLI and a real PostgreSQL (evals/pg_cluster.py):
each "host" has its own replica directory, and shares only PostgreSQL and the data path with the other.

What is checked: a write on one host reaches the other's replica; re-ingesting does not grow the lake;
new versions, deletions and policies replay in commit order; two hosts ingesting at once (the same file
or different ones) lose nothing and duplicate nothing; an unreachable lake leaves recall answering,
marked degraded with the reason, ingest refused in one line, and a catch-up once it is back.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
from lake_helpers import LakeSpec, host_env, pg_ctl

from recallfs.query.records import derive_id

from conftest import RECALLFS, fact, run_cli, write_jsonl


def heads(env: dict[str, str]) -> dict[str, tuple[int, str]]:
    """memory id -> (version, content) of the current memories in this host's replica."""
    replicas = Path(env["RECALLFS_REPLICA_DIR"])
    (replica,) = replicas.glob("*/replica.duckdb")
    with duckdb.connect(str(replica), read_only=True) as conn:
        schemas = [r[0] for r in conn.execute("SELECT schema_name FROM main.partitions").fetchall()]
        out = {}
        for schema in schemas:
            for tbl in ("facts", "turns", "summaries"):
                for mem_id, version, content, status in conn.execute(
                        f"SELECT t.id, t.version, t.content, t.status FROM {schema}.{tbl} t "
                        f"JOIN {schema}.heads h ON h.rid = t.rid").fetchall():
                    if status != "deleted":
                        out[mem_id] = (version, content)
        return out


def lake_rows(spec: LakeSpec) -> int:
    """Record rows the lake holds (every batch ever committed)."""
    from recallfs.query.lake import Lake
    from recallfs.query.lake_location import parse_lake

    lk = Lake(parse_lake(spec.url))
    try:
        return sum(len(b.records) for b in lk.changes(0, lk.snapshot()))
    finally:
        lk.close()


def recall_json(env: dict[str, str], query: str) -> dict:
    proc = run_cli("recall", "--format", "json", "--arm", "lexical", query, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_write_on_one_host_reaches_the_other(lake: LakeSpec, tmp_path: Path) -> None:
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    out = run_cli("init", env=a, check=True).stdout
    assert out.startswith("lake ready: ducklake:postgres:") and "replica" in out
    facts = [fact(f"f{i}", f"the harbour crane number {i} was serviced") for i in range(30)]
    out = run_cli("ingest", str(write_jsonl(tmp_path / "one.jsonl", facts)), env=a, check=True).stdout
    assert "30 written" in out
    hits = recall_json(b, "harbour crane serviced")
    assert hits["total_candidates"] == 30 and not hits["degraded"]
    assert heads(a) == heads(b) and len(heads(b)) == 30

    # Re-ingested on the other host: nothing written, and nothing appended to the lake.
    before = lake_rows(lake)
    out = run_cli("ingest", str(tmp_path / "one.jsonl"), env=b, check=True).stdout
    assert "0 written" in out and "30 unchanged" in out
    assert lake_rows(lake) == before == 30

    # A new version and a deletion on B replay on A in commit order.
    changed = [fact("f1", "the harbour crane number 1 was replaced"),
               fact("f2", "the harbour crane number 2 was serviced", status="deleted")]
    run_cli("ingest", str(write_jsonl(tmp_path / "two.jsonl", changed)), env=b, check=True)
    recall_json(a, "harbour crane")  # an unmounted recall replays first
    assert heads(a) == heads(b)
    versions = heads(a)
    assert len(versions) == 29
    assert [v for v in versions.values() if "replaced" in v[1]] == [(2, "the harbour crane number 1 was replaced")]


def head_links(env: dict[str, str]) -> dict[str, tuple[int, str | None, str | None]]:
    """memory id -> (version, supersedes, superseded_by) of each fact's current version in this host's replica."""
    replicas = Path(env["RECALLFS_REPLICA_DIR"])
    (replica,) = replicas.glob("*/replica.duckdb")
    with duckdb.connect(str(replica), read_only=True) as conn:
        (schema,) = [r[0] for r in conn.execute("SELECT schema_name FROM main.partitions").fetchall()]
        return {str(i): (int(v), s, b) for i, v, s, b in conn.execute(
            f"SELECT t.id, t.version, t.supersedes, t.superseded_by FROM {schema}.facts t "
            f"JOIN {schema}.heads h ON h.rid = t.rid").fetchall()}


def test_links_kept_or_cleared_on_one_host_replay_the_same_on_the_other(lake: LakeSpec, tmp_path: Path) -> None:
    """A fact that becomes its memory's head without naming a link keeps the head's; one naming it null
    clears it (query/ingest._decide). Replayed, a record must not take the head's links again: the
    host that committed it decided them (found 2026-12-07: the flags behind that decision are not lake
    columns, and a replayed record had to say its links were decided)."""
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    old = fact("lang-1", "The project is written in Go", id="f-lang", created_at="2026-01-13T00:00:00Z")
    new = fact("lang-2", "The project was rewritten in Rust", id="f-lang-2", supersedes="f-lang",
               created_at="2026-02-13T00:00:00Z")
    run_cli("ingest", str(write_jsonl(tmp_path / "one.jsonl", [old, new])), env=a, check=True)
    # a new version that names no link: it keeps `supersedes`, on A and as B replays it
    reworded = {k: v for k, v in new.items() if k != "supersedes"}
    reworded.update(content="The project was rewritten in Rust in 2026", created_at="2026-03-01T00:00:00Z")
    run_cli("ingest", str(write_jsonl(tmp_path / "two.jsonl", [reworded])), env=a, check=True)
    recall_json(b, "project rewritten")  # B catches up
    assert head_links(a) == head_links(b)
    assert head_links(b)["f-lang-2"] == (2, "f-lang", None)
    # B clears the link (null): A replays the clearing, and no host brings the head's link back
    cleared = dict(reworded, supersedes=None, created_at="2026-04-01T00:00:00Z",
                   content="The project is being rewritten in Rust")
    run_cli("ingest", str(write_jsonl(tmp_path / "three.jsonl", [cleared])), env=b, check=True)
    recall_json(a, "project rewritten")
    assert head_links(a) == head_links(b)
    assert head_links(a)["f-lang-2"] == (3, None, None)
    # a fourth version naming nothing keeps the cleared state, on both
    again = {k: v for k, v in cleared.items() if k != "supersedes"}
    again.update(content="The project is mostly rewritten in Rust", created_at="2026-05-01T00:00:00Z")
    run_cli("ingest", str(write_jsonl(tmp_path / "four.jsonl", [again])), env=a, check=True)
    recall_json(b, "project rewritten")
    assert head_links(a) == head_links(b)
    assert head_links(b)["f-lang-2"] == (4, None, None)


def test_policies_are_shared(lake: LakeSpec, tmp_path: Path) -> None:
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    records = [fact("pub", "the quarterly figures are public"),
               fact("sec", "the quarterly figures draft is secret", agent="atlas", visibility="private")]
    run_cli("ingest", str(write_jsonl(tmp_path / "p.jsonl", records)), env={**a, "RECALLFS_AGENT": "atlas"},
            check=True)
    out = run_cli("policy", "set", "--agent", "guest", "--authors", "nobody", env=a, check=True).stdout
    assert "committed to the lake" in out
    guest = {**b, "RECALLFS_AGENT": "guest"}
    assert recall_json(guest, "quarterly figures")["total_candidates"] == 0
    atlas = {**b, "RECALLFS_AGENT": "atlas"}
    assert recall_json(atlas, "quarterly figures")["total_candidates"] == 2
    run_cli("policy", "rm", "--agent", "guest", env=b, check=True)
    assert recall_json(guest, "quarterly figures")["total_candidates"] == 1  # the default: workspace only


def test_two_hosts_ingesting_at_once_lose_and_duplicate_nothing(lake: LakeSpec, tmp_path: Path) -> None:
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    run_cli("init", env=a, check=True)
    files = {}
    for host in ("a", "b"):
        for part in range(3):
            recs = [fact(f"{host}-{part}-{i}", f"{host} record {part} {i} about lighthouse keepers")
                    for i in range(150)]
            files[(host, part)] = write_jsonl(tmp_path / f"{host}{part}.jsonl", recs)
    shared = write_jsonl(tmp_path / "shared.jsonl",
                         [fact(f"s{i}", f"shared record {i} about lighthouse keepers") for i in range(100)])
    procs = []
    for host, env in (("a", a), ("b", b)):
        # each host: its own three files in a row, and the same shared file as the other, all at once
        script = " && ".join(f"{RECALLFS} ingest {files[(host, p)]}" for p in range(3))
        procs.append(subprocess.Popen(["bash", "-c", f"{script} && {RECALLFS} ingest {shared}"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    recall_json(a, "lighthouse")
    recall_json(b, "lighthouse")
    ha, hb = heads(a), heads(b)
    assert ha == hb
    assert len(ha) == 2 * 3 * 150 + 100  # nothing lost, nothing twice
    assert all(v == 1 for v, _ in ha.values())  # the shared file, ingested twice at once, made no second version


def test_an_unreachable_lake_degrades_and_catches_up(lake: LakeSpec, tmp_path: Path) -> None:
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    run_cli("ingest", str(write_jsonl(tmp_path / "x.jsonl", [fact("x1", "the ferry timetable changed")])),
            env=a, check=True)
    assert recall_json(b, "ferry timetable")["total_candidates"] == 1
    pg_ctl(lake.cluster, "stop")
    try:
        result = recall_json(b, "ferry timetable")
        assert result["total_candidates"] == 1 and result["degraded"]
        assert "the shared lake is unreachable" in result["degraded_reason"]
        proc = run_cli("ingest", str(write_jsonl(tmp_path / "y.jsonl", [fact("y1", "the ferry was late")])), env=a)
        assert proc.returncode != 0
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "lake" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    finally:
        pg_ctl(lake.cluster, "start")
    run_cli("ingest", str(tmp_path / "y.jsonl"), env=a, check=True)
    result = recall_json(b, "ferry")
    assert result["total_candidates"] == 2 and not result["degraded"]


def test_compaction_keeps_the_change_feed(lake: LakeSpec, tmp_path: Path) -> None:
    """Small batches make small files (and inserts of 10 rows or fewer are inlined into PostgreSQL);
    `recallfs compact` merges them, and a host that last read the lake before it still catches up."""
    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    files = []
    for i in range(6):
        recs = [fact(f"c{i}-{j}", f"compaction check {i} {j} about canal locks") for j in range(3 if i % 2 else 40)]
        files.append(write_jsonl(tmp_path / f"c{i}.jsonl", recs))
    for f in files[:3]:
        run_cli("ingest", str(f), env=a, check=True)
    assert recall_json(b, "canal locks k:5")["total_candidates"] > 0  # B's watermark: mid-way
    # the other three while compactions run beside them
    writer = subprocess.Popen(["bash", "-c", " && ".join(f"{RECALLFS} ingest {f}" for f in files[3:])],
                              env={**os.environ, **a}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(3):
        out = run_cli("compact", env=a, check=True).stdout
        assert out.startswith("compacted ducklake:postgres:")
    _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    run_cli("compact", env=a, check=True)
    run_cli("ingest", str(write_jsonl(tmp_path / "late.jsonl", [fact("late", "late canal locks note")])),
            env=a, check=True)
    recall_json(b, "canal locks")
    assert heads(a) == heads(b) and len(heads(b)) == 3 * 40 + 3 * 3 + 1


def vectors_of(env: dict[str, str]) -> dict[tuple[str, int], list[int]]:
    """(memory id, window) -> float16 bits of its vector, in this host's replica."""
    (replica,) = Path(env["RECALLFS_REPLICA_DIR"]).glob("*/replica.duckdb")
    with duckdb.connect(str(replica), read_only=True) as conn:
        out = {}
        for (schema,) in conn.execute("SELECT schema_name FROM main.partitions").fetchall():
            for tbl in ("facts", "turns", "summaries"):
                for mem_id, chunk, emb in conn.execute(
                        f"SELECT t.id, v.chunk, v.embedding FROM {schema}.vectors v JOIN {schema}.{tbl} t "
                        "ON t.rid = v.rid").fetchall():
                    out[(mem_id, chunk)] = list(emb)
        return out


def test_only_the_ingesting_host_embeds(lake: LakeSpec, tmp_path: Path) -> None:
    """The batch carries its vectors: host B, with no model at all, holds the same vectors as host A,
    every window of a long record included."""
    a = host_env(tmp_path, "a", lake, RECALLFS_SEMANTIC="true")
    b = host_env(tmp_path, "b", lake)  # semantic off: this host cannot embed anything itself
    long_text = " ".join(f"paragraph {i} of the long design note on the tide gauge network." for i in range(80))
    records = [fact("short", "the tide gauge reads high water"), fact("long", long_text)]
    run_cli("ingest", str(write_jsonl(tmp_path / "v.jsonl", records)), env=a, check=True, timeout=600)
    recall_json(b, "tide gauge")  # replays
    va, vb = vectors_of(a), vectors_of(b)
    assert va == vb
    long_id = derive_id("facts", "long")
    assert {k for k in va if k[0] == long_id} >= {(long_id, 0), (long_id, 1)}


def test_a_batch_that_cannot_be_replayed_is_reported(lake: LakeSpec, tmp_path: Path) -> None:
    """A batch no replica can replay (written to the lake by something other than recallfs) leaves each
    host serving what it holds, marked degraded with the reason, never a crash or a silent gap."""
    from recallfs.query.lake import Lake
    from recallfs.query.lake_location import parse_lake

    a, b = host_env(tmp_path, "a", lake), host_env(tmp_path, "b", lake)
    run_cli("ingest", str(write_jsonl(tmp_path / "ok.jsonl", [fact("ok", "the lock keeper's log")])), env=a, check=True)
    foreign = Lake(parse_lake(lake.url))
    try:
        with foreign._connection() as conn:
            conn.execute("INSERT INTO lake.records (batch, item, tbl, source_id, content, created_at, org, workspace, "
                         "agent, id) VALUES ('foreign', 0, 'no_such_table', 's', 'x', now(), 'acme', 'proj', 'x', 'x')")
    finally:
        foreign.close()
    result = recall_json(b, "lock keeper")
    assert result["total_candidates"] == 1 and result["degraded"]
    assert "could not replay the lake past snapshot" in result["degraded_reason"], result["degraded_reason"]


def _lake_sessions(spec: LakeSpec) -> list[tuple[str, str]]:
    """(state, query) of every other client session on the lake's catalog database."""
    from lake_helpers import DB_USER, PORT, server_bin

    sql = ("SELECT state, left(query, 80) FROM pg_stat_activity WHERE backend_type = 'client backend' "
           f"AND datname = '{spec.database}' AND pid <> pg_backend_pid()")
    out = subprocess.run([str(server_bin() / "psql"), "-h", str(spec.cluster.root), "-p", str(PORT), "-U", DB_USER,
                          "-d", spec.database, "-AtF", "\t", "-c", sql], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    return [tuple(line.split("\t", 1)) for line in out.splitlines() if line]  # type: ignore[misc]


def test_a_replicas_polls_leave_no_transaction_open_on_postgres(lake: LakeSpec, tmp_path: Path) -> None:
    """Between polls a replica's catalog session must be idle, not "idle in transaction": an open
    transaction holds back PostgreSQL's vacuum for as long as the replica runs (found 2026-12-05: the
    snapshot read's unread result kept DuckLake's transaction open)."""
    from recallfs.query.lake import Lake
    from recallfs.query.lake_location import parse_lake

    run_cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", [fact("a", "the weir gauge reads high")])),
            env=host_env(tmp_path, "a", lake), check=True)
    lk = Lake(parse_lake(lake.url))
    try:
        assert lk.snapshot() > 0
        sessions = _lake_sessions(lake)
        assert sessions and all(state == "idle" for state, _ in sessions), sessions
        assert len(lk.changes(0, lk.snapshot())) == 1
        sessions = _lake_sessions(lake)
        assert sessions and all(state == "idle" for state, _ in sessions), sessions
    finally:
        lk.close()
