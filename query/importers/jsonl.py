"""The generic JSONL importer (schema: developer-notes/jsonl-schema.md, README "Ingest")."""

from __future__ import annotations

import json
from pathlib import Path

from recallfs.query.ingest import IngestError
from recallfs.query.records import MemoryRecord, RecordError, parse_record


def parse_jsonl_text(text: str, *, name: str, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    """Validate every line before anything is written; the first bad line fails the batch."""
    records: list[MemoryRecord] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise IngestError(f"{name}:{lineno}: malformed JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:  # the decoder recurses once per level: "[[[[..." 100k deep
            raise IngestError(f"{name}:{lineno}: malformed JSON: nested too deeply (a record is one object of "
                              "strings, numbers and lists of strings)") from None
        try:
            records.append(parse_record(obj, org=org, workspace=workspace, agent=agent, source=f"jsonl:{name}"))
        except RecordError as exc:
            raise IngestError(f"{name}:{lineno}: {exc}") from None
    return records


def read_jsonl(path: Path, *, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise IngestError(f"{path}:{line}: not valid UTF-8") from None
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror}") from None
    return parse_jsonl_text(text, name=str(path), org=org, workspace=workspace, agent=agent)
