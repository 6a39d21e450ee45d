"""`recallfs recall` flags mean what the inline options mean: a table of pairs read by the same code,
malformed values as messages (never tracebacks), and --since/--until in UTC whatever the local zone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from recallfs.mount.cli import build_parser
from recallfs.mount.cli_errors import CliError
from recallfs.mount.cmd_recall import recall_options
from recallfs.query.query_syntax import parse_query

from conftest import fact, write_jsonl

NOW = datetime(2026, 6, 11, 12, 0, 0)


def flags(*argv: str):
    return build_parser().parse_args(["recall", "q", *argv])


@pytest.mark.parametrize(("argv", "inline"), [
    ((), ""),
    (("--kind", "decision"), "kind:decision"),
    (("--kind", "Decision,preference"), "kind:decision,preference"),
    (("--kind", "decision", "--kind", "procedure"), "kind:decision kind:procedure"),
    (("--tag", "ci"), "tag:ci"),
    (("--tag", "ci", "--tag", "area/build"), "tag:ci,area/build"),
    (("--session", "s-12"), "session:s-12"),
    (("--author", "atlas"), "agent:atlas"),
    (("--since", "7d"), "since:7d"),
    (("--since", "2026-06-01"), "since:2026-06-01"),
    (("--since", "2026-06-01T10:00:00+02:00"), "since:2026-06-01T10:00:00+02:00"),
    (("--until", "2026-06-10"), "until:2026-06-10"),        # a bare date includes that day
    (("--until", "12h"), "until:12h"),
    (("-k", "20"), "k:20"),
    (("--offset", "10"), "offset:10"),
    (("--offset", "0"), "offset:0"),
    (("--recent", "on"), "recent:"),
    (("--recent", "off"), "recent:off"),
    (("--recent", "7d"), "recent:7d"),
    (("--budget", "800"), "budget:800"),
    (("--kind", "fact", "--since", "2w", "-k", "5", "--budget", "64"), "kind:fact since:2w k:5 budget:64"),
    (("--now", "2023-05-10"), "now:2023-05-10"),
    (("--since", "7d", "--now", "2023-05-10"), "since:7d now:2023-05-10"),  # since counts from --now
])
def test_flag_means_the_inline_option(argv, inline):
    parsed = parse_query(inline, now=NOW)
    assert parsed.errors == []
    assert recall_options(flags(*argv), now=NOW) == parsed.options


@pytest.mark.parametrize(("argv", "message"), [
    (("-k", "abc"), "-k abc: 'abc' is not a whole number"),
    (("-k", "0"), "-k 0: 0 is outside 1..200"),
    (("-k", "500"), "outside 1..200"),
    (("--offset", "-1"), "--offset -1: -1 is outside"),
    (("--since", "someday"), "--since someday: 'someday' is not a date"),
    (("--until", "2026-13-01"), "--until 2026-13-01:"),
    (("--recent", "soon"), "--recent soon: 'soon' is not a duration"),
    (("--recent", "0d"), "must be positive"),
    (("--budget", "3"), "--budget 3: 3 is outside"),
    (("--kind", ","), "--kind ,: kind: needs a value"),
    (("--session", ""), "--session : session: needs a value"),
    (("--since", "2026-06-10", "--until", "2026-06-01"), "--since is after --until"),
])
def test_malformed_flag_is_a_message_naming_the_flag(argv, message):
    with pytest.raises(CliError) as excinfo:
        recall_options(flags(*argv), now=NOW)
    assert message in str(excinfo.value)


@pytest.mark.parametrize("tz", ["Etc/GMT-14", "Etc/GMT+12", "UTC"])  # UTC+14, UTC-12: the extremes
def test_since_and_until_are_utc_whatever_the_local_zone(tmp_path, cli, tz):
    now = datetime.now(UTC).replace(microsecond=0)

    def at(hours_ago: float) -> str:
        return (now - timedelta(hours=hours_ago)).isoformat().replace("+00:00", "Z")

    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [
        fact("new", "the release train leaves on thursday", created_at=at(3)),
        fact("old", "the release train leaves on friday", created_at=at(10)),
    ])), check=True)
    env = {"TZ": tz}

    def sources(query: str, *argv: str) -> set[str]:
        out = cli("recall", query, "--format", "json", "--arm", "lexical", *argv, env=env, check=True)
        return {h["source_id"] for h in json.loads(out.stdout)["hits"]}

    # Read in local time, the window would shift by up to 14 hours and take or drop the wrong fact.
    assert sources("release train", "--since", "6h") == sources("release train since:6h") == {"new"}
    assert sources("release train", "--until", "6h") == sources("release train until:6h") == {"old"}
    assert sources("release train", "--since", at(6)) == {"new"}
    # `--since -6h` (6 hours ago, with a minus): argparse read it as a flag ("expected one argument")
    assert sources("release train", "--since", "-6h") == sources("release train since:-6h") == {"new"}


def test_flags_and_inline_options_give_the_same_hits(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [
        fact("d1", "deploy with make release", kind="decision", tags=["deploy"]),
        fact("p1", "deploy from the main branch only", kind="procedure", tags=["deploy", "git"]),
        fact("p2", "deploy notes live in docs/deploy.md", kind="procedure", tags=["docs"]),
    ])), check=True)

    def hits(query: str, *argv: str) -> list[str]:
        out = cli("recall", query, "--format", "json", "--arm", "lexical", *argv, check=True)
        return [h["source_id"] for h in json.loads(out.stdout)["hits"]]

    assert hits("deploy", "--kind", "procedure") == hits("deploy kind:procedure")
    assert sorted(hits("deploy", "--kind", "procedure")) == ["p1", "p2"]
    assert hits("deploy", "--tag", "git") == hits("deploy tag:git") == ["p1"]
    assert hits("deploy", "-k", "1", "--offset", "1") == hits("deploy k:1 offset:1")
    # an inline option wins over its flag
    assert hits("deploy kind:decision", "--kind", "procedure") == ["d1"]
    assert hits("deploy k:2", "-k", "1") == hits("deploy", "-k", "2")


@pytest.mark.parametrize(("argv", "message"), [
    (("-k", "lots"), "-k lots: 'lots' is not a whole number"),
    (("--since", "yesterday"), "--since yesterday: 'yesterday' is not a date"),
    (("--recent", "sometimes"), "--recent sometimes:"),
    (("--recent", "-7d"), "--recent -7d: '-7d': a half-life is a positive duration"),  # read as a value, then refused
])
def test_malformed_flag_through_the_console_script(tmp_path, cli, argv, message):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [fact("a", "anything at all")])), check=True)
    proc = cli("recall", "anything", *argv)
    assert proc.returncode == 1 and message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# Values past what a date or a number can hold: a flag is a one-line error, an inline option a note.
OUT_OF_RANGE = [
    ("--since", "99999y", "since:99999y", "is longer than 9999 years"),
    ("--until", "3000y", "until:3000y", "before now is before the year 1"),
    ("--since", "0001-01-01T00:00+01:00", "since:0001-01-01T00:00+01:00", "out of range once converted to UTC"),
    ("--recent", "99999999999999999999y", "recent:99999999999999999999y", "is longer than 9999 years"),
    ("-k", "9" * 5000, "k:" + "9" * 5000, "is outside 1..200"),
    ("--offset", "9" * 30, "offset:" + "9" * 30, "is outside 0..100000"),
    ("--budget", "9" * 5000, "budget:" + "9" * 5000, "is outside 16..1000000"),
]


@pytest.mark.parametrize(("flag", "value", "inline", "message"), OUT_OF_RANGE, ids=[o[2][:20] for o in OUT_OF_RANGE])
def test_out_of_range_values_through_the_console_script(tmp_path, cli, flag, value, inline, message):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [fact("a", "ci runs nextest")])), check=True)
    proc = cli("recall", "ci", flag, value, "--arm", "lexical")
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr and len(proc.stderr) < 200
    out = cli("recall", f"ci {inline}", "--arm", "lexical", "--format", "json", check=True)
    result = json.loads(out.stdout)
    assert [h["source_id"] for h in result["hits"]] == ["a"]
    assert any(message in note for note in result["notes"])


def test_dates_at_the_edges_of_the_calendar_are_whole_days(tmp_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", [fact("a", "ci runs nextest")])), check=True)
    for argv in (("ci until:9999-12-31 since:0001-01-01",), ("ci", "--until", "9999-12-31", "--since", "0001-01-01")):
        out = json.loads(cli("recall", *argv, "--arm", "lexical", "--format", "json", check=True).stdout)
        assert [h["source_id"] for h in out["hits"]] == ["a"] and not any("ignored" in n for n in out["notes"])
