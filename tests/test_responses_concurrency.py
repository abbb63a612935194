"""Concurrency: the shared `pending`/`emitted` registry under threads, event loops and fresh contexts.

Every call runs inside its own parent span, so a context mix-up between threads or tasks shows up as a span
under the wrong parent, not only as a wrong count.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

import fake_openai
from conftest import make_async_client, make_client, metric_points, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

# every test here polls background responses, which openai 1.66 cannot create
pytestmark = requires_openai("1.109", "background mode")

MODEL = "gpt-4.1-nano"
UNFINISHED = ("queued", "in_progress")
THREADS = 8
KINDS = ("create", "stream", "background")


def pending(instrumentor: OpenAIInstrumentor) -> int:
    registry = instrumentor.response_registry
    assert registry is not None
    return registry.sizes()[0]


def call(client: openai.OpenAI, tracer: Tracer, i: int) -> tuple[str, int]:
    """One model response of kind `KINDS[i % 3]` under its own parent; returns (response id, parent span id)."""
    kind = KINDS[i % len(KINDS)]
    with tracer.start_as_current_span(f"parent {i}") as parent:
        if kind == "create":
            response_id = client.responses.create(model=MODEL, input=f"call {i}").id
        elif kind == "stream":
            events = list(client.responses.create(model=MODEL, input=f"call {i}", stream=True))
            response_id = events[-1].response.id
        else:
            response_id = client.responses.create(model=MODEL, input=f"call {i}", background=True).id
    if kind == "background":  # polled outside the parent: the span still belongs to it
        while client.responses.retrieve(response_id).status in UNFINISHED:
            pass
    return response_id, parent.get_span_context().span_id


async def async_call(client: openai.AsyncOpenAI, tracer: Tracer, i: int) -> tuple[str, int]:
    kind = KINDS[i % len(KINDS)]
    with tracer.start_as_current_span(f"parent {i}") as parent:
        if kind == "create":
            response_id = (await client.responses.create(model=MODEL, input=f"call {i}")).id
        elif kind == "stream":
            events = [event async for event in await client.responses.create(model=MODEL, input=f"x {i}", stream=True)]
            response_id = events[-1].response.id
        else:
            response_id = (await client.responses.create(model=MODEL, input=f"call {i}", background=True)).id
    if kind == "background":
        while (await client.responses.retrieve(response_id)).status in UNFINISHED:
            await asyncio.sleep(0)
    return response_id, parent.get_span_context().span_id


def assert_one_span_per_call(exporter: InMemorySpanExporter, results: list[tuple[str, int]]) -> None:
    chat = [span for span in exporter.get_finished_spans() if span.name == f"chat {MODEL}"]
    assert len(chat) == len(results)
    ids = Counter(span.attributes["gen_ai.response.id"] for span in chat if span.attributes)
    assert all(count == 1 for count in ids.values()), [i for i, c in ids.items() if c > 1]
    assert set(ids) == {response_id for response_id, _ in results}
    parent_of = {span.attributes["gen_ai.response.id"]: span.parent for span in chat if span.attributes}
    for response_id, parent_span_id in results:
        parent = parent_of[response_id]
        assert parent is not None and parent.span_id == parent_span_id, response_id
    assert not [span for span in exporter.get_finished_spans() if span.name == "fetch_response"]


# ---- many pollers, one response -----------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["retrieve", "retrieve-stream"])
def test_eight_threads_polling_the_same_background_response_emit_exactly_one_span(
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
    streamed: bool,
) -> None:
    fake = fake_openai.FakeOpenAI(polls_to_complete=6)  # every thread sees it unfinished at first
    rounds = 10
    errors: list[BaseException] = []
    with make_client(fake) as client:
        for _ in range(rounds):
            response_id = client.responses.create(model=MODEL, input="shared", background=True).id
            barrier = threading.Barrier(THREADS)

            def poller(response_id: str = response_id, barrier: threading.Barrier = barrier) -> None:
                try:
                    barrier.wait()
                    if streamed:
                        for _event in client.responses.retrieve(response_id, stream=True):
                            pass
                        return
                    while client.responses.retrieve(response_id).status in UNFINISHED:
                        pass
                except BaseException as error:  # surfaced below: a thread's assertion must fail the test
                    errors.append(error)

            threads = [threading.Thread(target=poller) for _ in range(THREADS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    assert errors == []
    spans = span_exporter.get_finished_spans()
    assert len(spans) == rounds
    # ended once each: a double end would also record the duration twice
    assert sum(point.count for point in metric_points(metric_reader, "gen_ai.client.operation.duration")) == rounds
    assert len({span.attributes["gen_ai.response.id"] for span in spans if span.attributes}) == rounds
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["openai.response.status"] == "completed"
        assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert pending(instrumentor) == 0


async def test_eight_tasks_polling_the_same_background_response_emit_exactly_one_span(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    fake = fake_openai.FakeOpenAI(polls_to_complete=6)
    async with make_async_client(fake) as client:
        response_id = (await client.responses.create(model=MODEL, input="shared", background=True)).id

        async def poller() -> None:
            while (await client.responses.retrieve(response_id)).status in UNFINISHED:
                await asyncio.sleep(0)

        await asyncio.gather(*(poller() for _ in range(THREADS)))
    (span,) = span_exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["gen_ai.response.id"] == response_id
    assert pending(instrumentor) == 0


# ---- load ---------------------------------------------------------------------------------------------------


def test_eight_threads_of_mixed_calls_emit_one_span_per_call_under_the_right_parent(
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    fake: fake_openai.FakeOpenAI,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    per_thread = 15
    results: list[tuple[str, int]] = []
    lock = threading.Lock()
    with make_client(fake) as client:

        def worker(offset: int) -> None:
            mine = [call(client, tracer, offset + i) for i in range(per_thread)]
            with lock:
                results.extend(mine)

        threads = [threading.Thread(target=worker, args=(t * per_thread,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(results) == THREADS * per_thread
    assert_one_span_per_call(span_exporter, results)
    assert pending(instrumentor) == 0


async def test_gather_of_fifty_tasks_emits_one_span_per_call_under_the_right_parent(
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    fake: fake_openai.FakeOpenAI,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    async with make_async_client(fake) as client:
        results = await asyncio.gather(*(async_call(client, tracer, i) for i in range(50)))
    assert_one_span_per_call(span_exporter, list(results))
    assert pending(instrumentor) == 0


def test_fresh_contextvars_context_per_request_emits_one_span_per_call(
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    fake: fake_openai.FakeOpenAI,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    results: list[tuple[str, int]] = []
    with make_client(fake) as client, ThreadPoolExecutor(max_workers=4) as pool:

        def in_fresh_context(i: int) -> tuple[str, int]:
            return contextvars.Context().run(call, client, tracer, i)

        results.extend(pool.map(in_fresh_context, range(60)))
        # and on this thread too, each request in its own empty Context
        results.extend(contextvars.Context().run(call, client, tracer, i) for i in range(60, 72))
    assert_one_span_per_call(span_exporter, results)
    assert pending(instrumentor) == 0


def test_new_thread_pool_waves_emit_one_span_per_call(
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    fake: fake_openai.FakeOpenAI,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    results: list[tuple[str, int]] = []
    with make_client(fake) as client:
        for wave in range(5):  # fresh threads each wave: per-thread state must not pile up or cross over
            with ThreadPoolExecutor(max_workers=THREADS) as pool:
                results.extend(pool.map(lambda i: call(client, tracer, i), range(wave * 24, wave * 24 + 24)))
            assert pending(instrumentor) == 0
    assert_one_span_per_call(span_exporter, results)


async def test_background_responses_created_in_threads_finish_from_the_event_loop(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    """`pending` is shared across threads and event loops: a sync create, an async poll, one span."""
    with make_client(fake) as client, ThreadPoolExecutor(max_workers=4) as pool:
        created = list(
            pool.map(
                lambda i: client.responses.create(model=MODEL, input=f"bg {i}", background=True).id,
                range(12),
            )
        )
    assert pending(instrumentor) == 12
    async with make_async_client(fake) as async_client:

        async def finish(response_id: str) -> Any:
            while (response := await async_client.responses.retrieve(response_id)).status in UNFINISHED:
                pass
            return response

        await asyncio.gather(*(finish(response_id) for response_id in created))
    spans = span_exporter.get_finished_spans()
    assert sorted(span.attributes["gen_ai.response.id"] for span in spans if span.attributes) == sorted(created)
    assert pending(instrumentor) == 0
