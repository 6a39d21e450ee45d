"""Recall options on the control channel: RecallOptions <-> JSON (dates as ISO strings), both directions
in one place so the CLI and the daemon read one format."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def options_payload(opts: Any) -> dict[str, Any]:
    """RecallOptions -> JSON (dates as ISO strings)."""
    return {
        "kinds": list(opts.kinds), "tags": list(opts.tags), "session": opts.session, "agent": opts.agent,
        "since": opts.since.isoformat() if opts.since else None,
        "until": opts.until.isoformat() if opts.until else None,
        "recent": opts.recent_half_life_days, "budget": opts.budget,
        "now": opts.now.isoformat() if opts.now else None,
    }


def options_from_payload(payload: dict[str, Any]) -> Any:
    from recallfs.query.query_syntax import RecallOptions

    return RecallOptions(
        kinds=list(payload.get("kinds") or []), tags=list(payload.get("tags") or []),
        session=payload.get("session"), agent=payload.get("agent"),
        since=datetime.fromisoformat(payload["since"]) if payload.get("since") else None,
        until=datetime.fromisoformat(payload["until"]) if payload.get("until") else None,
        recent_half_life_days=payload.get("recent"), budget=payload.get("budget"),
        now=datetime.fromisoformat(payload["now"]) if payload.get("now") else None,
    )
