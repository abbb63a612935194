"""The preallocated `emitted` id table: bounded by size and age, and memory that never grows."""

from __future__ import annotations

import gc
import tracemalloc

from opentelemetry.instrumentation.openai.emitted_ids import EmittedIds


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_added_id_is_remembered_and_others_are_not() -> None:
    ids = EmittedIds(capacity=16, ttl_seconds=60, clock=Clock())
    ids.add("resp_a")
    assert "resp_a" in ids
    assert "resp_b" not in ids
    assert len(ids) == 1


def test_adding_the_same_id_twice_keeps_one_entry() -> None:
    ids = EmittedIds(capacity=16, ttl_seconds=60, clock=Clock())
    ids.add("resp_a")
    ids.add("resp_a")
    assert len(ids) == 1


def test_ids_expire_after_their_ttl() -> None:
    clock = Clock()
    ids = EmittedIds(capacity=16, ttl_seconds=60, clock=clock)
    ids.add("resp_a")
    clock.now += 59
    assert "resp_a" in ids
    clock.now += 2
    assert "resp_a" not in ids
    assert len(ids) == 0


def test_size_never_exceeds_capacity() -> None:
    ids = EmittedIds(capacity=50, ttl_seconds=3600, clock=Clock())
    for index in range(5000):
        ids.add(f"resp_{index}")
    assert len(ids) <= 50
    assert len(ids) >= 45  # four-choice placement fills nearly every slot


def test_recent_ids_survive_while_the_table_is_not_full() -> None:
    ids = EmittedIds(capacity=1000, ttl_seconds=3600, clock=Clock())
    recent = [f"resp_{index:06d}" for index in range(250)]
    for response_id in recent:
        ids.add(response_id)
    remembered = sum(response_id in ids for response_id in recent)
    # Four candidate slots per id: at a quarter full, losses are rare (worst of 300 seeds: 2 of 250).
    # A lost id only lets a retrieve be traced as a fetch_response span, never a second inference span.
    assert remembered >= 240
    assert sum(response_id in ids for response_id in recent[-50:]) >= 48


def test_memory_does_not_grow_with_traffic() -> None:
    ids = EmittedIds(capacity=10_000, ttl_seconds=3600, clock=Clock())
    names = [f"resp_{index:048x}" for index in range(20_000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for name in names:
            ids.add(name)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if "emitted_ids" in str(stat))
    assert grown <= 1024, f"{grown} bytes retained by the id table after 20,000 ids"
