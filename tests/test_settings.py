"""Settings: one table, every entry reachable as RECALLFS_*, and every one documented in the README."""

from __future__ import annotations

import pytest

from recallfs.query.settings import SETTINGS, markdown_table, resolve

from conftest import REPO


def test_every_setting_is_documented():
    readme = (REPO / "README.md").read_text()
    missing = [s.env for s in SETTINGS if f"`{s.env}`" not in readme]
    assert not missing, f"settings missing from the README's configuration table: {missing}"


def test_the_readme_table_is_the_generated_one():
    """`python -m recallfs.query.settings README.md` writes it; a hand edit there would be undone by the next
    run (found 2026-12-07: two rows differed)."""
    readme = (REPO / "README.md").read_text()
    table = readme.split("<!-- settings-table -->\n", 1)[1].split("\n<!-- /settings-table -->", 1)[0]
    assert table == markdown_table()


def test_environment_then_flags():
    env = {"RECALLFS_K": "7", "RECALLFS_SEMANTIC": "off", "RECALLFS_STORE": "/tmp/x.duckdb"}
    cfg = resolve({"store": "/tmp/y.duckdb", "agent": None}, env=env)
    assert cfg.k == 7 and cfg.semantic is False and cfg.store == "/tmp/y.duckdb"
    assert cfg.agent == "default"


def test_default_store_path():
    cfg = resolve({}, env={"XDG_DATA_HOME": ""})
    assert cfg.store.endswith(".local/share/recallfs/store.duckdb")


@pytest.mark.parametrize(("env", "message"), [
    ({"RECALLFS_K": "ten"}, "expected a number"),
    ({"RECALLFS_SEMANTIC": "maybe"}, "expected true or false"),
])
def test_bad_values_are_named(env, message):
    with pytest.raises(ValueError, match=message):
        resolve({}, env=env)
