"""Ranking as the mount shows it, through the real Operations layer and store (no kernel; the same
code test_mount_fs.py drives through FUSE): supersession A -> B -> C leaves only C in recall/ while
history/ keeps A, B and C; the daemon's recall/ directories and control socket use the ranking settings."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from ops_helpers import listing, lookup_path, read_all

from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import GuardedStore
from recallfs.mount.control import ControlServer
from recallfs.mount.control_options import options_payload
from recallfs.mount.operations import MountOps
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.settings import resolve
from recallfs.scope.principal import Principal

from conftest import fact, write_jsonl

AGENT = "tester"
ME = Principal("acme", "proj", AGENT)
A = fact("dt-1", "The deploy target is the Hetzner box", id="f-deploy-target", created_at="2026-06-01T10:00:00Z")
B = fact("dt-2", "The deploy target is the Fly.io app", id="f-deploy-target", created_at="2026-06-02T10:00:00Z")
C = fact("dt-3", "The deploy target is the Cloudflare Pages site", id="f-deploy-target",
         created_at="2026-06-03T10:00:00Z")
CONFLICT = [fact("old", "The team chat tool is Slack", created_at="2026-01-10T10:00:00Z"),
            fact("new", "The team chat tool is Zulip", created_at="2026-06-10T10:00:00Z")]


def ingest(store: GuardedStore, path: Path, records: list) -> object:
    write_jsonl(path, records)
    return ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent=AGENT), embedder=None)


def make_ops(tmp_path: Path, records: list, env: dict[str, str] | None = None) -> MountOps:
    """As the daemon builds a view: the recall settings are k plus the settings' ranking."""
    store = GuardedStore(tmp_path / "store.duckdb", create=True)
    ingest(store, tmp_path / "first.jsonl", records)
    cfg = resolve({}, env=env or {})
    browser = Browser(store, ME, max_rows=1000, mountpoint=str(tmp_path / "mnt"),
                      k=cfg.k, ranking=cfg.ranking())
    ops = MountOps(store, browser, recall_ttl=5, kernel=False)
    store.loop_thread = threading.get_ident()  # as the daemon does: no DuckDB on the trio thread
    return ops


@pytest.fixture
def ops_factory(tmp_path: Path):
    made: list[MountOps] = []

    def make(records: list, env: dict[str, str] | None = None) -> MountOps:
        ops = make_ops(tmp_path, records, env)
        made.append(ops)
        return ops

    yield make
    for ops in made:
        ops.store.loop_thread = None
        ops.store.close()


async def recall_json(ops: MountOps, query: str) -> dict:
    return json.loads(await read_all(ops, await lookup_path(ops, f"recall/.results/{query}/results.json")))


async def test_superseded_twice_recall_shows_only_c_and_history_shows_a_b_c(ops_factory, tmp_path) -> None:
    ops = ops_factory([A])
    for name, record in (("b.jsonl", B), ("c.jsonl", C)):
        await ops.write_store(lambda name=name, record=record: ingest(ops.store, tmp_path / name, [record]))

    results = await recall_json(ops, "deploy target")
    assert [(h["id"], h["content"]) for h in results["hits"]] == [("f-deploy-target", C["content"])]
    hit_files = [n for n in await listing(ops, await lookup_path(ops, "recall/.results/deploy target"))
                 if n.endswith(".md")]
    assert len(hit_files) == 1

    history = await lookup_path(ops, "history/f-deploy-target")
    assert await listing(ops, history) == ["v1.md", "v2.md", "v3.md"]
    texts = [await read_all(ops, (await ops.lookup(history, f"v{v}.md".encode())).st_ino) for v in (1, 2, 3)]
    for text, record in zip(texts, (A, B, C), strict=True):
        assert record["content"].encode() in text


async def test_supersedes_chain_a_b_c_recall_shows_only_the_head(ops_factory, tmp_path) -> None:
    ops = ops_factory([fact("a", "Logging goes to syslog", id="log-a", created_at="2026-06-01T10:00:00Z")])
    await ops.write_store(lambda: ingest(ops.store, tmp_path / "b.jsonl", [
        fact("b", "Logging goes to journald", id="log-b", supersedes="log-a", created_at="2026-06-02T10:00:00Z")]))
    await ops.write_store(lambda: ingest(ops.store, tmp_path / "c.jsonl", [
        fact("c", "Logging goes to Loki", id="log-c", supersedes="log-b", created_at="2026-06-03T10:00:00Z")]))

    results = await recall_json(ops, "logging goes")
    assert [h["id"] for h in results["hits"]] == ["log-c"]
    history = await lookup_path(ops, "history")
    assert {"log-a", "log-b", "log-c"} <= set(await listing(ops, history))
    for fid, word in (("log-a", b"syslog"), ("log-b", b"journald"), ("log-c", b"Loki")):
        version = await lookup_path(ops, f"history/{fid}/v1.md")
        assert word in await read_all(ops, version)


@pytest.mark.parametrize(("env", "recency", "first"), [
    ({}, "auto: temporal intent 'latest'", "new"),
    ({"RECALLFS_RECENCY": "off"}, "off", None),
])
async def test_recall_directories_use_the_ranking_settings(ops_factory, env, recency, first) -> None:
    ops = ops_factory(CONFLICT, env)
    results = await recall_json(ops, "what is the latest team chat tool")
    assert results["stages"]["recency"].startswith(recency)
    if first:
        assert results["hits"][0]["source_id"] == first


async def test_control_socket_recall_uses_the_daemons_settings_and_options(ops_factory) -> None:
    cfg = resolve({}, env={"RECALLFS_MIN_SCORE": "0.5"})
    ops = ops_factory(CONFLICT)
    server = ControlServer(ops, {}, cfg)
    opts = RecallOptions(recent_half_life_days=0.0, budget=64)  # as `recallfs recall --recent off --budget 64`
    reply = await server.dispatch({"op": "recall", "query": "what is the latest team chat tool", "format": "json",
                                   "options": options_payload(opts), "org": "acme", "workspace": "proj",
                                   "agent": AGENT})
    out = json.loads(reply["output"])
    assert out["stages"]["recency"] == "off (recent:off)"
    assert out["stages"]["min_score"].startswith("0.5:")
    assert out["stages"]["mmr"].startswith("budget 64 tokens: kept")
