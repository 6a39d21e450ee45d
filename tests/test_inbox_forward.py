"""The inbox process's hand-over to the daemon (mount/inbox_main.forward_to), against a real Unix socket
peer that behaves as a daemon dying mid-ingest does: it answers the ping, takes the file, and closes the
connection without an answer."""

from __future__ import annotations

import errno
import json
import socket
import threading
from pathlib import Path

from recallfs.mount.inbox_main import forward_to


def _dying_daemon(path: Path) -> threading.Thread:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)

    def serve() -> None:
        with server:
            for _ in range(2):  # the ping, then the file
                conn, _addr = server.accept()
                with conn:
                    request = json.loads(conn.makefile("rb").readline())
                    if request["op"] == "ping":
                        conn.sendall(b'{"ok": true}\n')
                    # the file: the connection closes with no answer, as when the daemon is killed

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_daemon_that_dies_with_the_file_in_its_hands_is_enotconn_not_a_refusal(tmp_path: Path) -> None:
    """Found 2026-12-04: `cp` into inbox/ with the daemon killed mid-ingest failed with EINVAL ("fix the
    file"), pointing at a note in a .rejected/ that no longer existed. The README's errno table says
    ENOTCONN; and the note must not claim nothing was stored, since the daemon may have died after its
    commit."""
    store = tmp_path / "store.duckdb"
    thread = _dying_daemon(Path(f"{store}.sock"))
    answer = forward_to(str(store))(0, "notes.md", b"The daemon dies while it stores this")
    thread.join(10)
    assert answer is not None
    assert answer[0] == errno.ENOTCONN, answer
    assert "whether the file was stored is unknown" in answer[1]
