"""W3C trace context in outgoing requests: opt-in, the instrumentation span's ids, the caller's headers untouched."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import fake_openai
from conftest import HTTP, handler_async_client, handler_client
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

PROPAGATE_ENV = "OTEL_INSTRUMENTATION_OPENAI_PROPAGATE_TRACE_CONTEXT"
EXTRA_HEADERS = {"X-Custom": "hdr-value", "X-Other": "other-value"}


class Recorder:
    """A MockTransport handler that answers from the fake API and keeps every request's headers."""

    def __init__(self, fake: fake_openai.FakeOpenAI) -> None:
        self.fake = fake
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append((request.method, request.url.path, {k.lower(): v for k, v in request.headers.items()}))
        reply = fake_openai.dispatch(
            self.fake, request.method, request.url.path, dict(request.url.params), request.content
        )
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    async def handle_async(self, request: Any) -> Any:
        return self(request)

    @property
    def headers(self) -> list[dict[str, str]]:
        return [headers for _, _, headers in self.requests]


@pytest.fixture
def recorder(fake: fake_openai.FakeOpenAI) -> Recorder:
    return Recorder(fake)


@pytest.fixture
def env_propagate() -> str | None:
    return None


@pytest.fixture
def instrument_options(env_propagate: str | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.delenv(PROPAGATE_ENV, raising=False)
    if env_propagate is not None:
        monkeypatch.setenv(PROPAGATE_ENV, env_propagate)
    return {}


def traceparent_of(span: ReadableSpan) -> str:
    # the flags are the span's own: sampled, plus the W3C level-2 "random" bit newer SDKs set
    flags = int(span.context.trace_flags)
    assert flags & 0x01, "the span is sampled"
    return f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-{flags:02x}"


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [span.name for span in spans]
    return spans[0]


CALLS: dict[str, Callable[[Any, dict[str, str]], Any]] = {
    "responses": lambda c, h: c.responses.create(model="gpt-4.1-nano", input="Hi", extra_headers=h),
    "chat": lambda c, h: c.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], extra_headers=h
    ),
    "chat_stream": lambda c, h: c.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True, extra_headers=h
    ),
    "completions": lambda c, h: c.completions.create(model="gpt-3.5-turbo-instruct", prompt="Hi", extra_headers=h),
    "embeddings": lambda c, h: c.embeddings.create(model="text-embedding-3-small", input="Hi", extra_headers=h),
}


def consume(result: Any) -> None:
    if isinstance(result, openai.Stream):
        for _ in result:
            pass


# ---- on ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_traceparent_carries_the_instrumentation_span(
    name: str, instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    headers = dict(EXTRA_HEADERS)
    original = headers
    with handler_client(recorder) as client:
        consume(CALLS[name](client, headers))
    span = only_span(span_exporter)
    (sent,) = recorder.headers
    assert sent["traceparent"] == traceparent_of(span)
    assert span.context.trace_flags.sampled
    # the caller's headers were sent, and the caller's dict is the same object with the same content
    assert (sent["x-custom"], sent["x-other"]) == ("hdr-value", "other-value")
    assert headers is original
    assert headers == EXTRA_HEADERS
    assert list(headers) == ["X-Custom", "X-Other"]


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_traceparent_without_extra_headers(
    instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    with handler_client(recorder) as client:
        client.responses.create(model="gpt-4.1-nano", input="Hi")
    (sent,) = recorder.headers
    assert sent["traceparent"] == traceparent_of(only_span(span_exporter))


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_traceparent_is_a_child_of_the_callers_span(
    instrumentor: OpenAIInstrumentor,
    recorder: Recorder,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
) -> None:
    tracer = tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request handler") as parent, handler_client(recorder) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    spans = {span.name: span for span in span_exporter.get_finished_spans()}
    inference = spans["chat gpt-4o-mini"]
    assert inference.parent is not None and inference.parent.span_id == parent.get_span_context().span_id
    (sent,) = recorder.headers
    # the instrumentation span, not the caller's, is the remote parent of the server's work
    assert sent["traceparent"] == traceparent_of(inference)
    assert f"{parent.get_span_context().span_id:016x}" not in sent["traceparent"]


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_every_poll_of_a_background_response_carries_its_one_span(
    instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    headers = dict(EXTRA_HEADERS)
    with handler_client(recorder) as client:
        response = client.responses.create(model="gpt-4.1-nano", input="Hi", background=True, extra_headers=headers)
        while response.status in ("queued", "in_progress"):
            response = client.responses.retrieve(response.id, extra_headers=headers)
    span = only_span(span_exporter)
    assert [method for method, _, _ in recorder.requests] == ["POST", "GET", "GET"]
    assert [sent["traceparent"] for sent in recorder.headers] == [traceparent_of(span)] * 3
    assert headers == EXTRA_HEADERS


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_retries_carry_the_same_traceparent(
    instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI, span_exporter: InMemorySpanExporter
) -> None:
    seen: list[dict[str, str]] = []
    failures = iter([429])

    def handler(request: Any) -> Any:
        seen.append({k.lower(): v for k, v in request.headers.items()})
        code = next(failures, None)
        if code is not None:
            return HTTP.Response(code, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}})
        reply = fake_openai.dispatch(fake, request.method, request.url.path, {}, request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    with handler_client(handler, max_retries=1) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    span = only_span(span_exporter)  # retries happen inside the one call
    assert [sent["traceparent"] for sent in seen] == [traceparent_of(span)] * 2


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
async def test_traceparent_async(
    instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    headers = dict(EXTRA_HEADERS)
    async with handler_async_client(recorder.handle_async) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True, extra_headers=headers
        )
        async for _ in stream:
            pass
    (sent,) = recorder.headers
    assert sent["traceparent"] == traceparent_of(only_span(span_exporter))
    assert headers == EXTRA_HEADERS


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_no_traceparent_on_untraced_routes(instrumentor: OpenAIInstrumentor, recorder: Recorder) -> None:
    with handler_client(recorder) as client, pytest.raises(openai.NotFoundError):
        client.models.list()
    (sent,) = recorder.headers
    assert "traceparent" not in sent


@pytest.mark.parametrize("instrument_options", [{"propagate_trace_context": True}])
def test_body_is_unchanged(instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI) -> None:
    bodies: list[Any] = []

    def handler(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        reply = fake_openai.dispatch(fake, request.method, request.url.path, {}, request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    with handler_client(handler) as client:
        client.responses.create(model="gpt-4.1-nano", input="Hi", extra_headers=dict(EXTRA_HEADERS))
    assert bodies == [{"model": "gpt-4.1-nano", "input": "Hi"}]


# ---- off, and the environment ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CALLS))
def test_off_by_default(
    name: str, instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    headers = dict(EXTRA_HEADERS)
    with handler_client(recorder) as client:
        consume(CALLS[name](client, headers))
    only_span(span_exporter)  # the call is traced
    (sent,) = recorder.headers
    assert "traceparent" not in sent
    assert "tracestate" not in sent
    assert sent["x-custom"] == "hdr-value"
    assert headers == EXTRA_HEADERS


@pytest.mark.parametrize("env_propagate", ["true", "TRUE", "1"])
def test_environment_turns_it_on(
    instrumentor: OpenAIInstrumentor, recorder: Recorder, span_exporter: InMemorySpanExporter
) -> None:
    with handler_client(recorder) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    (sent,) = recorder.headers
    assert sent["traceparent"] == traceparent_of(only_span(span_exporter))


@pytest.mark.parametrize("env_propagate", ["false", "0", ""])
def test_environment_leaves_it_off(instrumentor: OpenAIInstrumentor, recorder: Recorder) -> None:
    with handler_client(recorder) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    (sent,) = recorder.headers
    assert "traceparent" not in sent


@pytest.mark.parametrize(
    ("env_propagate", "option", "expected"),
    [("true", False, False), ("false", True, True), (None, False, False)],
)
def test_instrument_argument_overrides_the_environment(
    env_propagate: str | None,
    option: bool,
    expected: bool,
    monkeypatch: pytest.MonkeyPatch,
    tracer_provider: TracerProvider,
    recorder: Recorder,
    span_exporter: InMemorySpanExporter,
) -> None:
    monkeypatch.delenv(PROPAGATE_ENV, raising=False)
    if env_propagate is not None:
        monkeypatch.setenv(PROPAGATE_ENV, env_propagate)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, propagate_trace_context=option)
    try:
        with handler_client(recorder) as client:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    finally:
        instrumentor.uninstrument()
    (sent,) = recorder.headers
    assert ("traceparent" in sent) is expected
    if expected:
        assert sent["traceparent"] == traceparent_of(only_span(span_exporter))


def test_uninstrumented_requests_carry_no_traceparent(
    monkeypatch: pytest.MonkeyPatch, tracer_provider: TracerProvider, recorder: Recorder
) -> None:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, propagate_trace_context=True)
    instrumentor.uninstrument()
    with handler_client(recorder) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    (sent,) = recorder.headers
    assert "traceparent" not in sent
