"""Policies: within a workspace, which memories an agent may read, and whether it may write new ones
through the mount's inbox/.

A policy names the authors an agent may read (or all), the visibilities it may read, and kinds and
tags it is denied. An agent always reads its own memories, private ones included, unless a denied kind
or tag says otherwise. An agent with no stored policy gets DEFAULT: every author's `workspace`
memories and its own private ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VISIBILITIES = ("workspace", "private")


@dataclass(frozen=True, slots=True)
class Policy:
    authors: tuple[str, ...] | None = None  # None: every author
    visibilities: tuple[str, ...] = ("workspace",)
    deny_kinds: tuple[str, ...] = ()
    deny_tags: tuple[str, ...] = ()
    writes: bool = True  # may remember by writing to the mount's inbox/ (EACCES when not)

    def describe(self) -> str:
        authors = "all authors" if self.authors is None else "authors " + ", ".join(self.authors)
        parts = [authors, "visibility " + ", ".join(self.visibilities)]
        if self.deny_kinds:
            parts.append("denied kinds " + ", ".join(self.deny_kinds))
        if self.deny_tags:
            parts.append("denied tags " + ", ".join(self.deny_tags))
        if not self.writes:
            parts.append("no writes")
        return "; ".join(parts)


DEFAULT = Policy()
# Matches no agent name (names start with a letter or digit): stands for "every author" in storage.
ALL_AUTHORS = "*"


@dataclass(slots=True)
class PolicySpec:
    """A policy as typed on the command line, before validation."""

    authors: list[str] = field(default_factory=list)
    visibilities: list[str] = field(default_factory=list)
    deny_kinds: list[str] = field(default_factory=list)
    deny_tags: list[str] = field(default_factory=list)
    deny_writes: bool = False


def build_policy(spec: PolicySpec) -> Policy:
    """Validate a spec. Raises ValueError with a message for the user."""
    from recallfs.scope.principal import check_name

    authors: tuple[str, ...] | None
    flat_authors = [a.strip() for item in spec.authors for a in item.split(",") if a.strip()]
    if not flat_authors or ALL_AUTHORS in flat_authors:
        authors = None
    else:
        authors = tuple(sorted({check_name("author", a) for a in flat_authors}))
    vis = [v.strip() for item in spec.visibilities for v in item.split(",") if v.strip()] or ["workspace"]
    for v in vis:
        if v not in VISIBILITIES:
            raise ValueError(f"visibility {v!r} is not one of {', '.join(VISIBILITIES)}")
    kinds = sorted({k.strip().lower() for item in spec.deny_kinds for k in item.split(",") if k.strip()})
    tags = sorted({t.strip() for item in spec.deny_tags for t in item.split(",") if t.strip()})
    return Policy(authors=authors, visibilities=tuple(sorted(set(vis))), deny_kinds=tuple(kinds),
                  deny_tags=tuple(tags), writes=not spec.deny_writes)
