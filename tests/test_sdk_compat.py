"""SDK-version paths: `parse()`/`stream()` at `client.beta.chat.completions` (their only home before openai 1.92,
still there in 3.x), so the chat helpers are covered on every SDK line of the compatibility matrix (noxfile.py)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pydantic
from opentelemetry.trace import StatusCode

from conftest import HTTP, SpanCounter, handler_async_client, handler_client
from fake_openai import FakeOpenAI, dispatch

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Rate this joke"}]
ANSWER = {"joke": "A span walks into a bar", "rating": 7}
STREAM_WORDS = 5  # the fake API's default reply: five words, one per delta


class Joke(pydantic.BaseModel):
    joke: str
    rating: int


def json_reply(fake: FakeOpenAI) -> Any:
    """The fake API, with each non-streamed chat choice answering `ANSWER` as JSON (what parse() expects)."""

    def handler(request: Any) -> Any:
        reply = dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        if reply.is_sse:
            return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)
        body = json.loads(reply.body)
        for choice in body.get("choices", []):
            choice["message"]["content"] = json.dumps(ANSWER)
        return HTTP.Response(reply.status, headers=reply.headers, json=body)

    return handler


def one_span(span_exporter: Any, span_counter: SpanCounter) -> dict[str, Any]:
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 1, [span.name for span in spans]
    assert span_counter.started == span_counter.ended == 1
    (span,) = spans
    assert span.name == f"chat {MODEL}"
    assert span.status.status_code is StatusCode.UNSET
    return dict(span.attributes or {})


def test_beta_parse(instrumentor: Any, span_exporter: Any, span_counter: SpanCounter) -> None:
    with handler_client(json_reply(FakeOpenAI())) as client:
        completion = client.beta.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Joke)
    assert completion.choices[0].message.parsed == Joke(**ANSWER)
    attributes = one_span(span_exporter, span_counter)
    assert attributes["openai.api.type"] == "chat_completions"
    assert attributes["gen_ai.output.type"] == "json"
    assert attributes["gen_ai.response.id"] == completion.id
    assert attributes["gen_ai.usage.input_tokens"] == completion.usage.prompt_tokens
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)


async def test_beta_parse_async(instrumentor: Any, span_exporter: Any, span_counter: SpanCounter) -> None:
    async with handler_async_client(json_reply(FakeOpenAI())) as client:
        completion = await client.beta.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Joke)
    assert completion.choices[0].message.parsed == Joke(**ANSWER)
    attributes = one_span(span_exporter, span_counter)
    assert attributes["gen_ai.output.type"] == "json"
    assert attributes["gen_ai.usage.output_tokens"] == completion.usage.completion_tokens


def test_beta_stream_helper_read_to_end(client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter) -> None:
    options = {"include_usage": True}
    with client.beta.chat.completions.stream(model=MODEL, messages=MESSAGES, stream_options=options) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    attributes = one_span(span_exporter, span_counter)
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.response.id"] == final.id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.usage.output_tokens"] == STREAM_WORDS
    assert "openai.response.finish_observed" not in attributes


def test_beta_stream_helper_exited_early(client: openai.OpenAI, span_exporter: Any, span_counter: SpanCounter) -> None:
    with client.beta.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:
        for _ in stream:
            break  # the helper closes the HTTP response itself, never the SDK stream under it
    attributes = one_span(span_exporter, span_counter)
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"


async def test_beta_stream_helper_async(
    async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    async with async_client.beta.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    attributes = one_span(span_exporter, span_counter)
    assert attributes["gen_ai.response.id"] == final.id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)


async def test_beta_stream_helper_async_exited_early(
    async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: SpanCounter
) -> None:
    async with async_client.beta.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:
        async for _ in stream:
            break
    attributes = one_span(span_exporter, span_counter)
    assert attributes["openai.response.end_reason"] == "closed"
