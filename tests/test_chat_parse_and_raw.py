"""`chat.completions.parse()`, the `chat.completions.stream()` helper, and every chat call made through
`with_raw_response` / `with_streaming_response`, sync and async, against the fake API.

The fake API answers with plain words; for structured output the handler below turns its reply into
JSON matching the requested schema, so `parse()` sees what the real API would send.
"""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pydantic
import pytest
from opentelemetry.trace import StatusCode

from conftest import HTTP, handler_async_client, handler_client
from fake_openai import FakeOpenAI, dispatch
from test_chat_cassettes import freeze_before_test  # noqa: F401 - keeps gc.collect() cheap

MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
MESSAGES = [{"role": "user", "content": "Tell me a joke about opentelemetry"}]
ANSWER = {"joke": "Why did the span end? It finally got closure.", "rating": 7}


class Joke(pydantic.BaseModel):
    joke: str
    rating: int


def structured(fake: FakeOpenAI, content: str = json.dumps(ANSWER)) -> Callable[[Any], Any]:
    """The fake API, with each choice's content replaced by `content` (streams: in two deltas)."""

    def handler(request: Any) -> Any:
        reply = dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        if not reply.is_sse:
            body = json.loads(reply.body)
            for choice in body.get("choices", []):
                choice["message"]["content"] = content
            return HTTP.Response(reply.status, headers=reply.headers, json=body)
        chunks = [
            json.loads(line[len(b"data: ") :]) for line in reply.body.split(b"\n\n") if line.startswith(b"data: {")
        ]
        head = {key: value for key, value in chunks[0].items() if key != "choices"}
        finish = next(c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"])
        pieces = [content[: len(content) // 2], content[len(content) // 2 :]]
        rebuilt = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        rebuilt += [{**head, "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
        rebuilt += [finish, *[c for c in chunks if not c["choices"]]]  # the finish, then any usage chunk
        body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in rebuilt) + b"data: [DONE]\n\n"
        return HTTP.Response(200, headers=reply.headers, content=body)

    return handler


def one_span(span_exporter: Any, span_counter: Any) -> Any:
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 1, [span.name for span in spans]
    assert span_counter.started == span_counter.ended == 1
    return spans[0]


def assert_completion_span(span: Any, result: Any, *, stream: bool = False, output_type: str | None = None) -> None:
    attributes = span.attributes or {}
    assert span.name == f"chat {MODEL}"
    assert span.status.status_code is StatusCode.UNSET
    assert attributes["openai.api.type"] == "chat_completions"
    assert attributes["gen_ai.response.id"] == result.id
    assert attributes["gen_ai.response.model"] == result.model == RESPONSE_MODEL
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes.get("gen_ai.request.stream") is (True if stream else None)
    assert attributes.get("gen_ai.output.type") == output_type
    assert "openai.response.finish_observed" not in attributes
    if not stream:
        assert attributes["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
        assert attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens


# ---- parse() ----


def test_parse(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with handler_client(structured(FakeOpenAI())) as client:
        result = client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Joke)  # type: ignore[arg-type]
    assert result.choices[0].message.parsed == Joke(**ANSWER)  # the caller's result, untouched
    span = one_span(span_exporter, span_counter)
    assert_completion_span(span, result, output_type="json")
    assert (span.attributes or {})["gen_ai.usage.input_tokens"] == 9  # 6 words + 3 framing tokens


async def test_parse_async(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    async with handler_async_client(structured(FakeOpenAI())) as client:
        result = await client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Joke)  # type: ignore[arg-type]
    assert result.choices[0].message.parsed == Joke(**ANSWER)
    assert_completion_span(one_span(span_exporter, span_counter), result, output_type="json")


def test_parse_validation_error_is_recorded_and_reraised(
    instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    """The body arrives but does not fit the model: the SDK's own error reaches the caller unchanged."""
    handler = structured(FakeOpenAI(), content='{"joke": 1}')
    with handler_client(handler) as client, pytest.raises(pydantic.ValidationError) as raised:
        client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Joke)  # type: ignore[arg-type]
    assert raised.value.title == "Joke"
    span = one_span(span_exporter, span_counter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ValidationError"


# ---- the chat.completions.stream() helper ----


def test_stream_helper_structured(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with (
        handler_client(structured(FakeOpenAI())) as client,
        client.chat.completions.stream(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            response_format=Joke,
            stream_options={"include_usage": True},
        ) as stream,
    ):
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "content.done" in events
    assert final.choices[0].message.parsed == Joke(**ANSWER)
    span = one_span(span_exporter, span_counter)
    assert_completion_span(span, final, stream=True, output_type="json")
    attributes = span.attributes or {}
    assert attributes["gen_ai.usage.input_tokens"] == final.usage.prompt_tokens == 9  # type: ignore[union-attr]
    assert attributes["gen_ai.usage.output_tokens"] == 5


async def test_stream_helper_structured_async(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    async with (
        handler_async_client(structured(FakeOpenAI())) as client,
        client.chat.completions.stream(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            response_format=Joke,
        ) as stream,
    ):
        events = [event.type async for event in stream]
        final = await stream.get_final_completion()
    assert events[-1] == "content.done" or "content.done" in events
    assert final.choices[0].message.parsed == Joke(**ANSWER)
    span = one_span(span_exporter, span_counter)
    assert_completion_span(span, final, stream=True, output_type="json")
    assert "gen_ai.usage.input_tokens" not in (span.attributes or {})  # no include_usage: no usage


def test_stream_helper_plain_until_done(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    with client.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:  # type: ignore[arg-type]
        final = stream.until_done().get_final_completion()
    assert final.choices[0].message.content == "This is a deterministic reply"
    assert_completion_span(one_span(span_exporter, span_counter), final, stream=True)


# ---- with_raw_response ----


def test_raw_create(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    one_span(span_exporter, span_counter)  # ended on return: the body is already read
    assert raw.http_response.status_code == 200
    result = raw.parse()
    assert raw.parse() is result  # the SDK's cache is kept
    assert_completion_span(one_span(span_exporter, span_counter), result)


async def test_raw_create_async(async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any) -> None:
    raw = await async_client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    result = raw.parse()  # LegacyAPIResponse.parse() is synchronous even on the async client
    assert_completion_span(one_span(span_exporter, span_counter), result)


def test_raw_create_stream(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
    stream = raw.parse()
    assert raw.parse() is stream
    assert span_exporter.get_finished_spans() == ()  # a stream's span ends with the stream
    chunks = list(stream)
    span = one_span(span_exporter, span_counter)
    assert_completion_span(span, chunks[0], stream=True)


async def test_raw_create_stream_async(async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any) -> None:
    raw = await async_client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
    stream = raw.parse()
    chunks = [chunk async for chunk in stream]
    assert_completion_span(one_span(span_exporter, span_counter), chunks[0], stream=True)


def test_raw_create_stream_dropped_unparsed(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
    raw.http_response.close()
    del raw
    gc.collect()
    attributes = one_span(span_exporter, span_counter).attributes or {}
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "abandoned"


def test_raw_parse(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with handler_client(structured(FakeOpenAI())) as client:
        raw = client.chat.completions.with_raw_response.parse(model=MODEL, messages=MESSAGES, response_format=Joke)  # type: ignore[arg-type]
    result = raw.parse()
    assert result.choices[0].message.parsed == Joke(**ANSWER)
    assert_completion_span(one_span(span_exporter, span_counter), result, output_type="json")


async def test_raw_parse_async(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    async with handler_async_client(structured(FakeOpenAI())) as client:
        raw = await client.chat.completions.with_raw_response.parse(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            response_format=Joke,
        )
    result = raw.parse()
    assert result.choices[0].message.parsed == Joke(**ANSWER)
    assert_completion_span(one_span(span_exporter, span_counter), result, output_type="json")


def test_raw_error(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.with_raw_response.create(model="fake-error-429", messages=MESSAGES)  # type: ignore[arg-type]
    span = one_span(span_exporter, span_counter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "RateLimitError"


# ---- with_streaming_response ----


def test_streaming_response_create(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    with client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response:  # type: ignore[arg-type]
        assert span_exporter.get_finished_spans() == ()  # the body is not read yet
        result = response.parse()
        one_span(span_exporter, span_counter)  # parse() read it: the span ended
    assert_completion_span(one_span(span_exporter, span_counter), result)


async def test_streaming_response_create_async(
    async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any
) -> None:
    async with async_client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
    ) as response:
        assert span_exporter.get_finished_spans() == ()
        result = await response.parse()
    assert_completion_span(one_span(span_exporter, span_counter), result)


def test_streaming_response_create_stream(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    with client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    ) as response:
        chunks = list(response.parse())
    span = one_span(span_exporter, span_counter)
    assert_completion_span(span, chunks[0], stream=True)
    assert (span.attributes or {})["gen_ai.usage.output_tokens"] == chunks[-1].usage.completion_tokens == 5  # type: ignore[union-attr]


async def test_streaming_response_create_stream_async(
    async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any
) -> None:
    async with async_client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
        stream=True,
    ) as response:
        chunks = [chunk async for chunk in await response.parse()]
    assert_completion_span(one_span(span_exporter, span_counter), chunks[0], stream=True)


def test_streaming_response_stream_left_early(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    """The context manager closes the HTTP response under a half-read stream: the span ends there."""
    with client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
        stream=True,
    ) as response:
        first = next(iter(response.parse()))
    attributes = one_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.id"] == first.id
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"


def test_streaming_response_parse(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with (
        handler_client(structured(FakeOpenAI())) as client,
        client.chat.completions.with_streaming_response.parse(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            response_format=Joke,
        ) as response,
    ):
        result = response.parse()
    assert result.choices[0].message.parsed == Joke(**ANSWER)
    assert_completion_span(one_span(span_exporter, span_counter), result, output_type="json")


async def test_streaming_response_parse_async(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    async with (
        handler_async_client(structured(FakeOpenAI())) as client,
        client.chat.completions.with_streaming_response.parse(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            response_format=Joke,
        ) as response,
    ):
        assert span_exporter.get_finished_spans() == ()
        result = await response.parse()
    assert result.choices[0].message.parsed == Joke(**ANSWER)
    assert_completion_span(one_span(span_exporter, span_counter), result, output_type="json")


def network_like(fake: FakeOpenAI, asynchronous: bool) -> Callable[[Any], Any]:
    """The fake API with bodies delivered as a byte stream, as over a socket: unread until read."""

    def handler(request: Any) -> Any:
        reply = dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)

        async def async_body() -> AsyncIterator[bytes]:
            yield reply.body

        body = async_body() if asynchronous else iter([reply.body])
        return HTTP.Response(reply.status, headers=reply.headers, content=body)

    return handler


@pytest.mark.parametrize("read", ["json", "text", "read"])
def test_streaming_response_read_without_parse(
    read: str, instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    """A caller that reads the body itself (a proxy forwarding it) still gets a complete span."""
    with (
        handler_client(network_like(FakeOpenAI(), asynchronous=False)) as client,
        client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response,  # type: ignore[arg-type]
    ):
        assert span_exporter.get_finished_spans() == ()
        data = getattr(response, read)()
    body = data if isinstance(data, dict) else json.loads(data)
    attributes = one_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.id"] == body["id"]
    assert attributes["gen_ai.response.model"] == body["model"]
    assert attributes["gen_ai.usage.output_tokens"] == body["usage"]["completion_tokens"]
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "openai.response.finish_observed" not in attributes


async def test_streaming_response_read_without_parse_async(
    instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    async with (
        handler_async_client(network_like(FakeOpenAI(), asynchronous=True)) as client,
        client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response,  # type: ignore[arg-type]
    ):
        body = await response.json()
    attributes = one_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.id"] == body["id"]
    assert "openai.response.finish_observed" not in attributes


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_streaming_response_never_read(
    asynchronous: bool, instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    handler = network_like(FakeOpenAI(), asynchronous)
    if asynchronous:
        async with (
            handler_async_client(handler) as client,
            client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response,  # type: ignore[arg-type]
        ):
            assert response.http_response.status_code == 200
    else:
        with (
            handler_client(handler) as client,
            client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response,  # type: ignore[arg-type]
        ):
            assert response.http_response.status_code == 200
    span = one_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"
    assert "gen_ai.response.id" not in attributes
    assert span.status.status_code is StatusCode.UNSET


def test_streaming_response_error(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    with (
        pytest.raises(openai.NotFoundError),
        client.chat.completions.with_streaming_response.create(model="fake-error-404", messages=MESSAGES),  # type: ignore[arg-type]
    ):
        pass
    span = one_span(span_exporter, span_counter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "NotFoundError"
