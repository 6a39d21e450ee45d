"""A memory file as the mount renders it, written back to inbox/: an agent editing a memory with the
tools it has (`cp facts/x.md /tmp/; sed ...; cp /tmp/x.md inbox/`).

Such a file carries, beside the JSONL schema's fields, what the store derives: its table, version,
arrival time, source and whether it is current. Those are dropped, `table` gives the `type` (and
fields other tables refuse, rendered for all, go), and the body loses what rendering added to the
content (a turn's `speaker: `, a summary's `# title`, an image's caption line). The `id` stays, so
the file is a new version of the same memory, or nothing at all when it says what a stored version
says. A recall hit's file is refused, pointing at the memory's own file: it leaves out fields such as
`visibility`.

The links a rendered file shows (`supersedes: [f-a/v1]`, `superseded_by`) are resolved from every
version's links, slots included, not the stored ones, so they are dropped too. A new head that names
neither link keeps its memory's head's links (ingest does it for every way in: query/versioning.py), so
an edit of a correction's text does not bring back what it corrected. `supersedes: <id>` or
`superseded_by: <id>`, as the schema spells them (a plain id), set them, and `superseded_by: null` in a
file of one's own (not the mount's) clears them.
"""

from __future__ import annotations

import re
from typing import Any

from recallfs.query.ids import MEMORY_ID
from recallfs.query.records import FACT_ONLY, TYPE_TO_TABLE

_TYPES = {table: rtype for rtype, table in TYPE_TO_TABLE.items()}
# Fields only the mount writes in a memory file (render.memory_fields).
_DERIVED = ("table", "version", "ingested_at", "current", "source")
_VERSION_REF = re.compile(rf"^{MEMORY_ID.pattern}/v\d+$")  # lineage.Ref.name


def is_rendered(fields: dict[str, Any]) -> bool:
    """Whether front matter is the mount's own: it names the table and the version, which no record
    written by hand needs."""
    return "type" not in fields and fields.get("table") in _TYPES and "version" in fields


def is_recall_hit(fields: dict[str, Any]) -> bool:
    """A recall hit's front matter (render.render_hit): it leaves out fields a memory file has, such as
    `visibility`, so written back it would not say what the memory says (a private one made public)."""
    return is_rendered(fields) and "rank" in fields and "score" in fields


def record_fields(fields: dict[str, Any], body: str) -> dict[str, Any]:
    """The JSONL fields of the memory a rendered file shows (is_rendered(fields)), its body as content."""
    obj = {k: v for k, v in fields.items() if k not in _DERIVED and not _resolved_link(k, v)}
    obj["type"] = _TYPES[str(fields["table"])]
    if obj["type"] != "fact":  # rendered for every table (kind: turn, status: active): the schema's are facts'
        for key in FACT_ONLY:
            obj.pop(key, None)
    obj["content"] = _content(obj, body)
    return obj


def _resolved_link(key: str, value: Any) -> bool:
    """A lineage field as rendering resolves it: a list of version refs, a ref, or null."""
    if key == "supersedes":
        return isinstance(value, list) or value is None or bool(_VERSION_REF.match(str(value)))
    if key == "superseded_by":
        return value is None or bool(_VERSION_REF.match(str(value)))
    return False


def _content(obj: dict[str, Any], body: str) -> str:
    """The body less what render.memory_body added to the stored content."""
    text = body.strip()
    if obj["type"] == "turn" and obj.get("speaker") is not None:
        text = text.removeprefix(f"{obj['speaker']}: ")
        if obj.get("caption") is not None:
            text = text.removesuffix(f"[shared an image: {obj['caption']}]").rstrip()
    elif obj["type"] == "summary" and obj.get("title") is not None:
        text = text.removeprefix(f"# {obj['title']}").lstrip()
    return text
