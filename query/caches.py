"""The one cache type: a least-recently-used map bounded by a total weight.

Used by the query layer (rows, postings, readable sets, ... each keyed on the store generation) and by
the mount daemon (rendered content, listings, recall snapshots). A cache keyed on the store generation
may say how to read it from a key (`generation`): once a newer generation of a store is put, that
store's older entries go at once, rather than fill the cache (an agent writing one memory per recall
made a new generation each time, and 64 dead `TurnOrder`s of a 1M store hold 1.5 GB).

Thread-safe: query caches are shared by the daemon's worker threads; the mount's caches are touched
only by the trio thread, where the lock is never contended and costs a fraction of a microsecond.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Generation = Callable[[K], tuple[Hashable, int]]  # key -> (the store it derives from, its generation)


def _one(_value: object) -> int:
    return 1


class LruCache(Generic[K, V]):
    """At most `capacity` of weight (entries by default; bytes with `weigh=len`); the least recently used
    go first, but the newest entry always stays, however heavy. `None` is never stored: `get` answers
    None for a missing key. Values are computed outside the lock (`get_or_compute`: two threads may both
    compute a missing entry; the results are equal, and the cost is one recomputation). With
    `generation`, an entry of an older generation than the newest put for its store is not kept."""

    def __init__(self, capacity: int, weigh: Callable[[V], int] = _one,
                 generation: Generation[K] | None = None) -> None:
        self.capacity = capacity
        self.weigh = weigh
        self.generation = generation
        self._newest: dict[Hashable, int] = {}  # store -> the newest generation put
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
            if self.generation is not None and not self._newest_generation(key):
                return  # computed by a reader still on an older generation: nobody after it asks
            old = self._items.pop(key, None)
            if old is not None:
                self.weight -= self.weigh(old)
            self._items[key] = value
            self.weight += self.weigh(value)
            while self.weight > self.capacity and len(self._items) > 1:
                _, evicted = self._items.popitem(last=False)
                self.weight -= self.weigh(evicted)

    def _newest_generation(self, key: K) -> bool:
        """Whether `key` is of its store's newest generation; a newer one evicts the store's older entries."""
        assert self.generation is not None
        store, generation = self.generation(key)
        newest = self._newest.get(store)
        if newest is not None and generation < newest:
            return False
        if newest is None or generation > newest:
            self._newest[store] = generation
            if newest is not None:
                gen = self.generation
                for stale in [k for k in self._items if gen(k)[0] == store]:
                    self.weight -= self.weigh(self._items.pop(stale))
        return True

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        hit = self.get(key)
        if hit is None:
            hit = compute()
            self.put(key, hit)
        return hit

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._newest.clear()
            self.weight = 0

    def keys(self) -> list[K]:
        """A snapshot of the keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)
