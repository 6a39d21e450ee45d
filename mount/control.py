"""The control channel: a Unix socket next to the store, through which `recallfs ingest`, `recallfs
recall` and `recallfs status` reach the daemon that holds the store.

DuckDB lets one process open a store for writing and then excludes readers in other processes, so
while a store is mounted the daemon does the work itself: it runs the same `ingest_records` and
`recall` the CLI runs, in its worker threads, and invalidates the kernel's cache afterwards.

Protocol: one JSON object per line in, one JSON object per line out, one request per connection.
Replies are {"ok": true, ...} or {"ok": false, "error": "..."}. Who may use the socket, on either end,
is checked with the kernel's peer credentials (control_auth.py): the socket is mode 0600, or 0666 on a
--map-uid mount, whose users are then told apart by uid. This module is the server (inside the daemon,
on trio); the CLI's side is control_client.py.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from recallfs.mount.control_auth import STORED, Access, ControlError, peer_of
from recallfs.mount.control_options import options_from_payload
from recallfs.mount.control_socket import serve_socket
from recallfs.mount.vector_backlog import OWN_PART, VectorBacklog
from recallfs.query.settings import Settings
from recallfs.scope.principal import Principal

if TYPE_CHECKING:
    from recallfs.query.backend import Backend

__all__ = ["ControlError", "ControlServer"]
log = logging.getLogger("recallfs.mount.control")
MAX_REQUEST = 2 << 20  # the least a request may take; an inbox file travels base64-encoded (max_request)
READ_REQUEST_S = 60.0  # a client sends its one line as soon as it connects; do not wait on one forever


def max_request(inbox_max_bytes: int) -> int:
    """The largest request read: an inbox/ file of the largest size the mount takes, base64-encoded, with room
    for the rest of its line. It was a fixed 2 MiB, so with RECALLFS_INBOX_MAX_BYTES raised past ~1.5 MiB a
    large file's request was cut off and its writer told ENOTCONN, "whether it was stored is unknown"."""
    return max(MAX_REQUEST, 4 * -(-inbox_max_bytes // 3) + (64 << 10))


def _op_name(raw: bytes) -> str:
    """The request's op, for the health report's last error (a request that is not JSON has none)."""
    try:
        return str(json.loads(raw).get("op", "?"))
    except (ValueError, AttributeError):
        return "?"


# -- server (inside the daemon, on trio) ---------------------------------------------------------------
class ControlServer:
    """`uid_map` and `principal`: the mount's --map-uid and principal, which decide who may ask what and
    as whom a recall is answered (control_auth.Access)."""

    def __init__(self, ops: Any, state: dict[str, Any], settings: Settings, *,
                 uid_map: dict[int, str] | None = None, principal: Principal | None = None,
                 backend: Backend | None = None) -> None:
        from recallfs.query.backend import FileBackend

        self.ops = ops
        self.backend: Backend = backend or FileBackend()  # where a write is committed (query/backend.py)
        self.state = state  # pid, mountpoint, store, principal ...
        self.settings = settings
        self.started = time.time()
        self.access = Access(os.geteuid(), dict(uid_map or {}), principal)
        self.backlog: VectorBacklog | None = None  # the mount's embedding loop (mount/vector_backlog.py)

    async def serve(self, path: Path, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await serve_socket(path, self.access.socket_mode, self._handle, task_status=task_status)

    async def _handle(self, stream: trio.SocketStream) -> None:
        # Everything is caught: an exception here would end serve_listeners and with it the daemon.
        try:
            async with stream:
                uid = peer_of(stream.socket).uid
                raw, limit = b"", max_request(self.settings.inbox_max_bytes)
                with trio.move_on_after(READ_REQUEST_S):
                    while not raw.endswith(b"\n"):
                        chunk = await stream.receive_some(1 << 16)
                        if not chunk:
                            return
                        raw += chunk
                        if len(raw) > limit:
                            raise ControlError("request too large")
                if not raw.endswith(b"\n"):
                    return
                try:
                    reply = await self.dispatch(json.loads(raw), uid)
                except ControlError as exc:
                    reply = {"ok": False, "error": str(exc), **({"code": exc.code} if exc.code else {})}
                except Exception as exc:
                    log.exception("control request failed")
                    self.ops.stats.unexpected_error(f"control {_op_name(raw)}", exc)
                    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""  # one line: the CLI's
                    reply = {"ok": False, "error": f"internal error in the daemon ({type(exc).__name__}: {first}); "
                             "see its log"}
                await stream.send_all(json.dumps(reply, default=str).encode() + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, ControlError, ValueError):
            return
        except Exception:
            log.exception("control connection failed")

    async def dispatch(self, req: dict[str, Any], uid: int | None = None) -> dict[str, Any]:
        """Answer one request from `uid` (the peer's, from the kernel; None: in process, as the owner)."""
        op = req.get("op")
        uid = self.access.owner if uid is None else uid
        self.access.admit(uid, op)  # before anything is done
        if op == "ping":
            health = {**self.ops.health(), "backend": self.backend.describe()}
            return {"ok": True, **self.state, "uptime_s": round(time.time() - self.started, 1),
                    "health": self.access.health_for(uid, health)}
        if op == "ingest":
            return await self._ingest(req)
        if op == "recall":
            return await self._recall(req, self.access.recall_principal(uid, req))
        if op == "inbox":
            return await self._inbox(req, self.access.writer_principal(int(req["uid"])))
        if op == "counts":
            return {"ok": True, "workspaces": await self.ops._sync(self._counts)}
        raise ControlError(f"unknown request {op!r}")

    def embedder(self) -> Any:
        """The daemon's own settings decide whether (and with which model) new rows are embedded."""
        from recallfs.query.shared_embedders import embedder_from_settings

        return embedder_from_settings(self.settings) if self.settings.semantic else None

    async def _ingest(self, req: dict[str, Any]) -> dict[str, Any]:
        from recallfs.query.ingest_file import load_file

        return await self._write(lambda: load_file(Path(req["file"]), req["format"], org=req["org"],
                                                   workspace=req["workspace"], agent=req["agent"]))

    async def _write(self, load: Callable[[], list[Any]]) -> dict[str, Any]:
        """load()'s records ingested in one transaction (`recallfs ingest`'s path), on a worker thread, then
        what they changed invalidated in every view; a refusal writes nothing."""
        from recallfs.query.ingest import DiskFullError, IngestError
        from recallfs.query.ingest_file import IndexRefreshError
        from recallfs.query.store import StoreError

        store = self.ops.store
        embedder = self.embedder()
        if store.read_only:
            raise ControlError(f"ingest refused, nothing written: the store {store.path} is served read-only "
                               "(its file system or file is not writable)", code="EROFS")
        # `code`: the errno an inbox/ file's close answers with (README, errno table): a refusal that is the
        # store's, not the file's, must not tell its writer to fix the file.
        # A write embeds its own rows up to OWN_PART and leaves the rest to the mount's embedding loop, which
        # takes the writer a part at a time: other writes are not held behind a large file's embedding.
        own_part = OWN_PART if self.backlog is not None and self.backend.kind == "file" else None
        try:
            report = await self.ops.write_store(
                lambda: self.backend.ingest(store, load(), embedder=embedder, own_part=own_part),
                refuse=getattr(self.backend, "stalled", None))  # a hung lake: refused now, not after it
        except DiskFullError as exc:
            raise ControlError(f"ingest refused, nothing written: {exc}", code="ENOSPC") from None
        except IngestError as exc:
            raise ControlError(f"ingest refused, nothing written: {exc}") from None
        except IndexRefreshError as exc:  # written: the message says what is missing
            raise ControlError(str(exc), code=STORED) from None
        except StoreError as exc:  # the store takes no writes (its file deleted or replaced)
            raise ControlError(str(exc), code="EROFS") from None
        later = 0
        # Only when the write's own part was embedded (the model works): a model that is missing, failed or
        # hung embeds nothing, and the loop would only wait on it again, holding the writer.
        if self.backlog is not None and own_part is not None and embedder is not None \
                and report.embedded >= min(report.written, own_part):
            later = report.written - report.embedded
            if later > 0 or self.backlog.failure is not None:  # or what failed at start may go now
                self.backlog.wake()
        return {"ok": True, "report": {**report.as_dict(), "embedding_later": later}}

    async def _inbox(self, req: dict[str, Any], writer: Principal) -> dict[str, Any]:
        """A file written to the mount's inbox/ (mount/inbox_fs.py hands it over at its close): parsed as
        `writer`'s and ingested in one transaction, or refused whole with the reason and its line."""
        import base64

        from recallfs.query.inbox_file import InboxError, Writer, parse_inbox_file
        from recallfs.query.inbox_links import refuse_dangling_links
        from recallfs.query.inbox_scope import confine_to_view
        from recallfs.query.policies import get_policy
        from recallfs.query.query_syntax import utc_now

        data = base64.b64decode(str(req["data"]), validate=True)
        name = str(req["name"])
        policy, _ = await self.ops._sync(get_policy, self.ops.store, writer)
        if not policy.writes:
            raise ControlError(f"{name}: the policy of {writer.agent} in {writer.workspace_path} denies writes "
                               "(recallfs policy set --deny-writes)", code="EACCES")
        who = Writer(writer.org, writer.workspace, writer.agent, utc_now())
        try:
            records = parse_inbox_file(name, data, who)
        except InboxError as exc:
            raise ControlError(f"{name}: {exc}") from None

        def load() -> list[Any]:  # under the writer: what the links name cannot change in between
            refuse_dangling_links(self.ops.store, writer, records)  # query/inbox_links.py
            # links, ids and slots naming memories the writer cannot read are taken out (query/inbox_scope.py)
            return confine_to_view(self.ops.store, writer, records)

        return await self._write(load)

    async def _recall(self, req: dict[str, Any], principal: Principal) -> dict[str, Any]:
        from recallfs.query.formats import RENDERERS
        from recallfs.query.recall import recall
        fmt = req.get("format", "text")
        if fmt not in RENDERERS:
            raise ControlError(f"unknown format {fmt!r}")
        applied = self._settings_for(req)
        cfg = applied.settings
        semantic = self.ops.semantic if req.get("arm", "fused") != "lexical" and applied.semantic else None

        def work() -> str:
            result = recall(
                self.ops.store, principal, req["query"], k=int(req.get("k") or cfg.k),
                offset=int(req.get("offset") or 0), arm=req.get("arm", "fused"),
                options=options_from_payload(req.get("options") or {}), semantic=semantic,
                **cfg.ranking().recall_kwargs(),  # the daemon's ranking with the caller's choices applied
            )
            result.notes.extend(applied.notes)
            return RENDERERS[fmt](result)

        return {"ok": True, "output": await self.ops._sync(work)}

    def _settings_for(self, req: dict[str, Any]) -> Any:
        """The daemon's settings with the caller's chosen ones applied (request_settings.py); scope
        settings are never taken from a request."""
        from recallfs.mount.request_settings import apply_requested
        from recallfs.query.settings import SettingsError

        requested = req.get("settings") or {}
        if not isinstance(requested, dict):
            raise ControlError("settings must be an object")
        try:
            return apply_requested(self.settings, requested, has_semantic=self.ops.semantic is not None)
        except SettingsError as exc:
            raise ControlError(str(exc)) from None

    def _counts(self) -> dict[str, dict[str, int]]:
        store = self.ops.store
        out = {}
        for org, ws in store.workspaces():
            schema = store.partition(org, ws)
            if schema is not None:
                out[f"{org}/{ws}"] = store.table_counts(schema)
        return out
