"""The CLI's side of the control socket against a daemon that cannot answer: a stopped one is named at
once (with its pid and how to resume it), a hung one after the ping's timeout. Real processes and a real
Unix socket; no mount is needed."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_helpers import wait_until

from recallfs.mount.control_client import ControlError, request
from recallfs.mount.registry import pid_stopped

# Binds the socket, says so, and then accepts connections without ever answering (a hung daemon).
SILENT = r"""
import socket, sys, time
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(8)
print("ready", flush=True)
held = []
while True:
    conn, _ = srv.accept()
    held.append(conn)
"""


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    store = tmp_path / "store.duckdb"
    store.touch()
    proc = subprocess.Popen([sys.executable, "-c", SILENT, f"{store}.sock"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    yield proc, store
    proc.send_signal(signal.SIGCONT)
    proc.kill()
    proc.wait(timeout=60)
    proc.stdout.close()


def test_a_hung_daemon_is_named_after_the_ping_times_out(silent: tuple[subprocess.Popen[str], Path]) -> None:
    _, store = silent
    with pytest.raises(ControlError) as exc:
        request(store, {"op": "ping"}, timeout=1)
    assert "does not answer (stopped, or hung), so nothing was sent to it" in str(exc.value)


def test_a_stopped_daemon_is_named_at_once_with_how_to_resume_it(silent: tuple[subprocess.Popen[str], Path]) -> None:
    """Before, a stopped daemon looked hung: `recallfs status` waited 10 s for the ping (and 6 s more for
    the mount's own checks) and then said "stopped, or hung". Without the check of the listener's state
    these wait out their timeouts and say that."""
    proc, store = silent
    proc.send_signal(signal.SIGSTOP)
    assert wait_until(lambda: pid_stopped(proc.pid) is not None, timeout=30)
    for op in ("ping", "counts"):
        with pytest.raises(ControlError) as exc:
            request(store, {"op": op}, timeout=30)
        said = str(exc.value)
        assert f"(pid {proc.pid}) is stopped (SIGSTOP, or ^Z), so nothing was sent to it" in said, said
        assert f"`kill -CONT {proc.pid}` resumes it" in said


def test_pid_stopped_reads_the_process_state(silent: tuple[subprocess.Popen[str], Path]) -> None:
    proc, _ = silent
    assert pid_stopped(proc.pid) is None  # running (sleeping in accept)
    proc.send_signal(signal.SIGSTOP)
    assert wait_until(lambda: pid_stopped(proc.pid) == "stopped (SIGSTOP, or ^Z)", timeout=30)
    proc.send_signal(signal.SIGCONT)
    assert wait_until(lambda: pid_stopped(proc.pid) is None, timeout=30)
    proc.kill()
    proc.wait(timeout=60)
    assert pid_stopped(proc.pid) is None  # gone
