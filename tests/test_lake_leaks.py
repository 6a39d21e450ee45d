"""The leak matrix across hosts: one DuckLake store, written on host A, read through host A's and host
B's mounts by principals with different policies. Each reader's view through either host must equal
its view of a clean single-file store that never held what it may not read (tests/test_scope_leaks.py
has the matrix itself: every way of reading, every marker, every guessed name).

The memories and the guest's policy reach host B only through the lake: B's daemon replays them into
its own replica, so this also checks that scope survives the replay (authors, visibility, policies).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from lake_helpers import LakeSpec, host_env
from mount_helpers import needs_fuse, stop_mount
from scope_leak_data import GUEST_POLICY, ORG, READERS, WS, all_records, visible_records
from test_scope_leaks import (
    USERS,
    Matrix,
    _clean_view,
    _mount,
    check_plain_mount,
    check_reader,
    ensure_user,
    needs_users,
)

from conftest import run_cli, write_jsonl

pytestmark = [needs_fuse, needs_users, pytest.mark.mount, pytest.mark.slow]


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="recallfs-lake-leaks-"))
    path.chmod(0o755)  # the mapped users reach the mount points below it
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_cross_host_leak_matrix(lake: LakeSpec, base: Path) -> None:
    uids = {reader: ensure_user(user) for reader, user in USERS.items()}
    source = write_jsonl(base / "memories.jsonl", all_records())

    def on(host: str, **extra: str) -> dict[str, str]:
        return host_env(base, host, lake, **{"RECALLFS_WORKSPACE": f"{ORG}/{WS}", "RECALLFS_AGENT": "atlas", **extra})

    # Written on host A only: through the lake, with the guest's policy.
    run_cli("ingest", str(source), env=on("a"), check=True, timeout=600)
    run_cli("policy", "set", "--agent", "guest", *GUEST_POLICY, env=on("a"), check=True)
    clean = {}
    for reader in READERS:  # what each reader must see: a single-file store of only what it may read
        cenv = {**on("clean"), "RECALLFS_STORE": str(base / f"clean-{reader}.duckdb")}
        run_cli("ingest", str(write_jsonl(source, visible_records(reader))), env=cenv, check=True)
        run_cli("policy", "set", "--agent", "guest", *GUEST_POLICY, env=cenv, check=True)
        clean[reader] = _clean_view(base, cenv, reader)
        write_jsonl(source, all_records())

    reads = 0
    for host in ("b", "a"):
        for reader in READERS:
            env = on(host, RECALLFS_AGENT=reader)
            reads += check_plain_mount(base, env, f"{host}-{reader}", reader, clean[reader])
    # Host B once more, as one --map-uid mount serving the three readers as system users.
    env = on("b")
    maps = [a for reader, uid in uids.items() for a in ("--map-uid", f"{uid}={reader}")]
    mount = _mount(base, env, "b-mapped", *maps)
    try:
        for reader in READERS:
            matrix = Matrix(mount.path, USERS[reader], env)
            check_reader(matrix, reader, clean[reader], compare_totals=False)
            reads += matrix.reads
    finally:
        stop_mount(mount)
    print(f"\ncross-host leak matrix (lake, hosts A and B): {reads} attempted reads, 0 leaks")
    assert reads >= 1000
