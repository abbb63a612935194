"""Replays of every recorded Embeddings cassette (OpenAI, vLLM, Azure, with_raw_response, metrics), plus
request parameters with the fake API. The replay engine is the one in test_chat_cassettes.py.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from opentelemetry.trace import StatusCode

from conftest import metric_points
from test_chat_cassettes import (  # noqa: F401 - the fixture keeps gc.collect() cheap
    Case,
    assert_metrics,
    check_spans,
    covered_files,
    expand,
    expected_embeddings,
    freeze_before_test,
    run_case,
)

EMBEDDINGS_CASES = [
    Case("test_embeddings/test_embeddings", variants=True),
    Case("test_embeddings/test_embeddings_context_propagation", variants=True),
    Case("test_embeddings/test_async_embeddings_context_propagation", is_async=True, variants=True),
    Case("test_embeddings/test_embeddings_with_raw_response", variants=True, call="raw"),
    Case("test_embeddings/test_azure_openai_embeddings", variants=True, call="azure"),
]
METRICS_CASE = Case("test_openai_metrics/test_embeddings_metrics")


def test_every_embeddings_cassette_is_replayed() -> None:
    on_disk, listed = covered_files(("test_embeddings",), [EMBEDDINGS_CASES])
    if not on_disk:
        pytest.skip("recorded cassettes not available")
    assert on_disk == listed
    assert len(listed) == 15


@pytest.mark.parametrize(("case", "path"), expand([*EMBEDDINGS_CASES, METRICS_CASE]))
async def test_embeddings_cassette(
    case: Case, path: str, instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    interactions, results = await run_case(path, case, "embeddings")
    spans = check_spans(span_exporter, span_counter, interactions, "embeddings", expected_embeddings)
    for span, interaction, result in zip(spans, interactions, results, strict=True):
        attributes = span.attributes or {}
        assert "openai.api.type" not in attributes
        if interaction.status < 400:
            # the caller still gets floats decoded from the recorded base64
            assert len(result.data[0].embedding) == attributes["gen_ai.embeddings.dimension.count"]


PINNED = [
    (
        "test_embeddings/test_embeddings.yaml",
        2,
        {
            "gen_ai.response.model": "text-embedding-ada-002-v2",
            "gen_ai.usage.input_tokens": 8,
            "gen_ai.embeddings.dimension.count": 1536,
            "gen_ai.provider.name": "openai",
            "server.address": "api.openai.com",
            "server.port": 443,
        },
    ),
    (
        "test_embeddings/test_azure_openai_embeddings.yaml",
        0,
        {
            "gen_ai.request.model": "embedding",
            "gen_ai.response.model": "text-embedding-3-large",
            "gen_ai.embeddings.dimension.count": 3072,
            "gen_ai.provider.name": "azure.ai.openai",
            "server.address": "test-resource.openai.azure.com",
            "server.port": 443,
        },
    ),
    (
        "test_embeddings/test_azure_openai_embeddings.yaml",
        3,
        {"error.type": "AuthenticationError", "gen_ai.provider.name": "azure.ai.openai"},
    ),
    (
        "test_embeddings/test_embeddings_context_propagation.yaml",
        0,
        {
            "gen_ai.request.model": "intfloat/e5-mistral-7b-instruct",
            "gen_ai.usage.input_tokens": 11,
            "server.address": "localhost",
            "server.port": 8000,
        },
    ),
]


@pytest.mark.parametrize(("path", "index", "pinned"), PINNED, ids=[f"{p[0]}#{p[1]}" for p in PINNED])
async def test_embeddings_cassette_pinned_values(
    path: str, index: int, pinned: dict[str, Any], instrumentor: Any, span_exporter: Any
) -> None:
    cases = {file: case for case in EMBEDDINGS_CASES for file in case.files()}
    await run_case(path, cases[path], "embeddings")
    span = span_exporter.get_finished_spans()[index]
    attributes = span.attributes or {}
    for key, value in pinned.items():
        assert attributes.get(key) == value, key
    if "error.type" in pinned:
        assert span.status.status_code is StatusCode.ERROR
        assert "gen_ai.response.model" not in attributes


async def test_embeddings_metrics_cassette(instrumentor: Any, metric_reader: Any) -> None:
    interactions, _ = await run_case(METRICS_CASE.files()[0], METRICS_CASE, "embeddings")
    assert_metrics(metric_reader, interactions, "embeddings", expected_embeddings)
    tokens = metric_points(metric_reader, "gen_ai.client.token.usage")
    # 6 calls of 8 input tokens, split by the two response model names the API returned
    assert sorted((point.attributes["gen_ai.response.model"], point.count, point.sum) for point in tokens) == [
        ("text-embedding-ada-002", 2, 16),
        ("text-embedding-ada-002-v2", 4, 32),
    ]
    assert all(point.attributes["gen_ai.token.type"] == "input" for point in tokens)
    assert metric_points(metric_reader, "gen_ai.client.operation.time_to_first_chunk") == []


# ---- request parameters with the fake API ----


def test_embeddings_request_parameters(client: openai.OpenAI, span_exporter: Any) -> None:
    result = client.embeddings.create(model="text-embedding-3-small", input=["one two", "three"], dimensions=256)
    assert len(result.data[0].embedding) == 256
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "embeddings text-embedding-3-small"
    attributes = span.attributes or {}
    assert attributes["gen_ai.operation.name"] == "embeddings"
    assert attributes["gen_ai.request.model"] == "text-embedding-3-small"
    assert attributes["gen_ai.request.encoding_formats"] == ("base64",)  # what the SDK sends by default
    assert attributes["gen_ai.embeddings.dimension.count"] == 256
    assert attributes["gen_ai.response.model"] == "text-embedding-3-small"
    assert attributes["gen_ai.usage.input_tokens"] == 3
    assert "gen_ai.usage.output_tokens" not in attributes
    assert "gen_ai.response.finish_reasons" not in attributes


@pytest.mark.parametrize(("encoding", "dimension_count"), [("float", 1536), ("base64", None)])
def test_embeddings_encoding_format(
    encoding: str, dimension_count: int | None, client: openai.OpenAI, span_exporter: Any
) -> None:
    client.embeddings.create(model="text-embedding-3-small", input="hello", encoding_format=encoding)  # type: ignore[arg-type]
    attributes = span_exporter.get_finished_spans()[0].attributes or {}
    assert attributes["gen_ai.request.encoding_formats"] == (encoding,)
    # a base64 string the caller asked for is not decoded, so it has no countable dimension
    assert attributes.get("gen_ai.embeddings.dimension.count") == dimension_count


async def test_embeddings_async_raw_and_streaming_response(
    async_client: openai.AsyncOpenAI, span_exporter: Any, span_counter: Any
) -> None:
    raw = await async_client.embeddings.with_raw_response.create(model="text-embedding-3-small", input="hi")
    assert len(span_exporter.get_finished_spans()) == 1  # the raw response ends its span on return
    assert len(raw.parse().data) == 1
    async with async_client.embeddings.with_streaming_response.create(
        model="text-embedding-3-small", input="hi"
    ) as response:
        assert len(span_exporter.get_finished_spans()) == 1  # body not read yet: span still open
        parsed = await response.parse()
    assert len(parsed.data[0].embedding) == 1536
    first, second = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 2
    for span in (first, second):
        attributes = span.attributes or {}
        assert attributes["gen_ai.embeddings.dimension.count"] == 1536
        assert attributes["gen_ai.usage.input_tokens"] == 1


def test_embeddings_api_error(client: openai.OpenAI, span_exporter: Any) -> None:
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="fake-error-500", input="hi")
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "embeddings fake-error-500"
    assert span.status.status_code is StatusCode.ERROR
    attributes = span.attributes or {}
    assert attributes["error.type"] == "InternalServerError"
    assert "gen_ai.response.model" not in attributes
