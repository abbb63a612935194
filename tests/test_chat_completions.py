"""Chat Completions with the fake API: request parameters, results, choices, tools, usage details, errors."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from conftest import HTTP, handler_client, metric_points
from test_chat_cassettes import freeze_before_test  # noqa: F401 - keeps gc.collect() cheap

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]


def only_span(span_exporter: Any, span_counter: Any) -> Any:
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 1
    assert span_counter.started == span_counter.ended == 1
    return spans[0]


def test_chat_result_attributes(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    result = client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    span = only_span(span_exporter, span_counter)
    assert span.name == "chat gpt-4o-mini"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "openai.api.type": "chat_completions",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.provider.name": "openai",
        "server.address": "localhost",
        "server.port": 8080,
        "gen_ai.response.id": result.id,
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "openai.response.service_tier": "default",
        "openai.response.system_fingerprint": "fp_fake0000",
        "gen_ai.usage.input_tokens": 7,  # "Be brief. Say hello": 4 words + 3 framing tokens
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.reasoning.output_tokens": 0,
        "gen_ai.response.finish_reasons": ("stop",),
    }
    assert result.id.startswith("chatcmpl-")


def test_chat_request_parameters(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    client.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,  # type: ignore[arg-type]
        temperature=0.2,
        top_p=0.9,
        max_tokens=50,
        n=3,
        seed=1234,
        stop="\n\n",
        frequency_penalty=0.1,
        presence_penalty=0.3,
        service_tier="flex",
    )
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.request.temperature"] == 0.2
    assert attributes["gen_ai.request.top_p"] == 0.9
    assert attributes["gen_ai.request.max_tokens"] == 50
    assert attributes["gen_ai.request.choice.count"] == 3
    assert attributes["gen_ai.request.seed"] == 1234
    assert attributes["gen_ai.request.stop_sequences"] == ("\n\n",)
    assert attributes["gen_ai.request.frequency_penalty"] == 0.1
    assert attributes["gen_ai.request.presence_penalty"] == 0.3
    assert attributes["openai.request.service_tier"] == "flex"
    assert attributes["openai.response.service_tier"] == "flex"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop", "stop", "stop")
    assert attributes["gen_ai.usage.output_tokens"] == 15  # 5 words in each of 3 choices
    assert "gen_ai.request.stream" not in attributes
    assert "gen_ai.output.type" not in attributes


def test_chat_defaults_are_not_recorded(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    """Parameters left out are not invented, and n=1 (the default) is not reported as a choice count."""
    client.chat.completions.create(model=MODEL, messages=MESSAGES, n=1)  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    for key in (
        "gen_ai.request.temperature",
        "gen_ai.request.top_p",
        "gen_ai.request.max_tokens",
        "gen_ai.request.choice.count",
        "gen_ai.request.seed",
        "gen_ai.request.stop_sequences",
        "gen_ai.request.frequency_penalty",
        "gen_ai.request.presence_penalty",
        "openai.request.service_tier",
        "gen_ai.request.stream",
        "gen_ai.output.type",
    ):
        assert key not in attributes, key


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"max_completion_tokens": 3}, 3),
        ({"max_tokens": 4}, 4),
        ({"max_tokens": 4, "max_completion_tokens": 2}, 2),  # the newer parameter wins
    ],
)
def test_chat_max_tokens(
    limits: dict[str, int], expected: int, client: openai.OpenAI, span_exporter: Any, span_counter: Any
) -> None:
    client.chat.completions.create(model=MODEL, messages=MESSAGES, **limits)  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.request.max_tokens"] == expected
    assert attributes["gen_ai.response.finish_reasons"] == ("length",)  # the limit cut the 5-word reply
    assert attributes["gen_ai.usage.output_tokens"] == expected


def test_chat_stop_list(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    client.chat.completions.create(model=MODEL, messages=MESSAGES, stop=["END", "STOP"])  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.request.stop_sequences"] == ("END", "STOP")


SCHEMA = {
    "name": "Answer",
    "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


@pytest.mark.parametrize(
    ("response_format", "output_type"),
    [
        ({"type": "json_object"}, "json"),
        ({"type": "json_schema", "json_schema": SCHEMA}, "json"),
        ({"type": "text"}, "text"),
    ],
    ids=["json_object", "json_schema", "text"],
)
def test_chat_response_format_output_type(
    response_format: dict[str, Any], output_type: str, client: openai.OpenAI, span_exporter: Any, span_counter: Any
) -> None:
    client.chat.completions.create(model=MODEL, messages=MESSAGES, response_format=response_format)  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.output.type"] == output_type


def test_chat_tool_call(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    result = client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=[tool])  # type: ignore[arg-type,list-item]
    assert result.choices[0].message.tool_calls
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["gen_ai.usage.output_tokens"] == 12
    assert "gen_ai.tool.definitions" not in attributes  # content capture is opt-in


def test_chat_reasoning_and_cached_tokens(client: openai.OpenAI, span_exporter: Any, span_counter: Any) -> None:
    client.chat.completions.create(
        model="gpt-5",
        messages=MESSAGES,  # type: ignore[arg-type]
        reasoning_effort="low",
        prompt_cache_key="conversation-1",
    )
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.model"] == "gpt-5-2025-08-07"
    assert attributes["gen_ai.usage.input_tokens"] == 7
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 3  # half the prompt, rounded down
    assert attributes["gen_ai.usage.output_tokens"] == 5 + 16
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 16


def _two_choices(request: Any) -> Any:
    """A completion whose two choices stopped for different reasons."""
    body = {
        "id": "chatcmpl-two",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "a b c"}, "finish_reason": "length"},
            {"index": 1, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"},
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8},
    }
    return HTTP.Response(200, json=body)


def test_chat_finish_reasons_in_choice_order(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with handler_client(_two_choices) as client:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, n=2)  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.finish_reasons"] == ("length", "stop")
    assert attributes["gen_ai.request.choice.count"] == 2
    # usage without details: no cached or reasoning counts are made up
    assert "gen_ai.usage.cache_read.input_tokens" not in attributes
    assert "gen_ai.usage.reasoning.output_tokens" not in attributes
    assert "openai.response.service_tier" not in attributes
    assert "openai.response.system_fingerprint" not in attributes


def _surprising_body(request: Any) -> Any:
    """An OpenAI-compatible server's reply with nulls and no usage."""
    body = {
        "id": "gen-1",
        "object": "chat.completion",
        "created": 1,
        "model": "some-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": None}],
        "usage": None,
        "system_fingerprint": None,
        "service_tier": None,
    }
    return HTTP.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def test_chat_surprising_body_gives_what_is_known(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    with handler_client(_surprising_body) as client:
        result = client.chat.completions.create(model="some-model", messages=MESSAGES)  # type: ignore[arg-type]
    assert result.usage is None
    span = only_span(span_exporter, span_counter)
    attributes = span.attributes or {}
    assert attributes["gen_ai.response.id"] == "gen-1"
    assert attributes["gen_ai.response.model"] == "some-model"
    for key in ("gen_ai.usage.input_tokens", "gen_ai.response.finish_reasons", "openai.response.service_tier"):
        assert key not in attributes
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(400, openai.BadRequestError), (401, openai.AuthenticationError), (429, openai.RateLimitError)],
)
def test_chat_api_error(
    status: int,
    error_class: type[Exception],
    client: openai.OpenAI,
    span_exporter: Any,
    span_counter: Any,
    metric_reader: Any,
) -> None:
    with pytest.raises(error_class) as raised:
        client.chat.completions.create(model=f"fake-error-{status}", messages=MESSAGES)  # type: ignore[arg-type]
    assert raised.value.status_code == status  # type: ignore[attr-defined]
    span = only_span(span_exporter, span_counter)
    assert span.name == f"chat fake-error-{status}"
    assert span.status.status_code is StatusCode.ERROR
    attributes = span.attributes or {}
    assert attributes["error.type"] == error_class.__name__
    assert "gen_ai.response.id" not in attributes
    (duration,) = metric_points(metric_reader, "gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == error_class.__name__
    assert metric_points(metric_reader, "gen_ai.client.token.usage") == []


async def test_async_chat(async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any) -> None:
    result = await async_client.chat.completions.create(model=MODEL, messages=MESSAGES, temperature=0.0)  # type: ignore[arg-type]
    attributes = only_span(span_exporter, span_counter).attributes or {}
    assert attributes["gen_ai.response.id"] == result.id
    assert attributes["gen_ai.request.temperature"] == 0.0
    assert attributes["gen_ai.usage.output_tokens"] == 5


async def test_async_chat_error(async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any) -> None:
    with pytest.raises(openai.InternalServerError):
        await async_client.chat.completions.create(model="fake-error-500", messages=MESSAGES)  # type: ignore[arg-type]
    span = only_span(span_exporter, span_counter)
    assert (span.attributes or {})["error.type"] == "InternalServerError"


def test_chat_token_usage_metrics(client: openai.OpenAI, metric_reader: Any) -> None:
    client.chat.completions.create(model=MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    points = {
        point.attributes["gen_ai.token.type"]: point
        for point in metric_points(metric_reader, "gen_ai.client.token.usage")
    }
    assert (points["input"].count, points["input"].sum) == (1, 7)
    assert (points["output"].count, points["output"].sum) == (1, 5)
    for point in points.values():
        assert point.attributes["gen_ai.operation.name"] == "chat"
        assert point.attributes["gen_ai.request.model"] == MODEL
        assert point.attributes["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
        assert point.attributes["gen_ai.provider.name"] == "openai"
        assert point.attributes["server.address"] == "localhost"
        assert point.attributes["server.port"] == 8080
