"""Lake fixtures: a throwaway PostgreSQL (evals/pg_cluster.py) for the session, a fresh lake (its own
database and data directory) per test, and "hosts": each a replica directory and a runtime directory of
its own, so two daemons share nothing but PostgreSQL and the data path, as two machines would."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from recallfs.evals.pg_cluster import DB_USER, PORT, Cluster, ClusterError, server_bin, start, stop


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """Skipped only where the server binaries cannot exist here; a server that fails to start fails."""
    try:
        server_bin()
    except ClusterError as exc:
        pytest.skip(f"PostgreSQL cannot start on this machine: {exc}")
    # Not under pytest's tmp_path: that is private to root, and the server runs as its own user.
    root = Path(tempfile.mkdtemp(prefix="recallfs-pg-"))
    try:
        cluster = start(root)
        yield cluster
    finally:
        stop(root)
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class LakeSpec:
    cluster: Cluster
    database: str
    data: Path

    @property
    def url(self) -> str:
        return (f"ducklake:postgres:dbname={self.database} host={self.cluster.root} port={PORT} user={DB_USER};"
                f"data={self.data}/")


def create_database(cluster: Cluster, name: str) -> None:
    subprocess.run([str(server_bin() / "createdb"), "-h", str(cluster.root), "-p", str(PORT), "-U", DB_USER, name],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture
def lake(pg_cluster: Cluster, tmp_path: Path) -> LakeSpec:
    name = f"lake_{uuid.uuid4().hex[:12]}"
    create_database(pg_cluster, name)
    return LakeSpec(pg_cluster, name, tmp_path / "lake-data")


def host_env(tmp: Path, host: str, lake: LakeSpec, **extra: str) -> dict[str, str]:
    """One host's environment: the shared lake, and a replica and runtime directory of its own."""
    (tmp / host / "run").mkdir(parents=True, exist_ok=True)
    return {"RECALLFS_STORE": lake.url, "RECALLFS_REPLICA_DIR": str(tmp / host / "replicas"),
            "XDG_RUNTIME_DIR": str(tmp / host / "run"), "RECALLFS_WORKSPACE": "acme/proj",
            "RECALLFS_AGENT": "tester", "RECALLFS_SEMANTIC": "false", **extra}


def pg_signal(cluster: Cluster, sig: int) -> None:
    """Send `sig` to the cluster's server and every backend it runs: SIGSTOP makes a PostgreSQL that hangs
    with its connections open (no error reaches a client), SIGCONT lets it go on."""
    pid = int((cluster.root / "data" / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    for one in [pid, *map(int, children)]:
        os.kill(one, sig)


def pg_ctl(cluster: Cluster, action: str) -> None:
    """Stop or start the cluster under the tests' feet (the lake's outage tests)."""
    if action == "stop":
        stop(cluster.root)
    else:
        start(cluster.root)
