"""A file written to the mount's `inbox/` as memory records (issue 17): markdown with YAML front matter,
plain markdown, or JSONL. Pure: a name and bytes in, records out, or an InboxError that says which line
broke which rule.

Author and scope come from the writer's view (Writer), never from the file: a record that names another
workspace or agent is refused whole. Refusing says why; silently storing it under the writer's name would
keep a memory its writer did not mean to write.
- Front matter uses the JSONL schema's field names (developer-notes/jsonl-schema.md); the body is the
  content. `type` defaults to `fact`, `created_at` to the time of the write.
- Plain markdown is one fact by the writer, created now.
- `.jsonl` is read as `recallfs ingest` reads it, with the same claims refused.
A record's `source_id`, unless given, is a hash of what it says, so writing the same file again stores
nothing new (ingest is idempotent on source ids). A fact with a `slot` and no `id` takes an id made from
its writer and the slot: writing the slot again adds a version of that one memory, and history/ shows the
chain; another writer's fact in the slot is a memory of its own, which slot succession links.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from recallfs.query.importers.jsonl import JsonLineError, json_lines, jsonl_lines
from recallfs.query.inbox_rendered import is_recall_hit, is_rendered, record_fields
from recallfs.query.labels import label
from recallfs.query.records import MemoryRecord, RecordError, derive_id, parse_record

FRONT = "---"
MAX_NESTING = 8  # the front matter as a map is level 1; what a field needs is a level or two below it
# The field a RecordError names: "tags: ...", "missing field 'session'", "unknown field 'colour'".
_FIELD = re.compile(r"^(?:missing field |unknown field )?'?([a-z_]+)'?(?:[: ]|$)")


@dataclass(frozen=True, slots=True)
class Writer:
    """Who writes, as the view that received the write says: the only author and scope a record gets."""

    org: str
    workspace: str
    agent: str
    now: datetime


class InboxError(ValueError):
    """A file refused whole: the reason, and the 1-based line it points at (None: the whole file)."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line is not None else self.reason


def parse_inbox_file(name: str, data: bytes, writer: Writer) -> list[MemoryRecord]:
    """The records `data` holds (at least one), or InboxError."""
    text = _decoded(data)
    if name.lower().endswith(".jsonl"):
        return _jsonl(name, text, writer)
    lines = jsonl_lines(text)  # lines end at \n alone: a U+2028 or U+0085 in the body is text, kept as written
    if lines and lines[0].strip() == FRONT:
        return [_front_matter(name, lines, writer)]
    return [_record({"content": text.strip()}, writer, name, at=None)]


def _decoded(data: bytes) -> str:
    try:
        # A byte order mark is not text: left in, it hid a file's front matter (stored as content).
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InboxError("not valid UTF-8", data[: exc.start].count(b"\n") + 1) from None


def _jsonl(name: str, text: str, writer: Writer) -> list[MemoryRecord]:
    records = []
    try:
        for number, obj in json_lines(text):
            if not isinstance(obj, dict):
                raise InboxError(f"expected a JSON object, got {type(obj).__name__}", number)
            records.append(_record(obj, writer, name, at=lambda _field, n=number: n))
    except JsonLineError as exc:
        raise InboxError(f"malformed JSON: {exc.detail}", exc.line) from None
    if not records:
        raise InboxError("the file holds no record")
    return records


class FrontMatterLoader(yaml.SafeLoader):
    """YAML as a memory's fields want it. A plain value that looks like a date but is none
    (`created_at: 2026-02-30`) is text, for the record's parser to refuse with its field and line: PyYAML
    raised a bare ValueError ("day is out of range"), which reached the daemon as an internal error and
    counted against health. A yes/no/on/off is text too (`speaker: no` is a name); true and false stay
    booleans, as in YAML 1.2 and JSON. A key given twice in one map is refused with its line: YAML
    keeps the last silently, and which one the writer meant is not ours to guess (JSONL refuses it too)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self.flatten_mapping(node)  # `<<` merges first, as the base does (it is then a no-op there)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base refuses it with its own message
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one map", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def lenient_timestamp(self, node: yaml.ScalarNode) -> Any:
        try:
            return self.construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return self.construct_scalar(node)


FrontMatterLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
FrontMatterLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
FrontMatterLoader.add_constructor("tag:yaml.org,2002:timestamp", FrontMatterLoader.lenient_timestamp)


def _front_matter(name: str, lines: list[str], writer: Writer) -> MemoryRecord:
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == FRONT), None)
    if end is None:
        raise InboxError("front matter opened with '---' on line 1 is never closed by a second '---'", 1)
    try:
        source = "\n".join(lines[1:end])
        _refuse_shapes(source)
        fields = yaml.load(source, Loader=FrontMatterLoader)  # a SafeLoader (below)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise InboxError(f"front matter: {problem}", mark.line + 2 if mark is not None else 1) from None
    except InboxError:
        raise
    except (ValueError, TypeError, OverflowError) as exc:  # a constructor's own error (an explicit !!tag)
        raise InboxError(f"front matter: {exc}", 2) from None
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise InboxError("front matter: expected `field: value` lines", 2)
    if "content" in fields:
        raise InboxError("front matter: `content` is the text after the front matter", _line_of(lines, end, "content"))
    obj = {str(key): _plain(value) for key, value in fields.items()}
    body = "\n".join(lines[end + 1:])
    if is_recall_hit(obj):
        where = f" ({obj['path']})" if obj.get("path") else ""
        raise InboxError(f"this is a recall hit, which leaves out fields of its memory such as `visibility`: write "
                         f"the memory's own file{where} instead", _line_of(lines, end, "rank"))
    copied = None
    if is_rendered(obj):  # a memory file of the mount's, written back: a new version of that memory
        copied = obj.get("version")
        obj = record_fields(obj, body)
    else:
        obj["content"] = body.strip()
    record = _record(obj, writer, name, at=lambda field: end + 2 if field == "content" else _line_of(lines, end, field))
    if isinstance(copied, int) and not isinstance(copied, bool):
        record.copied_version = copied
    return record


def _refuse_shapes(source: str) -> None:
    """Refuse, before the front matter is loaded, what a memory's fields have no use for and loading
    makes costly. Reading events stops at the first offence, so its cost is bounded too.
    - Anchors and aliases: a 452-byte front matter of nested aliases expanded to a billion items (the
      close took 68 s and the daemon 5 GB), and a self-referencing one recursed without end.
    - Nesting deeper than MAX_NESTING: PyYAML's loader spends ~1.2 ms a level (36 s for 30k brackets,
      with the daemon's worker held all along)."""
    depth = 0
    for event in yaml.parse(source, Loader=yaml.SafeLoader):
        mark = event.start_mark
        line = mark.line + 2 if mark is not None else 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise InboxError("front matter: YAML anchors and aliases (`&name`, `*name`) are not taken; write "
                             "each value out", line)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_NESTING:
                raise InboxError(f"front matter: lists and maps nest deeper than {MAX_NESTING - 1} levels; a "
                                 "field's value is text, a list, or a short map", line)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _record(obj: dict[str, Any], writer: Writer, name: str, *, at: Any) -> MemoryRecord:
    """One record from decoded fields: claims checked, defaults filled, then the JSONL schema's rules.
    `at(field)`: the line a problem with that field points at (None: no line)."""
    def refuse(reason: str, field: str | None) -> InboxError:
        return InboxError(reason, at(field) if at is not None and field else None)

    claimed = obj.get("workspace")
    if claimed is not None and claimed != f"{writer.org}/{writer.workspace}":
        raise refuse(f"workspace: this view writes to {writer.org}/{writer.workspace}, not {claimed!r}", "workspace")
    if obj.get("agent") not in (None, writer.agent):
        raise refuse(f"agent: this view writes as {writer.agent!r}, not {obj['agent']!r} (the author is the "
                     "writer)", "agent")
    if not str(obj.get("content") or "").strip():
        raise refuse("the memory has no text", "content")
    filled = {"type": "fact", "created_at": writer.now.isoformat(), **obj}
    if filled["type"] == "fact" and isinstance(filled.get("slot"), str) and "id" not in filled:
        # A slot written again by its writer is the next version of one memory: history/<id>/ shows the
        # chain. One memory per writer and slot: an id shared by every writer of the slot became another
        # agent's private memory's, and moving the write off it (query/inbox_scope.py) told the writer so.
        filled["id"] = derive_id("facts", f"slot:{writer.agent}/{label(filled['slot'])}")
    # The id of what the file says: the time of the write is left out unless the file gives one, so the
    # same text written again (an agent's retry) is that memory again, not a second one beside it.
    said = {k: v for k, v in filled.items() if k != "created_at" or "created_at" in obj}
    filled.setdefault("source_id", "inbox:" + hashlib.sha256(
        json.dumps(said, sort_keys=True, default=str).encode()).hexdigest()[:20])
    try:
        record = parse_record(filled, org=writer.org, workspace=writer.workspace, agent=writer.agent,
                              source=f"inbox:{name}")
        record.dated_by_write = "created_at" not in obj
        return record
    except RecordError as exc:
        match = _FIELD.match(str(exc))
        reason = str(exc)
        if match and "expected a string, got" in reason:  # YAML read `entity: 0x1F` as a number
            reason += f"; to keep it as text, quote it: {match.group(1)}: \"...\""
        raise refuse(reason, match.group(1) if match else None) from None


def _plain(value: Any) -> Any:
    """YAML's own types as the JSONL schema has them: a date or time as ISO text (YAML reads
    `created_at: 2026-11-20` as a date)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _line_of(lines: list[str], end: int, field: str) -> int | None:
    """The 1-based line of `field:` in the front matter (lines 2..end), or None."""
    for i in range(1, end):
        if lines[i].split(":", 1)[0].strip() == field:
            return i + 1
    return None
