"""Markdown files with YAML front matter: one memory, a transcript, an entity, a recall hit, index.md.

Pure functions from rows (dicts with the columns of `query/catalog.py:ROW_COLUMNS` plus `table`) to bytes.
The same row always renders to the same bytes, so a file's size is known before it is read and its
bytes can be re-rendered after they were dropped from a cache. results.json and context.xml are
`recallfs.query.formats.render_json` and `render_context`, unchanged.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9 _./:@+()'-]*")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}

Row = Mapping[str, Any]


def yaml_scalar(value: Any, *, flow: bool = False) -> str:
    """One YAML value: plain when that reads back as the same string, else a JSON (= YAML) quoted string.

    `flow`: inside [...] or {...}, where ':' in a plain scalar is not portable, so such strings are quoted."""
    if type(value) is str:  # most values; a walk renders the same kinds, agents, sessions, speakers again and again
        return _text_scalar(value, flow)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, datetime):
        return value.isoformat()  # as stored: a file written back must give the same time
    if isinstance(value, list | tuple):
        return "[" + ", ".join(yaml_scalar(v, flow=True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(
            f"{yaml_scalar(str(k), flow=True)}: {yaml_scalar(v, flow=True)}" for k, v in value.items()) + "}"
    return _text_scalar(str(value), flow)


@functools.lru_cache(maxsize=16384)
def _text_scalar(text: str, flow: bool) -> str:
    if (
        _PLAIN.fullmatch(text)
        and text == text.strip()
        and text.lower() not in _YAML_WORDS
        and ": " not in text
        and not text.endswith(":")
        and not (flow and ":" in text)
    ):
        return text
    return json.dumps(text, ensure_ascii=False)


def front_matter(fields: Iterable[tuple[str, Any]]) -> str:
    lines = ["---"]
    lines.extend(f"{key}: {yaml_scalar(value)}" for key, value in fields)
    lines.append("---")
    return "\n".join(lines) + "\n"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "?"


def _optional(row: Row, *keys: str) -> list[tuple[str, Any]]:
    return [(k, row[k]) for k in keys if row.get(k) is not None]


def memory_fields(row: Row) -> list[tuple[str, Any]]:
    """The front matter every file about one memory version carries."""
    fields: list[tuple[str, Any]] = [
        ("id", row["id"]),
        ("table", row["table"]),
        ("kind", row["kind"]),
        ("version", row["version"]),
        ("status", row["status"]),
        ("created_at", row["created_at"]),
        ("ingested_at", row["ingested_at"]),
        ("agent", row["agent"]),
        ("visibility", row["visibility"]),
    ]
    fields += _optional(row, "session", "seq", "speaker", "entity", "slot", "title")
    fields += [("tags", list(row["tags"] or [])), ("refs", list(row["refs"] or []))]
    fields += [("source_id", row["source_id"]), ("source", row["source"])]
    lineage = row.get("lineage")
    if lineage is not None:  # current, superseded_by, supersedes: resolved (query/lineage.py)
        fields += lineage.fields()
    fields += _optional(row, "caption")
    return fields


def memory_body(row: Row) -> str:
    text = str(row["content"]).rstrip("\n")
    if row["table"] == "turns":
        text = f"{row['speaker']}: {text}"
        if row.get("caption"):
            text += f"\n\n[shared an image: {row['caption']}]"
    elif row["table"] == "summaries" and row.get("title"):
        text = f"# {row['title']}\n\n{text}"
    return text + "\n"


def render_memory(row: Row) -> bytes:
    """A fact, turn or summary version: facts/*.md, turns/*.md, history/<id>/v<n>.md."""
    return (front_matter(memory_fields(row)) + "\n" + memory_body(row)).encode()


def render_summary(session: str, rows: Sequence[Row]) -> bytes:
    """sessions/<s>/summary.md: the session's current summaries (usually one)."""
    if len(rows) == 1:
        return render_memory(rows[0])
    fields = [("session", session), ("table", "summaries"), ("ids", [r["id"] for r in rows]),
              ("created_at", rows[0]["created_at"])]
    body = "\n".join(memory_body(r) for r in rows)
    return (front_matter(fields) + "\n" + body).encode()


def _indent_rest(text: str) -> str:
    return text.rstrip("\n").replace("\n", "\n  ")


def render_transcript(session: str, rows: Sequence[Row]) -> bytes:
    """sessions/<s>/transcript.md: one line per turn, so grep prints who said it and when."""
    speakers = sorted({r["speaker"] for r in rows if r.get("speaker")})
    fields = [
        ("session", session), ("table", "turns"), ("turns", len(rows)), ("speakers", speakers),
        ("first_at", rows[0]["created_at"] if rows else None),
        ("last_at", rows[-1]["created_at"] if rows else None),
    ]
    lines = [f"# Transcript of {session}", ""]
    for r in rows:
        line = f"{r['speaker']} [{r['source_id']}, {_when(r['created_at'])}]: {_indent_rest(r['content'])}"
        if r.get("caption"):
            line += f" [shared an image: {r['caption']}]"
        lines.append(line)
    return (front_matter(fields) + "\n" + "\n".join(lines) + "\n").encode()


def render_entity(entity: str, rows: Sequence[Row], fact_paths: Sequence[str]) -> bytes:
    """entities/<name>.md: the entity's current facts (exact match on `entity`), oldest first."""
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    fields = [
        ("entity", entity), ("table", "facts"), ("facts", len(rows)), ("kinds", kinds),
        ("first_at", rows[0]["created_at"] if rows else None),
        ("last_at", rows[-1]["created_at"] if rows else None),
    ]
    lines = [f"# {entity}", ""]
    for r, path in zip(rows, fact_paths, strict=True):
        lines.append(f"- {_when(r['created_at'])} [{r['kind']}] {_indent_rest(r['content'])} ({path})")
    return (front_matter(fields) + "\n" + "\n".join(lines) + "\n").encode()


def render_hit(rank: int, score: float, arms: Sequence[str], row: Row, path: str | None) -> bytes:
    """recall/<q>/NN-<table>-<slug>.md: the memory with its place in the ranking."""
    fields: list[tuple[str, Any]] = [
        ("rank", rank), ("score", round(score, 6)), ("arms", list(arms)),
        ("id", row["id"]), ("table", row["table"]), ("kind", row["kind"]), ("version", row["version"]),
        ("created_at", row["created_at"]),
    ]
    fields += _optional(row, "session", "seq", "speaker", "entity", "title")
    fields += [("tags", list(row["tags"] or [])), ("source_id", row["source_id"]),
               ("refs", list(row.get("refs") or [])), ("agent", row["agent"])]
    if row.get("replaces"):
        fields.append(("replaces", list(row["replaces"])))  # the versions it replaced: history/<id>/v<n>.md
    fields += _optional(row, "stale")  # the evidence of a fact that is no longer current
    fields += _optional(row, "near_miss")  # below the relevance floor: it follows the hits
    if path:
        fields.append(("path", path))
    return (front_matter(fields) + "\n" + memory_body(row)).encode()


def render_truncated(shown: int, total: int, where: str) -> bytes:
    fields = [("shown", shown), ("total", total), ("setting", "max_rows")]
    text = (
        f"# {where} is truncated\n\nThis listing shows the newest {shown} of {total} entries (the `max_rows` "
        "setting, RECALLFS_MAX_ROWS). Every entry can still be opened by its name; use recall/ to search "
        "all of them, or remount with a larger RECALLFS_MAX_ROWS.\n"
    )
    return (front_matter(fields) + "\n" + text).encode()


@dataclass(slots=True)
class IndexStatus:
    """Everything index.md reports; gathered by the browser, rendered here."""

    mountpoint: str
    store: str
    workspace: str
    agent: str
    last_row: int  # the newest row this reader may read (0: none), and below, when it was written
    counts: dict[str, int]
    versions: int
    files: int
    kinds: dict[str, int]
    tags: dict[str, int]
    sessions: int
    entities: dict[str, int]
    memories: int
    semantic_ready: bool
    degraded_reason: str | None
    last_recall_degraded: str | None
    recall_ttl_s: int
    k: int
    truncated: list[str] = field(default_factory=list)
    last_change: datetime | None = None
    health: str = "ok"  # the daemon's verdict (mount/health.py): ok | degraded | failing
    health_problems: list[str] = field(default_factory=list)
    health_notes: list[str] = field(default_factory=list)


def _health_text(s: IndexStatus) -> str:
    if s.health == "ok":
        text = "ok: the daemon serves every path and recall."
    else:
        verb = "cannot serve reliably" if s.health == "failing" else "serves, with something missing"
        text = f"**{s.health}**: the daemon {verb}: " + "; ".join(s.health_problems) + "."
    if s.health_notes:
        text += " " + " ".join(note[0].upper() + note[1:] + "." for note in s.health_notes)
    return text


def _top(counts: Mapping[str, int], n: int = 12) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} ({v})" for k, v in items[:n])
    return shown + (f", and {len(items) - n} more" if len(items) > n else "") if items else "none"


def _index_fields(s: IndexStatus) -> list[tuple[str, Any]]:
    degraded = not s.semantic_ready
    return [
        ("workspace", s.workspace), ("agent", s.agent), ("store", s.store), ("last_row", s.last_row),
        ("last_change", s.last_change),
        ("facts", s.counts.get("facts", 0)), ("summaries", s.counts.get("summaries", 0)),
        ("turns", s.counts.get("turns", 0)), ("sessions", s.sessions), ("entities", len(s.entities)),
        ("versions", s.versions), ("files", s.files), ("health", s.health),
        *([("health_problems", s.health_problems)] if s.health_problems else []), ("degraded", degraded),
        ("degraded_reason", s.degraded_reason if degraded else None), ("truncated", s.truncated),
    ]


def _changed_text(s: IndexStatus) -> str:
    """What index.md says changed last: only what this reader may read (Browser._last_seen)."""
    if s.last_change is None:
        return "Nothing written yet that you can read."
    return (f"Last change you can read: row {s.last_row}, written {s.last_change.isoformat(timespec='seconds')}"
            " (the file's mtime).")


def _recall_state(s: IndexStatus) -> str:
    if not s.semantic_ready:
        return (f"**degraded: {s.degraded_reason}**. The semantic arm is not running, so recall is lexical only "
                "(BM25 over words, plus substring for memories newer than the index). Phrase queries with "
                "the words the memory would contain.")
    sem = "hybrid: the lexical (BM25) and semantic (embedding) arms both run and are fused."
    if s.last_recall_degraded:
        sem += f" The last recall here still ran degraded ({s.last_recall_degraded})."
    return sem


def _index_table(s: IndexStatus) -> str:
    session_files = "`summary.md`, `transcript.md` (one line per turn), `turns/<nnnn>-<speaker>.md`"
    rows = [
        ("`facts/<slug>--<id>.md`", f"{s.counts.get('facts', 0)} current facts, one file each (the newest version)"),
        ("`facts/by-kind/<kind>/`", f"the same facts by kind: {_top(s.kinds)}"),
        ("`facts/by-tag/<tag>/`", f"the same facts by tag: {_top(s.tags)}"),
        ("`sessions/<session>/`", f"{s.sessions} sessions: {session_files}"),
        ("`entities/<name>.md`", f"{len(s.entities)} entities, each with its facts: {_top(s.entities, 8)}"),
        ("`history/<id>/v<n>.md`",
         f"every version of all {s.memories} memories ({s.versions} versions), superseded ones included"),
        ("`recall/<query>/`", "ranked answers to a question (below)"),
    ]
    return "\n".join(f"| {path} | {what} |" for path, what in rows)


def render_index(s: IndexStatus) -> bytes:
    m = s.mountpoint
    sem = _recall_state(s)
    truncated = (
        "Cut at max_rows (each holds `_truncated.md`; names still open): " + ", ".join(s.truncated)
        if s.truncated else "none"
    )
    n_facts, n_summaries, n_turns = (s.counts.get(t, 0) for t in ("facts", "summaries", "turns"))
    table = _index_table(s)
    text = f"""# Memory of {s.workspace}, read as agent `{s.agent}`

Start here. This is a view of a recallfs memory store: every memory is a markdown file with YAML front
matter (id, table, kind, version, timestamps, tags, source). Search it with `ls`, `cat`, `grep -r`, `rg`,
`find`, or ask it with a recall directory (below). To remember, write a file to `inbox/` (below); every
other write fails with "Read-only file system".

## What is here

| path | what |
|---|---|
{table}

Counts: {n_facts} facts, {n_summaries} summaries, {n_turns} turns; {s.files} files outside recall/.

## How to recall

    ls "{m}/recall/when did we switch CI to nextest/"
    cat "{m}/recall/when did we switch CI to nextest/01-fact-....md"
    rg -i nextest {m}/recall/*/

A recall directory holds the best {s.k} hits as `NN-<table>-<slug>.md` (rank first; front matter has score,
rank, arms and source_id, and `near_miss: true` on a hit below the relevance floor: such hits only
follow the ones above it, so `grep -L '^near_miss: true' recall/<q>/*.md` lists the confident ones),
plus `results.json` (everything: scores, arms, degraded flag, timings, pagination) and `context.xml`
(a compact block to paste into a model's context).

- Inline options go in the directory name: `k:20` (hits), `offset:10` (next page), `kind:decision`,
  `tag:ci`, `session:<id>`, `agent:<name>`, `since:7d` or `since:2026-06-01`, `until:...`, `recent:on`,
  `budget:2000` (tokens). Example: `ls "{m}/recall/deploy steps kind:procedure k:5/"`.
- A name cannot hold `/`: write it as `∕` (U+2215) or `%2F`, e.g. `recall/CI%2FCD failures/`.
- A name is at most 255 bytes; a longer query fails with "File name too long". Use the CLI instead:
  `recallfs recall "<long query>" --workspace {s.workspace} --format context`.
- A query cannot start with `.` (hidden names are left to tools such as git and rg).
- `recall/` lists your recent queries as links (`recall/<query> -> .results/<query>`): use a trailing
  slash (`ls -l "recall/<query>/"`). `find`, `grep -r` and `tar` do not follow the links, so a walk of the
  tree sees each memory once. Results are cached for {s.recall_ttl_s} s and refreshed after every ingest.

## Status

- Health: {_health_text(s)}
- Recall: {sem}
- {_changed_text(s)}
- Truncated listings: {truncated}.

## How to remember

    echo "The staging DB moved to pg-delta on 2026-11-20" > {m}/inbox/db.md

A file written to `inbox/` becomes a fact by `{s.agent}` when it is closed, and leaves `inbox/`; the
write returns once it is stored, and it shows in `facts/` and recall at once. Front matter may set the
JSONL fields (`kind`, `entity`, `slot`, `tags`, `visibility: private`, `supersedes`, `type` with `session`
...); writing a `slot` again makes the new text its current version. A file that breaks a rule (or
claims another agent or workspace) stores nothing, fails its close with "Invalid argument", and
`inbox/.rejected/<name>.md` says why. Files up to 1 MiB; `.jsonl` files are read as `recallfs ingest`
reads them, and `recallfs ingest notes.jsonl --workspace {s.workspace}` works while this is mounted too.
"""
    return (front_matter(_index_fields(s)) + "\n" + text).encode()
