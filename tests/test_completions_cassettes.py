"""Replays of every recorded legacy Completions cassette, plus request parameters with the fake API.

The replay engine (decoding, expected values from the recorded bodies, span checks) is the one in
test_chat_cassettes.py. Legacy completions are `text_completion {model}` spans with no `openai.api.type`.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from opentelemetry.trace import StatusCode

from test_chat_cassettes import (  # noqa: F401 - the fixture keeps gc.collect() cheap
    Case,
    check_spans,
    covered_files,
    expand,
    expected_completion,
    freeze_before_test,
    load,
    run_case,
)

COMPLETION_CASES = [
    Case("test_completions/test_completion", variants=True),
    Case("test_completions/test_async_completion", is_async=True, variants=True),
    Case("test_completions/test_completion_context_propagation", variants=True),
    Case("test_completions/test_async_completion_context_propagation", is_async=True, variants=True),
    Case("test_completions/test_completion_streaming", variants=True),
    Case("test_completions/test_async_completion_streaming", is_async=True, variants=True),
    Case("test_completions/test_completion_langchain_style", variants=True),
    Case("test_completions/test_completion_with_messages_attributes"),
]


def test_every_completions_cassette_is_replayed() -> None:
    on_disk, listed = covered_files(("test_completions",), [COMPLETION_CASES])
    if not on_disk:
        pytest.skip("recorded cassettes not available")
    assert on_disk == listed
    assert len(listed) == 22


@pytest.mark.parametrize(("case", "path"), expand(COMPLETION_CASES))
async def test_completions_cassette(
    case: Case, path: str, instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    interactions, results = await run_case(path, case, "text_completion")
    spans = check_spans(span_exporter, span_counter, interactions, "text_completion", expected_completion)
    for span, interaction, result in zip(spans, interactions, results, strict=True):
        attributes = span.attributes or {}
        assert "openai.api.type" not in attributes
        if interaction.streamed:
            assert [chunk.id for chunk in result] == [chunk["id"] for chunk in interaction.chunks or []]
        else:
            assert result.id == attributes["gen_ai.response.id"]


PINNED = [
    (
        "test_completions/test_completion.yaml",
        1,
        {
            "gen_ai.response.id": "cmpl-DPTCqSW5oGE1IAOmuxDfCvEbIdboc",
            "gen_ai.response.model": "davinci:2023-07-21-v2",
            "gen_ai.usage.input_tokens": 8,
            "gen_ai.usage.output_tokens": 16,
            "gen_ai.response.finish_reasons": ("length",),
        },
    ),
    (
        "test_completions/test_completion_streaming.yaml",
        0,
        {
            "gen_ai.response.id": "cmpl-7UR4UcvmeD79Xva3UxkKkL2es6b5W",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.request.stream": True,
            "server.address": "localhost",
            "server.port": 5002,
        },
    ),
    (
        "test_completions/test_completion_langchain_style_with_events_with_no_content.yaml",
        2,
        {
            "gen_ai.response.id": "cmpl-DPTNtIPQ2UbBiWeMzcJQILHZ0hlq1",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.output_tokens": 9,
        },
    ),
    (
        "test_completions/test_async_completion_context_propagation.yaml",
        0,
        {
            "gen_ai.response.id": "cmpl-4acc6171f6c34008af07ca8490da3b95",
            "gen_ai.response.model": "meta-llama/Llama-3.2-1B-Instruct",
            "server.port": 8000,
            "gen_ai.usage.input_tokens": 9,
        },
    ),
]


@pytest.mark.parametrize(("path", "index", "pinned"), PINNED, ids=[f"{p[0]}#{p[1]}" for p in PINNED])
async def test_completions_cassette_pinned_values(
    path: str, index: int, pinned: dict[str, Any], instrumentor: Any, span_exporter: Any
) -> None:
    cases = {file: case for case in COMPLETION_CASES for file in case.files()}
    await run_case(path, cases[path], "text_completion")
    span = span_exporter.get_finished_spans()[index]
    assert span.name == "text_completion " + load(path)[index].request["model"]
    attributes = span.attributes or {}
    for key, value in pinned.items():
        assert attributes.get(key) == value, key
    for key in ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.reasoning.output_tokens"):
        assert key not in attributes  # not recorded for legacy completions


# ---- request parameters and results with the fake API ----


def test_completion_request_parameters(client: openai.OpenAI, span_exporter: Any) -> None:
    result = client.completions.create(
        model="gpt-3.5-turbo-instruct",
        prompt="Tell me a joke",
        temperature=0.25,
        top_p=0.5,
        max_tokens=3,
        n=2,
        seed=42,
        stop=["\n", "END"],
        frequency_penalty=0.5,
        presence_penalty=-0.5,
    )
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "text_completion gpt-3.5-turbo-instruct"
    attributes = span.attributes or {}
    assert attributes["gen_ai.operation.name"] == "text_completion"
    assert attributes["gen_ai.request.temperature"] == 0.25
    assert attributes["gen_ai.request.top_p"] == 0.5
    assert attributes["gen_ai.request.max_tokens"] == 3
    assert attributes["gen_ai.request.choice.count"] == 2
    assert attributes["gen_ai.request.seed"] == 42
    assert attributes["gen_ai.request.stop_sequences"] == ("\n", "END")
    assert attributes["gen_ai.request.frequency_penalty"] == 0.5
    assert attributes["gen_ai.request.presence_penalty"] == -0.5
    # max_tokens=3 cuts the 5-word reply of each of the two choices
    assert attributes["gen_ai.response.finish_reasons"] == ("length", "length")
    assert attributes["gen_ai.response.id"] == result.id
    assert attributes["gen_ai.response.model"] == "gpt-3.5-turbo-instruct"
    assert attributes["gen_ai.usage.input_tokens"] == 7  # 4 words + 3 framing tokens
    assert attributes["gen_ai.usage.output_tokens"] == 6  # 3 words in each of 2 choices


async def test_completion_stream_async(async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any) -> None:
    stream = await async_client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say hi", stream=True)
    chunks = [chunk async for chunk in stream]
    assert len(chunks) == 6  # five words, then the finish
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 1
    attributes = span.attributes or {}
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.response.id"] == chunks[0].id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "openai.response.finish_observed" not in attributes
    assert "gen_ai.usage.input_tokens" not in attributes  # legacy streams carry no usage


def test_completion_stream_closed_early(client: openai.OpenAI, span_exporter: Any) -> None:
    stream = client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say hi", stream=True)
    first = next(iter(stream))
    stream.close()
    (span,) = span_exporter.get_finished_spans()
    attributes = span.attributes or {}
    assert attributes["gen_ai.response.id"] == first.id
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"


def test_completion_api_error(client: openai.OpenAI, span_exporter: Any) -> None:
    with pytest.raises(openai.RateLimitError):
        client.completions.create(model="fake-error-429", prompt="Say hi")
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "text_completion fake-error-429"
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "RateLimitError"
