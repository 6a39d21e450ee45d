"""Two hosts, two daemons, one DuckLake store: real FUSE mounts driven with ls, cat and the real CLI.

Each host is a separate daemon process with its own mount point, replica directory and runtime
directory (tests/lake_helpers.host_env); they share only PostgreSQL and the lake's data path. The
figures of issue 16's must-show at full size come from `python -m recallfs.evals.bench_lake`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from lake_helpers import LakeSpec, host_env, pg_ctl, pg_signal
from mount_helpers import Mount, needs_fuse, stop_mount, wait_until

from conftest import RECALLFS, fact, run_cli, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount]


def mount_host(tmp: Path, host: str, lake: LakeSpec) -> Mount:
    env = host_env(tmp, host, lake)
    path = tmp / host / "mnt"
    path.mkdir(parents=True, exist_ok=True)
    run_cli("mount", str(path), env=env, check=True, timeout=180)
    return Mount(path, Path(env["RECALLFS_STORE"]), env)


def word(host: str, part: int, i: int) -> str:
    """A word only one record holds: the recall of it must find that record on either mount (the final z:
    no Porter suffix comes off, so no two of these stem alike)."""
    return f"{host}q{chr(97 + part)}" + "".join(chr(97 + int(d)) for d in f"{i:03d}") + "z"


def recall_ids(mount: Mount, query: str) -> set[str]:
    result = json.loads((mount.path / "recall" / query / "results.json").read_text())
    return {h["id"] for h in result["hits"]}


def health(mount: Mount) -> dict:
    proc = run_cli("status", "--json", env=mount.env, check=True)
    (info,) = [m for m in json.loads(proc.stdout)["mounts"] if m["mountpoint"] == str(mount.path)]
    return info["detail"]


@pytest.fixture
def hosts(lake: LakeSpec, tmp_path: Path):
    run_cli("init", env=host_env(tmp_path, "a", lake), check=True)
    a, b = mount_host(tmp_path, "a", lake), mount_host(tmp_path, "b", lake)
    try:
        yield a, b
    finally:
        stop_mount(a)
        stop_mount(b)


def test_both_mounts_see_every_record_of_concurrent_ingests(hosts: tuple[Mount, Mount], tmp_path: Path) -> None:
    a, b = hosts
    procs = []
    for mount in (a, b):
        name = mount.path.parent.name
        batches = []
        for part in range(4):
            recs = [fact(f"{name}-{part}-{i}", f"{word(name, part, i)} mentions the tidal observatory")
                    for i in range(100)]
            batches.append(write_jsonl(tmp_path / f"{name}-{part}.jsonl", recs))
        script = " && ".join(f"{RECALLFS} ingest {f}" for f in batches)
        procs.append(subprocess.Popen(["bash", "-c", script], env={**os.environ, **mount.env},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert out.count("(through the mount daemon)") == 4  # each host's CLI went through its daemon

    for mount in (a, b):
        assert wait_until(lambda m=mount: len(os.listdir(m.path / "facts")) >= 800, timeout=30)
        names = os.listdir(mount.path / "facts")
        assert len([n for n in names if n.endswith(".md")]) == 800, len(names)
        for host, part, i in (("a", 0, 0), ("a", 3, 99), ("b", 1, 42), ("b", 2, 7), ("a", 2, 61), ("b", 3, 99)):
            listing = subprocess.run(["ls", str(mount.path / "recall" / word(host, part, i))],
                                     capture_output=True, text=True, check=True).stdout.split()
            assert any(n.startswith("01-") and n.endswith(".md") for n in listing), (host, part, i, listing)
    assert health(a)["unexpected_errors"] == 0 and health(b)["unexpected_errors"] == 0


def test_a_write_on_one_mount_shows_on_the_other(hosts: tuple[Mount, Mount], tmp_path: Path) -> None:
    a, b = hosts
    waits = []
    for trial in range(5):
        word = f"zanzibarite{trial}"
        run_cli("ingest", str(write_jsonl(tmp_path / f"w{trial}.jsonl", [fact(f"w{trial}", f"{word} was found")])),
                env=a.env, check=True)
        t0 = time.monotonic()
        assert wait_until(lambda w=word: any(n.endswith(".md") for n in os.listdir(b.path / "recall" / w)),
                          timeout=30, interval=0.05)
        waits.append(time.monotonic() - t0)
    print(f"\nA's write seen in B's recall/ after {', '.join(f'{w:.2f}' for w in waits)} s")


def test_a_policy_committed_while_mounted_gates_every_path(hosts: tuple[Mount, Mount], tmp_path: Path) -> None:
    """Found 2026-12-07: a policy replayed into a mounted replica reached facts/ and recall but not
    history/ or index.md's counts (the catalog kept the versions the reader could read before). And
    `policy show` / `list` failed while a mount held the host's replica; they read the lake now."""
    a, b = hosts
    records = [fact("pay", "the salary bands are secret", id="f-pay", tags=["hr"]),
               fact("pub", "the canteen opens at noon", id="f-pub")]
    run_cli("ingest", str(write_jsonl(tmp_path / "hr.jsonl", records)), env=a.env, check=True)
    for mount in (a, b):
        assert wait_until(lambda m=mount: (m.path / "history" / "f-pay" / "v1.md").exists(), timeout=30)
    run_cli("policy", "set", "--deny-tag", "hr", env=a.env, check=True)  # for the mounts' own agent
    for mount in (a, b):
        assert wait_until(lambda m=mount: "f-pay" not in " ".join(os.listdir(m.path / "facts")), timeout=30)
        assert "f-pay" not in os.listdir(mount.path / "history")
        assert subprocess.run(["cat", str(mount.path / "history" / "f-pay" / "v1.md")],
                              capture_output=True).returncode != 0
        assert "salary" not in subprocess.run(["grep", "-r", "salary", str(mount.path / "history")],
                                              capture_output=True, text=True).stdout
        shown = run_cli("policy", "show", env=mount.env, check=True).stdout
        assert "hr" in shown and "default" not in shown, shown
        assert run_cli("policy", "list", env=mount.env, check=True).stdout.startswith("tester:")
    run_cli("policy", "rm", env=b.env, check=True)
    for mount in (a, b):
        assert wait_until(lambda m=mount: (m.path / "history" / "f-pay" / "v1.md").exists(), timeout=30)
        assert "(default)" in run_cli("policy", "show", env=mount.env, check=True).stdout


def test_an_outage_of_postgres_degrades_both_mounts_then_they_catch_up(
        hosts: tuple[Mount, Mount], lake: LakeSpec, tmp_path: Path) -> None:
    a, b = hosts
    run_cli("ingest", str(write_jsonl(tmp_path / "x.jsonl", [fact("x1", "the ferry timetable changed")])),
            env=a.env, check=True)
    assert wait_until(lambda: recall_ids(b, "ferry timetable") == {"f-x1"} or bool(recall_ids(b, "ferry timetable")))
    pg_ctl(lake.cluster, "stop")
    try:
        for mount in (a, b):
            assert wait_until(lambda m=mount: health(m)["store"]["stale"] is not None, timeout=30)
            result = json.loads((mount.path / "recall" / "ferry timetable k:5" / "results.json").read_text())
            assert len(result["hits"]) == 1 and result["degraded"], result
            assert "the shared lake is unreachable" in result["degraded_reason"]
            assert "degraded" in (mount.path / "index.md").read_text()
        proc = run_cli("ingest", str(write_jsonl(tmp_path / "y.jsonl", [fact("y1", "the ferry was late")])),
                       env=a.env)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode != 0 and len(lines) == 1 and "lake" in lines[0], proc.stderr
    finally:
        pg_ctl(lake.cluster, "start")
    for mount in (a, b):  # no restart: each daemon's next poll reaches the lake again
        assert wait_until(lambda m=mount: health(m)["store"]["stale"] is None, timeout=30)
    run_cli("ingest", str(tmp_path / "y.jsonl"), env=b.env, check=True)
    assert wait_until(lambda: len(recall_ids(a, "ferry late k:5")) == 2, timeout=30)


def test_a_postgres_that_hangs_degrades_the_mount_and_refuses_writes(
        hosts: tuple[Mount, Mount], lake: LakeSpec, tmp_path: Path) -> None:
    """Found 2026-12-07: a PostgreSQL that hangs (here: stopped with SIGSTOP, connections open) fails no
    query, so health said ok and an inbox write waited 600 s. Now a poll that has waited STALL_S makes the
    mount degraded, and a write is refused at once, storing nothing; both end when the server answers."""
    a, _ = hosts
    note = tmp_path / "hung.md"
    note.write_text("the ferry waits at the hung pier\n")
    pg_signal(lake.cluster, signal.SIGSTOP)
    try:
        assert wait_until(lambda: "has not answered" in str(health(a)["store"]["stale"]), timeout=60)
        assert "degraded" in (a.path / "index.md").read_text()
        proc = subprocess.run(["cp", str(note), str(a.path / "inbox" / "hung.md")], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode != 0, proc
        assert "has not answered" in (a.path / "inbox" / ".rejected" / "hung.md").read_text()
    finally:
        pg_signal(lake.cluster, signal.SIGCONT)
    assert wait_until(lambda: health(a)["store"]["stale"] is None, timeout=60)
    assert not recall_ids(a, "hung pier")  # the refused write stored nothing
    subprocess.run(["cp", str(note), str(a.path / "inbox" / "hung.md")], check=True, timeout=120)
    assert recall_ids(a, "hung pier")


def test_a_postgres_that_hangs_during_a_write_refuses_the_writes_queued_behind_it(
        hosts: tuple[Mount, Mount], lake: LakeSpec, tmp_path: Path) -> None:
    """Found 2026-12-07: a hang that caught a write (or a replay) inside the writer held it there while
    every later write queued behind it for up to 600 s, and health said ok: only the poll's own query was
    timed. Now any lake call that has waited STALL_S degrades the mount, and a queued write is refused."""
    a, _ = hosts
    first = write_jsonl(tmp_path / "first.jsonl", [fact("q1", "the quay crane was serviced")])
    note = tmp_path / "queued.md"
    note.write_text("the queued barge waits at the lock\n")
    pg_signal(lake.cluster, signal.SIGSTOP)
    held = None
    try:
        held = subprocess.Popen([str(RECALLFS), "ingest", str(first)], env={**os.environ, **a.env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # its lake call is in the writer now, waiting on the stopped server
        t0 = time.monotonic()
        proc = subprocess.run(["cp", str(note), str(a.path / "inbox" / "queued.md")], capture_output=True,
                              text=True, timeout=120)
        waited = time.monotonic() - t0
        assert proc.returncode != 0 and "Read-only file system" in proc.stderr, proc
        assert waited < 60, waited
        assert "has not answered" in (a.path / "inbox" / ".rejected" / "queued.md").read_text()
        assert "has not answered" in str(health(a)["store"]["stale"])
    finally:
        pg_signal(lake.cluster, signal.SIGCONT)
    _, err = held.communicate(timeout=120)
    assert "internal error" not in err and "Traceback" not in err, err
    assert wait_until(lambda: health(a)["store"]["stale"] is None, timeout=60)
    assert not recall_ids(a, "queued barge")  # the refused write stored nothing


def test_hosts_with_the_semantic_arm(lake: LakeSpec, tmp_path: Path) -> None:
    """Both daemons load the model; a batch ingested through A's daemon is embedded there and recalled on
    B by both arms (the daemon's start embeds what it replayed, on its writer thread)."""
    run_cli("ingest", str(write_jsonl(tmp_path / "first.jsonl", [fact("m1", "the marina closes in winter")])),
            env=host_env(tmp_path, "a", lake, RECALLFS_SEMANTIC="true"), check=True, timeout=600)
    mounts = []
    try:
        for host in ("a", "b"):
            env = host_env(tmp_path, host, lake, RECALLFS_SEMANTIC="true")
            path = tmp_path / host / "mnt"
            path.mkdir(parents=True, exist_ok=True)
            run_cli("mount", str(path), env=env, check=True, timeout=300)
            mounts.append(Mount(path, Path(env["RECALLFS_STORE"]), env))
        a, b = mounts
        assert wait_until(lambda: not health(b)["degraded"], timeout=300), health(b)
        second = write_jsonl(tmp_path / "second.jsonl", [fact("m2", "boats are hauled out before the frost")])
        run_cli("ingest", str(second), env=a.env, check=True)

        def semantic_hit() -> bool:
            result = json.loads((b.path / "recall" / "when are vessels lifted from the water" /
                                 "results.json").read_text())
            return any(h["id"] == "f-m2" or "hauled" in h.get("content", "") for h in result["hits"]) \
                and not result["degraded"]

        assert wait_until(semantic_hit, timeout=60)
        assert health(a)["unexpected_errors"] == 0 and health(b)["unexpected_errors"] == 0
    finally:
        for m in mounts:
            stop_mount(m)
