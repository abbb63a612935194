"""Regressions named after the faults of the older package: a module-global dict of every Responses call that
never shrank (~17 KiB per chat turn, pods OOM-killed), re-emitted spans on every retrieve, and nothing ending
abandoned background responses. Here only `pending` (unfinished background responses) and the bounded `emitted`
id set outlive a call.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import tracemalloc
from typing import Any

import openai
import pydantic
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

import fake_openai
from conftest import HTTP, OPENAI_VERSION, handler_async_client, handler_client, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

# every form includes background responses, which openai 1.66 cannot create
pytestmark = requires_openai("1.109", "background mode")

CAPACITY = 50
MAX_AGE = 60.0
N = 300
ASYNC_ROUNDS = 40  # six model responses each
TURNS = 100  # 120 model responses: every turn a create, every fifth a stream too
MODEL = "gpt-4.1-nano"
UNFINISHED = ("queued", "in_progress")


class FakeClock:
    """The injectable monotonic clock: time moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def instrument_options(clock: FakeClock) -> dict[str, Any]:
    return {"emitted_ids_capacity": CAPACITY, "pending_max_age_seconds": MAX_AGE, "clock": clock}


class Person(BaseModel):
    name: str
    age: int


def json_handler(fake: fake_openai.FakeOpenAI) -> Any:
    """The fake API, with message text that `parse(text_format=Person)` accepts."""

    def handler(request: Any) -> Any:
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        body = reply.body
        if reply.status == 200 and not reply.is_sse:
            data = json.loads(body)
            for item in data.get("output") or []:
                if item.get("type") == "message":
                    item["content"][0]["text"] = '{"name": "Alice", "age": 30}'
            body = json.dumps(data).encode()
        return HTTP.Response(reply.status, headers=reply.headers, content=body)

    return handler


def live_traced_data() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj).__name__ == "TracedData")


def sizes(instrumentor: OpenAIInstrumentor) -> tuple[int, int]:
    registry = instrumentor.response_registry
    assert registry is not None
    return registry.sizes()


def poll(client: openai.OpenAI, response_id: str) -> Any:
    while (response := client.responses.retrieve(response_id)).status in UNFINISHED:
        pass
    return response


def one_of_each(client: openai.OpenAI, i: int) -> int:
    """Every sync call form once; returns how many model responses (spans) it made."""
    client.responses.create(model=MODEL, input=f"plain {i}")
    for _event in client.responses.create(model=MODEL, input=f"stream {i}", stream=True):
        pass
    with client.responses.stream(model=MODEL, input=f"helper {i}") as helper:
        for _event in helper:
            pass
    with client.responses.stream(model=MODEL, input=f"cut {i}", metadata={"fake_stream_chunks": "20"}) as cut:
        for _event in cut:
            break  # ended unobserved when the helper closes the response
    assert client.responses.parse(model=MODEL, input=f"parse {i}", text_format=Person).output_parsed is not None
    background = client.responses.create(model=MODEL, input=f"background {i}", background=True)
    assert poll(client, background.id).status == "completed"
    client.responses.retrieve(background.id)  # finished: no span
    client.responses.with_raw_response.create(model=MODEL, input=f"raw {i}").parse()
    with client.responses.with_streaming_response.create(model=MODEL, input=f"streaming {i}") as streaming:
        streaming.parse()
    failed = client.responses.create(model=MODEL, input=f"failed {i}", metadata={"fake_outcome": "failed"})
    assert failed.status == "failed"
    return 9


def test_completed_calls_of_every_form_leave_no_per_call_state_behind(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    baseline = live_traced_data()
    with handler_client(json_handler(fake)) as client:
        # the counting works: a pending background response is exactly one live TracedData
        held = client.responses.create(model=MODEL, input="held", background=True)
        assert live_traced_data() == baseline + 1
        assert sizes(instrumentor)[0] == 1
        poll(client, held.id)
        expected_spans = 1
        for i in range(N // 10):
            expected_spans += one_of_each(client, i)
    spans = span_exporter.get_finished_spans()
    assert len(spans) == expected_spans
    ids = [span.attributes["gen_ai.response.id"] for span in spans]
    assert len(set(ids)) == len(ids)  # exactly one span per model response
    pending_count, emitted_count = sizes(instrumentor)
    assert pending_count == 0
    assert emitted_count == CAPACITY  # bounded: far more than CAPACITY ids were emitted
    assert live_traced_data() == baseline


async def test_completed_async_calls_leave_no_per_call_state_behind(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    baseline = live_traced_data()

    async def one(client: openai.AsyncOpenAI, i: int) -> None:
        await client.responses.create(model=MODEL, input=f"plain {i}")
        async for _event in await client.responses.create(model=MODEL, input=f"stream {i}", stream=True):
            pass
        async with client.responses.stream(model=MODEL, input=f"helper {i}") as helper:
            async for _event in helper:
                pass
        await client.responses.parse(model=MODEL, input=f"parse {i}", text_format=Person)
        background = await client.responses.create(model=MODEL, input=f"background {i}", background=True)
        while (await client.responses.retrieve(background.id)).status in UNFINISHED:
            pass
        (await client.responses.with_raw_response.create(model=MODEL, input=f"raw {i}")).parse()

    async with handler_async_client(json_handler(fake)) as client:
        await asyncio.gather(*(one(client, i) for i in range(ASYNC_ROUNDS)))
    assert len(span_exporter.get_finished_spans()) == 6 * ASYNC_ROUNDS
    assert sizes(instrumentor) == (0, CAPACITY)
    assert live_traced_data() == baseline


def test_retained_memory_does_not_grow_with_the_number_of_calls(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    """The older package kept ~17 KiB per turn forever; here retained memory is flat once `emitted` is full."""
    fake = fake_openai.FakeOpenAI(max_stored=10)  # the fake's own store stays flat too
    with handler_client(json_handler(fake)) as client:

        def calls(count: int) -> None:
            for i in range(count):
                client.responses.create(model=MODEL, input=f"turn {i}")
                if i % 5 == 0:
                    for _event in client.responses.create(model=MODEL, input=f"streamed turn {i}", stream=True):
                        pass

        calls(CAPACITY)  # warm-up: caches filled, `emitted` at capacity
        gc.collect()
        tracemalloc.start(1)
        try:
            before = tracemalloc.take_snapshot()
            calls(TURNS)
            span_exporter.clear()  # the test's exporter keeps every span by design
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    ours = [tracemalloc.Filter(True, "*/opentelemetry/instrumentation/openai/*")]
    ours_growth = sum(
        stat.size_diff for stat in after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    )
    # the older package would have kept ~17 KiB per response (~2 MiB here); allow bounded caches and noise
    assert growth < 128 * 1024, growth
    # and nothing allocated by the instrumentation itself survives its calls (a 40-byte-per-call leak would show)
    assert ours_growth < 2048, ours_growth
    assert sizes(instrumentor) == (0, CAPACITY)


@pytest.mark.skipif(
    tuple(int(part) for part in pydantic.VERSION.split(".")[:2]) in ((2, 11), (2, 12)) and OPENAI_VERSION < (3, 16, 2),
    reason="openai < 3.16.2 on pydantic 2.11/2.12 adds TypeAdapters per thread by itself (openai #2672, #3084);"
    " test_load_and_soak.py::test_parse_leak_is_not_made_worse compares it with and without instrumentation",
)
def test_structured_output_parse_builds_no_type_adapters_per_call(
    instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI
) -> None:
    """The SDK caches TypeAdapters without bound; the instrumentation must add none per call or thread."""
    from openai._models import _CachedTypeAdapter

    with handler_client(json_handler(fake)) as client:
        client.responses.parse(model=MODEL, input="warm up", text_format=Person)
        before = _CachedTypeAdapter.cache_info().currsize

        def parse_in_fresh_thread(i: int) -> None:
            client.responses.parse(model=MODEL, input=f"thread {i}", text_format=Person)

        for i in range(10):
            thread = threading.Thread(target=parse_in_fresh_thread, args=(i,))
            thread.start()
            thread.join()
    assert _CachedTypeAdapter.cache_info().currsize == before


# ---- pending max age ----------------------------------------------------------------------------------------


def test_abandoned_background_response_is_ended_after_max_age(
    client: openai.OpenAI,
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    clock: FakeClock,
) -> None:
    abandoned = client.responses.create(model=MODEL, input="never polled", background=True, temperature=0.5)
    registry = instrumentor.response_registry
    assert registry is not None
    clock.advance(MAX_AGE - 1)
    assert registry.expire() == 0
    assert sizes(instrumentor)[0] == 1
    assert span_exporter.get_finished_spans() == ()

    clock.advance(2)
    # any new pending entry sweeps the expired ones: no timer thread needed
    fresh = client.responses.create(model=MODEL, input="polled", background=True)
    (span,) = span_exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert span.name == f"chat {MODEL}"
    assert attributes["gen_ai.response.id"] == abandoned.id
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "max_age_exceeded"
    assert attributes["openai.response.status"] == "queued"  # the last state seen
    assert attributes["gen_ai.request.temperature"] == 0.5  # the create's request attributes are kept
    assert "gen_ai.usage.output_tokens" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    assert sizes(instrumentor)[0] == 1  # only `fresh`

    # a late poll of the expired response emits no second span; the fresh one still gets its own
    assert poll(client, abandoned.id).status == "completed"
    assert len(span_exporter.get_finished_spans()) == 1
    assert poll(client, fresh.id).status == "completed"
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 2
    assert spans[1].attributes is not None
    assert spans[1].attributes["gen_ai.response.id"] == fresh.id
    assert spans[1].attributes["gen_ai.usage.output_tokens"] == 5
    assert sizes(instrumentor)[0] == 0


def test_expire_ends_every_pending_entry_older_than_max_age(
    client: openai.OpenAI,
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    clock: FakeClock,
) -> None:
    old = [client.responses.create(model=MODEL, input=f"old {i}", background=True).id for i in range(3)]
    clock.advance(MAX_AGE / 2)
    young = client.responses.create(model=MODEL, input="young", background=True).id
    clock.advance(MAX_AGE / 2 + 1)
    registry = instrumentor.response_registry
    assert registry is not None
    assert registry.expire() == 3
    ended = [span.attributes["gen_ai.response.id"] for span in span_exporter.get_finished_spans()]
    assert sorted(ended) == sorted(old)
    assert sizes(instrumentor)[0] == 1
    assert live_traced_data() >= 1  # the young one's
    poll(client, young)
    assert sizes(instrumentor)[0] == 0
    assert len(span_exporter.get_finished_spans()) == 4


def test_emitted_ids_expire_with_their_ttl(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, clock: FakeClock
) -> None:
    for i in range(5):
        client.responses.create(model=MODEL, input=f"turn {i}")
    assert sizes(instrumentor) == (0, 5)
    clock.advance(3600 + 1)  # the default emitted-id TTL
    assert sizes(instrumentor) == (0, 0)
