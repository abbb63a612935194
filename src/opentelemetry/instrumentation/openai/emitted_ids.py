"""A fixed-size, preallocated memory of finished response ids: bounded by size and age, never growing."""

from __future__ import annotations

from array import array
from collections.abc import Callable


class EmittedIds:
    """Remembers ids whose span was emitted, so a later retrieve emits no second span.

    A map (even cachetools' TTLCache) costs ~280 bytes per id: its node, its slot, the id
    string itself. Here every slot is allocated once, up front (16 bytes each), and an id is
    kept as its 64-bit hash: memory does not change with traffic. Each id has four candidate
    slots; a new id takes the empty, expired or oldest of them. An id can therefore be
    forgotten before its TTL when all its slots are reused: that only lets a later retrieve be
    traced as a short `fetch_response` span, never loses data. Not thread-safe: the registry
    calls it under its lock.
    """

    __slots__ = ("_capacity", "_clock", "_expiry", "_hashes", "_ttl")

    def __init__(self, capacity: int, ttl_seconds: float, clock: Callable[[], float]) -> None:
        self._capacity = max(1, int(capacity))
        self._ttl = float(ttl_seconds)
        self._clock = clock
        self._hashes = array("q", bytes(8 * self._capacity))  # 0 marks an empty slot
        self._expiry = array("d", bytes(8 * self._capacity))

    @staticmethod
    def _key(response_id: str) -> int:
        return hash(response_id) or 1

    def _slots(self, key: int) -> tuple[int, int, int, int]:
        # Four candidate slots from four 16-bit-shifted views of the hash: with four choices a
        # table a quarter full almost never has to evict a live id.
        capacity = self._capacity
        return key % capacity, (key >> 16) % capacity, (key >> 32) % capacity, (key >> 48) % capacity

    def add(self, response_id: str) -> None:
        key = self._key(response_id)
        hashes, expiry = self._hashes, self._expiry
        chosen = -1
        for slot in self._slots(key):
            if hashes[slot] == key:
                chosen = slot  # already there: refresh its age
                break
            if chosen < 0 or expiry[slot] < expiry[chosen]:
                chosen = slot  # the emptiest (0.0), expired or oldest candidate
        hashes[chosen] = key
        expiry[chosen] = self._clock() + self._ttl

    def __contains__(self, response_id: str) -> bool:
        key = self._key(response_id)
        now = self._clock()
        hashes, expiry = self._hashes, self._expiry
        return any(hashes[slot] == key and expiry[slot] > now for slot in self._slots(key))

    def __len__(self) -> int:
        """Live (unexpired) ids; a scan of the slots, meant for gauges and tests, not the hot path."""
        now = self._clock()
        return sum(1 for until in self._expiry if until > now)

    @property
    def capacity(self) -> int:
        return self._capacity
