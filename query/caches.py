"""The one cache type: a least-recently-used map bounded by a total weight.

Used by the query layer (rows, postings, readable sets, ... each keyed on the store generation) and by
the mount daemon (rendered content, listings, recall snapshots). Thread-safe: query caches are shared
by the daemon's worker threads; the mount's caches are touched only by the trio thread, where the lock
is never contended and costs a fraction of a microsecond.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(_value: object) -> int:
    return 1


class LruCache(Generic[K, V]):
    """At most `capacity` of weight (entries by default; bytes with `weigh=len`); the least recently used
    go first, but the newest entry always stays, however heavy. `None` is never stored: `get` answers
    None for a missing key. Values are computed outside the lock (`get_or_compute`: two threads may both
    compute a missing entry; the results are equal, and the cost is one recomputation)."""

    def __init__(self, capacity: int, weigh: Callable[[V], int] = _one) -> None:
        self.capacity = capacity
        self.weigh = weigh
        self.weight = 0
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self.hits += 1
            self._items.move_to_end(key)
            return value

    def peek(self, key: K) -> V | None:
        """The value, without counting a hit or making it recent (for a look over many keys)."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.weight -= self.weigh(old)
            self._items[key] = value
            self.weight += self.weigh(value)
            while self.weight > self.capacity and len(self._items) > 1:
                _, evicted = self._items.popitem(last=False)
                self.weight -= self.weigh(evicted)

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        hit = self.get(key)
        if hit is None:
            hit = compute()
            self.put(key, hit)
        return hit

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.weight = 0

    def keys(self) -> list[K]:
        """A snapshot of the keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)
