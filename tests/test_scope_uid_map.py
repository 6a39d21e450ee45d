"""`recallfs mount --map-uid`: one store, two agents with different policies, each sees only its own view.

Driven as two real system users (runuser) with ls, cat, grep -r and recall/ lookups. DuckDB lets one
process open a store, so a second `recallfs mount` of a mounted store is refused with a pointer to
--map-uid (developer-notes/scope.md).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, stop_mount
from test_scope_leaks import ensure_user, needs_users

from conftest import fact, run_cli, write_jsonl

pytestmark = [needs_fuse, needs_users, pytest.mark.mount, pytest.mark.slow]
USERS = {"reader": "rfs_reader", "auditor": "rfs_auditor"}
RECORDS = [
    fact("p-1", "ops uses the plover queue for retries", id="f-plover", agent="ops"),
    fact("p-2", "ops keeps the plover keys in the vault", id="f-keys", agent="ops", kind="secret"),
    fact("p-3", "auditor notes the plover audit finished", id="f-audit", agent="auditor", visibility="private"),
    fact("p-4", "ops tags plover payroll as hr", id="f-payroll", agent="ops", tags=["hr"]),
]
# reader: default policy minus kind secret and tag hr; auditor: every author and private memories too.
EXPECTED = {"reader": {"f-plover"}, "auditor": {"f-plover", "f-keys", "f-audit", "f-payroll"}}


@pytest.fixture
def mapped() -> Iterator[Mount]:
    base = Path(tempfile.mkdtemp(prefix="recallfs-uidmap-"))
    base.chmod(0o755)
    (base / "run").mkdir()
    env = {"RECALLFS_STORE": str(base / "store.duckdb"), "RECALLFS_WORKSPACE": "acme/proj",
           "RECALLFS_AGENT": "ops", "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(base / "run")}
    run_cli("ingest", str(write_jsonl(base / "m.jsonl", RECORDS)), env=env, check=True)
    run_cli("policy", "set", "--agent", "reader", "--deny-kind", "secret", "--deny-tag", "hr", env=env, check=True)
    run_cli("policy", "set", "--agent", "auditor", "--visibility", "workspace,private", env=env, check=True)
    maps = [a for agent, user in USERS.items() for a in ("--map-uid", f"{ensure_user(user)}={agent}")]
    (base / "mnt").mkdir()
    run_cli("mount", str(base / "mnt"), *maps, env=env, check=True, timeout=180)
    mount = Mount(base / "mnt", Path(env["RECALLFS_STORE"]), env)
    yield mount
    stop_mount(mount)
    shutil.rmtree(base, ignore_errors=True)


def as_user(agent: str, *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", USERS[agent], "--", *cmd], capture_output=True, text=True, timeout=120)


def ids_in(names: str) -> set[str]:
    return {line.rsplit("--", 1)[1].removesuffix(".md") for line in names.split() if "--" in line}


def test_two_agents_two_views(mapped: Mount) -> None:
    m = mapped.path
    for _ in range(5):  # interleaved: the root's names are shared in the kernel, the views are not
        for agent, expected in EXPECTED.items():
            assert ids_in(as_user(agent, "ls", f"{m}/facts").stdout) == expected
            grep = as_user(agent, "grep", "-rl", "plover", f"{m}/facts", f"{m}/history")
            assert {p.split("/history/")[1].split("/")[0] for p in grep.stdout.split() if "/history/" in p} == expected
            recall = as_user(agent, "ls", f"{m}/recall/plover k:20/")
            hits = as_user(agent, "cat", f"{m}/recall/plover k:20/results.json").stdout
            assert recall.returncode == 0 and f'"total_candidates": {len(expected)}' in hits
            assert {i for i in EXPECTED["auditor"] if f'"id": "{i}"' in hits} == expected
    # Exact names of the other's memories: ENOENT, not EACCES.
    proc = as_user("reader", "cat", f"{m}/history/f-audit/v1.md", f"{m}/facts/by-kind/secret")
    assert proc.stderr.count("No such file or directory") == 2
    # index.md counts only what each may read.
    assert "facts: 1\n" in as_user("reader", "cat", f"{m}/index.md").stdout
    assert "facts: 4\n" in as_user("auditor", "cat", f"{m}/index.md").stdout
    # Root is not in the map: nothing.
    proc = subprocess.run(["ls", str(m)], capture_output=True, text=True)
    assert proc.returncode != 0 and "Permission denied" in proc.stderr


def test_ingest_while_mounted_refreshes_every_view(mapped: Mount, tmp_path: Path) -> None:
    m = mapped.path
    for agent in EXPECTED:  # fill each view's caches first
        as_user(agent, "ls", f"{m}/facts")
    new = write_jsonl(tmp_path / "new.jsonl", [
        fact("p-5", "auditor private plover followup", id="f-followup", agent="auditor", visibility="private"),
        fact("p-6", "ops moved the plover queue to the new cluster", id="f-moved", agent="ops"),
    ])
    mapped.cli("ingest", str(new))
    assert ids_in(as_user("reader", "ls", f"{m}/facts").stdout) == EXPECTED["reader"] | {"f-moved"}
    assert ids_in(as_user("auditor", "ls", f"{m}/facts").stdout) == EXPECTED["auditor"] | {"f-moved", "f-followup"}


def test_index_md_changes_with_what_its_reader_may_read_alone(mapped: Mount, tmp_path: Path) -> None:
    """Found 2026-12-07: index.md showed the store's generation and last write to every reader, so a
    reader saw another agent write a private memory (and when); and its mtime stayed at the mount's
    start while its counts changed, so `find -newer`, make and rsync missed the change."""
    m = mapped.path

    def seen(agent: str) -> tuple[str, str]:
        return (as_user(agent, "cat", f"{m}/index.md").stdout,
                as_user(agent, "stat", "-c", "%s %Y", f"{m}/index.md").stdout)

    before = {agent: seen(agent) for agent in EXPECTED}
    hidden = write_jsonl(tmp_path / "hidden.jsonl", [
        fact("p-7", "auditor private plover retro", id="f-retro", agent="auditor", visibility="private")])
    time.sleep(1.1)  # a second apart, so that a changed mtime would show in %Y
    mapped.cli("ingest", str(hidden))
    assert seen("reader") == before["reader"]  # content, size and mtime: as if nothing was written
    assert seen("auditor") != before["auditor"]
    time.sleep(1.1)
    mapped.cli("ingest", str(write_jsonl(tmp_path / "open.jsonl", [
        fact("p-8", "ops opened the plover dashboard", id="f-dash", agent="ops")])))
    text, attr = seen("reader")
    assert "facts: 2\n" in text and text != before["reader"][0]
    assert int(attr.split()[1]) > int(before["reader"][1].split()[1])  # newer, as the write is


def test_a_second_mount_of_a_mounted_store_points_to_map_uid(mapped: Mount, tmp_path: Path) -> None:
    other = tmp_path / "second"
    other.mkdir()
    proc = mapped.cli("mount", str(other), "--agent", "auditor", check=False, timeout=180)
    assert proc.returncode == 1
    assert "already mounted at" in proc.stderr and "--map-uid" in proc.stderr


def test_bad_map_uid_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("mount", str(tmp_path), "--map-uid", "nobody-such-user-x=atlas")
    assert proc.returncode == 1 and "no user" in proc.stderr
    proc = run_cli("mount", str(tmp_path), "--map-uid", "1001")
    assert proc.returncode == 1 and "UID=AGENT" in proc.stderr


def test_cached_listings_and_pages_never_serve_another_caller(mapped: Mount) -> None:
    """The kernel caches listings and pages (open declined; opendir with cache_readdir, never on the shared
    root). The auditor, who sees every memory, walks first; then the reader and a uid outside the map run
    the same commands: the reader gets exactly what it got before anyone else walked, and nothing of
    the auditor's names, sizes or content; the outsider gets Permission denied and nothing else."""
    m = str(mapped.path)
    walks = (("ls", "-lR", m), ("find", m, "-printf", "%p %s %y\n"), ("grep", "-r", "plover", m),
             ("rg", "-n", "plover", m), ("bash", "-c", f"cat {m}/index.md {m}/facts/*.md"),
             ("stat", "-c", "%n %s", f"{m}/index.md", f"{m}/facts"))

    def run(agent: str) -> list[list[str]]:
        procs = [as_user(agent, *cmd) for cmd in walks]
        assert all(p.returncode == 0 and p.stderr == "" for p in procs), [p.stderr for p in procs]
        return [sorted(p.stdout.splitlines()) for p in procs]

    def readdirs(agent: str) -> int:
        return int(mapped.mount_info()["detail"]["views"][agent]["by_op"].get("readdir", 0))

    cold_reader = run("reader")
    listed = readdirs("reader")
    assert run("reader") == cold_reader
    # The reader's own listings are cached: only the shared root is listed again.
    assert readdirs("reader") - listed <= 2 * len(walks) < listed
    auditor = run("auditor")
    assert run("auditor") == auditor
    # The auditor's walk rebound the root's names to its own inodes, so the kernel dropped the reader's
    # (and their caches) meanwhile: the reader's walk is served by its view again, and is the same.
    assert run("reader") == cold_reader
    hidden = EXPECTED["auditor"] - EXPECTED["reader"]
    seen = "\n".join(line for out in cold_reader for line in out)
    assert not any(h in seen for h in hidden) and "vault" not in seen and "payroll" not in seen
    assert {line.rsplit(" ", 1)[1] for line in cold_reader[5] if "index.md" in line} != {
        line.rsplit(" ", 1)[1] for line in auditor[5] if "index.md" in line}  # the sizes differ by caller
    for cmd in walks:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)  # root: not in the map
        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (cmd, proc.stderr)
        assert "plover" not in proc.stdout and not any(h in proc.stdout + proc.stderr for h in EXPECTED["auditor"])
    assert mapped.mount_info()["detail"]["unexpected_errors"] == 0


def test_two_agents_remember_at_once_each_as_itself(mapped: Mount) -> None:
    """inbox/ on a --map-uid mount: each writer's files are its mapped agent's memories, also when both write
    at once, and one that claims the other agent is refused; each view shows the other's as the other's."""
    m = mapped.path
    loop = 'for i in $(seq 5); do echo "{a} remembers petrel note $i" > {m}/inbox/{a}-$i.md || exit 1; done'
    writers = [subprocess.Popen(["runuser", "-u", USERS[agent], "--", "bash", "-c", loop.format(a=agent, m=m)],
                                stderr=subprocess.PIPE, text=True) for agent in USERS]
    for proc in writers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    for agent in USERS:
        for other in USERS:
            names = [n for n in as_user(agent, "ls", f"{m}/facts").stdout.split() if f"{other}-remembers-petrel" in n]
            assert len(names) == 5, (agent, other, names)
            assert f"agent: {other}\n" in as_user(agent, "cat", f"{m}/facts/{names[0]}").stdout
    planted = "printf -- '---\\nagent: auditor\\n---\\nplanted\\n' | cat > {m}/inbox/x.md"
    claim = as_user("reader", "bash", "-c", planted.format(m=m))
    assert claim.returncode != 0 and "Invalid argument" in claim.stderr, claim.stderr
    assert "planted" not in as_user("auditor", "grep", "-rl", "planted", f"{m}/facts").stdout
    note = as_user("reader", "cat", f"{m}/inbox/.rejected/x.md")
    assert "writes as 'reader', not 'auditor'" in note.stdout
    assert as_user("auditor", "cat", f"{m}/inbox/.rejected/x.md").returncode != 0  # the writer's own note
    assert as_user("auditor", "ls", f"{m}/inbox/.rejected").stdout.split() == []
    # A file being written is its writer's alone: another writer's file of the same name is another file.
    held = subprocess.Popen(["runuser", "-u", USERS["reader"], "--", "bash", "-c",
                             f"exec 3> {m}/inbox/same.md; echo reader >&3; sleep 2"])
    time.sleep(0.5)
    assert as_user("auditor", "ls", f"{m}/inbox").stdout.split() == []
    same = as_user("auditor", "bash", "-c", f"echo 'auditor writes same-name heron' > {m}/inbox/same.md")
    assert same.returncode == 0, same.stderr
    held.wait(30)
    assert [n for n in as_user("auditor", "ls", f"{m}/facts").stdout.split() if "same-name-heron" in n]


def test_one_agents_recall_queries_are_not_listed_to_another(mapped: Mount) -> None:
    """recall/ lists the recent queries as names: an auditor's question is itself a memory of sorts
    ("plover payroll vault"), and the reader's recall/ must never show it, nor its hits."""
    m = mapped.path
    assert as_user("auditor", "ls", f"{m}/recall/plover payroll vault/").returncode == 0
    assert "plover payroll vault" in as_user("auditor", "ls", f"{m}/recall/").stdout
    reader = as_user("reader", "ls", f"{m}/recall/")
    assert reader.returncode == 0 and reader.stdout.split() == ["README.md"]
    walked = as_user("reader", "find", f"{m}/recall")
    assert "payroll" not in walked.stdout + walked.stderr
    # The reader asking the same question runs its own recall, on what it may read.
    hits = as_user("reader", "cat", f"{m}/recall/plover payroll vault/results.json").stdout
    assert "f-plover" in hits and not any(h in hits for h in EXPECTED["auditor"] - EXPECTED["reader"])
