"""Front-matter scalars (mount/render.py), from a table: each reads back as the value it was written from,
and a string seen before comes from the cache (a cold walk renders ~90k turns of one agent, a few kinds
and speakers)."""

from __future__ import annotations

from datetime import datetime

import pytest
import yaml

from recallfs.mount import render

TEXTS = ["turn", "bench", "workspace", "session-00012", "maya", "yes", "No", "null", "~", "a: b", "ends:",
         " padded", "x:y", "#hash", "-dash", "2026-01-01", "42", "3.5", "üñï", 'say "hi"', "", "[list]",
         "{map}", "it's", "a/b.c@d+e(f)"]


@pytest.mark.parametrize("text", TEXTS)
def test_a_string_reads_back_as_itself(text: str) -> None:
    assert yaml.safe_load(f"k: {render.yaml_scalar(text)}")["k"] == text
    assert yaml.safe_load(f"k: [{render.yaml_scalar(text, flow=True)}]")["k"] == [text]


@pytest.mark.parametrize(("value", "expected"), [
    (None, "null"), (True, "true"), (False, "false"), (3, "3"), (2.5, "2.5"),
    (datetime(2026, 1, 2, 3, 4, 5), "2026-01-02T03:04:05"), (["a", "b: c"], '[a, "b: c"]'), ((), "[]"),
    ({"k": "v"}, "{k: v}"),
])
def test_other_values(value: object, expected: str) -> None:
    assert render.yaml_scalar(value) == expected


def test_a_repeated_string_is_not_worked_out_again() -> None:
    render.yaml_scalar("a kind seen once")
    before = render._text_scalar.cache_info().hits
    for _ in range(3):
        assert render.yaml_scalar("a kind seen once") == "a kind seen once"
    assert render._text_scalar.cache_info().hits - before == 3
