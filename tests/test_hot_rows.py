"""The ranking columns held in memory (query/hot_rows.py) against DuckDB itself, on a real store:
the same values for every rid, newer rows after an ingest, and the per-row path for what is not held."""

from __future__ import annotations

import pytest

from recallfs.query.hot_rows import HotRows
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import parse_record
from recallfs.query.rows import LIGHT_COLUMNS, load_light
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")


def _records(objs):
    return [parse_record(o, org="acme", workspace="proj", agent="tester") for o in objs]


def _batch(start: int, n: int) -> list[dict]:
    out: list[dict] = []
    for i in range(start, start + n):
        out.append(fact(f"f{i}", f"fact number {i}: the café on Rue Saint-Honoré, 東京 {i}",
                        tags=["ops", f"t{i % 3}"] if i % 2 else []))
        out.append(turn(f"s{i // 4}", i % 4, "maya" if i % 2 else "atlas", f"turn {i} about the release"))
    return out


@pytest.fixture
def store(store_path):
    with Store(store_path) as s:
        ingest_records(s, _records(_batch(0, 20)), embedder=None)
        yield s


def _from_duckdb(store, schema, table, rids):
    if not rids:
        return {}
    cols = ", ".join(LIGHT_COLUMNS)
    got = store.cursor().execute(f"SELECT {cols} FROM {schema}.{table} WHERE rid IN ({', '.join(map(str, rids))})")
    return {int(r[0]): (int(r[0]), *[tuple(v) if isinstance(v, list) else v for v in r[1:]]) for r in got.fetchall()}


def _all_rids(store, schema, table):
    return [int(r[0]) for r in store.cursor().execute(f"SELECT rid FROM {schema}.{table}").fetchall()]


@pytest.mark.parametrize("table", ["facts", "turns"])
@pytest.mark.parametrize("pick", ["all", "some", "none-exist", "mixed"])
def test_held_values_are_duckdbs(store, table, pick):
    schema = store.schema_for(ME)
    rids = _all_rids(store, schema, table)
    asked = {"all": rids, "some": rids[::3], "none-exist": [10**9, 10**9 + 1], "mixed": [*rids[:2], 10**9]}[pick]
    hot = HotRows(LIGHT_COLUMNS)
    held, missing = hot.lookup(store, schema, table, asked)
    assert held == _from_duckdb(store, schema, table, [r for r in asked if r in rids])
    assert sorted(missing) == sorted(r for r in asked if r not in rids)


def test_rows_ingested_later_are_read_when_asked_for(store):
    schema = store.schema_for(ME)
    hot = HotRows(LIGHT_COLUMNS)
    before = _all_rids(store, schema, "facts")
    held, _ = hot.lookup(store, schema, "facts", before)
    assert len(held) == len(before)
    ingest_records(store, _records(_batch(100, 5)), embedder=None)
    after = _all_rids(store, schema, "facts")
    held, missing = hot.lookup(store, schema, "facts", after)
    assert not missing and held == _from_duckdb(store, schema, "facts", after)


def test_a_table_above_the_limit_is_not_held(store):
    schema = store.schema_for(ME)
    rids = _all_rids(store, schema, "turns")
    held, missing = HotRows(LIGHT_COLUMNS, max_rows=len(rids) - 1).lookup(store, schema, "turns", rids)
    assert held == {} and sorted(missing) == sorted(rids)


def test_load_light_rows_match_the_per_row_path(store):
    from recallfs.query.rows import LIGHT_COLUMNS as cols
    from recallfs.query.rows import _load

    schema = store.schema_for(ME)
    for table in ("facts", "turns"):
        rids = _all_rids(store, schema, table)
        fast = load_light(store, schema, table, rids)
        slow = _load(store, schema, {table: rids}, cols, _NoCache(), put=False)
        assert fast.keys() == slow.keys()
        for rid in rids:
            assert _tags_as_tuple(slow[rid]) == _tags_as_tuple(fast[rid])


def _tags_as_tuple(row):
    return {**row, "tags": tuple(row["tags"] or ())}


class _NoCache:
    def get(self, key):
        return None

    def put(self, key, value):
        pass


def test_tables_past_the_total_go_least_recently_used_first(store):
    schema = store.schema_for(ME)
    facts, turns = _all_rids(store, schema, "facts"), _all_rids(store, schema, "turns")
    hot = HotRows(LIGHT_COLUMNS, total_rows=len(facts) + len(turns) - 1)  # one table fits, not both
    hot.lookup(store, schema, "facts", facts)
    assert hot.tables_held() == 1
    held, _ = hot.lookup(store, schema, "turns", turns)
    assert hot.tables_held() == 1 and len(held) == len(turns)  # facts went; the table asked for stays
    held, missing = hot.lookup(store, schema, "facts", facts)
    assert not missing and held == _from_duckdb(store, schema, "facts", facts)  # read again when asked


@pytest.mark.parametrize("pick", ["every table", "one table", "half cached", "absent and misfiled"])
def test_rows_of_several_tables_in_one_statement_are_each_tables_rows(store, pick):
    from recallfs.query.rows import load_rows, load_rows_of_tables

    schema = store.schema_for(ME)
    facts, turns = _all_rids(store, schema, "facts"), _all_rids(store, schema, "turns")
    asked = {"every table": {"facts": facts[::2], "turns": turns[1::3]},
             "one table": {"turns": turns},
             "half cached": {"facts": facts, "turns": turns[:5]},
             "absent and misfiled": {"facts": [10**9, turns[0]], "turns": [facts[0], turns[1]]}}[pick]
    if pick == "half cached":
        load_rows(store, schema, "facts", facts[::2])  # these come from the cache, the rest from DuckDB
    expected = {}
    for table, rids in asked.items():
        expected.update(load_rows(store, schema, table, rids, cache=False))
    got = load_rows_of_tables(store, schema, asked)
    assert got == expected
    assert all(row["table"] == ("facts" if rid in facts else "turns") for rid, row in got.items())
