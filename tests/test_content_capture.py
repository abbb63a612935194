"""Opt-in content capture end to end: modes from `instrument()`, the constructor and the environment;
the exact JSON span attributes and the structured `gen_ai.client.inference.operation.details` event;
no base64 payload, header or key in anything exported.

The expected messages are written out from the GenAI conventions' message structure and the fake API's
documented replies ("This is a deterministic reply" for five words; one tool call whose arguments name
each required parameter with the value "fake").
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import fake_openai
from conftest import HTTP, SpanCounter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_LENGTH_ENV = "OTEL_INSTRUMENTATION_OPENAI_CONTENT_MAX_LENGTH"
EVENT_NAME = "gen_ai.client.inference.operation.details"
INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
TOOLS = "gen_ai.tool.definitions"
CONTENT_KEYS = (INPUT, OUTPUT, SYSTEM, TOOLS)

REPLY = "This is a deterministic reply"
FAKE_SERVER = {"server.address": "localhost", "server.port": 8080}


# ---- fixtures -------------------------------------------------------------------------------------------------


@pytest.fixture
def log_exporter() -> InMemoryLogRecordExporter:
    return InMemoryLogRecordExporter()


@pytest.fixture
def logger_provider(log_exporter: InMemoryLogRecordExporter) -> LoggerProvider:
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    return provider


@pytest.fixture
def capture() -> Any:
    """The `capture_content` instrument option; None leaves it out. Parametrize to change it."""
    return "span_and_event"


@pytest.fixture
def env_capture() -> str | None:
    """The environment variable's value; None unsets it. Parametrize to change it."""
    return None


@pytest.fixture
def extra_options() -> dict[str, Any]:
    return {}


@pytest.fixture
def instrument_options(
    logger_provider: LoggerProvider,
    capture: Any,
    env_capture: str | None,
    extra_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    # set before the `instrumentor` fixture calls instrument(), which reads the environment
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    monkeypatch.delenv(MAX_LENGTH_ENV, raising=False)
    if env_capture is not None:
        monkeypatch.setenv(CAPTURE_ENV, env_capture)
    options: dict[str, Any] = {"logger_provider": logger_provider, **extra_options}
    if capture is not None:
        options["capture_content"] = capture
    return options


# ---- helpers --------------------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """Log attributes come back with tuples for lists; compare them as JSON would."""
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [span.name for span in spans]
    return spans[0]


def events(exporter: InMemoryLogRecordExporter) -> list[Any]:
    return [record.log_record for record in exporter.get_finished_logs()]


def only_event(exporter: InMemoryLogRecordExporter, span: ReadableSpan) -> dict[str, Any]:
    records = events(exporter)
    assert len(records) == 1, [record.event_name for record in records]
    (record,) = records
    assert record.event_name == EVENT_NAME
    assert record.body is None
    assert record.trace_id == span.context.trace_id
    assert record.span_id == span.context.span_id
    return {key: plain(value) for key, value in (record.attributes or {}).items()}


def content_of(span: ReadableSpan) -> dict[str, str]:
    attributes = span.attributes or {}
    return {key: str(attributes[key]) for key in CONTENT_KEYS if key in attributes}


def exported_text(spans: InMemorySpanExporter, logs: InMemoryLogRecordExporter) -> str:
    """Every exported span attribute, span event attribute, log attribute and log body, as one string."""
    pieces: list[str] = []
    for span in spans.get_finished_spans():
        pieces.append(span.name)
        pieces.extend(f"{key}={value!r}" for key, value in (span.attributes or {}).items())
        if span.status.description:
            pieces.append(span.status.description)
        for event in span.events:
            pieces.append(event.name)
            pieces.extend(f"{key}={value!r}" for key, value in (event.attributes or {}).items())
    for record in events(logs):
        pieces.append(repr(record.event_name))
        pieces.append(repr(record.body))
        pieces.append(json.dumps(plain(dict(record.attributes or {})), default=repr))
        pieces.extend(f"{key}={value!r}" for key, value in (record.attributes or {}).items())
    return "\n".join(pieces)


def as_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def reply_output(content: str = REPLY, finish_reason: str = "stop") -> list[dict[str, Any]]:
    return [{"role": "assistant", "parts": [text(content)], "finish_reason": finish_reason}]


WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city", "unit"],
}
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "description": "Weather by city", "parameters": WEATHER_PARAMETERS}
]
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather by city", "parameters": WEATHER_PARAMETERS},
    }
]
TOOL_DEFINITIONS = [{"type": "function", "name": "get_weather"}]

RESPONSES_INPUT = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
]
RESPONSES_INPUT_MESSAGES = [
    {"role": "user", "parts": [text("What is the weather in Paris?")]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}]},
]
RESPONSES_INPUT_JSON = (
    '[{"role":"user","parts":[{"type":"text","content":"What is the weather in Paris?"}]},'
    '{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}]},'
    '{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"sunny"}]}]'
)
INSTRUCTIONS_JSON = '[{"type":"text","content":"You are terse."}]'
TOOLS_JSON = '[{"type":"function","name":"get_weather"}]'
REPLY_OUTPUT_JSON = (
    '[{"role":"assistant","parts":[{"type":"text","content":"This is a deterministic reply"}],"finish_reason":"stop"}]'
)

CHAT_MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_9", "content": "sunny"},
    {"role": "user", "content": [{"type": "text", "text": "And in Rome?"}]},
]
# system messages of chat are part of the history: they stay in the input, not in gen_ai.system_instructions
CHAT_INPUT_MESSAGES = [
    {"role": "system", "parts": [text("You are terse.")]},
    {"role": "user", "parts": [text("Weather in Paris?")]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_9", "name": "get_weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_9", "response": "sunny"}]},
    {"role": "user", "parts": [text("And in Rome?")]},
]
CHAT_INPUT_JSON = (
    '[{"role":"system","parts":[{"type":"text","content":"You are terse."}]},'
    '{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},'
    '{"role":"assistant","parts":[{"type":"tool_call","id":"call_9","name":"get_weather","arguments":{"city":"Paris"}}]},'
    '{"role":"tool","parts":[{"type":"tool_call_response","id":"call_9","response":"sunny"}]},'
    '{"role":"user","parts":[{"type":"text","content":"And in Rome?"}]}]'
)


def tool_call_output(call_id: str) -> list[dict[str, Any]]:
    call = {"type": "tool_call", "id": call_id, "name": "get_weather", "arguments": {"city": "fake", "unit": "fake"}}
    return [{"role": "assistant", "parts": [call], "finish_reason": "tool_call"}]


def tool_call_output_json(call_id: str) -> str:
    return (
        f'[{{"role":"assistant","parts":[{{"type":"tool_call","id":"{call_id}","name":"get_weather",'
        '"arguments":{"city":"fake","unit":"fake"}}],"finish_reason":"tool_call"}]'
    )


def event_base(
    span: ReadableSpan, request_model: str, response_model: str, finish_reasons: list[str]
) -> dict[str, Any]:
    attributes = span.attributes or {}
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": request_model,
        "gen_ai.response.id": attributes["gen_ai.response.id"],
        "gen_ai.response.model": response_model,
        "gen_ai.response.finish_reasons": finish_reasons,
        **FAKE_SERVER,
    }


# ---- exact JSON on the span and structured values on the event --------------------------------------------------


def test_responses_create_exact_span_json_and_event(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    response = client.responses.create(
        model="gpt-4.1-nano", instructions="You are terse.", input=RESPONSES_INPUT, tools=RESPONSES_TOOLS
    )
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: RESPONSES_INPUT_JSON,
        OUTPUT: REPLY_OUTPUT_JSON,
        SYSTEM: INSTRUCTIONS_JSON,
        TOOLS: TOOLS_JSON,
    }
    assert span.attributes["gen_ai.response.id"] == response.id
    # the same structures as the JSON above, written the other way
    assert json.loads(RESPONSES_INPUT_JSON) == RESPONSES_INPUT_MESSAGES
    assert json.loads(REPLY_OUTPUT_JSON) == reply_output()
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", ["stop"]),
        # "You are terse." + the user text: 9 words + 3
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 5,
        SYSTEM: [text("You are terse.")],
        INPUT: RESPONSES_INPUT_MESSAGES,
        TOOLS: TOOL_DEFINITIONS,
        OUTPUT: reply_output(),
    }


def test_responses_stream_exact_span_json_and_event(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    stream = client.responses.create(
        model="gpt-4.1-nano", input="Tell me a story", stream=True, metadata={"fake_stream_chunks": "8"}
    )
    for _ in stream:
        pass
    story = "This is a deterministic reply from the fake"
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: '[{"role":"user","parts":[{"type":"text","content":"Tell me a story"}]}]',
        OUTPUT: f'[{{"role":"assistant","parts":[{{"type":"text","content":"{story}"}}],"finish_reason":"stop"}}]',
    }
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", ["stop"]),
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 8,
        INPUT: [{"role": "user", "parts": [text("Tell me a story")]}],
        OUTPUT: reply_output(story),
    }


async def test_responses_stream_helper_async(
    async_client: openai.AsyncOpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    async with async_client.responses.stream(model="gpt-4.1-nano", instructions="You are terse.", input="Hi") as s:
        async for _ in s:
            pass
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: '[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]',
        SYSTEM: INSTRUCTIONS_JSON,
        OUTPUT: REPLY_OUTPUT_JSON,
    }
    event = only_event(log_exporter, span)
    assert (event[SYSTEM], event[INPUT], event[OUTPUT]) == (
        [text("You are terse.")],
        [{"role": "user", "parts": [text("Hi")]}],
        reply_output(),
    )


def test_background_response_keeps_input_from_create_on_the_final_span(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    response = client.responses.create(
        model="gpt-4.1-nano",
        instructions="You are terse.",
        input=RESPONSES_INPUT,
        tools=RESPONSES_TOOLS,
        background=True,
    )
    assert response.status == "queued"
    assert span_exporter.get_finished_spans() == ()
    assert events(log_exporter) == []
    polls = 0
    while response.status in ("queued", "in_progress"):
        response = client.responses.retrieve(response.id)  # the polls carry no content of their own
        polls += 1
        if response.status == "in_progress":
            assert events(log_exporter) == []  # no event before the response finishes
    assert polls == 2
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: RESPONSES_INPUT_JSON,
        OUTPUT: REPLY_OUTPUT_JSON,
        SYSTEM: INSTRUCTIONS_JSON,
        TOOLS: TOOLS_JSON,
    }
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", ["stop"]),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 5,
        SYSTEM: [text("You are terse.")],
        INPUT: RESPONSES_INPUT_MESSAGES,
        TOOLS: TOOL_DEFINITIONS,
        OUTPUT: reply_output(),
    }
    client.responses.retrieve(response.id)  # finished: no second span, no second event
    assert len(span_exporter.get_finished_spans()) == 1
    assert len(events(log_exporter)) == 1


async def test_background_response_polled_async(
    async_client: openai.AsyncOpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    response = await async_client.responses.create(model="gpt-4.1-nano", input="Hello there", background=True)
    while response.status in ("queued", "in_progress"):
        response = await async_client.responses.retrieve(response.id)
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: '[{"role":"user","parts":[{"type":"text","content":"Hello there"}]}]',
        OUTPUT: REPLY_OUTPUT_JSON,
    }
    assert only_event(log_exporter, span)[INPUT] == [{"role": "user", "parts": [text("Hello there")]}]


def test_chat_create_exact_span_json_and_event(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    completion = client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, tools=CHAT_TOOLS)
    call_id = completion.choices[0].message.tool_calls[0].id
    span = only_span(span_exporter)
    assert content_of(span) == {INPUT: CHAT_INPUT_JSON, OUTPUT: tool_call_output_json(call_id), TOOLS: TOOLS_JSON}
    assert json.loads(CHAT_INPUT_JSON) == CHAT_INPUT_MESSAGES
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4o-mini", "gpt-4o-mini-2024-07-18", ["tool_calls"]),
        # "You are terse." "Weather in Paris?" "sunny" "And in Rome?": 10 words + 3
        "gen_ai.usage.input_tokens": 13,
        "gen_ai.usage.output_tokens": 12,
        INPUT: CHAT_INPUT_MESSAGES,
        TOOLS: TOOL_DEFINITIONS,
        OUTPUT: tool_call_output(call_id),
    }


def test_chat_stream_assembles_tool_calls_from_deltas(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    chunks = list(
        client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, tools=CHAT_TOOLS, stream=True)
    )
    deltas = [call for chunk in chunks for choice in chunk.choices for call in choice.delta.tool_calls or ()]
    assert len(deltas) == 5  # the opening delta (id, name) and four argument pieces
    call_id = deltas[0].id
    assert call_id and all(delta.id is None for delta in deltas[1:])
    span = only_span(span_exporter)
    assert content_of(span) == {INPUT: CHAT_INPUT_JSON, OUTPUT: tool_call_output_json(call_id), TOOLS: TOOLS_JSON}
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4o-mini", "gpt-4o-mini-2024-07-18", ["tool_calls"]),
        INPUT: CHAT_INPUT_MESSAGES,
        TOOLS: TOOL_DEFINITIONS,
        OUTPUT: tool_call_output(call_id),
    }


async def test_chat_stream_text_async_with_usage(
    async_client: openai.AsyncOpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    stream = await async_client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Hello"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for _ in stream:
        pass
    span = only_span(span_exporter)
    assert content_of(span) == {
        INPUT: '[{"role":"user","parts":[{"type":"text","content":"Hello"}]}]',
        OUTPUT: REPLY_OUTPUT_JSON,
    }
    assert only_event(log_exporter, span) == {
        **event_base(span, "gpt-4o-mini", "gpt-4o-mini-2024-07-18", ["stop"]),
        "gen_ai.usage.input_tokens": 4,
        "gen_ai.usage.output_tokens": 5,
        INPUT: [{"role": "user", "parts": [text("Hello")]}],
        OUTPUT: reply_output(),
    }


def test_failed_call_event_has_input_and_error_type(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="fake-error-429", messages=[{"role": "user", "content": "Hello"}])
    span = only_span(span_exporter)
    assert content_of(span) == {INPUT: '[{"role":"user","parts":[{"type":"text","content":"Hello"}]}]'}
    assert only_event(log_exporter, span) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "fake-error-429",
        **FAKE_SERVER,
        "error.type": "RateLimitError",
        INPUT: [{"role": "user", "parts": [text("Hello")]}],
    }


# ---- modes ----------------------------------------------------------------------------------------------------

# (value, on span, as event)
MODES = [
    ("no_content", False, False),
    ("span_only", True, False),
    ("event_only", False, True),
    ("span_and_event", True, True),
    ("true", True, False),
    ("false", False, False),
    ("SPAN_AND_EVENT", True, True),
    ("bogus", False, False),
]


def run_calls(client: openai.OpenAI) -> None:
    """A Responses create and stream, a chat create and stream: four inference spans."""
    client.responses.create(model="gpt-4.1-nano", instructions="You are terse.", input="Hi", tools=RESPONSES_TOOLS)
    for _ in client.responses.create(model="gpt-4.1-nano", input="Hi", stream=True):
        pass
    client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, tools=CHAT_TOOLS)
    for _ in client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
    ):
        pass


def assert_mode(spans: InMemorySpanExporter, logs: InMemoryLogRecordExporter, on_span: bool, as_event: bool) -> None:
    finished = spans.get_finished_spans()
    assert len(finished) == 4
    for span in finished:
        present = set(content_of(span))
        if on_span:
            assert {INPUT, OUTPUT} <= present, span.name
        else:
            assert present == set(), span.name
    records = events(logs)
    if not as_event:
        assert records == []
        return
    assert len(records) == 4
    for record, span in zip(records, finished, strict=True):
        assert record.event_name == EVENT_NAME
        assert (record.trace_id, record.span_id) == (span.context.trace_id, span.context.span_id)
        assert {INPUT, OUTPUT} <= set(record.attributes or {})


@pytest.mark.parametrize(("capture", "on_span", "as_event"), MODES)
def test_mode_from_instrument_options(
    client: openai.OpenAI,
    span_exporter: InMemorySpanExporter,
    log_exporter: InMemoryLogRecordExporter,
    on_span: bool,
    as_event: bool,
) -> None:
    run_calls(client)
    assert_mode(span_exporter, log_exporter, on_span, as_event)


@pytest.mark.parametrize("capture", [True, False])
def test_mode_from_a_boolean_option(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter, capture: bool
) -> None:
    run_calls(client)
    assert_mode(span_exporter, log_exporter, on_span=capture, as_event=False)


@pytest.mark.parametrize("capture", [None])
@pytest.mark.parametrize(("env_capture", "on_span", "as_event"), MODES)
def test_mode_from_the_environment(
    client: openai.OpenAI,
    span_exporter: InMemorySpanExporter,
    log_exporter: InMemoryLogRecordExporter,
    env_capture: str,
    on_span: bool,
    as_event: bool,
) -> None:
    assert os.environ[CAPTURE_ENV] == env_capture
    run_calls(client)
    assert_mode(span_exporter, log_exporter, on_span, as_event)


@pytest.mark.parametrize("capture", [None])
def test_default_is_no_content(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    assert CAPTURE_ENV not in os.environ
    run_calls(client)
    assert_mode(span_exporter, log_exporter, on_span=False, as_event=False)
    for span in span_exporter.get_finished_spans():
        assert not any(
            key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool"))
            for key in span.attributes or {}
        )


@pytest.mark.parametrize(
    ("env_capture", "capture", "on_span", "as_event"),
    [
        ("span_and_event", "no_content", False, False),
        ("no_content", "event_only", False, True),
        ("true", "false", False, False),
        ("event_only", "span_only", True, False),
        ("span_only", False, False, False),
    ],
)
def test_instrument_option_overrides_the_environment(
    client: openai.OpenAI,
    span_exporter: InMemorySpanExporter,
    log_exporter: InMemoryLogRecordExporter,
    on_span: bool,
    as_event: bool,
) -> None:
    run_calls(client)
    assert_mode(span_exporter, log_exporter, on_span, as_event)


@pytest.fixture
def manual_providers(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, logger_provider: LoggerProvider
) -> dict[str, Any]:
    return {"tracer_provider": tracer_provider, "meter_provider": meter_provider, "logger_provider": logger_provider}


@pytest.mark.parametrize(
    ("constructor", "argument", "on_span", "as_event"),
    [
        ("span_only", None, True, False),  # the constructor over the environment's event_only
        ("no_content", None, False, False),
        ("span_only", "span_and_event", True, True),  # the instrument() argument over the constructor
    ],
)
def test_constructor_argument_overrides_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    manual_providers: dict[str, Any],
    span_exporter: InMemorySpanExporter,
    span_counter: SpanCounter,
    log_exporter: InMemoryLogRecordExporter,
    fake: fake_openai.FakeOpenAI,
    constructor: str,
    argument: str | None,
    on_span: bool,
    as_event: bool,
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "event_only")
    instrumentor = OpenAIInstrumentor(capture_content=constructor)
    options = dict(manual_providers)
    if argument is not None:
        options["capture_content"] = argument
    instrumentor.instrument(**options)
    try:
        with make_secret_client(fake, api_key="sk-test-key") as client:
            run_calls(client)
    finally:
        instrumentor.uninstrument()
        OpenAIInstrumentor()  # leave the singleton without constructor options for later tests
    assert span_counter.open == 0
    assert_mode(span_exporter, log_exporter, on_span, as_event)


# ---- base64, truncation ---------------------------------------------------------------------------------------

PAYLOAD = base64.b64encode(bytes(range(256)) * 12).decode()  # 3072 bytes, 4096 characters
PAYLOAD_PIECES = (PAYLOAD[:32], PAYLOAD[2000:2032], PAYLOAD[-40:-8])


def assert_no_payload(spans: InMemorySpanExporter, logs: InMemoryLogRecordExporter) -> str:
    dump = exported_text(spans, logs)
    for piece in PAYLOAD_PIECES:
        assert piece not in dump
    assert "base64," not in dump
    return dump


@pytest.mark.parametrize("capture", ["span_only", "event_only", "span_and_event"])
def test_base64_inputs_never_exported(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter, capture: str
) -> None:
    client.responses.create(
        model="gpt-4.1-nano",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Compare these"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PAYLOAD}", "detail": "auto"},
                    {"type": "input_file", "filename": "a.pdf", "file_data": f"data:application/pdf;base64,{PAYLOAD}"},
                    {"type": "input_file", "filename": "b.pdf", "file_data": PAYLOAD},
                ],
            }
        ],
    )
    client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Compare these"},
                    {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{PAYLOAD}"}},
                    {"type": "input_audio", "input_audio": {"data": PAYLOAD, "format": "wav"}},
                    {
                        "type": "file",
                        "file": {"filename": "c.pdf", "file_data": f"data:application/pdf;base64,{PAYLOAD}"},
                    },
                ],
            }
        ],
    )
    dump = assert_no_payload(span_exporter, log_exporter)
    # what stands in for the bytes: their kind and decoded size
    assert "<base64 image/png 3072 bytes>" in dump
    assert "<base64 application/pdf 3072 bytes>" in dump
    assert "<base64 image/jpeg 3072 bytes>" in dump
    assert "<base64 audio/wav 3072 bytes>" in dump
    responses_span, _chat_span = span_exporter.get_finished_spans()
    if capture != "event_only":
        assert json.loads(str(responses_span.attributes[INPUT])) == [
            {
                "role": "user",
                "parts": [
                    text("Compare these"),
                    {
                        "type": "blob",
                        "modality": "image",
                        "mime_type": "image/png",
                        "content": "<base64 image/png 3072 bytes>",
                    },
                    {
                        "type": "blob",
                        "modality": "document",
                        "mime_type": "application/pdf",
                        "content": "<base64 application/pdf 3072 bytes>",
                    },
                    {
                        "type": "blob",
                        "modality": "document",
                        "mime_type": "application/pdf",
                        "content": "<base64 application/pdf 3072 bytes>",
                    },
                ],
            }
        ]


@pytest.mark.parametrize("extra_options", [{"content_max_length": 12}])
def test_truncation_at_content_max_length(
    client: openai.OpenAI, span_exporter: InMemorySpanExporter, log_exporter: InMemoryLogRecordExporter
) -> None:
    client.responses.create(
        model="gpt-4.1-nano", instructions="Answer in one short line.", input="abcdefghijklmnopqrstuvwxyz"
    )
    span = only_span(span_exporter)
    assert content_of(span) == {
        SYSTEM: '[{"type":"text","content":"Answer in on…[truncated 13 chars]"}]',
        INPUT: '[{"role":"user","parts":[{"type":"text","content":"abcdefghijkl…[truncated 14 chars]"}]}]',
        OUTPUT: '[{"role":"assistant","parts":[{"type":"text","content":"This is a de…[truncated 17 chars]"}],'
        '"finish_reason":"stop"}]',
    }
    event = only_event(log_exporter, span)
    assert event[INPUT] == [{"role": "user", "parts": [text("abcdefghijkl…[truncated 14 chars]")]}]
    assert event[OUTPUT] == reply_output("This is a de…[truncated 17 chars]")


@pytest.mark.parametrize("extra_options", [{"content_max_length": 5}])
def test_truncation_applies_to_tool_call_arguments(client: openai.OpenAI, span_exporter: InMemorySpanExporter) -> None:
    client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "Amsterdam"}'}}
                ],
            }
        ],
    )
    messages = json.loads(str(only_span(span_exporter).attributes[INPUT]))
    assert messages == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"city": "Amste…[truncated 4 chars]"}}
            ],
        }
    ]


def test_default_limit_truncates_long_strings(client: openai.OpenAI, span_exporter: InMemorySpanExporter) -> None:
    client.responses.create(model="gpt-4.1-nano", input="word " * 2000)  # 10,000 characters
    messages = json.loads(str(only_span(span_exporter).attributes[INPUT]))
    assert messages == [{"role": "user", "parts": [text("word " * 1638 + "wo" + "…[truncated 1808 chars]")]}]


@pytest.mark.parametrize("extra_options", [{"content_max_length": 0}])
def test_zero_limit_keeps_everything(client: openai.OpenAI, span_exporter: InMemorySpanExporter) -> None:
    client.responses.create(model="gpt-4.1-nano", input="word " * 2000)
    messages = json.loads(str(only_span(span_exporter).attributes[INPUT]))
    assert messages == [{"role": "user", "parts": [text("word " * 2000)]}]


def test_limit_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    manual_providers: dict[str, Any],
    span_exporter: InMemorySpanExporter,
    fake: fake_openai.FakeOpenAI,
) -> None:
    monkeypatch.setenv(MAX_LENGTH_ENV, "4")
    monkeypatch.setenv(CAPTURE_ENV, "span_only")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(**manual_providers)
    try:
        with make_secret_client(fake, api_key="sk-test-key") as client:
            client.responses.create(model="gpt-4.1-nano", input="abcdefgh")
    finally:
        instrumentor.uninstrument()
    messages = json.loads(str(only_span(span_exporter).attributes[INPUT]))
    assert messages == [{"role": "user", "parts": [text("abcd…[truncated 4 chars]")]}]


# ---- no header or key, in any mode ----------------------------------------------------------------------------

SECRETS = ("sk-secret-XYZ", "hdr-secret", "hdr-value")
EXTRA_HEADERS = {"Authorization": "Bearer hdr-secret", "X-Custom": "hdr-value"}


def make_secret_client(fake: fake_openai.FakeOpenAI, api_key: str = "sk-secret-XYZ") -> openai.OpenAI:
    return openai.OpenAI(
        api_key=api_key,
        base_url="http://localhost:8080/v1",
        max_retries=0,
        http_client=HTTP.Client(transport=fake_openai.make_transport(fake, HTTP)),
    )


def make_secret_async_client(fake: fake_openai.FakeOpenAI) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-secret-XYZ",
        base_url="http://localhost:8080/v1",
        max_retries=0,
        http_client=HTTP.AsyncClient(transport=fake_openai.make_transport(fake, HTTP, asynchronous=True)),
    )


@pytest.fixture
def secret_client(instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI) -> Iterator[openai.OpenAI]:
    with make_secret_client(fake) as client:
        yield client


ALL_MODES = ["no_content", "span_only", "event_only", "span_and_event", "true", "false"]


@pytest.mark.parametrize("capture", ALL_MODES)
def test_no_key_or_header_in_anything_exported(
    secret_client: openai.OpenAI,
    span_exporter: InMemorySpanExporter,
    log_exporter: InMemoryLogRecordExporter,
    capture: str,
) -> None:
    headers = dict(EXTRA_HEADERS)
    client = secret_client
    client.responses.create(
        model="gpt-4.1-nano", instructions="You are terse.", input="Hi", tools=RESPONSES_TOOLS, extra_headers=headers
    )
    for _ in client.responses.create(model="gpt-4.1-nano", input="Hi", stream=True, extra_headers=headers):
        pass
    background = client.responses.create(model="gpt-4.1-nano", input="Hi", background=True, extra_headers=headers)
    while background.status in ("queued", "in_progress"):
        background = client.responses.retrieve(background.id, extra_headers=headers)
    client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, tools=CHAT_TOOLS, extra_headers=headers)
    for _ in client.chat.completions.create(
        model="gpt-4o-mini", messages=CHAT_MESSAGES, tools=CHAT_TOOLS, stream=True, extra_headers=headers
    ):
        pass
    client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Hi", extra_headers=headers)
    client.embeddings.create(model="text-embedding-3-small", input="Hi", extra_headers=headers)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], extra_headers=headers
    )
    raw.parse()
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Hi"}],
            extra_headers={**headers},
            extra_body={"fake_error": "401"},
        )
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="fake-error-429", input="Hi", extra_headers=headers)
    assert headers == EXTRA_HEADERS
    assert len(span_exporter.get_finished_spans()) == 10
    dump = exported_text(span_exporter, log_exporter)
    for secret in SECRETS:
        assert secret not in dump, secret
    assert "Authorization" not in dump and "authorization" not in dump
    assert "X-Custom" not in dump and "x-custom" not in dump
    # one event per inference span with content; embeddings carry no messages
    expected_events = 9 if capture in ("event_only", "span_and_event") else 0
    assert len(events(log_exporter)) == expected_events


@pytest.mark.parametrize("capture", ["span_and_event", "no_content"])
async def test_no_key_or_header_in_anything_exported_async(
    instrumentor: OpenAIInstrumentor,
    fake: fake_openai.FakeOpenAI,
    span_exporter: InMemorySpanExporter,
    log_exporter: InMemoryLogRecordExporter,
) -> None:
    headers = dict(EXTRA_HEADERS)
    async with make_secret_async_client(fake) as client:
        await client.responses.create(model="gpt-4.1-nano", input="Hi", extra_headers=headers)
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=CHAT_MESSAGES, stream=True, extra_headers=headers
        )
        async for _ in stream:
            pass
    assert len(span_exporter.get_finished_spans()) == 2
    dump = exported_text(span_exporter, log_exporter)
    for secret in SECRETS:
        assert secret not in dump, secret
