"""Memory records and their validation. Pure functions: a record in, a record or a reason out."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from recallfs.query.ids import MEMORY_ID_RULE, is_memory_id
from recallfs.query.labels import label
from recallfs.query.search_forms import searchable

TYPE_TO_TABLE = {"fact": "facts", "summary": "summaries", "turn": "turns"}
STATUSES = ("active", "superseded", "deleted")
VISIBILITIES = ("workspace", "private")
FACT_ONLY = ("kind", "entity", "slot", "status", "supersedes", "superseded_by")  # fields other tables refuse
# Fields a record is found by (besides tags): one label in either Unicode form (query/labels.py).
LABEL_FIELDS = ("kind", "session", "entity", "slot", "speaker")
MAX_SEQ = 2**31 - 1  # the turns table's seq column is a DuckDB INTEGER
# The most text (UTF-8 bytes, all string fields together) one memory may hold. The full-text index is
# rebuilt whole after each ingest, so every byte of a table is re-read by every later ingest into it: a
# 10 MB record made each later one-line ingest take seconds (README "Ingest"). 256 KiB is about 64k
# tokens, more than a model's context could use as one recalled memory.
MAX_RECORD_BYTES = 256 * 1024


class RecordError(ValueError):
    """Why one input record was refused. The importer adds FILE:LINE."""


# Fields that say how a record was written, for ingest to decide with; they are not stored, and a lake
# does not carry them (a batch's records are decided on the host that commits it: query/backend.py).
TRANSIENT = frozenset({"links_named", "dated_by_write", "copied_version"})


@dataclass(slots=True)
class MemoryRecord:
    table: str
    source_id: str
    content: str
    created_at: datetime
    org: str
    workspace: str
    agent: str
    id: str = ""
    visibility: str = "workspace"
    tags: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    session: str | None = None
    kind: str = "fact"
    entity: str | None = None
    slot: str | None = None
    status: str = "active"
    supersedes: str | None = None
    superseded_by: str | None = None
    title: str | None = None
    seq: int | None = None
    speaker: str | None = None
    caption: str | None = None
    source: str = "jsonl"
    # Whether the record says its links (a `supersedes` or `superseded_by` key, null included): one that
    # does not keeps its memory's head's links when it becomes the head (query/versioning.py).
    links_named: bool = False  # (this and dated_by_write: TRANSIENT, not stored or sent to a lake)
    # Whether `created_at` is the moment of an inbox/ write, not one the record gave: such a record equal
    # to its memory's head but for that time stores nothing (a retry after ENOTCONN: query/ingest._decide).
    dated_by_write: bool = False
    # The `version:` of the mount's own memory file this record was written back from (query/stale_copies.py).
    copied_version: int | None = None

    def __post_init__(self) -> None:
        if not self.id:
            self.id = derive_id(self.table, self.source_id)

    @property
    def search_text(self) -> str:
        """What the lexical and semantic arms index: the content plus the words a reader would search by."""
        parts: list[str] = []
        if self.speaker:
            parts.append(f"{self.speaker}:")
        if self.title:
            parts.append(self.title + ".")
        parts.append(self.content)
        if self.caption:
            parts.append(f"[shared an image: {self.caption}]")
        if self.entity:
            parts.append(f"({self.entity})")
        if self.tags:
            parts.append(" ".join(f"#{t}" for t in self.tags))
        return searchable(" ".join(parts))

    def normalize_labels(self) -> str | None:
        """Put the labels in their stored form (query/labels.py). Returns the content hash the record had
        as written when that changed it, so a file re-ingested into a store that kept its labels as
        written still reads as unchanged; None when the labels were in that form already."""
        tags = [label(t) for t in self.tags]
        fields_now = {n: label(v) for n in LABEL_FIELDS if (v := getattr(self, n)) is not None}
        if tags == self.tags and all(getattr(self, n) == v for n, v in fields_now.items()):
            return None  # the usual case (ASCII labels): no second hash of the content
        as_written = self.content_hash
        self.tags = tags
        for name, value in fields_now.items():
            setattr(self, name, value)
        return as_written

    @property
    def content_hash(self) -> str:
        """Identity of what a version says; re-ingesting an unchanged record is a no-op."""
        payload = "\x1f".join(
            str(v)
            for v in (
                self.content, self.kind, self.entity, self.slot, self.status, self.supersedes,
                self.superseded_by, self.title, self.speaker, self.caption, self.session, self.seq,
                ",".join(self.tags), ",".join(self.refs), self.visibility, self.agent,
                self.created_at.isoformat(),
            )
        )
        return hashlib.sha1(payload.encode()).hexdigest()


def check_text(items: Iterable[tuple[str, Any]]) -> None:
    """Refuse text that cannot be stored, or too much of it. `items`: (field, value) pairs; strings and
    lists of strings are checked, other values are left to the field checks.

    A JSON escape of half a surrogate pair ("\\ud800") decodes to a lone surrogate, which is not a
    character and has no UTF-8 form: the record is refused, never silently altered. So is a NUL."""
    total, largest = 0, ("", 0)
    for key, value in items:
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise RecordError(
                    f"{key}: a lone surrogate \\u{ord(text[exc.start]):04x} at character {exc.start} is not text "
                    "(a \\ud800-\\udfff escape must be one half of a pair)"
                ) from None
            nul = text.find("\x00")
            if nul >= 0:  # grep and most tools take a file holding one for binary: the memory would vanish from them
                raise RecordError(f"{key}: a NUL character at character {nul} is not text")
            total += size
            if size > largest[1]:
                largest = (key, size)
    if total > MAX_RECORD_BYTES:
        raise RecordError(
            f"the record holds {total:,} bytes of text ({largest[0]}: {largest[1]:,}), over the limit of "
            f"{MAX_RECORD_BYTES:,} bytes (256 KiB) for one memory; split it into several records"
        )


def record_items(rec: MemoryRecord) -> list[tuple[str, Any]]:
    """A record's fields as (name, value) pairs, for check_text on records an importer built itself."""
    return [(f.name, getattr(rec, f.name)) for f in fields(rec)]


def derive_id(table: str, source_id: str) -> str:
    """A short, stable memory id for records that do not name one."""
    return f"{table[0]}-{hashlib.sha1(f'{table}/{source_id}'.encode()).hexdigest()[:10]}"


MIN_YEAR, MAX_YEAR = 1900, 2200  # a memory's date; recall's since:/until: take any date, and simply match none


def parse_timestamp(value: Any, what: str = "created_at") -> datetime:
    """ISO 8601 date or date-time; aware values are converted to UTC, then stored naive (UTC)."""
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{what}: expected an ISO 8601 date string, got {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise RecordError(f"{what}: {value!r} is not an ISO 8601 date (e.g. 2026-06-11T14:03:00Z)") from None
    # Checked before the conversion too: 9999-12-31T23:00-05:00 is past what a datetime holds in UTC.
    if not (MIN_YEAR <= ts.year <= MAX_YEAR):
        raise RecordError(f"{what}: {value!r} is outside the years {MIN_YEAR}-{MAX_YEAR} a memory may be dated")
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    if not (MIN_YEAR <= ts.year <= MAX_YEAR):
        raise RecordError(f"{what}: {value!r} is outside the years {MIN_YEAR}-{MAX_YEAR} a memory may be dated")
    return ts


def _str(obj: dict[str, Any], key: str, *, required: bool = False, nonempty: bool = True) -> str | None:
    if key not in obj or obj[key] is None:
        if required:
            raise RecordError(f"missing field {key!r}")
        return None
    value = obj[key]
    if not isinstance(value, str):
        raise RecordError(f"{key}: expected a string, got {type(value).__name__}")
    if nonempty and not value.strip():
        raise RecordError(f"{key}: must not be empty")
    return value


def _str_list(obj: dict[str, Any], key: str) -> list[str]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(f"{key}: expected a list of strings")
    return [v.strip() for v in value if v.strip()]


def _ident(obj: dict[str, Any], key: str) -> str | None:
    value = _str(obj, key)
    if value is not None and not is_memory_id(value):
        raise RecordError(f"{key}: {value!r} must be {MEMORY_ID_RULE}")
    return value


_KNOWN = {
    "type", "source_id", "created_at", "workspace", "agent", "visibility", "tags", "refs", "session",
    "content", "id", "kind", "entity", "slot", "status", "supersedes", "superseded_by", "title", "seq",
    "speaker", "caption",
}


# C901: one check per field of the JSONL schema, in the README table's order, each with its own message;
# split up, a reader would lose the one place that says what a record may hold.
def parse_record(obj: Any, *, org: str, workspace: str, agent: str, source: str = "jsonl") -> MemoryRecord:  # noqa: C901
    """Validate one decoded JSON value against the generic schema (developer-notes/jsonl-schema.md)."""
    from recallfs.scope.principal import ScopeError, check_name, parse_workspace

    if not isinstance(obj, dict):
        raise RecordError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _KNOWN)
    if unknown:
        raise RecordError(f"unknown field {unknown[0]!r}")
    check_text(obj.items())
    rtype = _str(obj, "type", required=True)
    if rtype not in TYPE_TO_TABLE:
        raise RecordError(f"type: {rtype!r} is not one of fact, summary, turn")
    table = TYPE_TO_TABLE[rtype]
    source_id = _str(obj, "source_id", required=True)
    assert source_id is not None
    content = _str(obj, "content", required=True)
    assert content is not None
    created_at = parse_timestamp(obj.get("created_at")) if "created_at" in obj else None
    if created_at is None:
        raise RecordError("missing field 'created_at'")
    try:
        ws_text = _str(obj, "workspace")
        if ws_text is not None:
            org, workspace = parse_workspace(ws_text)
        agent = check_name("agent", _str(obj, "agent") or agent)
    except ScopeError as exc:
        raise RecordError(str(exc)) from None
    visibility = _str(obj, "visibility") or "workspace"
    if visibility not in VISIBILITIES:
        raise RecordError(f"visibility: {visibility!r} is not one of {', '.join(VISIBILITIES)}")
    rec = MemoryRecord(
        table=table, source_id=source_id, content=content, created_at=created_at, org=org,
        workspace=workspace, agent=agent, id=_ident(obj, "id") or "", visibility=visibility,
        tags=_str_list(obj, "tags"), refs=_str_list(obj, "refs"), session=_str(obj, "session"),
        source=source,
    )
    if table == "facts":
        rec.kind = (_str(obj, "kind") or "fact").strip().lower()
        rec.entity = _str(obj, "entity")
        rec.slot = _str(obj, "slot")
        rec.status = _str(obj, "status") or "active"
        if rec.status not in STATUSES:
            raise RecordError(f"status: {rec.status!r} is not one of {', '.join(STATUSES)}")
        rec.supersedes = _ident(obj, "supersedes")
        rec.superseded_by = _ident(obj, "superseded_by")
        rec.links_named = "supersedes" in obj or "superseded_by" in obj
    else:
        for key in FACT_ONLY:
            if key in obj:
                raise RecordError(f"{key}: only facts carry this field")
        if rec.session is None:
            raise RecordError(f"missing field 'session' (required for a {rtype})")
        rec.kind = rtype
    if table == "summaries":
        rec.title = _str(obj, "title")
    if table == "turns":
        seq = obj.get("seq")
        if seq is None:
            raise RecordError("missing field 'seq'")
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
            shown = seq if not isinstance(seq, int) or seq < 10**12 else f"an integer of {len(str(seq))} digits"
            raise RecordError(f"seq: expected a non-negative integer up to {MAX_SEQ:,}, got {shown!r}")
        rec.seq = seq
        rec.speaker = _str(obj, "speaker", required=True)
        rec.caption = _str(obj, "caption")
    elif "seq" in obj or "speaker" in obj or "caption" in obj:
        raise RecordError("seq/speaker/caption: only turns carry these fields")
    return rec
