"""The LoCoMo importer: each conversation becomes workspace `<org>/<sample_id>`.

- turns: one per dialogue line, `dia_id` as source id, the session's date as timestamp (turns are
  spaced a minute apart so their order survives), image captions kept as text;
- summaries: one per session;
- facts: the per-session observations, kind `observation`, entity = the speaker, evidence `dia_id`
  kept in `refs` as provenance.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from recallfs.query.ingest import IngestError
from recallfs.query.records import MemoryRecord, RecordError, check_text, record_items

_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> datetime(2023, 5, 8, 13, 56)."""
    m = _DATE.match(text)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    month_no = _MONTHS.get(month.lower())
    if month_no is None:
        raise ValueError(f"unrecognised month in {text!r}")
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), month_no, int(day), h, int(minute))


def _sessions(conv: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str]]:
    out = []
    for key, value in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list):
            n = int(m.group(1))
            out.append((n, value, str(conv.get(f"session_{n}_date_time", ""))))
    return sorted(out, key=lambda item: item[0])


def convert_sample(sample: dict[str, Any], *, org: str, agent: str) -> list[MemoryRecord]:
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    records: list[MemoryRecord] = []
    common: dict[str, Any] = {"org": org, "workspace": sample_id, "agent": agent, "source": "locomo"}
    session_dates: dict[int, datetime] = {}
    for n, turns, date_text in _sessions(conv):
        start = parse_locomo_date(date_text)
        session_dates[n] = start
        session = f"session_{n}"
        for seq, turn in enumerate(turns):
            text = str(turn.get("text", ""))
            caption = turn.get("blip_caption")
            records.append(MemoryRecord(
                table="turns", source_id=str(turn["dia_id"]), content=text or f"[image] {caption}",
                created_at=start + timedelta(minutes=seq), session=session, seq=seq,
                speaker=str(turn["speaker"]), caption=str(caption) if caption else None, kind="turn",
                **common,
            ))
    for key, text in (sample.get("session_summary") or {}).items():
        m = re.fullmatch(r"session_(\d+)_summary", key)
        if not m or not isinstance(text, str) or int(m.group(1)) not in session_dates:
            continue
        n = int(m.group(1))
        records.append(MemoryRecord(
            table="summaries", source_id=f"S{n}", content=text, created_at=session_dates[n],
            session=f"session_{n}", kind="summary", title=f"Session {n}", **common,
        ))
    for key, by_speaker in (sample.get("observation") or {}).items():
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if not m or int(m.group(1)) not in session_dates or not isinstance(by_speaker, dict):
            continue
        n = int(m.group(1))
        for speaker, items in by_speaker.items():
            for index, item in enumerate(items):
                text, evidence = item[0], item[1] if len(item) > 1 else []
                refs = [evidence] if isinstance(evidence, str) else [str(e) for e in evidence]
                records.append(MemoryRecord(
                    table="facts", source_id=f"O{n}:{speaker}:{index}", content=str(text),
                    created_at=session_dates[n], session=f"session_{n}", kind="observation",
                    entity=str(speaker), refs=refs, **common,
                ))
    return records


def read_locomo(path: Path, *, org: str, workspace: str, agent: str) -> list[MemoryRecord]:
    """`workspace` is unused: every conversation gets its own. `org` defaults to `locomo`."""
    del workspace
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}:1: not a LoCoMo JSON file: {exc}") from None
    except RecursionError:
        raise IngestError(f"{path}:1: not a LoCoMo JSON file: nested too deeply") from None
    if not isinstance(data, list):
        raise IngestError(f"{path}:1: expected a JSON list of conversations")
    records: list[MemoryRecord] = []
    for index, sample in enumerate(data):
        try:
            converted = convert_sample(sample, org=org, agent=agent)
        except (KeyError, TypeError, ValueError) as exc:
            raise IngestError(f"{path}: conversation {index}: {exc}") from None
        for rec in converted:
            try:
                check_text(record_items(rec))
            except RecordError as exc:
                what = {"turns": "turn", "summaries": "summary", "facts": "observation"}[rec.table]
                raise IngestError(f"{path}: conversation {index}: {what} {rec.source_id}: {exc}") from None
        records.extend(converted)
    return records
