"""Shared by the mount tests: a small memory set, and a real mount of it in a subprocess."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import fact, run_cli, turn, write_jsonl

WORKSPACE = "acme/proj"
AGENT = "tester"

SAMPLE = [
    fact("ci-1", "CI runs on GitHub Actions with cargo nextest", id="f-ci", kind="decision",
         tags=["ci", "area/build"], entity="ci"),
    fact("deploy-1", "Deploy with make release from the main branch", id="f-deploy", kind="procedure",
         tags=["deploy"], entity="ci"),
    fact("db-1", "The staging database is Postgres 14", id="f-db14", slot="staging-db", entity="staging",
         created_at="2026-06-01T09:00:00Z"),
    fact("db-2", "The staging database is Postgres 16 since the upgrade", id="f-db16", slot="staging-db",
         entity="staging", created_at="2026-06-05T09:00:00Z"),
    fact("pref-1", "Maya prefers short commit messages", id="f-pref", kind="preference", entity="maya"),
    fact("secret-1", "The vault password rotates on fridays", id="f-secret", agent="other", visibility="private"),
    turn("2026-06-01-ci", 0, "maya", "hello, can you look at the flaky test?"),
    turn("2026-06-01-ci", 1, "atlas", "Sure: test_sync_windows fails on path separators."),
    turn("2026-06-01-ci", 2, "maya", "Nextest retries would hide it, so fix the separator instead."),
    turn("2026-06-01-ci", 2, "maya", "And a second turn with the same seq and speaker, to test names.",
         source_id="2026-06-01-ci#2b"),
    turn("planning/q3", 0, "maya", "What ships in Q3? The support group tooling."),
    {"type": "summary", "source_id": "2026-06-01-ci#summary", "session": "2026-06-01-ci", "title": "CI session",
     "content": "Fixed the flaky Windows test (path separators) instead of adding retries.",
     "created_at": "2026-06-01T10:30:00Z"},
]
SAMPLE_FACT_IDS = {"f-ci", "f-deploy", "f-db16", "f-pref"}  # current and visible to `tester`


def fuse_problem() -> str | None:
    """Why a real mount cannot run here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this machine or container)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (apt-get install fuse3)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not accessible to this user (mounting needs root here)"
    return None


needs_fuse = pytest.mark.skipif(fuse_problem() is not None, reason=str(fuse_problem()))


@dataclass
class Mount:
    path: Path
    store: Path
    env: dict[str, str]

    def cli(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=self.env, check=check, timeout=timeout)

    def status(self) -> dict:
        out = self.cli("status", "--store", str(self.store), "--json").stdout
        return json.loads(out)

    def mount_info(self) -> dict:
        for m in self.status()["mounts"]:
            if m["mountpoint"] == str(self.path):
                return m
        raise AssertionError(f"{self.path} is not in recallfs status")


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        "RECALLFS_STORE": str(tmp / "store.duckdb"), "RECALLFS_WORKSPACE": WORKSPACE, "RECALLFS_AGENT": AGENT,
        "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(tmp / "run"), **extra,
    }


def build_store(tmp: Path, records: list, env: dict[str, str], name: str = "sample.jsonl") -> Path:
    data = write_jsonl(tmp / name, records)
    run_cli("ingest", str(data), env=env, check=True)
    return Path(env["RECALLFS_STORE"])


def is_mounted(path: Path) -> bool:
    target = str(path)
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == target for line in fh)


def start_mount(tmp: Path, env: dict[str, str], name: str = "mnt") -> Mount:
    path = tmp / name
    path.mkdir(exist_ok=True)
    (tmp / "run").mkdir(exist_ok=True)
    run_cli("mount", str(path), env=env, check=True, timeout=180)
    return Mount(path, Path(env["RECALLFS_STORE"]), env)


def stop_mount(mount: Mount) -> None:
    """Unmount as a user would; whatever is left is detached lazily so teardown never hangs."""
    if is_mounted(mount.path):
        run_cli("umount", str(mount.path), env=mount.env, timeout=60)
    if is_mounted(mount.path):
        subprocess.run(["fusermount3", "-u", "-z", str(mount.path)], capture_output=True, timeout=30)


# Runs the real CLI (or one control request) as another uid. The venv's interpreter lives under /root,
# which other users cannot enter, so the process starts as root, imports what the commands load lazily,
# then drops to the uid (and its group, no others) before doing anything: the kernel then reports that uid
# as the peer on the control socket, as it would for that user's own `recallfs`.
_AS_UID = """
import json, os, sys
import recallfs.mount.cli, recallfs.mount.control_client, recallfs.mount.daemon
import recallfs.query.embedder, recallfs.query.formats, recallfs.query.ingest_file, recallfs.query.recall
import recallfs.query.store
uid, gid, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
if mode == "cli":
    sys.exit(recallfs.mount.cli.main(sys.argv[4:]))
try:
    print(json.dumps(recallfs.mount.control_client.request(sys.argv[4], json.loads(sys.argv[5]), timeout=120)))
except recallfs.mount.control_client.ControlError as exc:
    print(json.dumps({"refused": str(exc)}))
"""


def run_cli_as(uid: int, *args: str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`recallfs ARGS` in a process running as `uid`. A routed recall sends the settings its caller chose,
    so RECALLFS_SEMANTIC is left to the daemon (the env's value is dropped, not sent)."""
    env = {k: v for k, v in (env or {}).items() if k != "RECALLFS_SEMANTIC"}
    return _as_uid(uid, ["cli", *args], env, timeout)


def request_as(uid: int, store: Path, payload: dict) -> dict:
    """One raw control request as `uid`: the daemon's reply, None (no daemon) or {"refused": why}."""
    proc = _as_uid(uid, ["request", str(store), json.dumps(payload)], {}, 180)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _as_uid(uid: int, args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    gid = pwd.getpwuid(uid).pw_gid
    return subprocess.run([sys.executable, "-c", _AS_UID, str(uid), str(gid), *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=timeout, stdin=subprocess.DEVNULL, cwd="/")


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    """Poll for a state change driven by another process (not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def expected_tree(store: Path, org: str, workspace: str, agent: str) -> dict[str, int]:
    """What the tree outside recall/ must hold, counted with plain SQL (not through the mount's code):
    the default read policy shows workspace-visible memories and the agent's own private ones."""
    from recallfs.query.store import Store

    with Store(store, read_only=True) as s:
        schema = s.partition(org, workspace)
        assert schema is not None
        cur = s.cursor()
        vis = "(m.visibility = 'workspace' OR m.agent = ?)"

        def one(sql: str) -> int:
            return int(cur.execute(sql.format(s=schema, vis=vis), [agent]).fetchone()[0])

        current = "m.rid IN (SELECT rid FROM {s}.heads)"
        counts = {
            "facts": one(f"SELECT count(*) FROM {{s}}.facts m WHERE {{vis}} AND {current}"),
            "tag_links": one(f"SELECT coalesce(sum(len(m.tags)), 0) FROM {{s}}.facts m WHERE {{vis}} AND {current}"),
            "sessions_with_summary": one(
                f"SELECT count(DISTINCT m.session) FROM {{s}}.summaries m WHERE {{vis}} AND {current}"),
            "sessions_with_turns": one(
                f"SELECT count(DISTINCT m.session) FROM {{s}}.turns m WHERE {{vis}} AND {current}"),
            "turns": one(f"SELECT count(*) FROM {{s}}.turns m WHERE {{vis}} AND {current}"),
            "entities": one(f"SELECT count(DISTINCT m.entity) FROM {{s}}.facts m WHERE {{vis}} AND {current}"),
            "versions": sum(one(f"SELECT count(*) FROM {{s}}.{t} m WHERE {{vis}}")
                            for t in ("facts", "summaries", "turns")),
        }
    counts["files"] = (1 + 2 * counts["facts"] + counts["tag_links"] + counts["sessions_with_summary"]
                       + counts["sessions_with_turns"] + counts["turns"] + counts["entities"] + counts["versions"])
    return counts


def serve(tmp: Path, records: list, **env: str) -> Iterator[Mount]:
    """The body of a mount fixture: `records` ingested into a fresh store under `tmp`, mounted until the
    fixture ends."""
    full = base_env(tmp, **env)
    build_store(tmp, records, full)
    mount = start_mount(tmp, full)
    try:
        yield mount
    finally:
        stop_mount(mount)


def module_mount(factory: pytest.TempPathFactory, name: str, **env: str) -> Iterator[Mount]:
    """The body of a module-scoped fixture: the sample store, mounted once for a module's tests."""
    yield from serve(factory.mktemp(name), SAMPLE, **env)
