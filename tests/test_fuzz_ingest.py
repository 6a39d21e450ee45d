"""Fuzz JSONL ingest into a mounted store, through the daemon's control socket (the path `recallfs
ingest` takes while a store is mounted) and through the real CLI.

Each example is a file of a few lines: valid records with hostile values, records with a field dropped or
of the wrong type, lone surrogates, invalid UTF-8, deep nesting, raw junk. Invariants: an accepted file
reports every record; a refused one answers one line naming FILE:LINE or a clear reason (never an internal
error or a traceback) and leaves the store's generation as it was; the daemon stays up and counts no
unexpected error.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import pytest
from fuzz_support import HOSTILE_VALUES, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mount_helpers import Mount, module_mount, needs_fuse

from recallfs.mount import control_client as control

pytestmark = [needs_fuse, pytest.mark.mount, pytest.mark.slow]

FIELDS = ("type", "source_id", "content", "created_at", "session", "workspace", "agent", "visibility", "tags",
          "refs", "id", "kind", "entity", "slot", "status", "supersedes", "superseded_by", "title", "seq",
          "speaker", "caption")
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**40, 10**40), st.floats(allow_nan=True),
                      st.text(max_size=40), st.sampled_from(HOSTILE_VALUES))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)
text = st.one_of(st.text(min_size=1, max_size=80), st.sampled_from(["\ud800", "a\udfffb", "x" * 300, "🙂" * 40]))
dates = st.one_of(st.sampled_from(["2026-06-11", "2026-06-11T14:03:00Z", "2026-06-11 14:03", "0001-01-01",
                                   "9999-12-31T23:59:59", "2026-02-30", "yesterday", "", "2026-06-11T25:00",
                                   "+999999-01-01", "2026-06-11T14:03:00+14:00"]), st.text(max_size=20))


valid_text = st.text(st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=80).filter(str.strip)
valid_date = st.datetimes(datetime(1900, 1, 1), datetime(2200, 12, 31)).map(lambda d: d.isoformat())


@st.composite
def valid_record(draw: st.DrawFn) -> dict:
    """A record the schema accepts, with whatever text and dates it allows."""
    kind = draw(st.sampled_from(["fact", "turn", "summary"]))
    rec: dict = {"type": kind, "source_id": draw(valid_text), "content": draw(valid_text),
                 "created_at": draw(valid_date)}
    if kind != "fact":
        rec["session"] = draw(valid_text)
    if kind == "turn":
        rec["seq"], rec["speaker"] = draw(st.integers(0, 10**6)), draw(valid_text)
    if kind == "fact" and draw(st.booleans()):
        rec.update(tags=draw(st.lists(valid_text, max_size=3)), entity=draw(valid_text))
    return rec


@st.composite
def record(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["fact", "turn", "summary"]))
    rec: dict = {"type": kind, "source_id": draw(text), "content": draw(text), "created_at": draw(dates)}
    if kind != "fact":
        rec["session"] = draw(text)
    if kind == "turn":
        rec["seq"] = draw(st.one_of(st.integers(-5, 10**20), json_leaf))
        rec["speaker"] = draw(text)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=4)):
        rec[name] = draw(st.one_of(json_value, text, st.lists(text, max_size=3)))
    for name in draw(st.lists(st.sampled_from(list(rec)), max_size=2)):
        rec.pop(name, None)
    return rec


def _dumps(rec: dict) -> str:
    # NaN and infinities as JSON's non-standard literals, as a careless writer would produce
    return json.dumps(rec, allow_nan=True, default=str)


line = st.one_of(
    valid_record().map(_dumps), valid_record().map(_dumps), record().map(_dumps),
    st.sampled_from(["", "// a comment", "[" * 100_000 + "]" * 100_000, "{" * 5000, "null", "[]", "{}", "42",
                     '{"type": "fact"', "\x00", '{"type": "fact", "content": "\\ud800"}']),
    st.text(max_size=60),
)
file_lines = st.one_of(
    st.lists(valid_record().map(_dumps).map(str.encode), min_size=1, max_size=4),
    st.lists(st.one_of(line.map(str.encode), st.binary(max_size=40)), min_size=1, max_size=5),
)


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from module_mount(tmp_path_factory, "fuzzingest")


def _generation(mount: Mount) -> int:
    reply = control.request(mount.store, {"op": "ping"}, timeout=30)
    assert reply is not None
    return int(reply["health"]["generation"])


def _records_in(lines: list[bytes]) -> int:
    count = 0
    for raw in lines:
        stripped = raw.decode("utf-8", "replace").strip()
        if stripped and not stripped.startswith("//"):
            count += 1
    return count


def _check_refusal(message: str, path: Path) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message, message
    assert "internal error" not in message, message
    assert str(path) in message or "ingest refused" in message, message


class Tally:
    accepted = refused = 0


def _run(mounted: Mount, tmp: Path, lines: list[bytes], n: int, via_cli: bool, tally: Tally) -> None:
    path = tmp / f"fuzz-{n}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    generation = _generation(mounted)
    if via_cli:
        proc = mounted.cli("ingest", str(path), check=False, timeout=120)
        ok, message = proc.returncode == 0, proc.stderr.strip()
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr
    else:
        payload = {"op": "ingest", "file": str(path), "format": "jsonl", "org": "acme", "workspace": "proj",
                   "agent": "tester"}
        try:
            reply = control.request(mounted.store, payload, timeout=120)
            ok, message = True, json.dumps(reply)
        except control.ControlError as exc:
            ok, message = False, str(exc)
    if ok:
        tally.accepted += 1
        if not via_cli:
            report = json.loads(message)["report"]
            assert report["written"] + report["unchanged"] == _records_in(lines), (report, lines)
    else:
        tally.refused += 1
        _check_refusal(message, path)
        assert _generation(mounted) == generation, "a refused ingest changed the store"


@pytest.mark.parametrize("via_cli", [False, True], ids=["socket", "cli"])
def test_jsonl_lines(mounted: Mount, tmp_path: Path, via_cli: bool) -> None:
    tally = Tally()
    counter = iter(range(10**9))

    examples = fuzz_examples(40, 1_000) if via_cli else fuzz_examples(260, 10_000)

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(file_lines)
    def one(lines: list[bytes]) -> None:
        _run(mounted, tmp_path, lines, next(counter), via_cli, tally)

    one()
    print(f"\nfuzz ingest ({'cli' if via_cli else 'socket'}): {tally.accepted} accepted, {tally.refused} refused")
    assert tally.accepted and tally.refused, (tally.accepted, tally.refused)  # both paths were exercised
    detail = mounted.mount_info()["detail"]
    assert detail["unexpected_errors"] == 0, detail["last_unexpected_error"]
    assert "EIO" not in detail["errnos"]
    assert mounted.mount_info()["health"] == "ok"
    assert not math.isnan(float(detail["generation"]))
