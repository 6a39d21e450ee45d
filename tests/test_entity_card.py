"""The entity card beside the hits (issue 12, items 6 and 10): `budget:N` covers the card too, a fact is
never returned twice, and the card is a file in recall/<entity>/. From tables (entity_card.fit_card), on a
real store (recall) and through a real mount."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from mount_helpers import Mount, module_mount, needs_fuse

from recallfs.query.entity_card import EntityCard, fit_card
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.ranking.text import estimate_tokens
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")


def card(*facts: tuple[str, str]) -> EntityCard:
    return EntityCard("release", [{"id": i, "kind": "fact", "content": c} for i, c in facts], len(facts))


A, B, C = ("f-a", "x" * 40), ("f-b", "y" * 40), ("f-c", "z" * 40)  # 10 tokens each


@pytest.mark.parametrize(("facts", "hits", "budget", "shown", "noted"), [
    ([A, B], [], None, ["f-a", "f-b"], False),
    ([A, B], [("f-a", 1, A[1])], None, ["hit 1", "f-b"], False),  # a hit is referred to, not repeated
    ([A, B, C], [("h-1", 1, "h" * 40)], 30, ["f-a", "f-b"], True),  # 10 for the hit, 20 left: two facts
    ([A, B, C], [("h-1", 1, "h" * 40)], 15, [], True),  # nothing fits: no card
    ([A, B], [("f-b", 1, B[1])], 20, ["f-a", "hit 1"], False),  # the reference costs nothing
])
def test_fit_card(facts, hits, budget, shown, noted) -> None:
    fitted, notes = fit_card(card(*facts), hits, budget)
    got = [] if fitted is None else [f"hit {f['hit']}" if "hit" in f else f["id"] for f in fitted.facts]
    assert got == shown
    assert bool(notes) is noted
    if fitted is not None:
        assert fitted.total_facts == len(facts)  # the entity's size is still told


# -- recall on a real store ------------------------------------------------------------------------------
RELEASE = [fact(f"rel-{i}", f"Release step {i}: run the release checklist item number {i} before tagging",
                entity="release", created_at=f"2026-05-{i + 1:02d}T09:00:00Z") for i in range(11)]
RECORDS = [*RELEASE, turn("s1", 0, "maya", "the release went out on friday"),
           turn("s1", 1, "atlas", "release notes are in the changelog")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("card") / "store.duckdb") as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in RECORDS],
                       embedder=None)
        yield s


def returned_tokens(result) -> int:
    texts = [h.row["content"] for h in result.hits]
    texts += [f["content"] for f in (result.entity.facts if result.entity else []) if "content" in f]
    return sum(estimate_tokens(t) for t in texts)


@pytest.mark.parametrize("budget", [30, 100, 200])
def test_the_budget_covers_the_card_too(store, budget) -> None:
    result = recall(store, ME, f"release budget:{budget}", arm="lexical")
    assert result.hits
    assert returned_tokens(result) <= budget


def test_no_fact_is_returned_twice(store) -> None:
    for query in ("release", "release budget:100"):
        result = recall(store, ME, query, arm="lexical")
        assert result.entity is not None
        on_card = {f["id"] for f in result.entity.facts if "content" in f}
        assert on_card.isdisjoint(h.id for h in result.hits)
        ranks = {h.rank for h in result.hits}
        assert all(f["hit"] in ranks for f in result.entity.facts if "hit" in f)


# -- through the mount -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from module_mount(tmp_path_factory, "entitycard")


def front_matter(path: Path) -> dict:
    return yaml.safe_load(path.read_text().split("---\n", 2)[1])


@pytest.mark.mount
@needs_fuse
def test_the_entity_card_is_a_file_in_the_recall_directory(mounted: Mount) -> None:
    q = mounted.path / "recall" / "ci"
    names = subprocess.run(["ls", f"{q}/"], capture_output=True, text=True, check=True).stdout.split()
    assert names[0] == "00-entity-ci.md"
    meta = front_matter(q / names[0])
    assert meta["entity"] == "ci" and meta["facts"] == 2
    results = json.loads((q / "results.json").read_text())
    assert results["entity"]["name"] == "ci"
    text = (q / names[0]).read_text()
    for f in results["entity"]["facts"]:
        assert f["id"] in text or ("content" in f and f["content"] in text)
    assert Path(meta["path"]).read_text() == (mounted.path / "entities" / "ci.md").read_text()
    # opened by its name alone, with no listing before (an agent that knows the name)
    proc = subprocess.run(["cat", str(mounted.path / "recall" / "ci k:1" / "00-entity-ci.md")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "entity: ci" in proc.stdout, proc.stderr
    # a page of three-digit ranks names the card 00- too (it was 000-: found 2026-12-07)
    far = subprocess.run(["ls", f"{mounted.path / 'recall' / 'ci offset:100'}/"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert far[0] == "00-entity-ci.md", far


@pytest.mark.mount
@needs_fuse
def test_a_hits_path_opens_from_inside_the_recall_directory(mounted: Mount) -> None:
    q = mounted.path / "recall" / "flaky windows test"
    hits = sorted(n.name for n in q.iterdir() if n.name[:2].isdigit() and "-entity-" not in n.name)
    assert hits
    for name in hits:
        meta = front_matter(q / name)
        # from the hit's own directory, as an agent that cd'd there would open it
        proc = subprocess.run(["cat", str(meta["path"])], cwd=q, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert f"id: {meta['id']}" in proc.stdout
