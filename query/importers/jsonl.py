"""The generic JSONL importer (schema: developer-notes/jsonl-schema.md, README "Ingest")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recallfs.query.ingest import IngestError
from recallfs.query.records import MemoryRecord, RecordError, parse_record


class JsonLineError(ValueError):
    """A line that is not JSON: its 1-based number and what is wrong."""

    def __init__(self, line: int, detail: str) -> None:
        super().__init__(f"line {line}: malformed JSON: {detail}")
        self.line = line
        self.detail = detail


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose key repeats is refused: JSON keeps the last one silently, and which one the writer
    meant (`"content"` twice) is not ours to guess."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def jsonl_lines(text: str) -> list[str]:
    """The lines of JSONL text: they end only at \n (a \r before it is dropped). Not str.splitlines,
    which also ends a line at U+2028, U+2029, U+0085, \x0b, \x0c and \x1c-\x1e: JSON lets those stand
    raw inside a string, so a valid record was cut in two and every later line number was off."""
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line starts no line of its own
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def json_lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) of every record line; blank lines and `//` comments are skipped.
    Raises JsonLineError at the first line that does not decode. A leading byte order mark (some
    editors write one) is not part of the first record."""
    for lineno, line in enumerate(jsonl_lines(text.removeprefix("\ufeff")), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            obj = json.loads(stripped, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise JsonLineError(lineno, f"{exc.msg} (column {exc.colno})") from None
        except _DuplicateKey as exc:
            raise JsonLineError(lineno, str(exc)) from None
        except RecursionError:  # the decoder recurses once per level: "[[[[..." 100k deep
            raise JsonLineError(lineno, "nested too deeply (a record is one object of strings, numbers and "
                                "lists of strings)") from None
        except ValueError:  # Python refuses to read an integer of more than 4,300 digits
            raise JsonLineError(lineno, "a number of more than 4,300 digits") from None
        yield lineno, obj


def parse_jsonl_text(text: str, *, name: str, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    """Validate every line before anything is written; the first bad line fails the batch."""
    records: list[MemoryRecord] = []
    try:
        for lineno, obj in json_lines(text):
            try:
                records.append(parse_record(obj, org=org, workspace=workspace, agent=agent, source=f"jsonl:{name}"))
            except RecordError as exc:
                raise IngestError(f"{name}:{lineno}: {exc}") from None
    except JsonLineError as exc:
        raise IngestError(f"{name}:{exc.line}: malformed JSON: {exc.detail}") from None
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
