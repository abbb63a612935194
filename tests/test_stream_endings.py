"""Every way a stream can end ends its span exactly once: Chat Completions and Responses, sync and async.

The matrix: read to the end; `close()`; context-manager exit; `break` then the stream dropped; an error
raised by the stream (transport error mid-body, Responses `error` event); an error raised by the caller
inside the `with`; the SDK helper (`chat.completions.stream()` / `responses.stream()`) exited early,
which closes the raw HTTP response itself; an async helper manager never entered.
"""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from conftest import HTTP, OPENAI_VERSION, SpanCounter, handler_async_client, handler_client, metric_points
from fake_openai import FakeOpenAI, dispatch
from test_chat_cassettes import freeze_before_test  # noqa: F401 - keeps gc.collect() cheap

MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"  # the fake API's dated model name
MESSAGES = [{"role": "user", "content": "Say hello"}]
PROMPT = "Say hello"

FINISH_OBSERVED = "openai.response.finish_observed"
END_REASON = "openai.response.end_reason"
USAGE_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
)


# ---- the two streamed APIs behind one interface ----


@dataclass(frozen=True)
class Api:
    name: str
    api_type: str

    def create(self, client: openai.OpenAI, **kwargs: Any) -> Any:
        if self.name == "chat":
            return client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, **kwargs)
        return client.responses.create(model=MODEL, input=PROMPT, stream=True, **kwargs)

    async def acreate(self, client: openai.AsyncOpenAI, **kwargs: Any) -> Any:
        if self.name == "chat":
            return await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, **kwargs)
        return await client.responses.create(model=MODEL, input=PROMPT, stream=True, **kwargs)

    def helper(self, client: Any) -> Any:
        """The SDK's own stream helper (a context manager; async managers for the async client)."""
        if self.name == "chat":
            return client.chat.completions.stream(model=MODEL, messages=MESSAGES)
        return client.responses.stream(model=MODEL, input=PROMPT)

    def seen(self, item: Any) -> tuple[str, str] | None:
        """(id, model) a raw stream item shows the caller, if any."""
        source = item if self.name == "chat" else getattr(item, "response", None)
        if source is None:
            return None
        return source.id, source.model

    def seen_by_helper(self, event: Any) -> tuple[str, str] | None:
        """(id, model) a helper event shows the caller, if any."""
        if self.name == "chat":
            chunk = getattr(event, "chunk", None)
            return (chunk.id, chunk.model) if chunk is not None else None
        return self.seen(event)

    def path(self) -> str:
        return "/v1/chat/completions" if self.name == "chat" else "/v1/responses"


CHAT = Api("chat", "chat_completions")
RESPONSES = Api("responses", "responses")
APIS = pytest.mark.parametrize("api", [CHAT, RESPONSES], ids=["chat", "responses"])


def one_span(exporter: InMemorySpanExporter, counter: SpanCounter) -> ReadableSpan:
    """The test made one call: exactly one span, started once and ended once."""
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [span.name for span in spans]
    assert counter.started == 1
    assert counter.ended == 1
    span = spans[0]
    assert span.name == f"chat {MODEL}"
    assert span.kind is SpanKind.CLIENT
    return span


def assert_request(span: ReadableSpan, api: Api) -> None:
    attributes = span.attributes or {}
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["openai.api.type"] == api.api_type
    assert attributes["gen_ai.request.model"] == MODEL
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.provider.name"] == "openai"


def assert_ended_early(span: ReadableSpan, api: Api, seen: tuple[str, str] | None, end_reason: str) -> None:
    """Closed before the finish: what was seen is kept, marked as not observed to finish, not an error."""
    attributes = span.attributes or {}
    assert_request(span, api)
    assert seen is not None
    assert attributes["gen_ai.response.id"] == seen[0]
    assert attributes["gen_ai.response.model"] == seen[1] == RESPONSE_MODEL
    assert attributes[FINISH_OBSERVED] is False
    assert attributes[END_REASON] == end_reason
    assert "gen_ai.response.finish_reasons" not in attributes
    assert "error.type" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    for key in USAGE_KEYS:
        assert key not in attributes


def assert_finished(span: ReadableSpan, api: Api, items: list[Any]) -> None:
    """Read to the end: the finish and, for Responses, the final usage; nothing marked unfinished."""
    attributes = span.attributes or {}
    assert_request(span, api)
    seen = [pair for pair in map(api.seen, items) if pair]
    assert seen
    assert attributes["gen_ai.response.id"] == seen[-1][0]
    assert attributes["gen_ai.response.model"] == RESPONSE_MODEL
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert FINISH_OBSERVED not in attributes
    assert END_REASON not in attributes
    assert "error.type" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    if api is RESPONSES:
        final = items[-1]
        assert final.type == "response.completed"
        assert attributes["openai.response.status"] == "completed"
        assert attributes["gen_ai.usage.input_tokens"] == final.response.usage.input_tokens == 5
        assert attributes["gen_ai.usage.output_tokens"] == final.response.usage.output_tokens == 5
    else:
        assert attributes["openai.response.system_fingerprint"] == "fp_fake0000"
        for key in USAGE_KEYS:  # no stream_options.include_usage: the stream carried no usage
            assert key not in attributes


def assert_raised(
    span: ReadableSpan, api: Api, error: BaseException, seen: tuple[str, str] | None, error_type: str | None = None
) -> None:
    attributes = span.attributes or {}
    assert_request(span, api)
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == (error_type or type(error).__qualname__)
    assert seen is not None
    assert attributes["gen_ai.response.id"] == seen[0]
    assert attributes["gen_ai.response.model"] == seen[1]
    assert attributes[FINISH_OBSERVED] is False
    assert "gen_ai.response.finish_reasons" not in attributes


# ---- transports for streams that break ----


def _fake_events(fake: FakeOpenAI, request: Any) -> tuple[dict[str, str], list[bytes]]:
    reply = dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
    assert reply.is_sse, reply.body
    return reply.headers, [event + b"\n\n" for event in reply.body.split(b"\n\n") if event.strip()]


def cut_after_two_events(asynchronous: bool) -> Any:
    """A handler whose response body yields the fake API's first 2 SSE events, then fails with ReadError."""
    fake = FakeOpenAI()

    def handler(request: Any) -> Any:
        headers, events = _fake_events(fake, request)

        def body() -> Iterator[bytes]:
            yield from events[:2]
            raise HTTP.ReadError("connection reset by peer", request=request)

        async def async_body() -> AsyncIterator[bytes]:
            for event in events[:2]:
                yield event
            raise HTTP.ReadError("connection reset by peer", request=request)

        return HTTP.Response(200, headers=headers, content=async_body() if asynchronous else body())

    return handler


ERROR_EVENT = {
    "type": "error",
    "code": "server_error",
    "message": "The server had an error while processing your request.",
    "param": None,
}


# openai < 1.99 yields an event not named `response.*` typeless, as {"data": ..., "event": "error"}
ERROR_EVENT_TYPE = "error" if OPENAI_VERSION >= (1, 99) else None


def responses_error_event(request: Any, fake: FakeOpenAI) -> Any:
    """A Responses stream that opens normally and then sends an SSE `error` event, and ends."""
    headers, events = _fake_events(fake, request)
    error = json.dumps({**ERROR_EVENT, "sequence_number": 2}).encode()
    body = b"".join(events[:2]) + b"event: error\ndata: " + error + b"\n\n"
    return HTTP.Response(200, headers=headers, content=body)


# ---- read to the end ----


@APIS
def test_sync_read_to_end(api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter) -> None:
    stream = api.create(client)
    items = list(stream)
    stream.close()  # closing after the end changes nothing: the span already ended
    span = one_span(span_exporter, span_counter)
    assert_finished(span, api, items)


@APIS
async def test_async_read_to_end(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = await api.acreate(async_client)
    items = [item async for item in stream]
    await stream.close()
    span = one_span(span_exporter, span_counter)
    assert_finished(span, api, items)


# ---- close() ----


@APIS
def test_sync_close_after_first_item(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = api.create(client)
    seen = api.seen(next(iter(stream)))
    assert span_exporter.get_finished_spans() == ()  # still streaming: nothing ended yet
    stream.close()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


@APIS
@pytest.mark.parametrize("method", ["close", "aclose"])
async def test_async_close_after_first_item(
    api: Api, method: str, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = await api.acreate(async_client)
    seen = api.seen(await stream.__anext__())
    assert span_exporter.get_finished_spans() == ()
    await getattr(stream, method)()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


# ---- with / async with ----


@APIS
def test_sync_with_exit(api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter) -> None:
    stream = api.create(client)
    with stream as entered:
        assert entered is stream  # __enter__ hands back the instrumented proxy, not the raw SDK stream
        seen = None
        for item in entered:
            seen = api.seen(item)
            break
        assert span_exporter.get_finished_spans() == ()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


@APIS
async def test_async_with_exit(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = await api.acreate(async_client)
    async with stream as entered:
        assert entered is stream
        seen = None
        async for item in entered:
            seen = api.seen(item)
            break
        assert span_exporter.get_finished_spans() == ()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


@APIS
def test_sync_with_read_to_end(api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter) -> None:
    with api.create(client) as stream:
        items = list(stream)
    assert_finished(one_span(span_exporter, span_counter), api, items)


# ---- break, then the stream is dropped ----


@APIS
def test_sync_break_then_dropped(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = api.create(client)
    seen = None
    for item in stream:
        seen = api.seen(item)
        break
    assert span_exporter.get_finished_spans() == ()
    del stream, item
    gc.collect()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "abandoned")


@APIS
async def test_async_break_then_dropped(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = await api.acreate(async_client)
    seen = None
    async for item in stream:
        seen = api.seen(item)
        break
    assert span_exporter.get_finished_spans() == ()
    del stream, item
    gc.collect()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "abandoned")


@APIS
def test_sync_never_read_then_dropped(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    stream = api.create(client)
    del stream
    gc.collect()
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert_request(span, api)
    assert attributes[FINISH_OBSERVED] is False
    assert attributes[END_REASON] == "abandoned"
    assert "gen_ai.response.id" not in attributes  # nothing was read, so nothing is known


# ---- an error raised by the stream ----


@APIS
def test_sync_transport_error_mid_stream(
    api: Api, instrumentor: Any, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen: list[tuple[str, str]] = []
    with handler_client(cut_after_two_events(asynchronous=False)) as client:
        stream = api.create(client)
        with pytest.raises(Exception) as raised:
            for item in stream:
                seen.extend(filter(None, [api.seen(item)]))
    assert len(seen) == 2  # both events before the cut reached the caller
    assert_raised(one_span(span_exporter, span_counter), api, raised.value, seen[-1])


@APIS
async def test_async_transport_error_mid_stream(
    api: Api, instrumentor: Any, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen: list[tuple[str, str]] = []
    async with handler_async_client(cut_after_two_events(asynchronous=True)) as client:
        stream = await api.acreate(client)
        with pytest.raises(Exception) as raised:
            async for item in stream:
                seen.extend(filter(None, [api.seen(item)]))
    assert len(seen) == 2
    assert_raised(one_span(span_exporter, span_counter), api, raised.value, seen[-1])


def _consume_broken_stream() -> BaseException:
    with handler_client(cut_after_two_events(asynchronous=False)) as client:
        try:
            for _ in CHAT.create(client):
                pass
        except Exception as error:
            return error
    raise AssertionError("the stream should have failed")


def test_transport_error_surfaces_as_the_sdk_raises_it(instrumentor: Any, span_exporter: Any) -> None:
    """The caller gets what the uninstrumented SDK raises (openai 3.x wraps ReadError), and error.type names it."""
    with suppress_instrumentation():
        bare = _consume_broken_stream()
    assert span_exporter.get_finished_spans() == ()
    traced = _consume_broken_stream()
    assert type(traced) is type(bare)
    assert str(traced) == str(bare)
    if OPENAI_VERSION >= (3,):
        assert isinstance(traced, openai.APIConnectionError)
    (span,) = span_exporter.get_finished_spans()
    assert (span.attributes or {})["error.type"] == type(bare).__qualname__


def test_sync_responses_error_event(instrumentor: Any, span_exporter: Any, span_counter: SpanCounter) -> None:
    fake = FakeOpenAI()
    with handler_client(lambda request: responses_error_event(request, fake)) as client:
        items = list(RESPONSES.create(client))  # the SDK yields the error event; it raises nothing
    assert [item.type for item in items] == ["response.created", "response.in_progress", ERROR_EVENT_TYPE]
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert_request(span, RESPONSES)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == ERROR_EVENT["message"]
    assert attributes["error.type"] == "server_error"
    assert attributes["gen_ai.response.id"] == items[0].response.id
    assert attributes["gen_ai.response.model"] == RESPONSE_MODEL
    assert attributes["openai.response.status"] == "in_progress"


async def test_async_responses_error_event(instrumentor: Any, span_exporter: Any, span_counter: SpanCounter) -> None:
    fake = FakeOpenAI()
    async with handler_async_client(lambda request: responses_error_event(request, fake)) as client:
        items = [item async for item in await RESPONSES.acreate(client)]
    assert [item.type for item in items] == ["response.created", "response.in_progress", ERROR_EVENT_TYPE]
    span = one_span(span_exporter, span_counter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "server_error"
    assert (span.attributes or {})["gen_ai.response.id"] == items[0].response.id


# ---- an error raised by the caller inside the with block ----


class CallerError(Exception):
    pass


@APIS
def test_sync_caller_raises_inside_with(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen = None
    with pytest.raises(CallerError), api.create(client) as stream:
        for item in stream:
            seen = api.seen(item)
            raise CallerError("the application failed while handling a chunk")
    span = one_span(span_exporter, span_counter)
    assert_raised(span, api, CallerError(), seen)
    assert (span.attributes or {})[END_REASON] == "closed"


@APIS
async def test_async_caller_raises_inside_with(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen = None
    with pytest.raises(CallerError):
        async with await api.acreate(async_client) as stream:
            async for item in stream:
                seen = api.seen(item)
                raise CallerError("the application failed while handling a chunk")
    span = one_span(span_exporter, span_counter)
    assert_raised(span, api, CallerError(), seen)
    assert (span.attributes or {})[END_REASON] == "closed"


# ---- the SDK helpers, exited early: they close the raw HTTP response themselves ----


@APIS
def test_sync_helper_exited_early(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen = None
    with api.helper(client) as stream:
        for event in stream:
            seen = api.seen_by_helper(event)
            break
        assert span_exporter.get_finished_spans() == ()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


@APIS
async def test_async_helper_exited_early(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    seen = None
    async with api.helper(async_client) as stream:
        async for event in stream:
            seen = api.seen_by_helper(event)
            break
        assert span_exporter.get_finished_spans() == ()
    assert_ended_early(one_span(span_exporter, span_counter), api, seen, "closed")


@APIS
def test_sync_helper_read_to_end(
    api: Api, client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    with api.helper(client) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion() if api is CHAT else stream.get_final_response()
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert_request(span, api)
    assert attributes["gen_ai.response.id"] == final.id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert FINISH_OBSERVED not in attributes


@APIS
async def test_async_helper_read_to_end(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    async with api.helper(async_client) as stream:
        async for _ in stream:
            pass
        final = await (stream.get_final_completion() if api is CHAT else stream.get_final_response())
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert attributes["gen_ai.response.id"] == final.id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert FINISH_OBSERVED not in attributes


@APIS
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
async def test_async_helper_never_entered(
    api: Api, async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    manager = api.helper(async_client)  # builds the create() coroutine; only __aenter__ awaits it
    del manager
    gc.collect()
    assert span_exporter.get_finished_spans() == ()
    assert span_counter.started == 0
    assert span_counter.ended == 0


# ---- usage, choices and the first-chunk metric ----


def test_chat_stream_usage_only_with_include_usage(
    client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    without = list(CHAT.create(client))
    with_usage = list(CHAT.create(client, stream_options={"include_usage": True}))
    assert without[-1].usage is None
    assert with_usage[-1].choices == []
    assert with_usage[-1].usage is not None
    plain, counted = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 2
    for key in USAGE_KEYS:
        assert key not in (plain.attributes or {})
    attributes = counted.attributes or {}
    # "Say hello" is 2 words + 3 framing tokens; the reply is 5 words
    assert attributes["gen_ai.usage.input_tokens"] == with_usage[-1].usage.prompt_tokens == 5
    assert attributes["gen_ai.usage.output_tokens"] == with_usage[-1].usage.completion_tokens == 5
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 0
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert FINISH_OBSERVED not in attributes


def _chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-n2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def two_choices(request: Any) -> Any:
    """n=2, choice 1 finishing ("length") before choice 0 ("stop")."""
    body = b"".join(
        [
            _chunk(0, {"role": "assistant", "content": "Hel"}),
            _chunk(1, {"role": "assistant", "content": "Hi"}),
            _chunk(1, {}, "length"),
            _chunk(0, {"content": "lo"}),
            _chunk(0, {}, "stop"),
            b"data: [DONE]\n\n",
        ]
    )
    return HTTP.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def test_chat_stream_two_choices_finish_reasons_in_choice_order(
    instrumentor: Any, span_exporter: Any, span_counter: SpanCounter
) -> None:
    with handler_client(two_choices) as client:
        chunks = list(CHAT.create(client, n=2))
    assert len(chunks) == 5
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert attributes["gen_ai.request.choice.count"] == 2
    assert attributes["gen_ai.response.finish_reasons"] == ("stop", "length")
    assert attributes["gen_ai.response.id"] == "chatcmpl-n2"


def test_chat_stream_two_choices_with_fake(
    client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    list(CHAT.create(client, n=2, stream_options={"include_usage": True}))
    attributes = one_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.request.choice.count"] == 2
    assert attributes["gen_ai.response.finish_reasons"] == ("stop", "stop")
    assert attributes["gen_ai.usage.output_tokens"] == 10  # 5 words per choice


TTFC = "gen_ai.client.operation.time_to_first_chunk"
DURATION = "gen_ai.client.operation.duration"


@APIS
def test_time_to_first_chunk_recorded_once_per_stream(api: Api, client: openai.OpenAI, metric_reader: Any) -> None:
    list(api.create(client))
    (point,) = metric_points(metric_reader, TTFC)
    assert point.count == 1
    assert point.attributes["gen_ai.operation.name"] == "chat"
    assert point.attributes["gen_ai.request.model"] == MODEL
    assert point.attributes["gen_ai.response.model"] == RESPONSE_MODEL
    (duration,) = metric_points(metric_reader, DURATION)
    assert duration.count == 1
    assert 0 <= point.sum <= duration.sum


async def test_time_to_first_chunk_async_and_not_for_plain_calls(
    async_client: openai.AsyncOpenAI, metric_reader: Any
) -> None:
    await async_client.chat.completions.create(model=MODEL, messages=MESSAGES)  # not a stream
    assert metric_points(metric_reader, TTFC) == []
    stream = await CHAT.acreate(async_client)
    async for _ in stream:
        pass
    (point,) = metric_points(metric_reader, TTFC)
    assert point.count == 1
    (duration,) = metric_points(metric_reader, DURATION)
    assert duration.count == 2


def test_time_to_first_chunk_for_a_stream_closed_unread(client: openai.OpenAI, metric_reader: Any) -> None:
    CHAT.create(client).close()
    assert metric_points(metric_reader, TTFC) == []  # no chunk arrived
    (duration,) = metric_points(metric_reader, DURATION)
    assert duration.count == 1
