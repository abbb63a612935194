"""The Responses lifecycle against the in-process fake API: one span per model response, whatever the call path.

Background responses start `queued`; with the fake's default `polls_to_complete=2` the first plain retrieve
shows `in_progress` and the second the final status. Usage is a pure function of the request (see
examples/fake_openai.py): input tokens = words of instructions + input + 3, output tokens = reply words
(5 by default), so every expected number below is computed by hand from the request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

import fake_openai
from conftest import HTTP, handler_async_client, handler_client, make_client, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

MODEL = "gpt-4.1-nano"
SERVED_MODEL = "gpt-4.1-nano-2025-04-14"
PROMPT = "Hello there friend"  # 3 words + 3 framing tokens
INPUT_TOKENS = 6
OUTPUT_TOKENS = 5  # the fake's default reply length
UNFINISHED = ("queued", "in_progress")
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
# openai 1.66 has no background mode, cancel, retrieve(stream=True), stream(response_id=) or with_raw_response.parse
NEW_SDK = requires_openai("1.109", "background mode, cancel, streamed retrieve, raw parse")


class Person(BaseModel):
    name: str
    age: int


# ---- helpers ------------------------------------------------------------------------------------------------


def chat_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name.startswith("chat")]


def only_chat_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = chat_spans(exporter)
    assert len(spans) == 1, [span.name for span in exporter.get_finished_spans()]
    return spans[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def pending(instrumentor: OpenAIInstrumentor) -> int:
    registry = instrumentor.response_registry
    assert registry is not None
    return registry.sizes()[0]


def assert_completed(span: ReadableSpan, response_id: str, input_tokens: int = INPUT_TOKENS) -> None:
    attributes = attrs(span)
    assert span.name == f"chat {MODEL}"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    expected = {
        "gen_ai.operation.name": "chat",
        "openai.api.type": "responses",
        "gen_ai.provider.name": "openai",
        "server.address": "localhost",
        "server.port": 8080,
        "gen_ai.request.model": MODEL,
        "gen_ai.response.id": response_id,
        "gen_ai.response.model": SERVED_MODEL,
        "gen_ai.response.finish_reasons": ("stop",),
        "openai.response.status": "completed",
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": OUTPUT_TOKENS,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.reasoning.output_tokens": 0,
    }
    for key, value in expected.items():
        assert attributes.get(key) == value, f"{key}: {attributes.get(key)!r} != {value!r}"
    for key in (*CONTENT_KEYS, "openai.response.finish_observed", "error.type"):
        assert key not in attributes, key


def poll(client: openai.OpenAI, response_id: str, by_keyword: bool) -> Any:
    while True:
        if by_keyword:
            response = client.responses.retrieve(response_id=response_id)
        else:
            response = client.responses.retrieve(response_id)
        if response.status not in UNFINISHED:
            return response


async def async_poll(client: openai.AsyncOpenAI, response_id: str, by_keyword: bool) -> Any:
    while True:
        if by_keyword:
            response = await client.responses.retrieve(response_id=response_id)
        else:
            response = await client.responses.retrieve(response_id)
        if response.status not in UNFINISHED:
            return response


def rewrite_handler(fake: fake_openai.FakeOpenAI, rewrite: Callable[[dict[str, Any]], None]) -> Any:
    """Serves `fake`, passing each JSON response body of a successful request through `rewrite`."""

    def handler(request: Any) -> Any:
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        body = reply.body
        if reply.status == 200 and not reply.is_sse:
            data = json.loads(body)
            rewrite(data)
            body = json.dumps(data).encode()
        return HTTP.Response(reply.status, headers=reply.headers, content=body)

    return handler


def json_text(payload: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """A rewrite making the message's text the given JSON, so `parse(text_format=...)` can validate it."""

    def rewrite(data: dict[str, Any]) -> None:
        for item in data.get("output") or []:
            if item["type"] == "message":
                item["content"][0]["text"] = json.dumps(payload)

    return rewrite


# ---- background polling -------------------------------------------------------------------------------------


@NEW_SDK
@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
def test_background_poll_emits_one_span_started_at_create_under_its_parent(
    client: openai.OpenAI,
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    by_keyword: bool,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("parent"):
        with tracer.start_as_current_span("marker"):
            pass
        created = client.responses.create(
            model=MODEL, input=PROMPT, background=True, temperature=0.25, max_output_tokens=50, service_tier="flex"
        )
        after_create = time.time_ns()
    assert created.status == "queued"
    assert pending(instrumentor) == 1
    assert chat_spans(span_exporter) == []

    first = client.responses.retrieve(response_id=created.id) if by_keyword else client.responses.retrieve(created.id)
    assert first.status == "in_progress"
    assert chat_spans(span_exporter) == []  # still running: the span waits
    assert pending(instrumentor) == 1
    final = poll(client, created.id, by_keyword)
    assert final.status == "completed"

    span = only_chat_span(span_exporter)
    by_name = {s.name: s for s in span_exporter.get_finished_spans()}
    marker, parent = by_name["marker"], by_name["parent"]
    assert marker.end_time is not None and span.end_time is not None
    assert marker.end_time <= span.start_time <= after_create  # started by the create, not a poll
    assert span.end_time > after_create  # ended by the last poll
    assert span.parent is not None and span.parent.span_id == parent.context.span_id
    assert span.context.trace_id == parent.context.trace_id
    assert_completed(span, created.id)
    attributes = attrs(span)
    assert attributes["gen_ai.request.temperature"] == 0.25
    assert attributes["gen_ai.request.max_tokens"] == 50
    assert attributes["openai.request.service_tier"] == "flex"
    assert attributes["openai.response.service_tier"] == "flex"
    assert attributes["openai.request.background"] is True
    assert pending(instrumentor) == 0

    client.responses.retrieve(created.id)  # finished: no second span
    assert len(span_exporter.get_finished_spans()) == 3


@NEW_SDK
@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
async def test_background_poll_async_emits_one_span_started_at_create_under_its_parent(
    async_client: openai.AsyncOpenAI,
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    by_keyword: bool,
) -> None:
    tracer = tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("parent"):
        with tracer.start_as_current_span("marker"):
            pass
        created = await async_client.responses.create(model=MODEL, input=PROMPT, background=True, top_p=0.5)
        after_create = time.time_ns()
    assert pending(instrumentor) == 1
    final = await async_poll(async_client, created.id, by_keyword)
    assert final.status == "completed"
    span = only_chat_span(span_exporter)
    by_name = {s.name: s for s in span_exporter.get_finished_spans()}
    assert by_name["marker"].end_time is not None
    assert by_name["marker"].end_time <= span.start_time <= after_create
    assert span.parent is not None and span.parent.span_id == by_name["parent"].context.span_id
    assert_completed(span, created.id)
    assert attrs(span)["gen_ai.request.top_p"] == 0.5
    assert pending(instrumentor) == 0
    await async_client.responses.retrieve(created.id)
    assert len(span_exporter.get_finished_spans()) == 3


@NEW_SDK
def test_streamed_retrieve_starting_after_finishes_pending_background_response(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.create(model=MODEL, input=PROMPT, background=True)
    before_retrieve = time.time_ns()
    events = list(client.responses.retrieve(created.id, stream=True, starting_after=2))
    # created(0), queued(1), in_progress(2) were skipped server-side
    assert events[0].sequence_number == 3
    assert events[-1].type == "response.completed"
    span = only_chat_span(span_exporter)
    assert span.start_time < before_retrieve
    assert_completed(span, created.id)
    assert pending(instrumentor) == 0
    client.responses.retrieve(created.id)
    assert len(span_exporter.get_finished_spans()) == 1


@NEW_SDK
def test_stream_helper_with_response_id_finishes_pending_background_response(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.create(model=MODEL, input=PROMPT, background=True)
    with client.responses.stream(response_id=created.id, starting_after=4) as stream:
        sequence = [event.sequence_number for event in stream]
        final = stream.get_final_response()
    assert min(sequence) == 5  # starting_after filters client-side
    assert final.id == created.id
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


@NEW_SDK
async def test_async_streamed_retrieve_and_stream_helper_finish_pending_background_responses(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    first = await async_client.responses.create(model=MODEL, input=PROMPT, background=True)
    second = await async_client.responses.create(model=MODEL, input=PROMPT, background=True)
    assert pending(instrumentor) == 2
    stream = await async_client.responses.retrieve(first.id, stream=True, starting_after=0)
    async for _event in stream:
        pass
    async with async_client.responses.stream(response_id=second.id) as helper:
        async for _event in helper:
            pass
    spans = chat_spans(span_exporter)
    assert [attrs(span)["gen_ai.response.id"] for span in spans] == [first.id, second.id]
    for span, response in zip(spans, (first, second), strict=True):
        assert_completed(span, response.id)
    assert pending(instrumentor) == 0


@NEW_SDK
def test_background_stream_cut_early_then_resumed_with_streamed_retrieve_is_one_span(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    stream = client.responses.create(model=MODEL, input=PROMPT, background=True, stream=True)
    response_id = ""
    last = -1
    for event in stream:
        last = event.sequence_number
        if event.type == "response.created":
            response_id = event.response.id
        if event.type == "response.in_progress":
            break
    stream.close()
    assert response_id and last == 2
    assert chat_spans(span_exporter) == []  # the response goes on server-side: the span waits
    assert pending(instrumentor) == 1

    resumed = list(client.responses.retrieve(response_id, stream=True, starting_after=last))
    assert resumed[0].sequence_number == last + 1
    span = only_chat_span(span_exporter)
    assert_completed(span, response_id)
    assert attrs(span)["gen_ai.request.stream"] is True
    assert pending(instrumentor) == 0


@NEW_SDK
def test_resumed_stream_cut_again_then_plain_poll_is_one_span(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.create(model=MODEL, input=PROMPT, background=True)
    resumed = client.responses.retrieve(created.id, stream=True)
    for event in resumed:
        if event.type == "response.output_text.delta":
            break
    resumed.close()
    assert chat_spans(span_exporter) == []
    assert pending(instrumentor) == 1
    assert poll(client, created.id, by_keyword=True).status == "completed"
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


def failing_polls_handler(fake: fake_openai.FakeOpenAI, status: int, failures: int) -> Any:
    """Serves `fake`, but answers the first `failures` retrieves with HTTP `status`."""
    left = [failures]

    def handler(request: Any) -> Any:
        if request.method == "GET" and left[0] > 0:
            left[0] -= 1
            body = {"error": {"message": f"poll failed with {status}", "type": "server_error", "code": None}}
            return HTTP.Response(status, json=body)
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    return handler


@NEW_SDK
def test_transient_poll_error_keeps_the_background_span_pending(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(failing_polls_handler(fake, 500, failures=2)) as client:
        created = client.responses.create(model=MODEL, input=PROMPT, background=True)
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                client.responses.retrieve(created.id)
        assert chat_spans(span_exporter) == []  # a 5xx on a poll says nothing about the response
        assert pending(instrumentor) == 1
        assert poll(client, created.id, by_keyword=False).status == "completed"
    span = only_chat_span(span_exporter)
    assert_completed(span, created.id)
    assert span.status.status_code is StatusCode.UNSET
    assert pending(instrumentor) == 0


@NEW_SDK
def test_not_found_on_poll_ends_the_background_span_with_the_error(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(failing_polls_handler(fake, 404, failures=1)) as client:
        created = client.responses.create(model=MODEL, input=PROMPT, background=True)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(created.id)
        span = only_chat_span(span_exporter)
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "NotFoundError"
        assert attrs(span)["gen_ai.response.id"] == created.id
        assert pending(instrumentor) == 0
        client.responses.retrieve(created.id)  # its one span is out: no more
    assert len(span_exporter.get_finished_spans()) == 1


# ---- cancel, failed, incomplete -----------------------------------------------------------------------------


@NEW_SDK
def test_cancel_of_pending_response_ends_its_span_as_cancelled(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.create(model=MODEL, input=PROMPT, background=True)
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    span = only_chat_span(span_exporter)
    attributes = attrs(span)
    assert attributes["gen_ai.response.id"] == created.id
    assert attributes["openai.response.status"] == "cancelled"
    assert attributes["gen_ai.response.finish_reasons"] == ("cancelled",)
    assert attributes["openai.response.end_reason"] == "cancelled"
    assert "gen_ai.usage.output_tokens" not in attributes
    assert pending(instrumentor) == 0
    # neither a later poll nor a second cancel adds a span
    client.responses.retrieve(created.id)
    client.responses.cancel(response_id=created.id)
    assert len(span_exporter.get_finished_spans()) == 1


@NEW_SDK
async def test_cancel_async_of_pending_response_ends_its_span_as_cancelled(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = await async_client.responses.create(model=MODEL, input=PROMPT, background=True)
    await async_client.responses.retrieve(created.id)  # in_progress
    await async_client.responses.cancel(response_id=created.id)
    attributes = attrs(only_chat_span(span_exporter))
    assert attributes["openai.response.status"] == "cancelled"
    assert attributes["gen_ai.response.finish_reasons"] == ("cancelled",)
    assert pending(instrumentor) == 0


FAILED = {"fake_outcome": "failed"}


def assert_failed(span: ReadableSpan, response_id: str) -> None:
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "The fake server was asked to fail this response."
    attributes = attrs(span)
    assert attributes["error.type"] == "server_error"
    assert attributes["gen_ai.response.id"] == response_id
    assert attributes["openai.response.status"] == "failed"
    assert attributes["gen_ai.response.finish_reasons"] == ("error",)


@pytest.mark.parametrize("mode", ["plain", pytest.param("background", marks=NEW_SDK), "stream"])
def test_failed_response_is_one_error_span_with_its_error_code(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, mode: str
) -> None:
    if mode == "stream":
        events = list(client.responses.create(model=MODEL, input=PROMPT, metadata=FAILED, stream=True))
        assert events[-1].type == "response.failed"
        response_id = events[-1].response.id
    else:
        response = client.responses.create(model=MODEL, input=PROMPT, metadata=FAILED, background=mode == "background")
        if mode == "background":
            response = poll(client, response.id, by_keyword=False)
        assert response.status == "failed"
        response_id = response.id
    assert_failed(only_chat_span(span_exporter), response_id)
    assert pending(instrumentor) == 0
    client.responses.retrieve(response_id)
    assert len(span_exporter.get_finished_spans()) == 1


@pytest.mark.parametrize("mode", ["plain", pytest.param("background", marks=NEW_SDK), "stream"])
def test_incomplete_for_max_output_tokens_is_one_span_with_finish_reason_length(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, mode: str
) -> None:
    kwargs: dict[str, Any] = {"model": MODEL, "input": PROMPT, "max_output_tokens": 2}
    if mode == "stream":
        events = list(client.responses.create(**kwargs, stream=True))
        assert events[-1].type == "response.incomplete"
        response_id = events[-1].response.id
    else:
        response = client.responses.create(**kwargs, background=mode == "background")
        if mode == "background":
            response = poll(client, response.id, by_keyword=True)
        assert response.status == "incomplete"
        response_id = response.id
    span = only_chat_span(span_exporter)
    assert span.status.status_code is StatusCode.UNSET
    attributes = attrs(span)
    assert attributes["gen_ai.response.id"] == response_id
    assert attributes["openai.response.status"] == "incomplete"
    assert attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert attributes["gen_ai.request.max_tokens"] == 2
    assert attributes["gen_ai.usage.output_tokens"] == 2
    assert "error.type" not in attributes
    assert pending(instrumentor) == 0


@NEW_SDK
def test_incomplete_for_content_filter_has_finish_reason_content_filter(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    def content_filter(data: dict[str, Any]) -> None:
        if data.get("status") == "incomplete":
            data["incomplete_details"] = {"reason": "content_filter"}

    with handler_client(rewrite_handler(fake, content_filter)) as client:
        created = client.responses.create(model=MODEL, input=PROMPT, max_output_tokens=3, background=True)
        final = poll(client, created.id, by_keyword=False)
    assert final.incomplete_details is not None and final.incomplete_details.reason == "content_filter"
    attributes = attrs(only_chat_span(span_exporter))
    assert attributes["gen_ai.response.finish_reasons"] == ("content_filter",)
    assert attributes["openai.response.status"] == "incomplete"
    assert attributes["gen_ai.usage.output_tokens"] == 3
    assert pending(instrumentor) == 0


# ---- HTTP errors --------------------------------------------------------------------------------------------

HTTP_ERRORS = [
    (400, "BadRequestError"),
    (404, "NotFoundError"),
    (429, "RateLimitError"),
    (500, "InternalServerError"),
]


@pytest.mark.parametrize(("status", "error_class"), HTTP_ERRORS)
def test_http_error_on_create_is_recorded_and_reraised_unchanged(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
    status: int,
    error_class: str,
) -> None:
    model = f"fake-error-{status}"
    with make_client(fake) as plain, pytest.raises(openai.APIStatusError) as uninstrumented:
        plain.responses.create(model=model, input=PROMPT)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        with make_client(fake) as client, pytest.raises(openai.APIStatusError) as instrumented:
            client.responses.create(model=model, input=PROMPT)
        assert pending(instrumentor) == 0
    finally:
        instrumentor.uninstrument()
    error, expected = instrumented.value, uninstrumented.value
    assert type(error) is type(expected)
    assert type(error).__name__ == error_class
    assert str(error) == str(expected)
    assert (error.status_code, error.body, error.code) == (expected.status_code, expected.body, expected.code)
    (span,) = span_exporter.get_finished_spans()
    assert span.name == f"chat {model}"
    assert span.status.status_code is StatusCode.ERROR
    attributes = attrs(span)
    assert attributes["error.type"] == error_class
    assert attributes["gen_ai.request.model"] == model
    assert "gen_ai.response.id" not in attributes


async def test_http_error_on_async_create_is_recorded_and_reraised(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(openai.RateLimitError) as raised:
        await async_client.responses.create(model="fake-error-429", input=PROMPT)
    assert raised.value.status_code == 429
    span = only_chat_span(span_exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "RateLimitError"
    assert pending(instrumentor) == 0


# ---- retrieve without a pending span ------------------------------------------------------------------------


def test_retrieve_after_completion_emits_no_span(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.create(model=MODEL, input=PROMPT)
    for _ in range(3):
        assert client.responses.retrieve(created.id).id == created.id
    assert len(span_exporter.get_finished_spans()) == 1
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


def test_retrieve_of_unseen_id_is_one_fetch_response_span_without_tokens(
    client: openai.OpenAI,
    instrumentor: OpenAIInstrumentor,
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    # made by another process: straight into the fake, bypassing the SDK
    stored = json.loads(fake.handle("POST", "/v1/responses", {}, {"model": MODEL, "input": PROMPT}).body)
    fetched = client.responses.retrieve(stored["id"])
    assert fetched.usage is not None and fetched.usage.output_tokens == OUTPUT_TOKENS
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "fetch_response"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert attrs(span) == {
        "gen_ai.operation.name": "fetch_response",
        "openai.api.type": "responses",
        "gen_ai.provider.name": "openai",
        "server.address": "localhost",
        "server.port": 8080,
        "gen_ai.response.id": stored["id"],
        "gen_ai.response.model": SERVED_MODEL,
        "openai.response.status": "completed",
    }
    assert pending(instrumentor) == 0


def test_retrieve_of_unknown_id_is_a_fetch_response_error_span(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_does_not_exist")
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "fetch_response"
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "NotFoundError"
    assert attrs(span)["gen_ai.response.id"] == "resp_does_not_exist"
    assert pending(instrumentor) == 0


# ---- raw and streaming responses ----------------------------------------------------------------------------


def test_with_raw_response_create_ends_span_on_return(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    raw = client.responses.with_raw_response.create(model=MODEL, input=PROMPT)
    assert len(span_exporter.get_finished_spans()) == 1  # before any parse()
    assert raw.headers["x-request-id"].startswith("req_")
    parsed = raw.parse()
    assert parsed is raw.parse()  # the SDK's parse cache still holds
    assert_completed(only_chat_span(span_exporter), parsed.id)
    assert pending(instrumentor) == 0


@NEW_SDK
def test_with_raw_response_retrieve_finishes_pending_background_response(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    created = client.responses.with_raw_response.create(model=MODEL, input=PROMPT, background=True).parse()
    assert pending(instrumentor) == 1
    statuses = [client.responses.with_raw_response.retrieve(created.id).parse().status for _ in range(3)]
    assert statuses == ["in_progress", "completed", "completed"]
    assert_completed(only_chat_span(span_exporter), created.id)
    assert len(span_exporter.get_finished_spans()) == 1
    assert pending(instrumentor) == 0


def unread_body_handler(fake: fake_openai.FakeOpenAI, asynchronous: bool = False) -> Any:
    """Serves `fake` with bodies that stay unread until the caller reads them, as over a real socket."""

    async def chunks(body: bytes) -> Any:
        yield body

    def handler(request: Any) -> Any:
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        content = chunks(reply.body) if asynchronous else iter([reply.body])
        return HTTP.Response(reply.status, headers=reply.headers, content=content)

    return handler


@NEW_SDK
def test_unread_streaming_retrieve_leaves_pending_background_response_pending(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(unread_body_handler(fake)) as client:
        created = client.responses.create(model=MODEL, input=PROMPT, background=True)
        with client.responses.with_streaming_response.retrieve(created.id) as raw:
            assert raw.status_code == 200  # headers only: the body is never read
        assert chat_spans(span_exporter) == []  # the response goes on server-side: its span waits
        assert pending(instrumentor) == 1
        assert poll(client, created.id, by_keyword=False).status == "completed"
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


@NEW_SDK
async def test_unread_async_streaming_retrieve_leaves_pending_background_response_pending(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    async with handler_async_client(unread_body_handler(fake, asynchronous=True)) as client:
        created = await client.responses.create(model=MODEL, input=PROMPT, background=True)
        async with client.responses.with_streaming_response.retrieve(created.id) as raw:
            assert raw.status_code == 200
        assert chat_spans(span_exporter) == []
        assert (await async_poll(client, created.id, by_keyword=True)).status == "completed"
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


def test_unread_streaming_create_ends_span_unobserved(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with (
        handler_client(unread_body_handler(fake)) as client,
        client.responses.with_streaming_response.create(model=MODEL, input=PROMPT) as raw,
    ):
        assert raw.status_code == 200
    attributes = attrs(only_chat_span(span_exporter))
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"
    assert pending(instrumentor) == 0


def test_with_streaming_response_create_ends_span_on_parse(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    with client.responses.with_streaming_response.create(model=MODEL, input=PROMPT) as raw:
        assert chat_spans(span_exporter) == []  # body not read yet
        parsed = raw.parse()
    assert_completed(only_chat_span(span_exporter), parsed.id)
    assert pending(instrumentor) == 0


def test_with_streaming_response_create_stream_ends_span_on_terminal_event(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    with client.responses.with_streaming_response.create(model=MODEL, input=PROMPT, stream=True) as raw:
        events = list(raw.parse())
    assert events[-1].type == "response.completed"
    span = only_chat_span(span_exporter)
    assert_completed(span, events[-1].response.id)
    assert attrs(span)["gen_ai.request.stream"] is True
    assert pending(instrumentor) == 0


def test_with_raw_response_create_stream_ends_span_on_terminal_event(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    raw = client.responses.with_raw_response.create(model=MODEL, input=PROMPT, stream=True)
    events = list(raw.parse())
    assert_completed(only_chat_span(span_exporter), events[-1].response.id)
    assert pending(instrumentor) == 0


async def test_async_raw_and_streaming_responses_each_emit_one_span(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    raw = await async_client.responses.with_raw_response.create(model=MODEL, input=PROMPT)
    first = raw.parse()  # LegacyAPIResponse.parse() is sync even on the async client
    async with async_client.responses.with_streaming_response.create(model=MODEL, input=PROMPT) as streaming:
        second = await streaming.parse()
    async with async_client.responses.with_streaming_response.create(
        model=MODEL, input=PROMPT, stream=True
    ) as streamed:
        events = [event async for event in await streamed.parse()]
    third = events[-1].response
    legacy_stream = await async_client.responses.with_raw_response.create(model=MODEL, input=PROMPT, stream=True)
    fourth = [event async for event in legacy_stream.parse()][-1].response
    spans = chat_spans(span_exporter)
    assert len(spans) == 4
    for span, response in zip(spans, (first, second, third, fourth), strict=True):
        assert_completed(span, response.id)
    assert pending(instrumentor) == 0


@NEW_SDK
def test_parse_through_with_raw_response_records_json_output(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(rewrite_handler(fake, json_text({"name": "Alice", "age": 30}))) as client:
        raw = client.responses.with_raw_response.parse(model=MODEL, input=PROMPT, text_format=Person)
        parsed = raw.parse()
        direct = client.responses.parse(model=MODEL, input=PROMPT, text_format=Person)
    assert parsed.output_parsed == Person(name="Alice", age=30)
    assert direct.output_parsed == Person(name="Alice", age=30)
    spans = chat_spans(span_exporter)
    assert len(spans) == 2
    for span, response in zip(spans, (parsed, direct), strict=True):
        assert_completed(span, response.id)
        assert attrs(span)["gen_ai.output.type"] == "json"
        assert "gen_ai.request.stream" not in attrs(span)
    assert pending(instrumentor) == 0


@NEW_SDK
async def test_parse_async_through_with_raw_response_records_json_output(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    async with handler_async_client(rewrite_handler(fake, json_text({"name": "Bob", "age": 42}))) as client:
        raw = await client.responses.with_raw_response.parse(model=MODEL, input=PROMPT, text_format=Person)
        parsed = raw.parse()
    assert parsed.output_parsed == Person(name="Bob", age=42)
    span = only_chat_span(span_exporter)
    assert_completed(span, parsed.id)
    assert attrs(span)["gen_ai.output.type"] == "json"
    assert pending(instrumentor) == 0


@NEW_SDK
def test_parse_background_then_poll_is_one_span(
    instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(rewrite_handler(fake, json_text({"name": "Ann", "age": 7}))) as client:
        created = client.responses.parse(model=MODEL, input=PROMPT, text_format=Person, background=True)
        assert created.status == "queued"
        final = poll(client, created.id, by_keyword=False)
    assert final.status == "completed"
    assert_completed(only_chat_span(span_exporter), created.id)
    assert pending(instrumentor) == 0


# ---- the responses.stream() helper --------------------------------------------------------------------------


def test_stream_helper_read_fully_records_final_response(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    with client.responses.stream(model=MODEL, input=PROMPT) as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "This is a deterministic reply"
    span = only_chat_span(span_exporter)
    assert_completed(span, final.id)
    assert attrs(span)["gen_ai.request.stream"] is True
    assert pending(instrumentor) == 0


def test_stream_helper_break_early_ends_span_unobserved(
    client: openai.OpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    response_id = ""
    with client.responses.stream(model=MODEL, input=PROMPT, metadata={"fake_stream_chunks": "40"}) as stream:
        for event in stream:
            if event.type == "response.created":
                response_id = event.response.id
            if event.type == "response.output_text.delta":
                break
        assert chat_spans(span_exporter) == []  # still open until the helper closes the response
    span = only_chat_span(span_exporter)
    attributes = attrs(span)
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"
    assert attributes["gen_ai.response.id"] == response_id
    assert attributes["openai.response.status"] == "in_progress"
    assert "gen_ai.usage.output_tokens" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    assert pending(instrumentor) == 0


async def test_async_stream_helper_read_fully_and_break_early(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_exporter: InMemorySpanExporter
) -> None:
    async with async_client.responses.stream(model=MODEL, input=PROMPT) as stream:
        async for _event in stream:
            pass
        final = await stream.get_final_response()
    async with async_client.responses.stream(model=MODEL, input=PROMPT) as early:
        async for _event in early:
            break
    spans = chat_spans(span_exporter)
    assert len(spans) == 2
    assert_completed(spans[0], final.id)
    assert attrs(spans[1])["openai.response.finish_observed"] is False
    assert pending(instrumentor) == 0


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")
async def test_async_stream_manager_never_entered_leaves_no_span(
    async_client: openai.AsyncOpenAI, instrumentor: OpenAIInstrumentor, span_counter: Any
) -> None:
    manager = async_client.responses.stream(model=MODEL, input=PROMPT)
    assert span_counter.started == 0  # the request coroutine is only awaited in __aenter__
    del manager
    assert span_counter.started == 0
    assert pending(instrumentor) == 0
