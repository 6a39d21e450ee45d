"""The same bad input, routed through a mount's daemon (the store is mounted, so `recallfs recall` and
`recallfs ingest` go through its control socket): the same notes and one-line refusals, never
"internal error"."""

from __future__ import annotations

import json

import pytest
from mount_helpers import module_mount, needs_fuse

pytestmark = [needs_fuse, pytest.mark.mount]


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from module_mount(tmp_path_factory, "mounterrors")


@pytest.mark.parametrize("option", ["since:99999y", "until:3000y", "since:0001-01-01T00:00+01:00",
                                    "recent:99999999999999999999y", "k:" + "9" * 5000])
def test_an_option_no_date_or_number_can_hold_is_a_note_from_the_daemon(mounted, option):
    proc = mounted.cli("recall", f"cargo {option}", "--format", "json", check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [h["source_id"] for h in out["hits"]] == ["ci-1"]
    assert any(note.startswith(f"ignored {option[:20]}") for note in out["notes"])


def test_dates_at_the_calendar_edges_through_the_daemon(mounted):
    out = json.loads(mounted.cli("recall", "cargo until:9999-12-31 since:0001-01-01", "--format", "json").stdout)
    assert [h["source_id"] for h in out["hits"]] == ["ci-1"] and not out["notes"]


def test_a_lone_surrogate_is_refused_through_the_daemon(mounted, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "fact", "source_id": "s1", "content": "x \\ud800", "created_at": "2026-06-01"}\n')
    proc = mounted.cli("ingest", str(bad), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert f"ingest refused, nothing written: {bad}:1: content: a lone surrogate \\ud800" in proc.stderr
    out = json.loads(mounted.cli("recall", "cargo", "--format", "json").stdout)  # the daemon still answers
    assert [h["source_id"] for h in out["hits"]] == ["ci-1"]
