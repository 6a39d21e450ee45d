"""The memory_dev sets (../shared/data/memory_dev/, read in place, never copied) as generic JSONL
records plus questions: the one adapter of each, used by the eval harness and the floor sweep.

Shapes and licences: ../shared/data/SOURCES.md. Each adapter reads a base directory laid out as
upstream ships it (`DEV` by default; tests pass a tiny one they write).

- RealMem: one workspace per persona, every turn; the query is each `is_query` user turn, searched
  over the sessions *before* its own (in file order); gold: the sessions the next assistant turn names
  in `memory_session_uuids` (session level). Session times keep file order (see `_session_starts`),
  so `until:` just before the query's session is exactly "the sessions before it".
- MADial-Bench (English): the memory pool as facts, one workspace per user (a memory belongs to the
  user its event names; to both when it names neither); the query is the dialogue before its test
  turn; gold: `relevant-id` (memory level: source ids).
- MT-Bench+: one workspace per conversation, its user turns as turns; the query is the last user turn;
  gold: the turns on the question's topics (turn level: source ids). A conjunction question's
  `turn-info` names two topics (`roleplay-98-extraction-132-Q`); both count (taking the text before
  its last dash as one topic, as the floor sweep did, left those 18 questions with no gold).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from recallfs.query.importers.jsonl import jsonl_lines

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "memory_dev"
DEVSETS = ("realmem", "madial", "mtbenchplus")
# The relevance level each set is judged at (the harness's level names).
LEVEL = {"realmem": "session", "madial": "memory", "mtbenchplus": "turn"}
_MTB_EPOCH = datetime(2026, 1, 1)
# A question's `turn-info` names one topic ("stem-143-Q") or, for conjunction questions, two
# ("roleplay-98-extraction-132-Q"); a history turn's is its topic and index ("stem-143-0").
_TOPIC = re.compile(r"[a-z]+-\d+")


@dataclass(frozen=True, slots=True)
class DevQuestion:
    qid: str
    workspace: str  # "org/ws"
    query: str
    gold: frozenset[str]
    until: datetime | None = None  # the haystack ends here (RealMem: just before the query's session)


@dataclass(slots=True)
class DevSet:
    name: str
    records: list[dict[str, Any]] = field(default_factory=list)
    questions: list[DevQuestion] = field(default_factory=list)


def data_files(name: str, base: Path = DEV) -> list[Path]:
    """The files a set is read from (what its eval store is keyed on)."""
    if name == "realmem":
        return sorted((base / "realmem" / "dataset").glob("*_dialogues_256k.json"))
    if name == "madial":
        en = base / "madial" / "data" / "en"
        return [en / "MADial-Bench-en-memory.json", en / "MADial-Bench-en-dialogue.json"]
    if name == "mtbenchplus":
        return [base / "mtbenchplus" / "data" / "mtbenchplus" / "mtbenchplus.json"]
    raise ValueError(f"unknown dev set {name!r}; use one of {', '.join(DEVSETS)}")


def load(name: str, base: Path = DEV, *, personas: int | None = None) -> DevSet:
    if name == "realmem":
        return realmem(base, personas=personas)
    if name == "madial":
        return madial(base)
    if name == "mtbenchplus":
        return mtbenchplus(base)
    raise ValueError(f"unknown dev set {name!r}; use one of {', '.join(DEVSETS)}")


def _lines(path: Path) -> Iterator[Any]:
    for line in jsonl_lines(path.read_text(encoding="utf-8")):
        if line.strip():
            yield json.loads(line)


def _madial_speaker(dialogue: list[str]) -> str:
    """The user's name: the first `<Name>:` line that is not the assistant's or a marker."""
    for line in dialogue:
        if line.startswith("<") and not line.startswith(("<Assistant", "<BOD", "<EOD")):
            return line.split(">")[0].lstrip("<")
    return "user"


def madial(base: Path = DEV) -> DevSet:
    memory_file, dialogue_file = data_files("madial", base)
    memories: dict[str, dict[str, Any]] = {}
    for entry in _lines(memory_file):
        memories.update(entry)
    dialogues = list(_lines(dialogue_file))
    users = {int(d["user-id"]): _madial_speaker(d["dialogue"]) for d in dialogues}
    out = DevSet("madial")
    for mid, mem in memories.items():
        owners = [u for u, name in users.items() if name.lower() in mem["event"].lower()] or list(users)
        for u in owners:
            out.records.append({"type": "fact", "source_id": str(mid), "content": mem["event"],
                                "created_at": mem["time"], "workspace": f"madial/u{u}"})
    for index, d in enumerate(dialogues):
        cut = min(d["test-turn"])
        query = " ".join(ln.strip() for ln in d["dialogue"][1:cut])
        gold = frozenset(str(i) for i in d["relevant-id"])
        out.questions.append(DevQuestion(f"madial#{index}", f"madial/u{d['user-id']}", query, gold))
    return out


def mtbenchplus(base: Path = DEV) -> DevSet:
    convs = json.loads(data_files("mtbenchplus", base)[0].read_text("utf-8"))
    out = DevSet("mtbenchplus")
    for conv in convs:
        ws = f"mtb/{conv['id'].rsplit('-', 1)[-1]}"
        human = [c for c in conv["conversations"] if c["from"] == "human"]
        *history, question = human
        topics = set(_TOPIC.findall(question["turn-info"]))
        gold = []
        for seq, turn in enumerate(history):
            sid = f"{conv['id']}#{seq}"
            out.records.append({"type": "turn", "source_id": sid, "session": conv["id"], "seq": seq,
                                "speaker": "user", "content": turn["value"], "workspace": ws,
                                "created_at": (_MTB_EPOCH + timedelta(minutes=seq)).isoformat()})
            if turn["turn-info"].rsplit("-", 1)[0] in topics:
                gold.append(sid)
        out.questions.append(DevQuestion(f"mtbenchplus#{conv['id']}", ws, question["value"], frozenset(gold)))
    return out


def _session_starts(days: list[str]) -> list[datetime]:
    """One start time per session, in file order, never earlier than the session's own date and always
    at least an hour after the previous start: a few personas list sessions of one day (or an
    earlier day) after later ones, and "before the query's session" means before it in the file."""
    starts: list[datetime] = []
    for day in days:
        start = datetime.strptime(day[:10], "%Y-%m-%d")
        if starts and start < starts[-1] + timedelta(hours=1):
            start = starts[-1] + timedelta(hours=1)
        starts.append(start)
    return starts


def realmem(base: Path = DEV, *, personas: int | None = None) -> DevSet:
    out = DevSet("realmem")
    for path in data_files("realmem", base)[:personas]:
        ws = f"realmem/{path.name.split('_dialogues')[0].replace('_', '-').lower()}"
        sessions = json.loads(path.read_text("utf-8"))["dialogues"]
        starts = _session_starts([s["current_time"] for s in sessions])
        for session, start in zip(sessions, starts, strict=True):
            _realmem_session(out, ws, session, start)
    return out


def _realmem_session(out: DevSet, ws: str, session: dict[str, Any], start: datetime) -> None:
    turns = session["dialogue_turns"]
    uuid = session["session_uuid"]
    for seq, turn in enumerate(turns):
        out.records.append({"type": "turn", "source_id": f"{uuid}#{seq}", "session": uuid, "seq": seq,
                            "speaker": turn["speaker"], "content": turn["content"] or "(empty)",
                            "workspace": ws, "created_at": (start + timedelta(seconds=seq)).isoformat()})
        answer = turns[seq + 1] if seq + 1 < len(turns) else {}
        gold = answer.get("memory_session_uuids") or []
        if turn.get("is_query") and gold:
            out.questions.append(DevQuestion(f"realmem#{uuid}#{seq}", ws, turn["content"], frozenset(gold),
                                             until=start - timedelta(seconds=1)))
