"""What a mount is: the mount point, the store, whose view it serves and with which settings; passed
from `recallfs mount` to the daemon process as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from recallfs.query.settings import Settings
from recallfs.scope.principal import Principal


class MountError(RuntimeError):
    """A mount or unmount that cannot be done; the message says why and what to do."""


@dataclass(slots=True)
class MountConfig:
    mountpoint: Path
    store: Path
    principal: Principal
    settings: Settings
    foreground: bool = False
    ready_fd: int | None = None
    uid_map: dict[int, str] | None = None  # --map-uid: one view per agent, chosen by the caller's uid

    def describe_store(self) -> str:
        """The store as the user named it: a file, or a lake with this host's replica of it."""
        from recallfs.query.lake_location import is_lake, parse_lake

        if not is_lake(self.settings.store):
            return str(self.store)
        return f"{parse_lake(self.settings.store).describe()} (this host's replica: {self.store})"

    def who(self) -> str:
        if not self.uid_map:
            return str(self.principal)
        agents = ", ".join(f"uid {uid} as {agent}" for uid, agent in sorted(self.uid_map.items()))
        return f"{self.principal.workspace_path} ({agents}; other uids: EACCES)"

    def to_json(self) -> str:
        """What the daemon process needs to serve exactly this mount (`from_json`)."""
        p = self.principal
        return json.dumps({"mountpoint": str(self.mountpoint), "store": str(self.store),
                           "principal": [p.org, p.workspace, p.agent], "settings": asdict(self.settings),
                           "uid_map": {str(uid): agent for uid, agent in (self.uid_map or {}).items()}})

    @classmethod
    def from_json(cls, text: str, ready_fd: int | None) -> MountConfig:
        raw = json.loads(text)
        return cls(Path(raw["mountpoint"]), Path(raw["store"]), Principal(*raw["principal"]),
                   Settings(**raw["settings"]), foreground=True, ready_fd=ready_fd,
                   uid_map={int(uid): agent for uid, agent in raw["uid_map"].items()} or None)
