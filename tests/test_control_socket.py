"""The control socket cannot be spoofed, and it answers each caller as who the kernel says it is.

Client side: root's `recallfs recall`, `ingest` and `status` meet an impostor, a real process running as
nobody (uid 65534) that binds `<store>.sock` in a directory nobody owns, answers like a daemon and records
every byte it receives. They must exit 1 with one clear sentence, print nothing of the impostor's, and
send it nothing (an ingest request carries a file path). Also: a stale socket of another uid (not "no
daemon": the CLI must not open the store either), a socket file that looks like root's while nobody
listens on it (SO_PEERCRED), a symlink in place of the socket, and untrusted runtime directories.

Server side, on real mounts: a --map-uid mount answers a recall as the caller's mapped agent whatever
the request claims, refuses unmapped uids (root included) and a mapped uid's ingest, and still serves
root's `status`; a plain mount keeps its 0600 socket and its owner may recall as any agent.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, request_as, run_cli_as, stop_mount, wait_until
from test_scope_leaks import ensure_user, needs_users

from conftest import RECALLFS, fact, run_cli, write_jsonl

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the impostor runs as another uid")
RECORDS = [
    fact("p-1", "ops uses the plover queue for retries", id="f-plover", agent="ops"),
    fact("p-2", "ops keeps the plover keys in the vault", id="f-keys", agent="ops", kind="secret"),
    fact("p-3", "auditor notes the plover audit finished", id="f-audit", agent="auditor", visibility="private"),
]

# A fake daemon: binds PATH as UID (0: stays root), answers every connection like a daemon would, then
# records what it received (one JSON line per connection) until EOF. One connection at a time, so once a
# later connection is recorded every earlier one is.
IMPOSTOR = r"""
import json, os, socket, sys
path, log, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
if uid:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
def record(entry):
    with open(log, "a") as fh:
        fh.write(json.dumps(entry) + "\n")
record({"ready": True})
reply = json.dumps({"ok": True, "output": "IMPOSTOR OUTPUT\n", "pid": 1, "workspaces": {"IMPOSTOR/x": {}},
                    "report": {"written": 9, "new_versions": 9, "unchanged": 0, "workspaces": ["IMPOSTOR/x"]}})
while True:
    conn, _ = srv.accept()
    conn.settimeout(60)
    got = b""
    try:
        conn.sendall(reply.encode() + b"\n")
        while chunk := conn.recv(65536):
            got += chunk
    except OSError:
        pass
    conn.close()
    record({"bytes": len(got), "data": got.decode(errors="replace")})
"""


@dataclass
class Impostor:
    proc: subprocess.Popen
    path: Path
    log: Path

    def received(self) -> list[dict]:
        """Every connection it had before this call, in order (a sentinel connection flushes the record)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(self.path))
            s.sendall(b"SENTINEL\n")
            s.shutdown(socket.SHUT_WR)
            s.recv(65536)
        assert wait_until(lambda: "SENTINEL" in self.log.read_text(), timeout=60)
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [e for e in lines if "bytes" in e and "SENTINEL" not in e["data"]]


def start_impostor(path: Path, uid: int, log: Path) -> Impostor:
    errors = log.with_suffix(".err")
    with open(errors, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(path), str(log), str(uid)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    if not wait_until(lambda: log.exists() and "ready" in log.read_text(), timeout=60):
        proc.kill()
        raise AssertionError(f"the impostor did not start: {errors.read_text()!r}")
    return Impostor(proc, path, log)


@pytest.fixture
def world() -> Iterator[dict]:
    """A real store (root's) in a directory that nobody owns and may write."""
    base = Path(tempfile.mkdtemp(prefix="recallfs-spoof-"))
    base.chmod(0o755)
    os.chown(base, NOBODY, NOBODY)
    (base / "run").mkdir()
    env = {"RECALLFS_STORE": str(base / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
           "RECALLFS_AGENT": "ops", "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(base / "run")}
    run_cli("ingest", str(write_jsonl(base / "m.jsonl", RECORDS)), env=env, check=True)
    new = write_jsonl(base / "new.jsonl", [fact("p-9", "ops moved the heron cluster", id="f-heron", agent="ops")])
    impostors: list[Impostor] = []
    yield {"base": base, "env": env, "sock": base / "store.duckdb.sock", "new": new, "impostors": impostors}
    for imp in impostors:
        imp.proc.kill()
        imp.proc.wait(timeout=60)
    shutil.rmtree(base, ignore_errors=True)


def impostor(world: dict, uid: int = NOBODY, path: Path | None = None) -> Impostor:
    imp = start_impostor(path or world["sock"], uid, world["base"] / f"impostor-{len(world['impostors'])}.log")
    world["impostors"].append(imp)
    return imp


def commands(world: dict) -> dict[str, list[str]]:
    return {"recall": ["recall", "plover"], "ingest": ["ingest", str(world["new"])], "status": ["status"]}


def assert_refused(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "IMPOSTOR" not in proc.stdout + proc.stderr and "plover" not in proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def assert_store_untouched(world: dict) -> None:
    """Nothing was ingested: with the socket gone the CLI opens the store itself and finds no heron."""
    world["sock"].unlink(missing_ok=True)
    out = run_cli("recall", "heron", "--format", "json", env=world["env"], check=True).stdout
    assert json.loads(out)["hits"] == []


# -- client side -----------------------------------------------------------------------------------------
@needs_root
@pytest.mark.parametrize("command", ["recall", "ingest", "status"])
def test_an_impostors_socket_is_refused_and_told_nothing(world: dict, command: str) -> None:
    imp = impostor(world)
    assert world["sock"].stat().st_uid == NOBODY
    proc = run_cli(*commands(world)[command], env=world["env"])
    assert_refused(proc, f"refusing to use {world['sock']}: it belongs to uid {NOBODY}, not to you or root",
                   "remove it")
    assert imp.received() == []  # not even a connection
    imp.proc.kill()
    assert_store_untouched(world)


@needs_root
@pytest.mark.parametrize("command", ["recall", "ingest", "status"])
def test_a_listener_of_another_uid_behind_a_roots_socket_file_gets_zero_bytes(world: dict, command: str) -> None:
    """The file can be swapped between the check and connect(); the kernel's peer uid cannot."""
    imp = impostor(world)
    os.chown(world["sock"], 0, 0)  # what lstat may see in that race
    proc = run_cli(*commands(world)[command], env=world["env"])
    assert_refused(proc, f"refusing to use {world['sock']}: the process listening on it (pid {imp.proc.pid}) "
                   f"runs as uid {NOBODY}, not as you or root")
    received = imp.received()
    assert received and all(e["bytes"] == 0 for e in received), received  # connected, then told nothing


@needs_root
@pytest.mark.parametrize("command", ["recall", "ingest"])
def test_a_stale_socket_of_another_uid_is_an_error_not_no_daemon(world: dict, command: str) -> None:
    imp = impostor(world)
    imp.proc.kill()  # it leaves its socket file behind, with nobody listening
    imp.proc.wait(timeout=60)
    world["impostors"].remove(imp)
    proc = run_cli(*commands(world)[command], env=world["env"])
    assert_refused(proc, f"it belongs to uid {NOBODY}, not to you or root")
    assert_store_untouched(world)  # the CLI did not fall back to the store either


@needs_root
@pytest.mark.parametrize("command", ["recall", "ingest", "status"])
def test_a_symlink_in_place_of_the_socket_is_refused(world: dict, command: str) -> None:
    elsewhere = world["base"] / "elsewhere"
    elsewhere.mkdir()
    target = impostor(world, uid=0, path=elsewhere / "real.sock")  # even a root listener: not this store's
    world["sock"].symlink_to(target.path)
    proc = run_cli(*commands(world)[command], env=world["env"])
    assert_refused(proc, f"refusing to use {world['sock']}: it is a symbolic link")
    assert target.received() == []


@needs_root
@pytest.mark.parametrize("kind", ["world-writable", "owned by nobody", "symlink"])
def test_an_untrusted_runtime_directory_is_refused(world: dict, kind: str) -> None:
    run = world["base"] / "run" / "recallfs"
    if kind == "world-writable":
        run.mkdir(mode=0o700)
        run.chmod(0o777)
        why = "others may write in it (mode 777)"
    elif kind == "owned by nobody":
        run.mkdir(mode=0o700)
        os.chown(run, NOBODY, NOBODY)
        why = f"it belongs to uid {NOBODY}, not to you"
    else:
        (world["base"] / "theirs").mkdir()
        run.symlink_to(world["base"] / "theirs")
        why = "it is a symbolic link"
    for args in (["status"], ["umount", str(world["base"])]):
        proc = run_cli(*args, env=world["env"])
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"refusing to use the runtime directory {run}: {why}" in proc.stderr, proc.stderr
    # A store path too long for a socket beside it puts the socket there: recall refuses it too.
    deep = world["base"] / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    env = {**world["env"], "RECALLFS_STORE": str(deep / "store.duckdb")}
    shutil.copy(world["base"] / "store.duckdb", deep / "store.duckdb")
    proc = run_cli("recall", "plover", env=env)
    assert proc.returncode == 1 and f"refusing to use the runtime directory {run}" in proc.stderr, proc.stderr


# -- server side -----------------------------------------------------------------------------------------
USERS = {"reader": "rfs_sock_reader", "auditor": "rfs_sock_auditor"}
OUTSIDER = "rfs_sock_outsider"


@pytest.fixture(scope="module")
def mapped() -> Iterator[dict]:
    base = Path(tempfile.mkdtemp(prefix="recallfs-sockmap-"))
    base.chmod(0o755)  # the mapped users reach the mount point and the socket below it
    (base / "run").mkdir()
    env = {"RECALLFS_STORE": str(base / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
           "RECALLFS_AGENT": "ops", "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(base / "run")}
    run_cli("ingest", str(write_jsonl(base / "m.jsonl", RECORDS)), env=env, check=True)
    run_cli("policy", "set", "--agent", "auditor", "--visibility", "workspace,private", env=env, check=True)
    uids = {agent: ensure_user(user) for agent, user in USERS.items()}
    uids["outsider"] = ensure_user(OUTSIDER)
    new = write_jsonl(base / "new.jsonl", [fact("p-9", "ops moved the heron cluster", id="f-heron", agent="ops")])
    new.chmod(0o644)
    maps = [a for agent in USERS for a in ("--map-uid", f"{uids[agent]}={agent}")]
    (base / "mnt").mkdir()
    run_cli("mount", str(base / "mnt"), *maps, env=env, check=True, timeout=180)
    mount = Mount(base / "mnt", Path(env["RECALLFS_STORE"]), env)
    yield {"mount": mount, "uids": uids, "env": env, "new": new, "base": base}
    stop_mount(mount)
    shutil.rmtree(base, ignore_errors=True)


def recall_ids(proc: subprocess.CompletedProcess[str]) -> tuple[str, set[str]]:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return f"{out['workspace']} as {out['agent']}", {h["id"] for h in out["hits"]}


@pytest.mark.mount
@needs_fuse
@needs_users
def test_a_mapped_uid_recalls_as_its_own_agent_whatever_it_claims(mapped: dict) -> None:
    sock = Path(f"{mapped['mount'].store}.sock")
    assert stat.S_IMODE(sock.stat().st_mode) == 0o666  # mapped users connect; SO_PEERCRED decides
    uid = mapped["uids"]
    for claimed in ("auditor", "ops", "reader"):
        who, ids = recall_ids(run_cli_as(uid["reader"], "recall", "--agent", claimed, "--format", "json",
                                         "plover k:20", env=mapped["env"]))
        assert who == "acme/proj as reader" and ids == {"f-plover", "f-keys"}  # never the auditor's private one
    # Another workspace claimed: still the mount's, as the mapped agent.
    who, ids = recall_ids(run_cli_as(uid["reader"], "recall", "--workspace", "other/ws", "--agent", "auditor",
                                     "--format", "json", "plover", env=mapped["env"]))
    assert who == "acme/proj as reader" and "f-audit" not in ids
    # The auditor, claiming to be the reader, gets the auditor's view (its private memory included).
    who, ids = recall_ids(run_cli_as(uid["auditor"], "recall", "--agent", "reader", "--format", "json",
                                     "plover k:20", env=mapped["env"]))
    assert who == "acme/proj as auditor" and ids == {"f-plover", "f-keys", "f-audit"}


@pytest.mark.mount
@needs_fuse
@needs_users
def test_settings_in_a_request_never_change_who_reads(mapped: dict) -> None:
    """A recall carries its caller's settings (request_settings.py); scope is not among them."""
    claim = {"agent": "auditor", "workspace": "other/ws", "org": "other", "store": "/elsewhere"}
    reply = request_as(mapped["uids"]["reader"], mapped["mount"].store, {
        "op": "recall", "query": "plover", "format": "json", "options": {}, "org": "acme",
        "workspace": "proj", "agent": "auditor", "settings": {**claim, "k": 1}})
    out = json.loads(reply["output"])
    assert (out["workspace"], out["agent"]) == ("acme/proj", "reader")
    assert len(out["hits"]) == 1 and out["hits"][0]["id"] in {"f-plover", "f-keys"}


@pytest.mark.mount
@needs_fuse
@needs_users
def test_unmapped_uids_are_refused_root_included(mapped: dict) -> None:
    proc = run_cli_as(mapped["uids"]["outsider"], "recall", "--agent", "auditor", "plover", env=mapped["env"])
    assert proc.returncode == 1 and "plover" not in proc.stdout
    assert f"uid {mapped['uids']['outsider']} may not use this recallfs daemon's control socket" in proc.stderr
    reply = request_as(mapped["uids"]["outsider"], mapped["mount"].store, {"op": "ping"})
    assert "may not use this recallfs daemon's control socket" in reply["refused"]
    proc = mapped["mount"].cli("recall", "--agent", "auditor", "plover", check=False)
    assert proc.returncode == 1 and "plover" not in proc.stdout
    assert "uid 0 is not in this mount's --map-uid" in proc.stderr and "--map-uid 0=AGENT" in proc.stderr


@pytest.mark.mount
@needs_fuse
@needs_users
def test_a_mapped_uid_may_not_ingest_or_count(mapped: dict) -> None:
    reader = mapped["uids"]["reader"]
    proc = run_cli_as(reader, "ingest", str(mapped["new"]), env=mapped["env"])
    assert proc.returncode == 1 and "ingest through the mount daemon is only for its owner (uid 0)" in proc.stderr
    # A crafted request naming a file only root may read: refused before the daemon touches it.
    secret = mapped["base"] / "root-only.jsonl"
    write_jsonl(secret, [fact("p-10", "root only heron note", id="f-root-only", agent="ops")]).chmod(0o600)
    reply = request_as(reader, mapped["mount"].store, {"op": "ingest", "file": str(secret), "format": "jsonl",
                                                       "org": "acme", "workspace": "proj", "agent": "ops"})
    assert "ingest through the mount daemon is only for its owner" in reply["refused"]
    assert "only for its owner" in request_as(reader, mapped["mount"].store, {"op": "counts"})["refused"]
    ping = request_as(reader, mapped["mount"].store, {"op": "ping"})
    assert ping["pid"] > 0 and ping["health"]["health"]["state"] == "ok"  # ping is for every mapped uid
    # but not the store's generation or the other views' counters, which move with every agent's writes
    # (a private one too: found 2026-12-07)
    assert set(ping["health"]) <= {"health", "degraded", "degraded_reason", "query_embedding", "backend"}, ping
    assert "generation" in mapped["mount"].mount_info()["detail"]  # its owner and root see it all
    _, ids = recall_ids(run_cli_as(mapped["uids"]["auditor"], "recall", "--format", "json", "heron",
                                   env=mapped["env"]))
    assert ids == set()  # nothing was written


@pytest.mark.mount
@needs_fuse
@needs_users
def test_root_status_and_ingest_still_work(mapped: dict) -> None:
    info = mapped["mount"].status()
    assert info["held_by"] == "a mount daemon" and info["workspaces"]["acme/proj"]["facts"] >= 3
    assert mapped["mount"].mount_info()["health"] == "ok"


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Mount]:
    env = {"RECALLFS_STORE": str(tmp_path / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
           "RECALLFS_AGENT": "ops", "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    run_cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", RECORDS)), env=env, check=True)
    (tmp_path / "mnt").mkdir()
    run_cli("mount", str(tmp_path / "mnt"), env=env, check=True, timeout=180)
    mount = Mount(tmp_path / "mnt", Path(env["RECALLFS_STORE"]), env)
    yield mount
    stop_mount(mount)


@pytest.mark.mount
@needs_fuse
def test_a_plain_mount_keeps_a_0600_socket_and_its_owner_may_name_any_agent(plain: Mount) -> None:
    sock = Path(f"{plain.store}.sock")
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and sock.stat().st_uid == os.geteuid()
    who, ids = recall_ids(plain.cli("recall", "--agent", "auditor", "--format", "json", "plover k:20"))
    assert who == "acme/proj as auditor" and "f-audit" in ids
    who, ids = recall_ids(plain.cli("recall", "--format", "json", "plover k:20"))
    assert who == "acme/proj as ops" and "f-audit" not in ids
    plain.cli("ingest", str(write_jsonl(plain.path.parent / "n.jsonl", [fact("p-9", "heron", id="f-heron")])))
    assert recall_ids(plain.cli("recall", "--format", "json", "heron"))[1] == {"f-heron"}


@pytest.mark.mount
@needs_fuse
def test_a_link_to_a_mounted_store_reaches_its_daemon(plain: Mount, tmp_path: Path) -> None:
    """Found 2026-12-07: `ingest --store LINK` to a mounted store waited 120 s for the store's lock and
    failed ("held by another process"), and `mount` through the link blamed "an ingest or a recall"."""
    link = tmp_path / "elsewhere" / "link.duckdb"
    link.parent.mkdir()
    link.symlink_to(plain.store)
    env = {**plain.env, "RECALLFS_STORE": str(link)}
    status = json.loads(run_cli("status", "--json", env=env, check=True).stdout)
    assert status["held_by"] == "a mount daemon"
    src = write_jsonl(tmp_path / "via-link.jsonl", [fact("p-10", "egret through a link", id="f-egret")])
    proc = run_cli("ingest", str(src), env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert recall_ids(plain.cli("recall", "--format", "json", "egret"))[1] == {"f-egret"}
    (tmp_path / "mnt2").mkdir()
    again = run_cli("mount", str(tmp_path / "mnt2"), env=env, timeout=60)
    assert again.returncode == 1 and f"already mounted at {plain.path}" in again.stderr, again.stderr


@pytest.mark.mount
@needs_fuse
def test_a_piped_ingest_reaches_a_mounted_store(plain: Mount) -> None:
    """The daemon reads the file an ingest names: a pipe is staged to a file first (/dev/stdin would name
    the daemon's own input)."""
    line = json.dumps(fact("p-11", "a piped ibis sighting", id="f-ibis")) + "\n"
    proc = subprocess.run([str(RECALLFS), "ingest", "-"], input=line,
                          capture_output=True, text=True, env={**os.environ, **plain.env}, timeout=120)
    assert proc.returncode == 0 and "through the mount daemon" in proc.stdout, proc.stdout + proc.stderr
    assert recall_ids(plain.cli("recall", "--format", "json", "ibis"))[1] == {"f-ibis"}
