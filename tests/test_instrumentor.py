"""OpenAIInstrumentor: wrap and unwrap the one choke point, honour the given providers, be discoverable."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator

import openai
import pytest
import wrapt
from openai._base_client import AsyncAPIClient, SyncAPIClient
from opentelemetry.instrumentation.dependencies import get_dependency_conflicts
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import fake_openai
from conftest import SpanCounter, make_async_client, make_client, metric_points, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor, __version__

MODEL = "gpt-4.1-nano"
# wrapt 2 moved the common base of FunctionWrapper and ObjectProxy to BaseObjectProxy
PROXY_BASE = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


@pytest.fixture
def managed(span_counter: SpanCounter) -> Iterator[OpenAIInstrumentor]:
    """The instrumentor, left uninstrumented whatever the test did, with no span left open."""
    instrumentor = OpenAIInstrumentor()
    try:
        yield instrumentor
    finally:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
        assert span_counter.open == 0


def providers() -> tuple[TracerProvider, InMemorySpanExporter, MeterProvider, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return tracer_provider, exporter, MeterProvider(metric_readers=[reader]), reader


def is_wrapped(cls: type) -> bool:
    return isinstance(cls.__dict__["request"], PROXY_BASE)


def test_uninstrument_restores_the_original_request_methods_and_calls_emit_nothing(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    span_counter: SpanCounter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    original_sync = SyncAPIClient.__dict__["request"]
    original_async = AsyncAPIClient.__dict__["request"]
    assert not is_wrapped(SyncAPIClient) and not is_wrapped(AsyncAPIClient)
    managed.instrument(tracer_provider=tracer_provider)
    assert is_wrapped(SyncAPIClient) and is_wrapped(AsyncAPIClient)
    with make_client(fake) as client:
        client.responses.create(model=MODEL, input="traced")
    assert len(span_exporter.get_finished_spans()) == 1

    managed.uninstrument()
    assert SyncAPIClient.__dict__["request"] is original_sync
    assert AsyncAPIClient.__dict__["request"] is original_async
    assert not is_wrapped(SyncAPIClient) and not is_wrapped(AsyncAPIClient)
    assert managed.response_registry is None
    started = span_counter.started
    with make_client(fake) as client:
        client.responses.create(model=MODEL, input="untraced")
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "untraced"}])
        for _event in client.responses.create(model=MODEL, input="untraced", stream=True):
            pass
    assert span_counter.started == started
    assert len(span_exporter.get_finished_spans()) == 1


async def test_uninstrument_silences_async_calls(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    managed.instrument(tracer_provider=tracer_provider)
    managed.uninstrument()
    async with make_async_client(fake) as client:
        await client.responses.create(model=MODEL, input="untraced")
        stream = await client.responses.create(model=MODEL, input="untraced", stream=True)
        async for _event in stream:
            pass
    assert span_exporter.get_finished_spans() == ()


def test_instrument_twice_still_emits_one_span_per_call(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    managed.instrument(tracer_provider=tracer_provider)
    wrapper = SyncAPIClient.__dict__["request"]
    managed.instrument(tracer_provider=tracer_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)  # the same singleton
    assert SyncAPIClient.__dict__["request"] is wrapper  # not wrapped twice
    assert isinstance(wrapper, PROXY_BASE)
    assert not isinstance(wrapper.__wrapped__, PROXY_BASE)
    with make_client(fake) as client:
        client.responses.create(model=MODEL, input="once")
        for _event in client.responses.create(model=MODEL, input="once", stream=True):
            pass
    assert [span.name for span in span_exporter.get_finished_spans()] == [f"chat {MODEL}"] * 2


@requires_openai("1.109", "background mode")
def test_instrument_uninstrument_instrument_emits_one_span_per_call_in_the_new_provider(
    managed: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI
) -> None:
    first_provider, first_exporter, _, _ = providers()
    second_provider, second_exporter, _, _ = providers()
    managed.instrument(tracer_provider=first_provider)
    managed.uninstrument()
    managed.instrument(tracer_provider=second_provider)
    with make_client(fake) as client:
        client.responses.create(model=MODEL, input="once")
        created = client.responses.create(model=MODEL, input="background", background=True)
        while client.responses.retrieve(created.id).status in ("queued", "in_progress"):
            pass
    assert first_exporter.get_finished_spans() == ()
    assert [span.name for span in second_exporter.get_finished_spans()] == [f"chat {MODEL}"] * 2


def test_tracer_provider_and_meter_provider_are_honoured(
    managed: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI
) -> None:
    tracer_provider, exporter, meter_provider, reader = providers()
    managed.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    with make_client(fake) as client:
        client.responses.create(model=MODEL, input="one two three")
    (span,) = exporter.get_finished_spans()
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "opentelemetry.instrumentation.openai"
    assert span.instrumentation_scope.version == __version__
    durations = metric_points(reader, "gen_ai.client.operation.duration")
    assert [point.count for point in durations] == [1]
    assert durations[0].attributes["gen_ai.operation.name"] == "chat"
    assert durations[0].attributes["gen_ai.request.model"] == MODEL
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in metric_points(reader, "gen_ai.client.token.usage")}
    assert tokens == {"input": 6, "output": 5}  # 3 words + 3 framing tokens in; the fake's 5-word reply out


def test_clients_built_before_instrument_are_traced(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    with make_client(fake) as client:
        raw = client.responses.with_raw_response  # cached property, bound before instrument()
        managed.instrument(tracer_provider=tracer_provider)
        client.responses.create(model=MODEL, input="early client")
        raw.create(model=MODEL, input="early raw").parse()
    assert len(span_exporter.get_finished_spans()) == 2


def test_suppress_instrumentation_lets_calls_through_untraced(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    managed.instrument(tracer_provider=tracer_provider)
    with make_client(fake) as client:
        with suppress_instrumentation():
            response = client.responses.create(model=MODEL, input="quiet")
        client.responses.create(model=MODEL, input="loud")
    assert response.status == "completed"
    assert len(span_exporter.get_finished_spans()) == 1


@requires_openai("1.109", "background mode")
def test_uninstrument_ends_pending_background_spans(
    managed: OpenAIInstrumentor,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    managed.instrument(tracer_provider=tracer_provider)
    with make_client(fake) as client:
        created = client.responses.create(model=MODEL, input="left running", background=True)
    assert span_exporter.get_finished_spans() == ()
    OpenAIInstrumentor().uninstrument()  # a second handle is the same singleton, with the same registry
    (span,) = span_exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["gen_ai.response.id"] == created.id
    assert span.attributes["openai.response.finish_observed"] is False
    assert span.attributes["openai.response.end_reason"] == "uninstrumented"


def test_a_second_constructor_call_keeps_the_live_registry(
    managed: OpenAIInstrumentor, tracer_provider: TracerProvider, fake: fake_openai.FakeOpenAI
) -> None:
    managed.instrument(tracer_provider=tracer_provider)
    registry = managed.response_registry
    assert registry is not None
    again = OpenAIInstrumentor()
    assert again is managed
    assert again.response_registry is registry


def test_entry_point_named_openai_resolves_to_the_instrumentor() -> None:
    entry_points = [
        ep for ep in importlib.metadata.entry_points(group="opentelemetry_instrumentor") if ep.name == "openai"
    ]
    assert len(entry_points) == 1
    assert entry_points[0].value == "opentelemetry.instrumentation.openai:OpenAIInstrumentor"
    assert entry_points[0].load() is OpenAIInstrumentor


def test_instrumentation_dependencies_name_the_supported_openai_range() -> None:
    dependencies = OpenAIInstrumentor().instrumentation_dependencies()
    assert list(dependencies) == ["openai >= 1.66, < 4"]
    assert get_dependency_conflicts(dependencies) is None  # the installed SDK is in range
    assert openai.__version__.split(".")[0] in ("1", "2", "3")
