"""A bounded, thread-safe least-recently-used map, for results that cost something to make and
are asked for again: query vectors (embedding/embedder.py, filled from worker threads, hence the
lock) and GitHub's answers by ETag (github/client.py). It imports nothing of memhub, so any
layer may use it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` entries (0: keeps nothing); the least recently read or written goes
    first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def __contains__(self, key: object) -> bool:
        """Held now (neither a hit nor a miss: nothing was read)."""
        with self._lock:
            return key in self._items

    def put(self, key: K, value: V) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
