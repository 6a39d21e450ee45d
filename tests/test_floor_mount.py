"""The relevance floor and the filter fallback through a real FUSE mount, driven by ls and cat (issue 12,
items 4 and 5): a query memory has nothing on shows no hit file and says so; filters whose text
matches nothing list the memories they select, newest first, and say so in results.json."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from mount_helpers import SAMPLE, Mount, module_mount, needs_fuse

pytestmark = [needs_fuse, pytest.mark.mount]


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    yield from module_mount(tmp_path_factory, "floor")


def ls(path) -> list[str]:
    return subprocess.run(["ls", str(path)], capture_output=True, text=True, check=True).stdout.split()


def cat_json(path) -> dict:
    return json.loads(subprocess.run(["cat", str(path)], capture_output=True, text=True, check=True).stdout)


def test_gibberish_shows_no_hit_and_says_no_memory_matched(mnt: Mount):
    query = mnt.path / "recall" / "zzqxv"
    assert ls(query) == ["context.xml", "results.json"]
    result = cat_json(query / "results.json")
    assert result["hits"] == [] and "no memory matched the query" in result["notes"]
    assert "no memory matched" in (query / "context.xml").read_text()


def test_filters_whose_text_matches_nothing_list_their_memories_newest_first(mnt: Mount):
    tagged = [r for r in SAMPLE if "deploy" in r.get("tags", [])]
    query = mnt.path / "recall" / "zzqxv tag:deploy"
    names = [n for n in ls(query) if n.endswith(".md")]
    assert len(names) == len(tagged) == 1 and names[0].startswith("01-fact-")
    result = cat_json(query / "results.json")
    assert [h["id"] for h in result["hits"]] == ["f-deploy"] and result["hits"][0]["arms"] == ["filters"]
    assert any("tag:deploy selects 1 memory" in n and "newest first" in n for n in result["notes"])
    assert "Deploy with make release" in (query / names[0]).read_text()
    assert "<note>no memory matched the query text; tag:deploy selects 1 memory" in (query / "context.xml").read_text()


def test_the_cli_through_the_mount_says_the_same(mnt: Mount):
    out = mnt.cli("recall", "zzqxv kind:procedure,decision").stdout
    assert "kind:procedure,decision selects 2 memories" in out and "f-deploy" in out and "f-ci" in out
    assert "no memory matched the query" in mnt.cli("recall", "zzqxv").stdout
