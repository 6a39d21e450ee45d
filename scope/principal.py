"""A principal is the (org, workspace, agent) a request is served for."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Names end up in paths, SQL identifiers (through a hash) and file names, so keep them plain.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ScopeError(ValueError):
    """A principal or workspace name that cannot be used."""


def check_name(what: str, value: str) -> str:
    if not _NAME.match(value):
        raise ScopeError(
            f"bad {what} {value!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return value


@dataclass(frozen=True, slots=True)
class Principal:
    org: str
    workspace: str
    agent: str = "default"

    def __post_init__(self) -> None:
        check_name("org", self.org)
        check_name("workspace", self.workspace)
        check_name("agent", self.agent)

    @property
    def workspace_path(self) -> str:
        return f"{self.org}/{self.workspace}"

    def __str__(self) -> str:
        return f"{self.org}/{self.workspace} as {self.agent}"


def parse_workspace(text: str) -> tuple[str, str]:
    """`org/ws` -> (org, ws). A bare `ws` means org `default`."""
    parts = text.strip().split("/")
    if len(parts) == 1:
        parts = ["default", parts[0]]
    if len(parts) != 2:
        raise ScopeError(f"bad workspace {text!r}: expected ORG/WORKSPACE")
    return check_name("org", parts[0]), check_name("workspace", parts[1])
