"""The inbox process (mount/inbox_process.py starts it): `python -m recallfs.mount.inbox_main STORE
MOUNTPOINT LIMIT [allow_other]` serves mount/inbox_fs.py's InboxOps over <mount>/inbox, handing each
closed file to the daemon that holds STORE (control op "inbox"), and unmounts on SIGTERM."""

from __future__ import annotations

import errno
import os
import signal
import sys

import pyfuse3
import trio

from recallfs.mount.inbox_fs import UNKNOWN_OUTCOME, InboxOps, Remember

DRAIN_S = 8.0  # at most, for the closes in the daemon's hands (inbox_process.STOP_S waits 10 s for us)


def forward_to(store: str) -> Remember:
    """`remember` through the control socket of the daemon holding `store` (op "inbox")."""
    import base64

    from recallfs.mount.control_auth import STORED
    from recallfs.mount.control_client import ControlError, DaemonBrokeOff, request

    def remember(uid: int, name: str, data: bytes) -> tuple[int, str] | None:
        payload = {"op": "inbox", "uid": uid, "name": name, "data": base64.b64encode(data).decode()}
        try:
            reply = request(store, payload, timeout=600)
        except DaemonBrokeOff as exc:  # it died (or hung) with the file in its hands: not the file's fault
            return errno.ENOTCONN, (f"{exc}: {UNKNOWN_OUTCOME} (the ingest is one "
                                    "transaction: all of it or none). Look for it once the store is mounted "
                                    "again (`recallfs recall`, facts/) before writing it again")
        except ControlError as exc:
            if exc.code == STORED:  # committed; only the index refresh after it failed (health shows the index)
                return None
            return getattr(errno, exc.code or "", errno.EINVAL), str(exc)
        if reply is None:
            return errno.ENOTCONN, "the daemon holding the store is gone: nothing was stored"
        return None

    return remember


def main(argv: list[str] | None = None) -> int:
    """Serve until the kernel ends the session or a signal comes (module doc)."""
    args = sys.argv[1:] if argv is None else argv
    store, mountpoint, limit = args[0], args[1], int(args[2])
    ops = InboxOps(forward_to(store), limit=limit, owner=(os.getuid(), os.getgid()),
                   mountpoint=os.path.realpath(mountpoint))
    options = {"fsname=recallfs-inbox", "subtype=recallfs", "default_permissions", *args[3:]}
    pyfuse3.init(ops, mountpoint, options)
    try:
        trio.run(_serve, ops)
    finally:
        pyfuse3.close(unmount=True)  # also after SIGTERM from the daemon: it unmounts before its own mount
    return 0


async def _serve(ops: InboxOps) -> None:
    async with trio.open_nursery() as nursery:
        async def until_signal() -> None:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for _ in signals:
                    await _answer_pending(ops)
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(until_signal)
        await pyfuse3.main()
        nursery.cancel_scope.cancel()


async def _answer_pending(ops: InboxOps) -> None:
    """Let the closes in the daemon's hands be answered before the session ends. The daemon's death
    sends SIGTERM here (PR_SET_PDEATHSIG) at the moment its socket breaks off: leaving at once aborted
    the FUSE connection under a waiting close, whose writer got ECONNABORTED instead of ENOTCONN and
    the word that the outcome is unknown."""
    with trio.move_on_after(DRAIN_S):
        await ops.drained()
    await trio.sleep(0.05)  # pyfuse3 writes the last answer once its handler returns


if __name__ == "__main__":
    raise SystemExit(main())
