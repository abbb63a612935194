"""Failures inside the instrumentation never reach the caller; surprising request shapes still trace.

Each failure case runs the call once uninstrumented and once instrumented against byte-identical
replies, and checks: the same result, the span (if one started) ended, and exactly one debug
record from the `opentelemetry.instrumentation.openai` loggers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pydantic
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionUserMessageParam
from openai.types.responses import EasyInputMessageParam, FunctionToolParam
from openai.types.shared import FunctionDefinition
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.metrics import Histogram, NoOpHistogram, NoOpMeter, NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from conftest import HTTP, SpanCounter, handler_client
from fake_openai import FakeOpenAI, FakeReply
from opentelemetry.instrumentation.openai import (
    OpenAIInstrumentor,
    chat_extract,
    content_capture,
    hook,
    responses_extract,
    responses_wrappers,
)
from opentelemetry.instrumentation.openai.inference_wrappers import CHAT, EMBEDDINGS

LOGGER = "opentelemetry.instrumentation.openai"
MODEL = "gpt-4.1-nano"
CHAT_MODEL = "gpt-4o-mini"


class Boom(RuntimeError):
    """What a broken extractor raises."""


def boom(*args: Any, **kwargs: Any) -> Any:
    raise Boom("instrumentation bug")


class City(pydantic.BaseModel):
    city: str


class Replay:
    """Serves the fake API, but answers a request it has seen before with the very same bytes."""

    def __init__(self) -> None:
        self.fake = FakeOpenAI()
        self.replies: dict[tuple[str, str, bytes], FakeReply] = {}
        self.bodies: list[dict[str, Any]] = []
        self.sanitize: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __call__(self, request: Any) -> Any:
        content = request.read()
        if content:
            self.bodies.append(json.loads(content))
        key = (request.method, str(request.url), content)
        reply = self.replies.get(key)
        if reply is None:
            query = dict(request.url.params)
            sent = json.loads(content) if content else None
            if sent is not None and self.sanitize is not None:
                sent = self.sanitize(sent)
            reply = self.fake.handle(request.method, request.url.path, query, sent)
            reply = self.replies[key] = structured(reply, json.loads(content) if content else {})
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)


def structured(reply: FakeReply, body: dict[str, Any]) -> FakeReply:
    """The fake answers in words; a structured-output request gets JSON that fits its schema instead."""
    text_format = (body.get("text") or {}).get("format") or body.get("response_format") or {}
    if text_format.get("type") != "json_schema" or reply.is_sse or reply.status != 200:
        return reply
    schema = text_format.get("schema") or (text_format.get("json_schema") or {}).get("schema") or {}
    text = json.dumps(dict.fromkeys(schema.get("required") or schema.get("properties") or [], "fake"))
    data = json.loads(reply.body)
    for item in data.get("output") or []:
        for part in item.get("content") or []:
            if part.get("type") == "output_text":
                part["text"] = text
    for choice in data.get("choices") or []:
        choice["message"]["content"] = text
    return FakeReply(reply.status, reply.headers, json.dumps(data).encode())


def dump(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(warnings=False)
    if isinstance(value, list):
        return [dump(item) for item in value]
    return value


# ---- calls: each returns what the caller can observe, in comparable form ----


def responses_create(client: openai.OpenAI) -> Any:
    return dump(client.responses.create(model=MODEL, input="What is the capital of France?"))


def responses_background(client: openai.OpenAI) -> Any:
    return dump(client.responses.create(model=MODEL, input="hi", background=True))


def responses_stream(client: openai.OpenAI) -> Any:
    return dump(list(client.responses.create(model=MODEL, input="hi", stream=True)))


def responses_stream_helper(client: openai.OpenAI) -> Any:
    with client.responses.stream(model=MODEL, input="hi") as stream:
        events = dump(list(stream))
        return events, dump(stream.get_final_response())


def responses_parse(client: openai.OpenAI) -> Any:
    return dump(client.responses.parse(model=MODEL, input="hi", text_format=City))


def chat_create(client: openai.OpenAI) -> Any:
    return dump(client.chat.completions.create(model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}]))


def chat_stream(client: openai.OpenAI) -> Any:
    stream = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return dump(list(stream))


def embeddings_create(client: openai.OpenAI) -> Any:
    return dump(client.embeddings.create(model="text-embedding-3-small", input="hi"))


# ---- harness ----


class Harness:
    def __init__(self, tracer_provider: TracerProvider, meter_provider: Any, counter: SpanCounter) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.counter = counter
        self.instrumentor = OpenAIInstrumentor()

    @contextmanager
    def instrumented(self, **options: Any) -> Iterator[OpenAIInstrumentor]:
        self.instrumentor.instrument(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )
        try:
            yield self.instrumentor
        finally:
            self.instrumentor.uninstrument()

    def compare(
        self, call: Callable[[openai.OpenAI], Any], replay: Replay | None = None, **options: Any
    ) -> tuple[Any, Any]:
        """(uninstrumented, instrumented) results of `call` over byte-identical replies."""
        replay = replay or Replay()
        with handler_client(replay) as client:
            plain = call(client)
        with self.instrumented(**options) as instrumentor, handler_client(replay) as client:
            traced = call(client)
            registry = instrumentor.response_registry
            assert registry is not None
            assert registry.sizes()[0] == 0
        return plain, traced


@pytest.fixture
def harness(tracer_provider: TracerProvider, meter_provider: MeterProvider, span_counter: SpanCounter) -> Harness:
    return Harness(tracer_provider, meter_provider, span_counter)


@pytest.fixture
def debug_log(caplog: pytest.LogCaptureFixture) -> Callable[[], list[logging.LogRecord]]:
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    def records() -> list[logging.LogRecord]:
        return [record for record in caplog.records if record.name.startswith(LOGGER)]

    return records


def assert_one_debug_record(records: list[logging.LogRecord]) -> None:
    assert len(records) == 1, [record.getMessage() for record in records]
    assert records[0].levelno == logging.DEBUG
    assert records[0].exc_info is not None  # the traceback is there for whoever turns debug on


# ---- a broken extractor, accumulator or recorder ----

# (what to break, the call that meets it, whether a span starts at all)
BROKEN_PARTS: list[Any] = [
    pytest.param(responses_wrappers, "response_attributes", responses_create, True, id="response_attributes"),
    pytest.param(responses_wrappers, "response_attributes", responses_parse, True, id="response_attributes-parse"),
    pytest.param(responses_wrappers, "request_attributes", responses_create, False, id="responses_request_attributes"),
    pytest.param(CHAT, "_result_attributes", chat_create, True, id="chat_completion_result_attributes"),
    pytest.param(CHAT, "_request_attributes", chat_create, False, id="chat_request_attributes"),
    pytest.param(EMBEDDINGS, "_result_attributes", embeddings_create, True, id="embeddings_result_attributes"),
    pytest.param(responses_extract.ResponseStreamAccumulator, "add", responses_stream, True, id="responses_stream_add"),
    pytest.param(
        responses_extract.ResponseStreamAccumulator, "add", responses_stream_helper, True, id="responses_helper_add"
    ),
    pytest.param(chat_extract.CompletionStreamAccumulator, "add", chat_stream, True, id="chat_stream_add"),
    pytest.param(
        responses_wrappers.ResponseStreamRecorder, "complete", responses_stream, True, id="responses_stream_complete"
    ),
    pytest.param(responses_wrappers.ResponseRegistry, "add_pending", responses_background, True, id="add_pending"),
    pytest.param(hook, "server_attributes_for", chat_create, False, id="server_attributes_for"),
]


@pytest.mark.parametrize(("owner", "name", "call", "span_started"), BROKEN_PARTS)
def test_broken_part_does_not_reach_the_caller(
    harness: Harness,
    span_exporter: InMemorySpanExporter,
    debug_log: Callable[[], list[logging.LogRecord]],
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    call: Callable[[openai.OpenAI], Any],
    span_started: bool,
) -> None:
    monkeypatch.setattr(owner, name, boom)
    plain, traced = harness.compare(call)
    assert traced == plain
    assert harness.counter.started == harness.counter.ended == (1 if span_started else 0)
    assert len(span_exporter.get_finished_spans()) == (1 if span_started else 0)
    assert_one_debug_record(debug_log())


def test_broken_content_capture_still_traces(
    harness: Harness,
    span_exporter: InMemorySpanExporter,
    debug_log: Callable[[], list[logging.LogRecord]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(content_capture, "request_content", boom)
    plain, traced = harness.compare(chat_create, capture_content="span_only")
    assert traced == plain
    (span,) = span_exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["gen_ai.request.model"] == CHAT_MODEL
    assert harness.counter.open == 0
    assert_one_debug_record(debug_log())


# ---- a broken metrics pipeline ----


class RaisingHistogram(NoOpHistogram):
    def record(self, amount: Any, attributes: Any = None, context: Any = None) -> None:
        raise Boom("histogram broken")


class RaisingMeter(NoOpMeter):
    def create_histogram(self, name: str, *args: Any, **kwargs: Any) -> Histogram:
        return RaisingHistogram(name)


class RaisingMeterProvider(NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> RaisingMeter:
        return RaisingMeter(name)


@pytest.mark.parametrize("call", [responses_create, chat_stream, embeddings_create], ids=lambda c: c.__name__)
def test_raising_histogram(
    tracer_provider: TracerProvider,
    span_counter: SpanCounter,
    span_exporter: InMemorySpanExporter,
    debug_log: Callable[[], list[logging.LogRecord]],
    call: Callable[[openai.OpenAI], Any],
) -> None:
    harness = Harness(tracer_provider, RaisingMeterProvider(), span_counter)
    plain, traced = harness.compare(call)
    assert traced == plain
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.open == 0
    # The attributes were set before the metrics were recorded.
    assert span.attributes is not None and "gen_ai.response.model" in span.attributes
    assert_one_debug_record(debug_log())


# ---- a broken span pipeline ----


class RaisingProcessor(SpanProcessor):
    def __init__(self, on_start: bool = False, on_end: bool = False) -> None:
        self.raise_on_start = on_start
        self.raise_on_end = on_end

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.raise_on_start:
            raise Boom("processor on_start broken")

    def on_end(self, span: ReadableSpan) -> None:
        if self.raise_on_end:
            raise Boom("processor on_end broken")


class RaisingExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise Boom("exporter broken")


@pytest.mark.parametrize("call", [responses_create, responses_stream, chat_stream], ids=lambda c: c.__name__)
def test_processor_raising_on_end(
    meter_provider: MeterProvider,
    debug_log: Callable[[], list[logging.LogRecord]],
    call: Callable[[openai.OpenAI], Any],
) -> None:
    counter = SpanCounter()
    provider = TracerProvider()
    provider.add_span_processor(counter)
    provider.add_span_processor(RaisingProcessor(on_end=True))
    plain, traced = Harness(provider, meter_provider, counter).compare(call)
    assert traced == plain
    assert counter.started == counter.ended == 1
    assert_one_debug_record(debug_log())


def test_processor_raising_on_start(
    meter_provider: MeterProvider, debug_log: Callable[[], list[logging.LogRecord]]
) -> None:
    counter = SpanCounter()
    provider = TracerProvider()
    provider.add_span_processor(RaisingProcessor(on_start=True))  # before the counter: it never sees a start
    provider.add_span_processor(counter)
    plain, traced = Harness(provider, meter_provider, counter).compare(chat_create)
    assert traced == plain
    assert counter.started == counter.ended == 0  # the call went through untraced
    assert_one_debug_record(debug_log())


@pytest.mark.parametrize("call", [responses_create, responses_stream_helper, chat_stream], ids=lambda c: c.__name__)
def test_exporter_raising(
    meter_provider: MeterProvider,
    debug_log: Callable[[], list[logging.LogRecord]],
    call: Callable[[openai.OpenAI], Any],
) -> None:
    counter = SpanCounter()
    provider = TracerProvider()
    provider.add_span_processor(counter)
    provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()))  # the SDK logs and swallows it
    plain, traced = Harness(provider, meter_provider, counter).compare(call)
    assert traced == plain
    assert counter.started == counter.ended == 1
    assert debug_log() == []  # nothing reached the instrumentation


# ---- attribute values of unexpected types ----


def test_extractor_returning_invalid_attribute_values(
    harness: Harness, span_exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bad_attributes(result: Any) -> dict[str, Any]:
        return {
            "gen_ai.response.id": {"not": "allowed"},
            "gen_ai.response.finish_reasons": [1, "stop", None],
            "gen_ai.response.model": object(),
            "gen_ai.usage.input_tokens": 7,
        }

    monkeypatch.setattr(CHAT, "_result_attributes", bad_attributes)
    plain, traced = harness.compare(chat_create)
    assert traced == plain
    (span,) = span_exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 7  # the valid one survives
    assert span.status.status_code is not StatusCode.ERROR
    assert harness.counter.open == 0
    # Whatever the SDK kept of the odd values (newer SDKs keep maps, older ones drop them), it exports.
    assert encode_spans([span]).SerializeToString()


def wrong_types_handler(kind: str) -> Callable[[Any], Any]:
    """Replies whose fields have the wrong JSON types everywhere the instrumentation reads."""
    usage = {"input_tokens": "12", "output_tokens": 3.5, "prompt_tokens": [1], "completion_tokens": {"a": 1}}
    usage |= {"input_tokens_details": "cached", "output_tokens_details": 5, "prompt_tokens_details": [], "total": None}
    common = {"id": ["resp"], "model": 42, "service_tier": {"tier": 1}, "usage": usage, "created": "today"}
    bodies = {
        "responses": {**common, "object": "response", "status": 7, "output": "none", "conversation": 5},
        "chat": {**common, "object": "chat.completion", "choices": {"0": 1}, "system_fingerprint": 3},
        "chat_choices": {**common, "choices": [None, 5, {"finish_reason": 3, "index": "a"}]},
        "embeddings": {"object": "list", "data": [{"embedding": {"x": 1}}], "model": None, "usage": "lots"},
    }

    def handler(request: Any) -> Any:
        return HTTP.Response(200, json=bodies[kind])

    return handler


@pytest.mark.parametrize("kind", ["responses", "chat", "chat_choices", "embeddings"])
def test_wrong_types_in_response_body(
    harness: Harness, span_exporter: InMemorySpanExporter, debug_log: Callable[[], list[logging.LogRecord]], kind: str
) -> None:
    def call(client: openai.OpenAI) -> Any:
        if kind == "responses":
            return dump(client.responses.create(model=MODEL, input="hi"))
        if kind == "embeddings":
            return dump(client.embeddings.create(model="text-embedding-3-small", input="hi", encoding_format="float"))
        return dump(client.chat.completions.create(model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}]))

    with handler_client(wrong_types_handler(kind)) as client:
        try:
            plain: Any = call(client)
        except Exception as error:
            plain = (type(error), str(error))
    with harness.instrumented(), handler_client(wrong_types_handler(kind)) as client:
        try:
            traced: Any = call(client)
        except Exception as error:
            traced = (type(error), str(error))
    assert traced == plain
    (span,) = span_exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    for key in ("gen_ai.response.id", "gen_ai.response.model", "gen_ai.usage.input_tokens"):
        assert key not in attributes
    assert harness.counter.open == 0
    assert debug_log() == []  # surprising types are skipped, not errors


def test_wrong_types_in_request_parameters(harness: Harness, span_exporter: InMemorySpanExporter) -> None:
    def call(client: openai.OpenAI) -> Any:
        return dump(
            client.chat.completions.create(
                model=CHAT_MODEL,
                messages=[{"role": "user", "content": "hi"}],
                temperature="hot",  # type: ignore[arg-type]
                max_tokens="10",  # type: ignore[arg-type]
                stop=[1, "end", None],  # type: ignore[list-item]
                n=True,  # type: ignore[arg-type]
                seed=1.5,  # type: ignore[arg-type]
                top_p=None,
            )
        )

    replay = Replay()
    # The fake API cannot read these values: it answers as it would to a well-formed request.
    replay.sanitize = lambda body: {"model": body["model"], "messages": body["messages"]}
    plain, traced = harness.compare(call, replay=replay)
    assert traced == plain
    assert replay.bodies[-1]["temperature"] == "hot"  # sent as given: the SDK does not validate
    (span,) = span_exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    for key in ("gen_ai.request.temperature", "gen_ai.request.max_tokens", "gen_ai.request.seed"):
        assert key not in attributes
    assert "gen_ai.request.choice.count" not in attributes
    assert attributes["gen_ai.request.stop_sequences"] == ("end",)


# ---- SDK objects, TypedDicts and sentinels in the request ----

OMIT = getattr(openai, "omit", openai.NOT_GIVEN)
WEATHER_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def content_harness(harness: Harness) -> Iterator[tuple[Harness, Replay, openai.OpenAI]]:
    replay = Replay()
    with harness.instrumented(capture_content="span_only"), handler_client(replay) as client:
        yield harness, replay, client


def test_responses_with_sdk_objects_typed_dicts_and_sentinels(
    content_harness: tuple[Harness, Replay, openai.OpenAI], span_exporter: InMemorySpanExporter
) -> None:
    _, replay, client = content_harness
    first = client.responses.create(model=MODEL, input="hello")
    tool = FunctionToolParam(type="function", name="get_weather", parameters=WEATHER_PARAMETERS, strict=True)
    second = client.responses.create(
        model=MODEL,
        input=[
            EasyInputMessageParam(role="user", content="hello"),
            first.output[0],  # a ResponseOutputMessage: a pydantic object where a dict is expected
            {"role": "user", "content": [{"type": "input_text", "text": "and the weather?"}]},
        ],
        tools=[tool],
        temperature=openai.NOT_GIVEN,
        top_p=OMIT,
        max_output_tokens=64,
        instructions=OMIT,
    )
    assert second.status == "completed"
    sent = replay.bodies[-1]
    assert "temperature" not in sent and "top_p" not in sent and "instructions" not in sent
    assert sent["input"][1]["type"] == "message"  # the SDK dumped the object
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 2
    attributes = dict(spans[1].attributes or {})
    assert attributes["gen_ai.request.model"] == MODEL
    assert attributes["gen_ai.request.max_tokens"] == 64
    assert "gen_ai.request.temperature" not in attributes and "gen_ai.request.top_p" not in attributes
    assert attributes["gen_ai.response.id"] == second.id
    tools = json.loads(str(attributes["gen_ai.tool.definitions"]))
    assert [t.get("name") for t in tools] == ["get_weather"]
    messages = json.loads(str(attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "and the weather?" in attributes["gen_ai.input.messages"]  # type: ignore[operator]


def test_chat_with_sdk_objects_typed_dicts_and_sentinels(
    content_harness: tuple[Harness, Replay, openai.OpenAI], span_exporter: InMemorySpanExporter
) -> None:
    _, replay, client = content_harness
    previous = ChatCompletionMessage(role="assistant", content="Paris.")
    completion = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[
            {"role": "system", "content": "Be brief."},
            ChatCompletionUserMessageParam(role="user", content="Capital of France?"),
            previous,  # type: ignore[list-item]
            {"role": "user", "content": "And of Italy?"},
        ],
        tools=[
            {"type": "function", "function": FunctionDefinition(name="lookup", parameters=WEATHER_PARAMETERS)},  # type: ignore[typeddict-item]
            {"type": "function", "function": {"name": "plain_dict_tool"}},
        ],
        temperature=0.25,
        seed=openai.NOT_GIVEN,
        stop=OMIT,
        max_completion_tokens=32,
    )
    sent = replay.bodies[-1]
    assert "seed" not in sent and "stop" not in sent
    assert sent["messages"][2] == {"role": "assistant", "content": "Paris."}
    assert sent["tools"][0]["function"]["name"] == "lookup"
    (span,) = span_exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.request.temperature"] == 0.25
    assert attributes["gen_ai.request.max_tokens"] == 32
    assert "gen_ai.request.seed" not in attributes and "gen_ai.request.stop_sequences" not in attributes
    assert attributes["gen_ai.response.id"] == completion.id
    tools = json.loads(str(attributes["gen_ai.tool.definitions"]))
    assert [t.get("name") for t in tools] == ["lookup", "plain_dict_tool"]
    messages = json.loads(str(attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


def test_parse_and_embeddings_with_sentinels(
    content_harness: tuple[Harness, Replay, openai.OpenAI], span_exporter: InMemorySpanExporter
) -> None:
    _, _, client = content_harness
    client.chat.completions.parse(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "hi"}],
        response_format=City,
        temperature=openai.NOT_GIVEN,
    )
    client.embeddings.create(model="text-embedding-3-small", input=["a", "b"], dimensions=OMIT, user=openai.NOT_GIVEN)
    chat_span, embeddings_span = span_exporter.get_finished_spans()
    chat_attributes = dict(chat_span.attributes or {})
    assert chat_attributes["gen_ai.output.type"] == "json"
    assert "gen_ai.request.temperature" not in chat_attributes
    embeddings_attributes = dict(embeddings_span.attributes or {})
    assert embeddings_attributes["gen_ai.operation.name"] == "embeddings"
    assert "gen_ai.embeddings.dimension_count" not in embeddings_attributes or isinstance(
        embeddings_attributes["gen_ai.embeddings.dimension_count"], int
    )
