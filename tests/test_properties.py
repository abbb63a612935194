"""Property tests: arbitrary Responses/chat bodies and stream event sequences, served by a MockTransport.

For every generated input, the instrumented SDK must return or raise exactly what the uninstrumented SDK
does, every started span must end, `pending` must be empty once a terminal status was seen, and every
exported span must go through the real OTLP protobuf encoder with integer timestamps.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import openai
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import HTTP, SpanCounter, handler_async_client, handler_client, requires_openai
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

MODEL = "gpt-4.1-nano"
RESPONSE_ID = "resp_prop_1"
UNFINISHED = ("queued", "in_progress")
STATUSES = ["completed", "failed", "incomplete", "cancelled", "queued", "in_progress", "requires_action", "", "DONE"]
RESPONSE_EVENT_TYPES = [
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.done",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.cancelled",
    "error",
    "response.future_event",
    "",
]
WITH_RESPONSE = {
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.cancelled",
}
SETTINGS = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
METER_PROVIDER = MeterProvider()  # one for the module: gauges register once per meter
EXAMPLES: Counter[str] = Counter()


# ---- strategies ----

MISSING = object()  # the key is left out of the body
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
)
wrong = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.text(max_size=4), scalars, max_size=2))


def optional(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field that is usually right, and sometimes null, missing, or of a wrong type."""
    return st.one_of(good, good, st.none(), st.just(MISSING), wrong)


def without_missing(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not MISSING}


def record(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object whose MISSING fields are left out."""
    return st.fixed_dictionaries(fields).map(without_missing)


tokens = st.integers(min_value=0, max_value=10**7)
responses_usage = st.fixed_dictionaries(
    {
        "input_tokens": optional(tokens),
        "output_tokens": optional(tokens),
        "total_tokens": optional(tokens),
        "input_tokens_details": optional(record(cached_tokens=optional(tokens))),
        "output_tokens_details": optional(record(reasoning_tokens=optional(tokens))),
    }
).map(without_missing)
chat_usage = st.fixed_dictionaries(
    {
        "prompt_tokens": optional(tokens),
        "completion_tokens": optional(tokens),
        "total_tokens": optional(tokens),
        "prompt_tokens_details": optional(record(cached_tokens=optional(tokens))),
        "completion_tokens_details": optional(record(reasoning_tokens=optional(tokens))),
    }
).map(without_missing)
text = st.text(max_size=12)
output_items = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "id": st.just("msg_1"),
                "type": st.just("message"),
                "role": st.just("assistant"),
                "status": optional(st.sampled_from(["completed", "incomplete"])),
                "content": optional(
                    st.lists(
                        st.fixed_dictionaries(
                            {"type": st.just("output_text"), "text": text, "annotations": st.just([])}
                        ),
                        max_size=2,
                    )
                ),
            }
        ).map(without_missing),
        st.fixed_dictionaries(
            {
                "type": st.just("function_call"),
                "call_id": st.just("call_1"),
                "name": optional(text),
                "arguments": optional(text),
            }
        ).map(without_missing),
        st.fixed_dictionaries({"type": st.sampled_from(["future_item", "reasoning", ""]), "id": optional(text)}).map(
            without_missing
        ),
        wrong,
    ),
    max_size=3,
)


def responses_bodies(ids: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "id": ids if ids is not None else optional(st.sampled_from([RESPONSE_ID, "resp_prop_2"])),
            "object": optional(st.just("response")),
            "created_at": optional(st.integers(min_value=0, max_value=2**32)),
            "status": st.one_of(
                st.sampled_from(STATUSES), st.sampled_from(STATUSES), st.none(), st.just(MISSING), wrong
            ),
            "model": optional(st.sampled_from(["gpt-4.1-nano-2025-04-14", ""])),
            "output": optional(output_items),
            "usage": optional(responses_usage),
            "error": optional(
                st.fixed_dictionaries({"code": optional(text), "message": optional(text)}).map(without_missing)
            ),
            "incomplete_details": optional(
                record(reason=optional(st.sampled_from(["max_output_tokens", "content_filter", "x"])))
            ),
            "background": optional(st.booleans()),
            "service_tier": optional(st.sampled_from(["default", "flex", "future_tier"])),
            "conversation": optional(st.one_of(st.just({"id": "conv_1"}), st.just("conv_2"))),
            "metadata": optional(st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2)),
            "text": optional(st.just({"format": {"type": "text"}})),
            "future_field": optional(wrong),
        }
    ).map(without_missing)


choices = st.one_of(
    st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "index": optional(st.integers(min_value=0, max_value=3)),
                    "finish_reason": optional(st.sampled_from(["stop", "length", "tool_calls", "future_reason"])),
                    "message": optional(
                        st.fixed_dictionaries(
                            {
                                "role": optional(st.just("assistant")),
                                "content": optional(text),
                                "refusal": optional(text),
                            }
                        ).map(without_missing)
                    ),
                    "logprobs": st.none(),
                }
            ).map(without_missing),
            wrong,
        ),
        max_size=3,
    ),
    wrong,
)
chat_bodies = st.fixed_dictionaries(
    {
        "id": optional(st.just("chatcmpl-prop")),
        "object": optional(st.sampled_from(["chat.completion", "future.object"])),
        "created": optional(st.integers(min_value=0, max_value=2**32)),
        "model": optional(st.sampled_from(["gpt-4o-mini-2024-07-18", ""])),
        "choices": optional(choices),
        "usage": optional(chat_usage),
        "service_tier": optional(st.sampled_from(["default", "priority"])),
        "system_fingerprint": optional(text),
    }
).map(without_missing)


@st.composite
def responses_events(draw: st.DrawFn) -> dict[str, Any]:
    event_type = draw(st.sampled_from(RESPONSE_EVENT_TYPES))
    event: dict[str, Any] = {"type": event_type}
    number = draw(optional(st.integers(min_value=0, max_value=40)))
    if number is not MISSING:
        event["sequence_number"] = number
    if event_type in WITH_RESPONSE:
        event["response"] = draw(
            st.one_of(responses_bodies(optional(st.just(RESPONSE_ID))), responses_bodies(st.just(RESPONSE_ID)), wrong)
        )
    elif event_type == "error":
        event.update(without_missing({"code": draw(optional(text)), "message": draw(optional(text)), "param": None}))
    elif event_type.startswith("response.output_text"):
        event.update(
            {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": draw(text), "text": draw(text)}
        )
    elif event_type.startswith("response.output_item"):
        item = st.one_of(output_items.map(lambda items: items[0] if items else None), wrong)
        event.update(without_missing({"output_index": draw(optional(st.integers(0, 2))), "item": draw(optional(item))}))
    return event


chat_chunks = st.one_of(
    st.fixed_dictionaries(
        {
            "id": optional(st.just("chatcmpl-prop")),
            "object": optional(st.sampled_from(["chat.completion.chunk", "future.chunk"])),
            "created": st.just(1_700_000_000),
            "model": optional(st.just("gpt-4o-mini-2024-07-18")),
            "choices": st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "index": optional(st.integers(min_value=0, max_value=2)),
                            "delta": optional(
                                st.fixed_dictionaries(
                                    {"role": optional(st.just("assistant")), "content": optional(text)}
                                ).map(without_missing)
                            ),
                            "finish_reason": optional(st.sampled_from(["stop", "length", "future_reason"])),
                        }
                    ).map(without_missing),
                    max_size=2,
                ),
                wrong,
            ),
            "usage": optional(chat_usage),
        }
    ).map(without_missing),
    st.just("[DONE]"),
    st.fixed_dictionaries(
        {"error": st.fixed_dictionaries({"message": text, "type": optional(text)}).map(without_missing)}
    ),
)


@dataclass
class StreamPlan:
    events: list[Any]
    named: bool  # `event:` lines (Responses) or data-only lines
    read: int | None  # items read before the caller stops; None reads to the end
    ending: str  # how the caller stops early: close / context / abandon
    background: bool = False


def stream_plans(events: st.SearchStrategy[Any], named: st.SearchStrategy[bool]) -> st.SearchStrategy[StreamPlan]:
    return st.builds(
        StreamPlan,
        events=st.lists(events, max_size=10),
        named=named,
        read=st.one_of(st.none(), st.integers(min_value=0, max_value=6)),
        ending=st.sampled_from(["close", "context", "abandon"]),
        background=st.booleans(),
    )


# ---- serving ----


def sse(events: list[Any], named: bool) -> bytes:
    parts = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        name = event.get("type") if isinstance(event, dict) else None
        if named and isinstance(name, str) and name:
            parts.append(f"event: {name}\ndata: {data}\n\n")
        else:
            parts.append(f"data: {data}\n\n")
    return "".join(parts).encode()


class Server:
    """POST answers come from `posts` in order, GET answers from `gets`; then a completed response."""

    def __init__(self, posts: list[Any], gets: list[Any] | None = None, stream: bytes | None = None) -> None:
        self.posts = list(posts)
        self.gets = list(gets or [])
        self.stream = stream

    def __call__(self, request: Any) -> Any:
        queue = self.posts if request.method == "POST" else self.gets
        if request.method == "POST" and self.stream is not None:
            headers = {"content-type": "text/event-stream"}
            return HTTP.Response(200, headers=headers, content=self.stream)
        body = queue.pop(0) if queue else completed(request)
        return HTTP.Response(200, json=body)


def completed(request: Any) -> dict[str, Any]:
    response_id = request.url.path.rsplit("/", 1)[-1]
    return {"id": response_id, "object": "response", "status": "completed", "model": MODEL, "output": []}


# ---- the instrumented half of each example ----


@dataclass
class Traced:
    instrumentor: OpenAIInstrumentor
    exporter: InMemorySpanExporter
    counter: SpanCounter
    spans: list[Any] = field(default_factory=list)

    def pending(self) -> int:
        registry = self.instrumentor.response_registry
        assert registry is not None
        return registry.sizes()[0]

    def poll_pending(self, client: openai.OpenAI) -> None:
        """Polls each id a cut background stream waits under, as an app would. Generated bodies carry any id; one
        that cannot be a URL path segment ("a/b", "..") cannot be polled, so uninstrumenting ends its span."""
        registry = self.instrumentor.response_registry
        assert registry is not None
        ids = list(registry._pending)
        pollable = [response_id for response_id in ids if re.fullmatch(r"[\w-]+", response_id, re.ASCII)]
        for response_id in pollable:
            client.responses.retrieve(response_id)
        if len(pollable) < len(ids) and not any(response_id in registry._pending for response_id in pollable):
            registry.end_all("unpollable_id")  # only the unpollable ones are left


@contextmanager
def instrumented() -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    counter = SpanCounter()
    provider = TracerProvider()
    provider.add_span_processor(counter)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=METER_PROVIDER, skip_dep_check=True)
    traced = Traced(instrumentor, exporter, counter)
    try:
        yield traced
    finally:
        instrumentor.uninstrument()  # ends whatever is still pending
    assert counter.started == counter.ended, "a started span never ended"
    spans = list(exporter.get_finished_spans())
    assert len(spans) == counter.ended
    if spans:
        assert encode_spans(spans).SerializeToString()
    for span in spans:
        assert isinstance(span.start_time, int) and isinstance(span.end_time, int)
        assert span.end_time >= span.start_time
    traced.spans = spans


def dump(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(warnings=False)
    return value


def outcome(function: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", function())
    except Exception as error:
        return ("raised", (type(error), str(error)))


# ---- properties: bodies ----


def poll_until_done(client: openai.OpenAI, background: bool) -> tuple[list[Any], Any]:
    """Create, then retrieve while the response says it is unfinished (as a caller polling would)."""
    seen = []
    result = client.responses.create(model=MODEL, input="hi", background=background)
    seen.append(dump(result))
    for _ in range(4):
        status, response_id = getattr(result, "status", None), getattr(result, "id", None)
        if status not in UNFINISHED or not isinstance(response_id, str) or not response_id:
            break
        result = client.responses.retrieve(response_id)
        seen.append(dump(result))
    return seen, getattr(result, "status", None)


@SETTINGS
@given(create=responses_bodies(), polls=st.lists(responses_bodies(), max_size=3), background=st.booleans())
def test_responses_bodies(create: dict[str, Any], polls: list[dict[str, Any]], background: bool) -> None:
    EXAMPLES["responses bodies"] += 1
    with handler_client(Server([create], polls)) as client:
        plain = outcome(lambda: poll_until_done(client, background))
    with instrumented() as traced, handler_client(Server([create], polls)) as client:
        result = outcome(lambda: poll_until_done(client, background))
        assert result == plain
        if result[0] == "ok" and result[1][1] not in UNFINISHED:
            assert traced.pending() == 0, "a terminal status leaves nothing pending"
            assert traced.counter.started == traced.counter.ended
    assert len(traced.spans) <= 1 + len(polls) + 1


@SETTINGS
@given(body=chat_bodies)
def test_chat_bodies(body: dict[str, Any]) -> None:
    EXAMPLES["chat bodies"] += 1

    def call(client: openai.OpenAI) -> Any:
        return dump(client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]))

    with handler_client(Server([body])) as client:
        plain = outcome(lambda: call(client))
    with instrumented() as traced, handler_client(Server([body])) as client:
        assert outcome(lambda: call(client)) == plain
        assert traced.counter.started == traced.counter.ended == 1
    assert len(traced.spans) == 1


# ---- properties: stream event sequences ----


def read_stream(stream: Any, plan: StreamPlan) -> list[Any]:
    items: list[Any] = []
    if plan.read is None:
        items.extend(dump(item) for item in stream)
        return items
    if plan.ending == "context":
        with stream:
            for item in stream:
                if len(items) >= plan.read:
                    break
                items.append(dump(item))
        return items
    iterator = iter(stream)
    for item in iterator:
        if len(items) >= plan.read:
            break
        items.append(dump(item))
    if plan.ending == "close":
        stream.close()
    return items  # "abandon": the last reference goes with this frame


def responses_stream_call(client: openai.OpenAI, plan: StreamPlan) -> list[Any]:
    stream = client.responses.create(model=MODEL, input="hi", stream=True, background=plan.background)
    return read_stream(stream, plan)


@requires_openai("1.80", "Responses.create() has no `background` parameter")
@SETTINGS
@given(plan=stream_plans(responses_events(), st.just(True)))
def test_responses_event_sequences(plan: StreamPlan) -> None:
    EXAMPLES["responses streams"] += 1
    body = sse(plan.events, plan.named)
    with handler_client(Server([], stream=body)) as client:
        plain = outcome(lambda: responses_stream_call(client, plan))
    with instrumented() as traced, handler_client(Server([], stream=body)) as client:
        assert outcome(lambda: responses_stream_call(client, plan)) == plain
        if traced.pending():
            # Only a background stream cut before its end waits; the next poll that sees the end ends it.
            assert plan.background
            assert traced.counter.open == 1
            traced.poll_pending(client)
        assert traced.pending() == 0
        assert traced.counter.started == traced.counter.ended == 1


def chat_stream_call(client: openai.OpenAI, plan: StreamPlan) -> list[Any]:
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    return read_stream(stream, plan)


@SETTINGS
@given(plan=stream_plans(chat_chunks, st.just(False)))
def test_chat_chunk_sequences(plan: StreamPlan) -> None:
    EXAMPLES["chat streams"] += 1
    body = sse(plan.events, named=False)
    with handler_client(Server([], stream=body)) as client:
        plain = outcome(lambda: chat_stream_call(client, plan))
    with instrumented() as traced, handler_client(Server([], stream=body)) as client:
        assert outcome(lambda: chat_stream_call(client, plan)) == plain
        assert traced.counter.started == traced.counter.ended == 1


async def read_async_stream(stream: Any, plan: StreamPlan) -> list[Any]:
    items: list[Any] = []
    if plan.read is None:
        items.extend([dump(item) async for item in stream])
        return items
    if plan.ending == "context":
        async with stream:
            async for item in stream:
                if len(items) >= plan.read:
                    break
                items.append(dump(item))
        return items
    async for item in stream:
        if len(items) >= plan.read:
            break
        items.append(dump(item))
    await stream.close()  # an abandoned async stream cannot be closed for the caller: close it here
    return items


async def async_responses_stream(plan: StreamPlan, body: bytes) -> tuple[str, Any]:
    async with handler_async_client(Server([], stream=body)) as client:
        try:
            stream = await client.responses.create(model=MODEL, input="hi", stream=True, background=plan.background)
            return ("ok", await read_async_stream(stream, plan))
        except Exception as error:
            return ("raised", (type(error), str(error)))


@requires_openai("1.80", "Responses.create() has no `background` parameter")
@settings(SETTINGS, max_examples=60)
@given(plan=stream_plans(responses_events(), st.booleans()))
def test_async_responses_event_sequences(plan: StreamPlan) -> None:
    EXAMPLES["async responses streams"] += 1
    body = sse(plan.events, plan.named)
    plain = asyncio.run(async_responses_stream(plan, body))
    with instrumented() as traced:
        assert asyncio.run(async_responses_stream(plan, body)) == plain
        if traced.pending():
            assert plan.background
            with handler_client(Server([])) as client:
                traced.poll_pending(client)
        assert traced.pending() == 0
        assert traced.counter.started == traced.counter.ended == 1


def test_examples_were_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this module: every property ran its examples (the counts are printed with -s)."""
    if not EXAMPLES:
        pytest.skip("run with the property tests")
    with capsys.disabled():
        print(f"\nhypothesis examples run: {dict(EXAMPLES)} total={sum(EXAMPLES.values())}")
    assert all(count >= 10 for count in EXAMPLES.values()), EXAMPLES
