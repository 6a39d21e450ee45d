"""The one cache type (query/caches.py), from tables: the query layer's entry-bounded caches and the
mount's byte-bounded content cache are the same LruCache."""

from __future__ import annotations

import pytest

from recallfs.query.caches import LruCache


@pytest.mark.parametrize(("puts", "capacity", "by_len", "kept", "weight"), [
    (["a", "b", "c"], 2, False, ["b", "c"], 2),  # entries: the oldest goes
    (["a", "b", "a", "c"], 2, False, ["a", "c"], 2),  # a put refreshes its key
    (["aaaa", "bb", "cc"], 4, True, ["bb", "cc"], 4),  # bytes (weigh=len)
    (["aaaaaa"], 4, True, ["aaaaaa"], 6),  # the newest stays, however heavy
    (["a", "bbbbbb"], 4, True, ["bbbbbb"], 6),
])
def test_bounded_by_weight_least_recent_first(puts, capacity, by_len, kept, weight):
    cache: LruCache[str, str] = LruCache(capacity, len) if by_len else LruCache(capacity)
    for value in puts:
        cache.put(value, value)
    assert sorted({k for k in puts if cache.get(k) is not None}) == kept
    assert cache.weight == weight


def test_a_get_makes_an_entry_recent_and_is_counted():
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)  # "b" is now the least recently used
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, 1, 3)
    assert (cache.hits, cache.misses, len(cache)) == (3, 1, 2)


def test_a_peek_neither_counts_nor_makes_recent():
    """The mount's sibling window peeks at thousands of listings: it must not reorder the LRU."""
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert (cache.peek("a"), cache.peek("x")) == (1, None)
    cache.put("c", 3)  # "a" is still the least recently used
    assert (cache.peek("a"), cache.peek("b"), cache.peek("c")) == (None, 2, 3)
    assert (cache.hits, cache.misses) == (0, 0)


def test_get_or_compute_computes_once():
    cache: LruCache[str, list[int]] = LruCache(4)
    calls: list[int] = []
    first = cache.get_or_compute("k", lambda: calls.append(1) or [1])
    assert cache.get_or_compute("k", lambda: calls.append(2) or [2]) is first
    assert calls == [1]
    cache.clear()
    assert (len(cache), cache.weight, cache.get("k")) == (0, 0, None)


def _by_generation(key: tuple[str, int, str]) -> tuple[str, int]:
    return key[0], key[1]


@pytest.mark.parametrize(("puts", "kept"), [
    # (store, generation, what): a newer generation of a store evicts that store's older entries
    ([("s", 1, "a"), ("s", 1, "b"), ("s", 2, "a")], [("s", 2, "a")]),
    # other stores keep theirs
    ([("s", 1, "a"), ("t", 1, "a"), ("s", 2, "a")], [("s", 2, "a"), ("t", 1, "a")]),
    # a reader still on an older generation computes, but its entry is not kept
    ([("s", 2, "a"), ("s", 1, "b")], [("s", 2, "a")]),
    # the same generation fills as before, within the count bound
    ([("s", 3, "a"), ("s", 3, "b"), ("s", 3, "c")], [("s", 3, "b"), ("s", 3, "c")]),
])
def test_a_newer_generation_evicts_its_stores_older_entries(puts, kept):
    cache: LruCache[tuple[str, int, str], int] = LruCache(2, generation=_by_generation)
    for key in puts:
        cache.put(key, 1)
    assert sorted(cache.keys()) == kept
    assert cache.weight == len(kept)


def test_the_generation_rule_with_weights_and_compute():
    cache: LruCache[tuple[str, int, str], bytes] = LruCache(100, len, generation=_by_generation)
    cache.put(("s", 1, "a"), b"x" * 40)
    cache.put(("s", 1, "b"), b"x" * 40)
    assert cache.weight == 80
    assert cache.get_or_compute(("s", 2, "a"), lambda: b"y" * 10) == b"y" * 10
    assert (cache.keys(), cache.weight) == ([("s", 2, "a")], 10)
    assert cache.get_or_compute(("s", 1, "b"), lambda: b"old") == b"old"  # answered, not kept
    assert cache.keys() == [("s", 2, "a")]
    cache.clear()
    cache.put(("s", 1, "a"), b"z")  # clear forgets the newest generations too
    assert cache.keys() == [("s", 1, "a")]
