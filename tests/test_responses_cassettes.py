"""Replays of real Responses API traffic: every span attribute equals what the recorded bodies say.

Each cassette in `test_responses/` holds the same request recorded twice (two real responses), so most
tests call twice and check both spans. The expected values below are literals read from the (gzip-decoded)
recorded response bodies; nothing here derives them from the instrumentation's own code.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from conftest import cassette, metric_points, recorded_async_client, recorded_client, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

pytestmark = pytest.mark.usefixtures("instrumentor")

CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
)

# What every replayed span carries: the real API host, the Responses flavour of `chat`.
COMMON = {
    "gen_ai.operation.name": "chat",
    "openai.api.type": "responses",
    "gen_ai.provider.name": "openai",
    "server.address": "api.openai.com",
    "server.port": 443,
}


class Person(BaseModel):
    name: str
    age: int


def usage(input_tokens: int, output_tokens: int, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.usage.cache_read.input_tokens": cached,
        "gen_ai.usage.reasoning.output_tokens": reasoning,
    }


def completed(response_id: str, model: str, tier: str = "default") -> dict[str, Any]:
    return {
        "gen_ai.response.id": response_id,
        "gen_ai.response.model": model,
        "gen_ai.response.finish_reasons": ("stop",),
        "openai.response.status": "completed",
        "openai.response.service_tier": tier,
    }


def assert_span(span: ReadableSpan, name: str, expected: dict[str, Any], *, stream: bool) -> None:
    assert span.name == name
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    for key, value in {**COMMON, **expected}.items():
        assert attributes.get(key) == value, f"{key}: {attributes.get(key)!r} != {value!r}"
    if stream:
        assert attributes["gen_ai.request.stream"] is True
    else:
        assert "gen_ai.request.stream" not in attributes
    # no content by default, and a finished response is never marked unobserved
    for key in (*CONTENT_KEYS, "openai.response.finish_observed", "error.type"):
        assert key not in attributes, key


def finished(exporter: InMemorySpanExporter, count: int) -> list[ReadableSpan]:
    spans = list(exporter.get_finished_spans())
    assert len(spans) == count, [span.name for span in spans]
    return spans


def assert_pending_empty(instrumentor: OpenAIInstrumentor) -> None:
    registry = instrumentor.response_registry
    assert registry is not None
    assert registry.sizes()[0] == 0


# ---- plain create -------------------------------------------------------------------------------------------


def test_create_records_recorded_ids_model_usage_and_tier(
    span_exporter: InMemorySpanExporter, instrumentor: OpenAIInstrumentor
) -> None:
    with cassette("test_responses/test_responses.yaml"), recorded_client() as client:
        first = client.responses.create(model="gpt-4.1-nano", input="What is the capital of France?")
        second = client.responses.create(model="gpt-4.1-nano", input="What is the capital of France?")
    assert first.id == "resp_685ff88d1f7c8199980b00a1f8b7467b05baa2d6acc60d4f"
    assert second.id == "resp_0827ae5b7debffd10069cbcbd8749c819bb7f7bcf278d05379"
    spans = finished(span_exporter, 2)
    base = {"gen_ai.request.model": "gpt-4.1-nano", **usage(14, 8)}
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        {**base, **completed("resp_685ff88d1f7c8199980b00a1f8b7467b05baa2d6acc60d4f", "gpt-4.1-nano-2025-04-14")},
        stream=False,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        {**base, **completed("resp_0827ae5b7debffd10069cbcbd8749c819bb7f7bcf278d05379", "gpt-4.1-nano-2025-04-14")},
        stream=False,
    )
    # not requested: no request params invented from the response's echoed defaults (temperature 1.0, top_p 1.0)
    for key in ("gen_ai.request.temperature", "gen_ai.request.top_p", "gen_ai.request.max_tokens"):
        assert key not in spans[0].attributes, key
    assert_pending_empty(instrumentor)


def test_create_token_usage_metric_equals_recorded_usage(metric_reader: InMemoryMetricReader) -> None:
    with cassette("test_responses/test_responses.yaml"), recorded_client() as client:
        client.responses.create(model="gpt-4.1-nano", input="What is the capital of France?")
    points = metric_points(metric_reader, "gen_ai.client.token.usage")
    by_type = {point.attributes["gen_ai.token.type"]: point for point in points}
    assert set(by_type) == {"input", "output"}
    assert (by_type["input"].count, by_type["input"].sum) == (1, 14)
    assert (by_type["output"].count, by_type["output"].sum) == (1, 8)
    assert by_type["input"].attributes["gen_ai.response.model"] == "gpt-4.1-nano-2025-04-14"
    durations = metric_points(metric_reader, "gen_ai.client.operation.duration")
    assert [point.count for point in durations] == [1]


def test_create_records_request_params_temperature_top_p_max_output_tokens(
    span_exporter: InMemorySpanExporter,
) -> None:
    with cassette("test_responses/test_responses_with_request_params.yaml"), recorded_client() as client:
        for _ in range(2):
            client.responses.create(
                model="gpt-4.1-nano",
                input="What is the capital of France?",
                temperature=0.7,
                top_p=0.9,
                max_output_tokens=100,
            )
    spans = finished(span_exporter, 2)
    params = {
        "gen_ai.request.model": "gpt-4.1-nano",
        "gen_ai.request.temperature": 0.7,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.max_tokens": 100,
        **usage(14, 8),
    }
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        {**params, **completed("resp_0577de0baba8022e006925d77e95c081958f98cf64d2be436d", "gpt-4.1-nano-2025-04-14")},
        stream=False,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        {**params, **completed("resp_0614aadb3993fce40069cbcbda257c8196b4e4a25ad81023e9", "gpt-4.1-nano-2025-04-14")},
        stream=False,
    )


@requires_openai("1.109", "responses.create(service_tier=)")
def test_create_records_requested_and_served_service_tier(span_exporter: InMemorySpanExporter) -> None:
    with cassette("test_responses/test_responses_with_service_tier.yaml"), recorded_client() as client:
        for _ in range(2):
            client.responses.create(model="gpt-5", input="Say hello", service_tier="priority")
    spans = finished(span_exporter, 2)
    request = {"gen_ai.request.model": "gpt-5", "openai.request.service_tier": "priority"}
    assert_span(
        spans[0],
        "chat gpt-5",
        {
            **request,
            **usage(8, 15),
            **completed("resp_047a2204a6021f5700692322b28f5c8196981c8c33b21bce35", "gpt-5-2025-08-07", "priority"),
        },
        stream=False,
    )
    assert_span(
        spans[1],
        "chat gpt-5",
        {
            **request,
            **usage(8, 70),
            **completed("resp_00e0423681ad9f970069cbcbdb9178819080acc143835cb0e0", "gpt-5-2025-08-07", "priority"),
        },
        stream=False,
    )


def test_create_records_reasoning_tokens(span_exporter: InMemorySpanExporter) -> None:
    with cassette("test_responses/test_responses_reasoning.yaml"), recorded_client() as client:
        for _ in range(2):
            client.responses.create(
                model="gpt-5-nano", input="Count r's in strawberry", reasoning={"effort": "low", "summary": None}
            )
    spans = finished(span_exporter, 2)
    assert_span(
        spans[0],
        "chat gpt-5-nano",
        {
            "gen_ai.request.model": "gpt-5-nano",
            **usage(11, 327, reasoning=320),
            **completed("resp_68a4627a67d08197b48766a2208844fe0da1a7bf2012633f", "gpt-5-nano-2025-08-07"),
        },
        stream=False,
    )
    assert_span(
        spans[1],
        "chat gpt-5-nano",
        {
            "gen_ai.request.model": "gpt-5-nano",
            **usage(11, 131, reasoning=64),
            **completed("resp_01f7ba91862c63a00069cbcbe348a48190a5460340c4f07e8a", "gpt-5-nano-2025-08-07"),
        },
        stream=False,
    )


# ---- parse (structured output) ------------------------------------------------------------------------------


def test_parse_with_text_format_records_json_output_and_usage(
    span_exporter: InMemorySpanExporter, instrumentor: OpenAIInstrumentor
) -> None:
    with cassette("test_responses/test_responses_parse.yaml"), recorded_client() as client:
        parsed = client.responses.parse(
            model="gpt-4.1-nano", input="Extract: Alice is 30 years old.", text_format=Person
        )
    assert parsed.output_parsed == Person(name="Alice", age=30)  # the SDK's result is untouched
    (span,) = finished(span_exporter, 1)
    assert_span(
        span,
        "chat gpt-4.1-nano",
        {
            "gen_ai.request.model": "gpt-4.1-nano",
            "gen_ai.output.type": "json",
            **usage(57, 10),
            **completed("resp_02f386d5a19c47c9006a184bde9ae08190ac00681814c21cb4", "gpt-4.1-nano-2025-04-14"),
        },
        stream=False,
    )
    assert_pending_empty(instrumentor)


async def test_parse_async_with_text_format_records_json_output_and_usage(
    span_exporter: InMemorySpanExporter,
) -> None:
    with cassette("test_responses/test_responses_parse_async.yaml"):
        async with recorded_async_client() as client:
            parsed = await client.responses.parse(
                model="gpt-4.1-nano", input="Extract: Bob is 42 years old.", text_format=Person
            )
    assert parsed.output_parsed == Person(name="Bob", age=42)
    (span,) = finished(span_exporter, 1)
    assert_span(
        span,
        "chat gpt-4.1-nano",
        {
            "gen_ai.request.model": "gpt-4.1-nano",
            "gen_ai.output.type": "json",
            **usage(57, 10),
            **completed("resp_02f32d15ecf9415a006a184be0aa6c819c9ba4399a74cbbefa", "gpt-4.1-nano-2025-04-14"),
        },
        stream=False,
    )


# ---- streaming ----------------------------------------------------------------------------------------------

STORY = "Tell me a three sentence bedtime story about a unicorn."
COUNT_TO_5 = "Count to 5"


def story_span(response_id: str, output_tokens: int) -> dict[str, Any]:
    # the stream's response.created says service tier "auto"; the terminal event's "default" wins
    return {
        "gen_ai.request.model": "gpt-4.1-nano",
        **usage(18, output_tokens),
        **completed(response_id, "gpt-4.1-nano-2025-04-14"),
    }


def test_stream_sync_records_terminal_event_usage(
    span_exporter: InMemorySpanExporter, metric_reader: InMemoryMetricReader, instrumentor: OpenAIInstrumentor
) -> None:
    event_types: list[str] = []
    with cassette("test_responses/test_responses_streaming.yaml"), recorded_client() as client:
        for _ in range(2):
            stream = client.responses.create(model="gpt-4.1-nano", input=STORY, stream=True)
            event_types.extend(event.type for event in stream)
    assert len(event_types) == 86 + 87  # every recorded event reaches the caller
    spans = finished(span_exporter, 2)
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        story_span("resp_0fef0f8a68937870006911e9ecf124819491634b434678464a", 79),
        stream=True,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        story_span("resp_0a5e72c4d8eb43c50069cbcbf7fa78819b82d7e42163ef3bd0", 80),
        stream=True,
    )
    assert [p.count for p in metric_points(metric_reader, "gen_ai.client.operation.time_to_first_chunk")] == [2]
    assert_pending_empty(instrumentor)


async def test_stream_async_records_terminal_event_usage(span_exporter: InMemorySpanExporter) -> None:
    count = 0
    with cassette("test_responses/test_responses_streaming_async.yaml"):
        async with recorded_async_client() as client:
            for _ in range(2):
                stream = await client.responses.create(model="gpt-4.1-nano", input=STORY, stream=True)
                async for _event in stream:
                    count += 1
    assert count == 84 + 82
    spans = finished(span_exporter, 2)
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        story_span("resp_06d9044b13184730006911ea372f048190aabddea38a3fc299", 77),
        stream=True,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        story_span("resp_0787b6200b29f4ba0069cbcbf9a5388190888b110c89bcda79", 75),
        stream=True,
    )


def count_to_5_span(response_id: str) -> dict[str, Any]:
    return {
        "gen_ai.request.model": "gpt-4.1-nano",
        **usage(11, 15),
        **completed(response_id, "gpt-4.1-nano-2025-04-14"),
    }


def test_stream_with_context_manager_and_stream_helper(
    span_exporter: InMemorySpanExporter, instrumentor: OpenAIInstrumentor
) -> None:
    with cassette("test_responses/test_responses_streaming_with_context_manager.yaml"), recorded_client() as client:
        with client.responses.create(model="gpt-4.1-nano", input=COUNT_TO_5, stream=True) as stream:
            for _event in stream:
                pass
        # the second recorded interaction through the SDK's `responses.stream()` helper
        with client.responses.stream(model="gpt-4.1-nano", input=COUNT_TO_5) as helper:
            for _event in helper:
                pass
            final = helper.get_final_response()
    assert final.id == "resp_052629b61ddfc94e0069cbcbfd7e888195a733a0c5059bb247"
    spans = finished(span_exporter, 2)
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        count_to_5_span("resp_0786f8f250c4d4490069120b29c9fc8190b5baaafc87431406"),
        stream=True,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        count_to_5_span("resp_052629b61ddfc94e0069cbcbfd7e888195a733a0c5059bb247"),
        stream=True,
    )
    assert_pending_empty(instrumentor)


async def test_stream_async_with_context_manager_and_stream_helper(span_exporter: InMemorySpanExporter) -> None:
    with cassette("test_responses/test_responses_streaming_async_with_context_manager.yaml"):
        async with recorded_async_client() as client:
            async with await client.responses.create(model="gpt-4.1-nano", input=COUNT_TO_5, stream=True) as stream:
                async for _event in stream:
                    pass
            async with client.responses.stream(model="gpt-4.1-nano", input=COUNT_TO_5) as helper:
                async for _event in helper:
                    pass
                final = await helper.get_final_response()
    assert final.id == "resp_0450988f80999fee0069cbcbfe8ae08197b3c9289393e8b871"
    spans = finished(span_exporter, 2)
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        count_to_5_span("resp_06bbedfc9588dfa50069120b6638f88195ac87ed4b1b0c5a5d"),
        stream=True,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        count_to_5_span("resp_0450988f80999fee0069cbcbfe8ae08197b3c9289393e8b871"),
        stream=True,
    )


def count_to_3_span(response_id: str, output_tokens: int) -> dict[str, Any]:
    return {
        "gen_ai.request.model": "gpt-4o",
        **usage(11, output_tokens),
        **completed(response_id, "gpt-4o-2024-08-06"),
    }


def assert_child_of(span: ReadableSpan, parent: ReadableSpan) -> None:
    assert span.parent is not None
    assert span.parent.span_id == parent.context.span_id
    assert span.context.trace_id == parent.context.trace_id


def test_stream_with_parent_span_is_its_child(
    span_exporter: InMemorySpanExporter, tracer_provider: TracerProvider
) -> None:
    tracer = tracer_provider.get_tracer("test")
    with cassette("test_responses/test_responses_streaming_with_parent_span.yaml"), recorded_client() as client:
        for _ in range(2):
            with tracer.start_as_current_span("parent"):
                for _event in client.responses.create(model="gpt-4o", input="Count to 3", stream=True):
                    pass
    spans = finished(span_exporter, 4)
    chat = [span for span in spans if span.name == "chat gpt-4o"]
    parents = [span for span in spans if span.name == "parent"]
    assert len(chat) == len(parents) == 2
    assert_span(
        chat[0],
        "chat gpt-4o",
        count_to_3_span("resp_0ffe4aaa25a8f1360069274580b4888195ae91e8f419909c18", 12),
        stream=True,
    )
    assert_span(
        chat[1],
        "chat gpt-4o",
        count_to_3_span("resp_03a5977b23f32a460069cbcbff7984819ab119c7789db4068e", 9),
        stream=True,
    )
    assert_child_of(chat[0], parents[0])
    assert_child_of(chat[1], parents[1])
    assert parents[0].parent is None


async def test_stream_async_with_parent_span_is_its_child(
    span_exporter: InMemorySpanExporter, tracer_provider: TracerProvider
) -> None:
    tracer = tracer_provider.get_tracer("test")
    with cassette("test_responses/test_responses_streaming_async_with_parent_span.yaml"):
        async with recorded_async_client() as client:
            for _ in range(2):
                with tracer.start_as_current_span("parent"):
                    stream = await client.responses.create(model="gpt-4o", input="Count to 3", stream=True)
                    async for _event in stream:
                        pass
    spans = finished(span_exporter, 4)
    chat = [span for span in spans if span.name == "chat gpt-4o"]
    parents = [span for span in spans if span.name == "parent"]
    assert len(chat) == len(parents) == 2
    assert_span(
        chat[0],
        "chat gpt-4o",
        count_to_3_span("resp_0833439a21e2e07f00692744f7343c8194a974c6475b934753", 8),
        stream=True,
    )
    assert_span(
        chat[1],
        "chat gpt-4o",
        count_to_3_span("resp_06bbd986dac640660069cbcc00db18819aacdafa2a1172068f", 8),
        stream=True,
    )
    assert_child_of(chat[0], parents[0])
    assert_child_of(chat[1], parents[1])


def test_stream_records_no_content_by_default(span_exporter: InMemorySpanExporter) -> None:
    text = ""
    with cassette("test_responses/test_responses_streaming_with_content.yaml"), recorded_client() as client:
        for _ in range(2):
            for event in client.responses.create(model="gpt-4.1-nano", input="What is 2+2?", stream=True):
                if event.type == "response.output_text.delta":
                    text += event.delta
    assert text  # the recorded answer reached the caller ...
    spans = finished(span_exporter, 2)
    expected = {"gen_ai.request.model": "gpt-4.1-nano", **usage(14, 9)}
    assert_span(
        spans[0],
        "chat gpt-4.1-nano",
        {**expected, **completed("resp_087a1bffb8180cc4006912065042e08196a1a6445d62480120", "gpt-4.1-nano-2025-04-14")},
        stream=True,
    )
    assert_span(
        spans[1],
        "chat gpt-4.1-nano",
        {**expected, **completed("resp_0e054c0b7ea15b350069cbcbfbc338819898e8a9ab6185e5d3", "gpt-4.1-nano-2025-04-14")},
        stream=True,
    )
    for span in spans:  # ... but none of it, nor the prompt, is on the span or its events
        values = [str(value) for value in (span.attributes or {}).values()]
        assert not any("2+2" in value for value in values)
        assert not any("2+2" in str(dict(event.attributes or {})) for event in span.events)
        assert not any(text[:20] in value for value in values)
