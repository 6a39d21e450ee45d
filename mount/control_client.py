"""The control channel's client side (the CLI; plain blocking sockets): one request to the daemon that
holds a store, and opening a store unless a daemon holds it. The protocol and the server: control.py."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recallfs.mount.control_auth import ControlError, DaemonBrokeOff, check_listener, check_socket_file
from recallfs.mount.registry import RuntimeDirError, pid_stopped, socket_candidates

__all__ = ["LOCK_WAIT_S", "ControlError", "DaemonBrokeOff", "open_unless_mounted", "request"]
LOCK_WAIT_S = 120.0  # how long a CLI command waits for a store another process holds
# A live daemon answers a ping at once (its loop never waits on DuckDB): one that does not within this is
# stopped or hung, and a request to it would wait for its whole timeout (an hour for an ingest).
PING_S = 10.0


def request(store: str | Path, payload: dict[str, Any], timeout: float = 3600.0) -> dict[str, Any] | None:
    """Send one request to the daemon holding `store`. None when no daemon listens there; ControlError
    when one that is not the caller's or root's does (nothing is sent to it)."""
    raw = None
    try:
        for path in socket_candidates(store):
            if payload.get("op") != "ping" and not _answers(path, store, min(PING_S, timeout)):
                continue  # no daemon listens there
            raw = _exchange(path, payload, timeout)
            if raw is not None:
                break
    except RuntimeDirError as exc:
        raise ControlError(str(exc)) from None
    except _Stopped as exc:
        raise ControlError(f"the daemon holding {store} (pid {exc.pid}) is {exc.why}, so nothing was sent to it: "
                           f"`kill -CONT {exc.pid}` resumes it, and `recallfs umount` stops it",
                           code="ENOTCONN") from None
    except TimeoutError:
        if payload.get("op") == "ping":
            raise _unresponsive(store) from None
        raise DaemonBrokeOff(f"the daemon holding {store} did not answer within {timeout:.0f} s") from None
    except OSError as exc:  # a daemon that broke off (the store is there; its daemon is not well)
        raise DaemonBrokeOff(f"the daemon holding {store} did not answer: {exc.strerror or exc}") from None
    if raw is None:
        return None
    if not raw:
        raise DaemonBrokeOff("the daemon closed the connection without an answer (`recallfs status` says whether "
                             "it still runs; see its log)")
    reply: dict[str, Any] = json.loads(raw)
    if not reply.get("ok"):
        raise ControlError(str(reply.get("error", "unknown error")), code=reply.get("code"))
    return reply


def _answers(path: Path, store: str | Path, timeout: float) -> bool:
    """Whether a daemon listens at `path`; ControlError, before anything is sent, when one is there but
    does not answer a ping."""
    try:
        return _exchange(path, {"op": "ping"}, timeout) is not None
    except TimeoutError:
        raise _unresponsive(store) from None


def _unresponsive(store: str | Path) -> ControlError:
    return ControlError(f"the daemon holding {store} does not answer (stopped, or hung), so nothing was sent to "
                        "it: `recallfs status` shows its state; `recallfs umount` detaches its mount, and "
                        "`recallfs mount` starts a new one", code="ENOTCONN")


class _Stopped(Exception):
    def __init__(self, pid: int, why: str) -> None:
        super().__init__(why)
        self.pid, self.why = pid, why


def _exchange(path: Path, payload: dict[str, Any], timeout: float) -> bytes | None:
    """One request and its answer over the socket at `path`; None when no daemon listens there."""
    if not check_socket_file(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None  # a stale socket from a daemon that died
        except PermissionError:
            raise ControlError(f"cannot connect to {path}: permission denied (the daemon serving this store "
                               "accepts its own user and root, and on a --map-uid mount the mapped uids)") from None
        peer = check_listener(path, sock)
        why = pid_stopped(peer.pid)
        if why is not None:  # it would hold the request unanswered until resumed: say so now
            raise _Stopped(peer.pid, why)
        sock.sendall(json.dumps(payload).encode() + b"\n")
        chunks = []
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                break
    finally:
        sock.close()
    return b"".join(chunks)


def open_unless_mounted(store: str | Path, opener: Callable[[], Any], *, wait_s: float = LOCK_WAIT_S) -> Any:
    """Open the store, or return None when a daemon holds it (route the command there instead).

    A store held by another short-lived process (an ingest, a recall) is waited for, not failed on."""
    from recallfs.query.store import StoreLockedError

    deadline = time.monotonic() + wait_s
    while True:
        if request(store, {"op": "ping"}, timeout=10) is not None:
            return None
        try:
            return opener()
        except StoreLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
