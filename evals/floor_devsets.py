"""The relevance floor's sweep (evals/floor_sweep.py) on the memory_dev sets, read in place.

    python -m recallfs.evals.floor_devsets --set madial|mtbenchplus|realmem [--personas 2] [--arm ...]

Not an eval harness: each set is turned into generic JSONL records in a temporary directory, ingested
with `recallfs ingest` (FTS and embeddings, as a user would), and every question runs once through
recall() with the floor off; the sweep then counts, per candidate floor, the questions whose gold hit
would leave the top 10. Shapes: ../shared/data/SOURCES.md.

- MADial-Bench: the memory pool as facts, one workspace per user (a memory belongs to the user its
  event names); the query is the dialogue before its test turn; gold: `relevant-id`.
- MT-Bench+: one workspace per conversation, its user turns as turns; the query is the last user turn;
  gold: the turns whose `turn-info` topic prefix matches the question's.
- RealMem: one workspace per persona (the first N), every turn; the query is each `is_query` user turn,
  searched over the sessions before its own (`until:`); gold: the sessions the next assistant turn
  names in `memory_session_uuids` (session level).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from recallfs.evals.floor_sweep import MEASURE_COSINE, any_shared_word, evidence, sweep
from recallfs.query.query_syntax import RecallOptions

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "memory_dev"
TOP = 10


@dataclass(slots=True)
class DevSet:
    records: list[dict[str, Any]] = field(default_factory=list)
    # (workspace, query, gold units, unit kind "source" or "session", until)
    questions: list[tuple[str, str, frozenset[str], str, datetime | None]] = field(default_factory=list)


def _lines(path: Path) -> Iterator[Any]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def madial() -> DevSet:
    base = DEV / "madial" / "data" / "en"
    memories: dict[str, dict[str, Any]] = {}
    for entry in _lines(base / "MADial-Bench-en-memory.json"):
        memories.update(entry)
    dialogues = list(_lines(base / "MADial-Bench-en-dialogue.json"))
    users: dict[int, str] = {}
    for d in dialogues:
        speaker = next((ln.split(">")[0].lstrip("<") for ln in d["dialogue"] if ln.startswith("<") and
                        not ln.startswith(("<Assistant", "<BOD", "<EOD"))), "user")
        users[int(d["user-id"])] = speaker
    out = DevSet()
    for mid, mem in memories.items():
        owners = [u for u, name in users.items() if name.lower() in mem["event"].lower()] or list(users)
        for u in owners:
            out.records.append({"type": "fact", "source_id": mid, "content": mem["event"],
                                "created_at": mem["time"], "workspace": f"madial/u{u}"})
    for d in dialogues:
        cut = min(d["test-turn"])
        query = " ".join(ln.strip() for ln in d["dialogue"][1:cut])
        gold = frozenset(str(i) for i in d["relevant-id"])
        out.questions.append((f"madial/u{d['user-id']}", query, gold, "source", None))
    return out


def mtbenchplus() -> DevSet:
    convs = json.loads((DEV / "mtbenchplus" / "data" / "mtbenchplus" / "mtbenchplus.json").read_text("utf-8"))
    out = DevSet()
    for conv in convs:
        ws = f"mtb/{conv['id'].rsplit('-', 1)[-1]}"
        human = [c for c in conv["conversations"] if c["from"] == "human"]
        *history, question = human
        topic = question["turn-info"].rsplit("-", 1)[0]
        gold = []
        for seq, turn in enumerate(history):
            sid = f"{conv['id']}#{seq}"
            out.records.append({"type": "turn", "source_id": sid, "session": conv["id"], "seq": seq, "speaker": "user",
                                "content": turn["value"], "workspace": ws,
                                "created_at": (datetime(2026, 1, 1) + timedelta(minutes=seq)).isoformat()})
            if turn["turn-info"].rsplit("-", 1)[0] == topic:
                gold.append(sid)
        out.questions.append((ws, question["value"], frozenset(gold), "source", None))
    return out


def realmem(personas: int) -> DevSet:
    out = DevSet()
    for path in sorted((DEV / "realmem" / "dataset").glob("*_dialogues_256k.json"))[:personas]:
        ws = f"realmem/{path.name.split('_dialogues')[0].replace('_', '-').lower()}"
        data = json.loads(path.read_text("utf-8"))
        for session in data["dialogues"]:
            start = datetime.strptime(session["current_time"][:10], "%Y-%m-%d")
            turns = session["dialogue_turns"]
            for seq, turn in enumerate(turns):
                when = start + timedelta(seconds=seq)
                out.records.append({"type": "turn", "source_id": f"{session['session_uuid']}#{seq}",
                                    "session": session["session_uuid"], "seq": seq, "speaker": turn["speaker"],
                                    "content": turn["content"] or "(empty)", "workspace": ws,
                                    "created_at": when.isoformat()})
                answer = turns[seq + 1] if seq + 1 < len(turns) else {}
                gold = answer.get("memory_session_uuids") or []
                if turn.get("is_query") and gold:
                    out.questions.append((ws, turn["content"], frozenset(gold), "session",
                                          start - timedelta(seconds=1)))
    return out


def _ingest(records: list[dict[str, Any]], store: Path) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in records) + "\n")
    env = {**os.environ, "RECALLFS_STORE": str(store), "RECALLFS_WORKSPACE": "dev/dev", "RECALLFS_AGENT": "dev"}
    recallfs = Path(sys.executable).parent / "recallfs"
    subprocess.run([str(recallfs), "ingest", "--no-progress", fh.name], env=env, check=True, stdout=sys.stderr)
    os.unlink(fh.name)


def measure(dev: DevSet, store_path: Path, arm: str, fusion: str) -> dict[str, Any]:
    from recallfs.evals.semantic_probe import load_semantic
    from recallfs.query import settings as settings_mod
    from recallfs.query.recall import recall
    from recallfs.query.store import Store
    from recallfs.ranking.stage_config import StageConfig
    from recallfs.scope.principal import Principal

    semantic, _ = load_semantic(settings_mod.resolve()) if arm != "lexical" else (None, "off")
    stages = StageConfig(relevance_floor=0.0, floor_cosine=MEASURE_COSINE)
    gold: list[Any] = []
    with Store(store_path, read_only=True) as store:
        for ws, query, units, level, until in dev.questions:
            org, name = ws.split("/")
            result = recall(store, Principal(org, name, "dev"), query, semantic=semantic, k=TOP, arm=arm,
                            fusion=fusion, stages=stages, options=RecallOptions(until=until))
            key = "source_id" if level == "source" else "session"
            gold.append([any_shared_word(result),
                         [evidence(h) for h in result.hits if str(h.row[key]) in units]])
    return {"questions": len(gold), "rows": sweep(gold), "gold": gold}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallfs.evals.floor_devsets")
    parser.add_argument("--set", choices=("madial", "mtbenchplus", "realmem"), required=True)
    parser.add_argument("--personas", type=int, default=2, help="RealMem: how many personas")
    parser.add_argument("--arm", choices=("fused", "lexical", "semantic"), default="fused")
    parser.add_argument("--fusion", choices=("calibrated", "rrf"), default="calibrated")
    parser.add_argument("--store", type=Path, help="reuse this store (built on first use)")
    args = parser.parse_args(argv)
    dev = {"madial": madial, "mtbenchplus": mtbenchplus}.get(args.set, lambda: realmem(args.personas))()
    store = args.store or Path(tempfile.mkdtemp()) / "dev.duckdb"
    if not store.exists():
        _ingest(dev.records, store)
    report = {"set": args.set, "arm": args.arm, "fusion": args.fusion, **measure(dev, store, args.arm, args.fusion)}
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
