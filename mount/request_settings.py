"""A CLI recall's own settings, carried to the daemon that holds the store.

`RECALLFS_K=2 recallfs recall ...` must mean the same whether or not the store is mounted. The CLI
sends the settings its user chose (flag or RECALLFS_* variable; `settings.chosen`) with the request;
the daemon answers with those it can apply to one recall and names the others in the result's notes,
with why. Scope never travels this way: who reads (store, workspace, agent) is decided by the socket's
peer credentials (control_auth.Access), so those names are neither sent nor accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recallfs.query import settings as settings_mod
from recallfs.query.settings import STAGE_SETTINGS, Settings, SettingsError

# Settings one recall can carry: the page size, the fusion and every shaping stage.
PER_REQUEST = ("k", "fusion", "rrf_k", "candidates", "weights", *STAGE_SETTINGS)
# decided by the socket (the store it serves, a lake's replica on this host included), never by the request
SCOPE = ("store", "replica_dir", "workspace", "agent")
# Settings of the daemon itself, with why one recall cannot change them.
DAEMON_ONLY = {
    "model": "the daemon answers with the model it has loaded",
    "device": "the daemon's model is already loaded on its device",
    "embed_timeout_ms": "the daemon's semantic arm keeps its own time budget",
    "query_precision": "the daemon's query graph is built once, at mount",
    "embed_precision": "a setting of the daemon's ingest, not of recall",
    "vector_search": "the daemon's semantic arm searches as it was mounted",
    "serve_threads": "a setting of the daemon's store connection",
    "warm_timeout_ms": "the daemon's model is loaded once, at mount",
    "model_load_timeout_s": "the daemon's model is loaded once, at mount",
    "query_timeout_ms": "a setting of the daemon's store connection",
    "max_rows": "a setting of the mount's listings",
    "recall_ttl_s": "a setting of the mount's recall/ directories",
    "recall_runs_held": "a setting of the mount's recall/ directories",
    "log_level": "a setting of the daemon's log",
    "inbox_max_bytes": "a setting of the mount's inbox/",
}

_NAMES = frozenset(s.name for s in settings_mod.SETTINGS)


def chosen_settings(cfg: Settings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the caller chose (not defaults), scope excluded: what a routed recall sends."""
    return {s.name: getattr(cfg, s.name) for s in settings_mod.SETTINGS
            if s.name not in SCOPE and settings_mod.chosen(s.name, env=env)}


@dataclass(slots=True)
class Applied:
    """The daemon's settings with a request's applied: `settings` to rank with, whether the semantic
    arm may run, and a note for each requested setting that was not applied."""

    settings: Settings
    semantic: bool
    notes: list[str] = field(default_factory=list)


def apply_requested(daemon: Settings, requested: Mapping[str, Any], *, has_semantic: bool) -> Applied:
    """Apply the settings a request carries to the daemon's. Raises SettingsError for a value the
    setting cannot take. Pure: the daemon passes whether it runs a semantic arm."""
    changes: dict[str, Any] = {}
    notes: list[str] = []
    semantic = has_semantic
    for name in sorted(requested):
        value = requested[name]
        if name in SCOPE or name not in _NAMES:
            continue  # scope is the socket's to decide; an unknown name is not ours to guess
        env = settings_mod.setting(name).env
        if name in PER_REQUEST:
            changes[name] = _typed(name, value)
        elif name == "semantic":
            semantic, note = _semantic(bool(value), has_semantic, env)
            notes.extend([note] if note else [])
        elif value != getattr(daemon, name):
            notes.append(f"{env}={_shown(value)} ignored: {DAEMON_ONLY[name]} "
                         f"({env}={_shown(getattr(daemon, name))})")
    cfg = daemon.replace(**changes)
    cfg.ranking()  # raises SettingsError for a value ranking cannot use
    return Applied(cfg, semantic, notes)


def _semantic(wanted: bool, has_semantic: bool, env: str) -> tuple[bool, str | None]:
    """Whether the semantic arm runs, and a note when the caller asked for one the daemon lacks."""
    if wanted and not has_semantic:
        return False, (f"{env}=true ignored: the daemon holding this store runs without a semantic arm "
                       "(mounted with RECALLFS_SEMANTIC=false, or its model could not be set up: see "
                       "recallfs status)")
    return wanted and has_semantic, None


def _typed(name: str, value: Any) -> Any:
    """The value as its setting's type (JSON gives 2 for 2.0); SettingsError when it is not one."""
    kind = type(settings_mod.setting(name).default)
    env = settings_mod.setting(name).env
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SettingsError(f"{env}={_shown(value)}: expected {kind.__name__}")
    return value


def _shown(value: Any) -> str:
    if value == "":  # `RECALLFS_MODEL=` reads as nothing at all: say what it means
        return '"" (the default)'
    return str(value).lower() if isinstance(value, bool) else str(value)
