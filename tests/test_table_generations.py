"""Caches of one table (query/derived.table_state) stay valid across writes to other tables and are
renewed by writes to theirs: after every one of a random run of writes (facts, summaries, turns, a
policy change), recall on warm caches answers exactly as recall on cold ones. The store is a real
DuckDB file; nothing is mocked."""

from __future__ import annotations

import random

from recallfs.query import bm25_query, derived, fts_delta, lexical, turn_order, vector_gap
from recallfs.query.ingest_file import ingest_records
from recallfs.query.policies import remove_policy, set_policy
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.policy import PolicySpec, build_policy
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")
GUEST = Principal("acme", "proj", "guest")
TABLE_CACHES = (derived._ALLOWED, vector_gap._GAPS, turn_order._ORDER, bm25_query._STATE, fts_delta._DELTAS,
                lexical._FRESH)
QUESTIONS = ["what did maya say about the boat", "heron ledger", "which harbour", "the deploy target"]


def _answers(store: Store) -> list[list[tuple[str, str, float]]]:
    return [[(h.table, h.id, round(h.score, 9)) for h in recall(store, who, q, arm="lexical", k=20).hits]
            for who in (ME, GUEST) for q in QUESTIONS]


def _cold(store: Store) -> list[list[tuple[str, str, float]]]:
    for cache in TABLE_CACHES:
        cache.clear()
    return _answers(store)


def _record(rnd: random.Random, step: int) -> dict:
    n = rnd.randint(0, 5)
    day = f"2026-06-{rnd.randint(1, 28):02d}T10:00:00Z"
    agent = {"agent": rnd.choice(["tester", "atlas"])}
    words = rnd.choice(["the boat", "the heron ledger", "which harbour", "the deploy target"])
    kind = rnd.choice(["fact", "summary", "turn"])
    if kind == "fact":
        return fact(f"f{step}-{n}", f"fact {n} about {words} at {step}", id=f"f{n}", created_at=day, **agent)
    if kind == "summary":
        return {"type": "summary", "source_id": f"s{step}-{n}", "session": f"s{n % 2}", "id": f"sum{n}",
                "content": f"summary of {words} at {step}", "created_at": day, **agent}
    return turn(f"s{n % 2}", n, rnd.choice(["maya", "atlas"]), f"maya said {words} at {step}", id=f"t{n}",
                source_id=f"t{step}-{rnd.random()}", created_at=day, **agent)


def test_warm_caches_answer_as_cold_ones_after_every_write(tmp_path):
    rnd = random.Random(5)
    with Store(tmp_path / "store.duckdb") as store:
        for step in range(36):
            if step % 9 == 8:  # a policy change commits without naming tables: every cache is renewed
                if step % 18 == 8:
                    set_policy(store, GUEST, build_policy(PolicySpec(authors=["atlas"])))
                else:
                    remove_policy(store, GUEST)
            else:
                batch = [_record(rnd, step) for _ in range(rnd.randint(1, 3))]
                # without the index refresh half the time: a large table's new rows wait in its delta
                ingest_records(store, [parse_record(o, org="acme", workspace="proj", agent=o.get("agent", "tester"))
                                       for o in batch], embedder=None, refresh=rnd.random() < 0.5)
            warm = _answers(store)
            assert warm == _cold(store), step


def test_a_write_to_facts_keeps_the_turns_caches_and_a_turn_renews_them(tmp_path):
    with Store(tmp_path / "store.duckdb") as store:
        def write(obj: dict) -> None:
            ingest_records(store, [parse_record(obj, org="acme", workspace="proj", agent="tester")], embedder=None)

        write(turn("s1", 0, "maya", "I finished the old sailboat"))
        schema = store.partition("acme", "proj")
        before = derived.table_state(store, schema, "turns")
        write(fact("f1", "The deploy target is the Fly.io app"))
        assert derived.table_state(store, schema, "turns") == before
        assert derived.table_state(store, schema, "facts") != derived.table_state(store, schema, "summaries")
        write(turn("s1", 1, "atlas", "What was the toughest part?"))
        assert derived.table_state(store, schema, "turns") != before


def _parts(cat) -> tuple:
    return (cat.current, cat.readable, {t: [m.rid for m in ms] for t, ms in cat.rows.items()},
            cat.counts(), {k: [m.rid for m in v] for k, v in cat.kinds().items()},
            {s: {t: [m.rid for m in ms] for t, ms in g.items()} for s, g in cat.sessions().items()})


def test_the_catalog_keeps_the_parts_of_untouched_tables_and_equals_a_fresh_build(tmp_path):
    """The mount's Readable after a write reuses the parts (and groupings) of the tables the write did not
    touch; each build equals one made from nothing, for the writer and for a reader a policy limits."""
    from recallfs.query.catalog import Catalog

    rnd = random.Random(9)
    with Store(tmp_path / "store.duckdb") as store:
        set_policy(store, GUEST, build_policy(PolicySpec(authors=["atlas"])))
        catalogs = {who: Catalog(store, who) for who in (ME, GUEST)}
        for step in range(24):
            batch = [_record(rnd, step) for _ in range(rnd.randint(1, 2))]
            before = {who: c.built() or c.readable() for who, c in catalogs.items()}
            schema = store.partition("acme", "proj")
            gens = {t: store.table_generation(schema, t) for t in ("facts", "summaries", "turns")} if schema else {}
            ingest_records(store, [parse_record(o, org="acme", workspace="proj", agent=o.get("agent", "tester"))
                                   for o in batch], embedder=None, refresh=rnd.random() < 0.5)
            written = {{"fact": "facts", "summary": "summaries", "turn": "turns"}[o["type"]] for o in batch}
            # a table written, or whose index a refresh rebuilt (an earlier write left it behind), is read again
            touched = {t for t, g in gens.items() if store.table_generation(schema, t) != g} if gens else written
            assert written <= touched
            for who, catalog in catalogs.items():
                cat = catalog.readable()
                assert cat is not None
                assert _parts(cat) == _parts(Catalog(store, who).readable()), (step, who)
                old = before[who]
                # the writer reads with one clause throughout; the guest's names its own corrections to
                # the heads (query/reader_heads.py), which a write elsewhere may change: read again then
                if old is not None and who == ME:
                    for table in ("facts", "summaries", "turns"):
                        if table not in touched:
                            assert cat.rows[table] is old.rows[table], (step, who, table)
