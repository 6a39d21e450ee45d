"""Who is at the other end of the control socket, and what they may ask.

A socket file's owner and mode say who created it, which anyone who can write the store's directory
decides. So both ends also ask the kernel who the peer is (SO_PEERCRED: pid, uid and gid of the process
that connected, or of the one that listens), which no process can forge.

- Client (the CLI): it talks only to a daemon run by its own user or by root. A socket that is a
  symlink, not a socket, or owned by anyone else is refused before connecting; a listener running as
  anyone else is refused after connecting, before a single byte is sent (a request can carry a file path,
  and the reply is printed as the recall's answer). A refusal is an error, never "no daemon here".
- Server (the daemon): its owner and root may do anything; on a --map-uid mount the mapped uids may
  also `ping` and `recall`, and a recall is answered as the agent the caller's uid maps to in the mount's
  workspace, whatever the request names (the same rule as the mount's own files). `ingest` and `counts`
  stay with the owner and root: the daemon reads the file it is sent with its own rights, and counts cover
  memories a mapped agent may not read. Anyone else is refused.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from recallfs.scope.principal import Principal

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_REMOVE = "if no recallfs daemon of yours serves this store, remove it"
OWNER_ONLY = frozenset({"ingest", "counts", "inbox"})
# What a mapped uid's ping gets of the daemon's health: the verdict and how recall runs. The rest (the
# store's generation, every view's requests and invalidations) moves with every agent's writes, private
# ones included, so a reader watching it saw when others wrote (found 2026-12-07).
SHOWN_TO_MAPPED = ("health", "degraded", "degraded_reason", "query_embedding", "backend")


# A ControlError's code for a write that was committed though what follows it failed (the disk filled
# before the indexes were refreshed): the memory is stored, and an inbox/ file's close succeeds.
STORED = "STORED"


class ControlError(RuntimeError):
    """The daemon answered with an error, or cannot be trusted; the message is for the user. `code`: an
    errno name a file system answers the error with (the inbox: EACCES for a policy that denies writes)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class DaemonBrokeOff(ControlError):
    """The daemon took the request and gave no answer (it died, or the connection broke): whether a write
    it was asked for happened is unknown to the client."""


@dataclass(frozen=True, slots=True)
class Peer:
    pid: int
    uid: int
    gid: int


def peer_of(sock: Any) -> Peer:
    """The kernel's word on the process at the other end of a connected Unix socket (stdlib or trio)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return Peer(*_UCRED.unpack(raw))


def _trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


# -- client ---------------------------------------------------------------------------------------------
def check_socket_file(path: Path) -> bool:
    """True when `path` is a socket of the caller's or root's; False when nothing is there (no daemon).
    Anything else raises ControlError: it is not silently taken for "no daemon"."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISLNK(st.st_mode):
        why = "it is a symbolic link, not the daemon's socket"
    elif not stat.S_ISSOCK(st.st_mode):
        why = "it is not a socket"
    elif not _trusted(st.st_uid):
        why = f"it belongs to uid {st.st_uid}, not to you or root"
    else:
        return True
    raise ControlError(f"refusing to use {path}: {why}; {_REMOVE}")


def check_listener(path: Path, sock: socket.socket) -> Peer:
    """After connect, before sending: the listening process must run as the caller or as root (the file
    checked before connecting may have been swapped since). Returns it."""
    peer = peer_of(sock)
    if not _trusted(peer.uid):
        raise ControlError(f"refusing to use {path}: the process listening on it (pid {peer.pid}) runs as "
                           f"uid {peer.uid}, not as you or root; {_REMOVE}")
    return peer


# -- server ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Access:
    """The daemon's rules. `uid_map` is the mount's --map-uid (empty for a one-principal mount) and
    `principal` the mount's own (its org and workspace are the mapped agents')."""

    owner: int
    uid_map: dict[int, str]
    principal: Principal | None = None

    def _admin(self, uid: int) -> bool:
        return uid in (self.owner, 0)

    def health_for(self, uid: int, health: dict[str, Any]) -> dict[str, Any]:
        """The daemon's health as `uid` may see it: whole for its owner and root, SHOWN_TO_MAPPED else."""
        return health if self._admin(uid) else {k: v for k, v in health.items() if k in SHOWN_TO_MAPPED}

    def admit(self, uid: int, op: Any) -> None:
        """Raise ControlError unless `uid` may make request `op`."""
        if not self._admin(uid) and uid not in self.uid_map:
            mapped = (f", root and the uids its --map-uid names; uid {uid} is not one of them (to give it a view, "
                      f"mount with --map-uid {uid}=AGENT)") if self.uid_map else " and root"
            raise ControlError(f"uid {uid} may not use this recallfs daemon's control socket: it serves its "
                               f"owner (uid {self.owner}){mapped}")
        if op in OWNER_ONLY and not self._admin(uid):
            why = {"ingest": "the daemon would read the file with its own rights",
                   "inbox": "it comes from the daemon's own inbox file system, which names the writer"}.get(
                op, "the counts cover memories your agent may not read (see index.md in the mount)")
            raise ControlError(f"{op} through the mount daemon is only for its owner (uid {self.owner}) and "
                               f"root: {why}")

    def recall_principal(self, uid: int, req: dict[str, Any]) -> Principal:
        """Who a recall is answered as: on a --map-uid mount the caller's mapped agent in the mount's
        workspace, never what the request names; otherwise (owner or root) what the request names."""
        if not self.uid_map:
            return Principal(req["org"], req["workspace"], req["agent"])
        agent = self.uid_map.get(uid)
        if agent is None or self.principal is None:
            raise ControlError(f"uid {uid} is not in this mount's --map-uid, so it may not recall through it "
                               f"(the mount gives it EACCES too); to give it a view, mount with "
                               f"--map-uid {uid}=AGENT")
        return replace(self.principal, agent=agent)

    def writer_principal(self, uid: int) -> Principal:
        """Who a file written to the mount's inbox/ by `uid` is remembered as: on a --map-uid mount the
        uid's agent in the mount's workspace; otherwise the mount's own principal, for its owner and root
        (no one else reaches a one-principal mount)."""
        if self.principal is None:
            raise ControlError("this daemon serves no mount to write through")
        if self.uid_map:
            agent = self.uid_map.get(uid)
            if agent is None:
                raise ControlError(f"uid {uid} is not in this mount's --map-uid, so it may not write to it",
                                   code="EACCES")
            return replace(self.principal, agent=agent)
        if not self._admin(uid):
            raise ControlError(f"uid {uid} may not write to this mount: it serves its owner (uid {self.owner})",
                               code="EACCES")
        return self.principal

    @property
    def socket_mode(self) -> int:
        """0600 for a one-principal mount (the owner; root passes anyway). 0666 on a --map-uid mount: the
        mapped users must be able to connect, and who may do what is decided by SO_PEERCRED above, not by
        the mode (a group would need a group per mount, and still could not tell agents apart)."""
        return 0o666 if self.uid_map else 0o600
