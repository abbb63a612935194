"""Fault injection over every instrumented operation, sync and async, plain and streamed.

Each case runs the same call twice against the same faulty MockTransport handler: once with no
instrumentation and once instrumented. The caller must get the same value (or stream items), or the
same exception type and message; the instrumented run must leave exactly one span, ended, with the
right status, and no `pending` entry.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import struct
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
import pydantic
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from conftest import HTTP, SpanCounter, handler_async_client, handler_client
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

# Dumping results that hold unknown item types makes pydantic warn; the SDK's own dumps do too.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

MODEL = "gpt-4.1-nano"
CHAT_MODEL = "gpt-4o-mini"
COMPLETIONS_MODEL = "gpt-3.5-turbo-instruct"
EMBEDDINGS_MODEL = "text-embedding-3-small"
CITY_JSON = '{"city":"Paris"}'
LARGE_TEXT_BYTES = 5 * 1024 * 1024
BACKGROUND_ID = "resp_background_0001"
OTHER_ID = "resp_elsewhere_0001"
FINAL_ERROR_STATUSES = frozenset((400, 401, 403, 404, 410, 422))


class City(pydantic.BaseModel):
    city: str


# ---- well-formed bodies, which the data faults then bend ----


def message_item(text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"id": "msg_0001", "type": "message", "status": "completed", "role": "assistant", "content": [part]}


def responses_body(
    response_id: str = "resp_0001", status: str = "completed", background: bool = False
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "background": background,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-nano-2025-04-14",
        "output": [message_item(CITY_JSON)] if status not in ("queued", "in_progress") else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 14,
        },
        "user": None,
        "metadata": {},
    }


def chat_body() -> dict[str, Any]:
    message = {"role": "assistant", "content": CITY_JSON, "refusal": None, "annotations": []}
    return {
        "id": "chatcmpl-0001",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
        "service_tier": "default",
        "system_fingerprint": "fp_fault",
    }


def completions_body() -> dict[str, Any]:
    return {
        "id": "cmpl-0001",
        "object": "text_completion",
        "created": 1_700_000_000,
        "model": COMPLETIONS_MODEL,
        "choices": [{"text": "Paris is the capital", "index": 0, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
        "system_fingerprint": "fp_fault",
    }


def embeddings_body() -> dict[str, Any]:
    vector = base64.b64encode(struct.pack("<8f", *[0.125 * i for i in range(8)])).decode()
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": EMBEDDINGS_MODEL,
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    }


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]


def responses_events(final: dict[str, Any]) -> list[dict[str, Any]]:
    """The named SSE events of a Responses stream that ends in `final` (the shape the real API sends)."""
    opening = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": opening}),
        ("response.in_progress", {"response": opening}),
    ]
    for index, item in enumerate(final.get("output") or []):
        if item.get("type") != "message":
            events.append(("response.output_item.added", {"output_index": index, "item": item}))
            events.append(("response.output_item.done", {"output_index": index, "item": item}))
            continue
        events.append(("response.output_item.added", {"output_index": index, "item": {**item, "content": []}}))
        part = item["content"][0]
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        events.append(("response.content_part.added", {**where, "part": {**part, "text": ""}}))
        for delta in _halves(part["text"]):
            events.append(("response.output_text.delta", {**where, "delta": delta, "logprobs": []}))
        events.append(("response.output_text.done", {**where, "text": part["text"], "logprobs": []}))
        events.append(("response.content_part.done", {**where, "part": part}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    terminal = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(
        str(final.get("status")), "response.completed"
    )
    events.append((terminal, {"response": final}))
    return [{"type": name, **data, "sequence_number": n} for n, (name, data) in enumerate(events)]


def completion_chunks(body: dict[str, Any], chat: bool) -> list[dict[str, Any]]:
    """Chat (or legacy completion) chunks equivalent to `body`, usage last as with include_usage."""
    base = {key: body.get(key) for key in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk" if chat else "text_completion"
    if chat:
        base["service_tier"] = body.get("service_tier")
    chunks = []
    for choice in body["choices"]:
        index = choice["index"]
        if chat:
            message = choice.get("message") or {}
            text = message.get("content") or ""
            opening = {"role": "assistant", "content": "", "refusal": None}
            pieces = [{"index": index, "delta": opening, "logprobs": None, "finish_reason": None}]
            pieces += [
                {"index": index, "delta": {"content": d}, "logprobs": None, "finish_reason": None}
                for d in _halves(text)
            ]
            pieces.append({"index": index, "delta": {}, "logprobs": None, "finish_reason": choice.get("finish_reason")})
        else:
            text = choice.get("text") or ""
            pieces = [{"text": d, "index": index, "logprobs": None, "finish_reason": None} for d in _halves(text)]
            pieces.append({"text": "", "index": index, "logprobs": None, "finish_reason": choice.get("finish_reason")})
        chunks.extend({**base, "choices": [piece]} for piece in pieces)
    if "usage" in body:
        chunks.append({**base, "choices": [], "usage": body["usage"]})
    return chunks


def sse_named(events: list[dict[str, Any]]) -> list[bytes]:
    return [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events]


def sse_data(chunks: list[Any], done: bool = True) -> list[bytes]:
    lines = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    return [*lines, b"data: [DONE]\n\n"] if done else lines


# ---- data faults: bend a body before it is served (plain) or turned into events (streamed) ----

RESPONSES_OPTIONAL = (
    "status",
    "background",
    "error",
    "incomplete_details",
    "instructions",
    "max_output_tokens",
    "previous_response_id",
    "reasoning",
    "service_tier",
    "store",
    "temperature",
    "text",
    "top_p",
    "truncation",
    "usage",
    "user",
    "metadata",
    "conversation",
)


def bend(kind: str, fault: str, body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    large = '{"city":"' + "x" * LARGE_TEXT_BYTES + '"}'
    if fault == "missing_usage":
        body.pop("usage", None)
    elif fault == "nulls":
        if kind == "responses":
            body.update(dict.fromkeys(RESPONSES_OPTIONAL))
            for item in body.get("output") or []:
                item["status"] = None
                for part in item.get("content") or []:
                    part["logprobs"] = None
        elif kind in ("chat", "completions"):
            body.update(dict.fromkeys(("usage", "system_fingerprint", "service_tier")))
            for choice in body["choices"]:
                choice["logprobs"] = None
                if kind == "chat":
                    keys = ("content", "refusal", "tool_calls", "function_call", "audio", "annotations")
                    choice["message"].update(dict.fromkeys(keys))
        else:
            body["usage"] = None
    elif fault == "unknown_types":
        body["future_field"] = {"nested": [1, "two", None]}
        if kind == "responses":
            unknown = {"id": "fi_0001", "type": "future_item", "payload": {"a": 1}, "status": "completed"}
            body.setdefault("output", []).insert(0, unknown)
        elif kind in ("chat", "completions"):
            body["choices"][0]["finish_reason"] = "future_reason"
            body["object"] = "future.object"
        else:
            body["data"][0]["object"] = "future_embedding"
    elif fault == "large_body":
        if kind == "responses" and body.get("output"):
            body["output"][-1]["content"][0]["text"] = large
        elif kind == "chat":
            body["choices"][0]["message"]["content"] = large
        elif kind == "completions":
            body["choices"][0]["text"] = large
        elif kind == "embeddings":
            floats = LARGE_TEXT_BYTES // 4
            body["data"][0]["embedding"] = base64.b64encode(b"\x00\x00\x80\x3f" * floats).decode()
    return body


# ---- operations ----


@dataclass(frozen=True)
class Op:
    name: str
    kind: str  # responses | chat | completions | embeddings
    call: Callable[[Any], Any]  # the same lambda serves the sync and the async client
    span_name: str
    streamed: bool = False
    helper: str | None = None  # a stream helper's final accessor, e.g. "get_final_response"
    pending: bool = False  # acts on a background response created (successfully) first
    fetch: bool = False  # a retrieve of a response this process never started
    requires: str | None = None  # an SDK feature older releases lack (see `sdk_has`)

    def __str__(self) -> str:
        return self.name


def _responses_span() -> str:
    return f"chat {MODEL}"


OPS = [
    Op("responses.create", "responses", lambda c: c.responses.create(model=MODEL, input="hi"), _responses_span()),
    Op(
        "responses.parse",
        "responses",
        lambda c: c.responses.parse(model=MODEL, input="hi", text_format=City),
        _responses_span(),
    ),
    Op(
        "responses.create(stream)",
        "responses",
        lambda c: c.responses.create(model=MODEL, input="hi", stream=True),
        _responses_span(),
        streamed=True,
    ),
    Op(
        "responses.stream()",
        "responses",
        lambda c: c.responses.stream(model=MODEL, input="hi"),
        _responses_span(),
        streamed=True,
        helper="get_final_response",
    ),
    Op(
        "responses.retrieve",
        "responses",
        lambda c: c.responses.retrieve(OTHER_ID),
        "fetch_response",
        fetch=True,
    ),
    Op(
        "responses.retrieve(stream)",
        "responses",
        lambda c: c.responses.retrieve(OTHER_ID, stream=True),
        "fetch_response",
        streamed=True,
        fetch=True,
        requires="responses.retrieve(stream)",
    ),
    Op(
        "responses.retrieve(pending)",
        "responses",
        lambda c: c.responses.retrieve(BACKGROUND_ID),
        _responses_span(),
        pending=True,
    ),
    Op(
        "responses.cancel",
        "responses",
        lambda c: c.responses.cancel(BACKGROUND_ID),
        _responses_span(),
        pending=True,
        requires="responses.cancel",
    ),
    Op(
        "chat.create",
        "chat",
        lambda c: c.chat.completions.create(model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}]),
        f"chat {CHAT_MODEL}",
    ),
    Op(
        "chat.parse",
        "chat",
        lambda c: c.chat.completions.parse(
            model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}], response_format=City
        ),
        f"chat {CHAT_MODEL}",
        requires="chat.parse",
    ),
    Op(
        "chat.create(stream)",
        "chat",
        lambda c: c.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        ),
        f"chat {CHAT_MODEL}",
        streamed=True,
    ),
    Op(
        "chat.stream()",
        "chat",
        lambda c: c.chat.completions.stream(model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}]),
        f"chat {CHAT_MODEL}",
        streamed=True,
        helper="get_final_completion",
        requires="chat.stream",
    ),
    Op(
        "completions.create",
        "completions",
        lambda c: c.completions.create(model=COMPLETIONS_MODEL, prompt="hi"),
        f"text_completion {COMPLETIONS_MODEL}",
    ),
    Op(
        "completions.create(stream)",
        "completions",
        lambda c: c.completions.create(model=COMPLETIONS_MODEL, prompt="hi", stream=True),
        f"text_completion {COMPLETIONS_MODEL}",
        streamed=True,
    ),
    Op(
        "embeddings.create",
        "embeddings",
        lambda c: c.embeddings.create(model=EMBEDDINGS_MODEL, input="hi"),
        f"embeddings {EMBEDDINGS_MODEL}",
    ),
]

HTTP_FAULTS = ["http_400", "http_401", "http_404", "http_429", "http_500"]
TRANSPORT_FAULTS = ["retries_exhausted", "retried_then_ok", "timeout", "reset_before_response", "reset_mid_body"]
BODY_FAULTS = ["malformed_json", "missing_usage", "nulls", "unknown_types", "large_body"]
STREAM_FAULTS = ["sse_error_event", "cut_before_terminal"]
RETRYING_FAULTS = frozenset(("retries_exhausted", "retried_then_ok"))


def sdk_has(feature: str | None) -> bool:
    """Whether the installed SDK has what an operation calls (1.66 lacks cancel, streamed retrieve, chat parse)."""
    if feature is None:
        return True
    from openai.resources.chat.completions import Completions
    from openai.resources.responses import Responses

    if feature == "responses.cancel":
        return hasattr(Responses, "cancel")
    if feature == "responses.retrieve(stream)":
        return "stream" in inspect.signature(Responses.retrieve).parameters
    return hasattr(Completions, feature.rsplit(".", 1)[-1])  # chat.parse, chat.stream


def background_kwargs() -> dict[str, Any]:
    """`background=True`, through `extra_body` on SDKs (1.66) whose `create` has no such parameter."""
    from openai.resources.responses import Responses

    if "background" in inspect.signature(Responses.create).parameters:
        return {"background": True}
    return {"extra_body": {"background": True}}


def applies(op: Op, fault: str) -> bool:
    return op.streamed or fault not in STREAM_FAULTS


CASES = [
    pytest.param(op, fault, id=f"{op.name}-{fault}")
    for op in OPS
    for fault in HTTP_FAULTS + TRANSPORT_FAULTS + BODY_FAULTS + STREAM_FAULTS
    if applies(op, fault)
]


# ---- the faulty server ----


class FaultyServer:
    """Answers every request of one case; `recovered` switches the target route back to healthy answers."""

    def __init__(self, op: Op, fault: str, is_async: bool) -> None:
        self.op = op
        self.fault = fault
        self.is_async = is_async
        self.attempts = 0
        self.recovered = False

    # What a healthy server sends for the operation's request, after the data fault bent it.
    def _healthy_body(self, fault: str) -> dict[str, Any]:
        op = self.op
        if op.kind == "responses":
            if op.fetch:
                body = responses_body(OTHER_ID)
            elif op.pending:
                status = "cancelled" if op.name == "responses.cancel" else "completed"
                body = responses_body(BACKGROUND_ID, status=status, background=True)
            else:
                body = responses_body()
        else:
            body = {"chat": chat_body, "completions": completions_body, "embeddings": embeddings_body}[op.kind]()
        return bend(op.kind, fault, body)

    def _healthy_chunks(self, fault: str, request: Any) -> list[bytes]:
        body = self._healthy_body(fault)
        if self.op.kind == "responses":
            events = responses_events(body)
            if fault == "unknown_types":
                future = {"type": "response.future_event", "payload": {"x": 1}, "sequence_number": 2}
                events.insert(2, future)
            if fault == "sse_error_event":
                error = {"type": "error", "code": "server_error", "message": "The server had an error", "param": None}
                events = [*events[:4], {**error, "sequence_number": 4}]
            if fault == "cut_before_terminal":
                events = events[:-1]
            return sse_named(events)
        chunks = completion_chunks(body, chat=self.op.kind == "chat")
        if fault == "unknown_types":
            chunks.insert(1, {"object": "future.chunk", "id": "future", "choices": [], "future": True})
        if fault == "sse_error_event":
            error = {"error": {"message": "The server had an error", "type": "server_error", "code": None}}
            return sse_data([*chunks[:2], error], done=False)
        if fault == "cut_before_terminal":
            return sse_data(chunks[:2], done=False)
        return sse_data(chunks)

    def _payload(self, request: Any, fault: str) -> tuple[list[bytes], str]:
        streamed = self.op.streamed
        if streamed:
            chunks = self._healthy_chunks(fault, request)
            content_type = "text/event-stream; charset=utf-8"
        else:
            chunks = [json.dumps(self._healthy_body(fault)).encode()]
            content_type = "application/json"
        if fault == "malformed_json":
            if streamed:
                name = "event: response.output_text.delta\n" if self.op.kind == "responses" else ""
                bad = f'{name}data: {{"type": "response.output_text.delta", "delta": "Par\n\n'.encode()
                chunks = [*chunks[:2], bad, *chunks[2:]]
            else:
                chunks = [chunks[0][: len(chunks[0]) // 2]]
        return chunks, content_type

    def _body_stream(self, chunks: list[bytes], fail_after: int | None) -> Any:
        def error() -> Exception:
            return HTTP.ReadError("[Errno 104] Connection reset by peer")

        if self.is_async:

            async def agen() -> AsyncIterator[bytes]:
                for number, chunk in enumerate(chunks):
                    if fail_after is not None and number == fail_after:
                        raise error()
                    yield chunk

            return agen()

        def gen() -> Iterator[bytes]:
            for number, chunk in enumerate(chunks):
                if fail_after is not None and number == fail_after:
                    raise error()
                yield chunk

        return gen()

    def _error_response(self, status: int) -> Any:
        codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
        kind = {429: "requests", 500: "server_error"}.get(status, "invalid_request_error")
        error = {"message": f"Injected HTTP {status}.", "type": kind, "param": None, "code": codes.get(status)}
        headers = {"retry-after-ms": "1"} if status >= 500 else {}
        return HTTP.Response(status, headers=headers, json={"error": error})

    def __call__(self, request: Any) -> Any:
        if self.op.pending and request.method == "POST" and request.url.path.endswith("/responses"):
            queued = responses_body(BACKGROUND_ID, status="queued", background=True)
            return HTTP.Response(200, json=queued)
        self.attempts += 1
        fault = "none" if self.recovered else self.fault
        if fault.startswith("http_"):
            return self._error_response(int(fault[5:]))
        if fault == "retries_exhausted" or (fault == "retried_then_ok" and self.attempts <= 2):
            return self._error_response(500)
        if fault == "timeout":
            raise HTTP.ReadTimeout("The read operation timed out")
        if fault == "reset_before_response":
            raise HTTP.ReadError("[Errno 104] Connection reset by peer")
        chunks, content_type = self._payload(request, fault)
        headers = {"content-type": content_type, "x-request-id": "req_fault"}
        if fault == "reset_mid_body":
            if len(chunks) == 1:  # one JSON body: cut it in the middle
                chunks = [chunks[0][: len(chunks[0]) // 2], chunks[0][len(chunks[0]) // 2 :]]
            return HTTP.Response(200, headers=headers, content=self._body_stream(chunks, fail_after=len(chunks) // 2))
        if len(chunks) == 1 and not self.op.streamed:
            return HTTP.Response(200, headers=headers, content=chunks[0])
        return HTTP.Response(200, headers=headers, content=self._body_stream(chunks, fail_after=None))


# ---- what the caller saw ----


def dump(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(warnings=False)
    return value


@dataclass
class Outcome:
    phase: str = "setup"
    value: Any = None
    items: list[Any] = field(default_factory=list)
    error: BaseException | None = None

    def summary(self) -> tuple[Any, ...]:
        error = None if self.error is None else (type(self.error), str(self.error))
        return (self.phase, self.value, self.items, error)


def run_sync(op: Op, client: openai.OpenAI) -> Outcome:
    outcome = Outcome()
    try:
        if op.pending:
            client.responses.create(model=MODEL, input="hi", **background_kwargs())
        outcome.phase = "call"
        result = op.call(client)
        if op.helper:
            with result as stream:
                outcome.phase = "iterate"
                outcome.items.extend(dump(item) for item in stream)
                outcome.phase = "final"
                outcome.value = dump(getattr(stream, op.helper)())
        elif op.streamed:
            outcome.phase = "iterate"
            outcome.items.extend(dump(item) for item in result)
        else:
            outcome.value = dump(result)
        outcome.phase = "done"
    except Exception as error:
        outcome.error = error
    return outcome


async def run_async(op: Op, client: openai.AsyncOpenAI) -> Outcome:
    outcome = Outcome()
    try:
        if op.pending:
            await client.responses.create(model=MODEL, input="hi", **background_kwargs())
        outcome.phase = "call"
        if op.helper:
            async with op.call(client) as stream:
                outcome.phase = "iterate"
                outcome.items.extend([dump(item) async for item in stream])
                outcome.phase = "final"
                outcome.value = dump(await getattr(stream, op.helper)())
        elif op.streamed:
            result = await op.call(client)
            outcome.phase = "iterate"
            outcome.items.extend([dump(item) async for item in result])
        else:
            outcome.value = dump(await op.call(client))
        outcome.phase = "done"
    except Exception as error:
        outcome.error = error
    return outcome


# ---- checks ----


@pytest.fixture(autouse=True)
def no_retry_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's backoff between attempts, made instant so retry cases stay fast."""

    def sleep(self: Any, **kwargs: Any) -> None:
        return None

    async def async_sleep(self: Any, **kwargs: Any) -> None:
        return None

    if not hasattr(openai._base_client.SyncAPIClient, "_sleep_for_retry"):
        # openai < 1.77 sleeps `_calculate_retry_timeout()` seconds inside `_retry_request` instead
        monkeypatch.setattr(openai._base_client.BaseClient, "_calculate_retry_timeout", lambda *args, **kwargs: 0.0)
        return
    # openai 1.66 has no `_sleep_for_retry`; there the `retry-after-ms: 1` of the injected 500s keeps it fast.
    if hasattr(openai._base_client.SyncAPIClient, "_sleep_for_retry"):
        monkeypatch.setattr(openai._base_client.SyncAPIClient, "_sleep_for_retry", sleep)
        monkeypatch.setattr(openai._base_client.AsyncAPIClient, "_sleep_for_retry", async_sleep)


class Harness:
    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        exporter: InMemorySpanExporter,
        counter: SpanCounter,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.exporter = exporter
        self.counter = counter
        self.instrumentor = OpenAIInstrumentor()

    def instrument(self) -> OpenAIInstrumentor:
        self.instrumentor.instrument(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)
        return self.instrumentor

    def uninstrument(self) -> None:
        if self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrumentor.uninstrument()


@pytest.fixture
def harness(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    span_counter: SpanCounter,
) -> Iterator[Harness]:
    harness = Harness(tracer_provider, meter_provider, span_exporter, span_counter)
    try:
        yield harness
    finally:
        harness.uninstrument()


def is_transient(error: BaseException | None) -> bool:
    """Errors after which a background response may still finish: its span stays pending."""
    return error is not None and getattr(error, "status_code", None) not in FINAL_ERROR_STATUSES


def expected_error_type(op: Op, fault: str, outcome: Outcome) -> str | None:
    if outcome.error is not None and outcome.phase in ("call", "iterate"):
        return type(outcome.error).__qualname__

    def is_error_event(item: Any) -> bool:
        # openai < 1.99 yields an SSE event not named `response.*` as a typeless {"data", "event"} model
        return isinstance(item, dict) and (item.get("type") == "error" or item.get("event") == "error")

    if any(is_error_event(item) for item in outcome.items):
        return "server_error"  # yielded as an event, not raised: the span still says what happened
    return None


def check_case(
    harness: Harness, op: Op, fault: str, plain: Outcome, traced: Outcome, attempts: tuple[int, int]
) -> None:
    assert traced.summary() == plain.summary(), "the instrumented call must return or raise exactly the same"
    if fault in RETRYING_FAULTS:
        assert attempts == (3, 3), "three HTTP attempts inside one call"
    registry = harness.instrumentor.response_registry
    assert registry is not None
    spans: list[ReadableSpan] = list(harness.exporter.get_finished_spans())
    assert len(spans) == 1, [span.name for span in spans]
    span = spans[0]
    assert span.name == op.span_name
    assert harness.counter.started == harness.counter.ended == 1
    assert registry.sizes()[0] == 0
    attributes = dict(span.attributes or {})
    error_type = expected_error_type(op, fault, plain)
    if error_type is not None and op.helper and plain.phase == "iterate" and "error.type" not in attributes:
        # The helper's own code raised (openai 1.66 chokes on some bodies), not the stream under it: the
        # instrumentation sees the helper close the response (or the terminal event the helper choked on).
        assert attributes.get("openai.response.end_reason") in ("closed", None)
        error_type = None
    if error_type is not None:
        assert span.status.status_code is StatusCode.ERROR
        assert attributes.get("error.type") == error_type
    else:
        assert span.status.status_code is not StatusCode.ERROR, span.status
        assert "error.type" not in attributes
    if fault == "cut_before_terminal" and not op.fetch:
        assert attributes.get("openai.response.finish_observed") is False


def check_recovered(harness: Harness) -> None:
    (span,) = harness.exporter.get_finished_spans()
    assert span.status.status_code is not StatusCode.ERROR
    assert span.name == f"chat {MODEL}"


def _client_kwargs(fault: str) -> dict[str, Any]:
    return {"max_retries": 2} if fault in RETRYING_FAULTS else {}


def _transient_pending(op: Op, outcome: Outcome) -> bool:
    return op.pending and outcome.phase == "call" and is_transient(outcome.error)


@pytest.mark.parametrize(("op", "fault"), CASES)
def test_fault_sync(harness: Harness, op: Op, fault: str) -> None:
    if not sdk_has(op.requires):
        pytest.skip(f"this openai has no {op.requires}")
    plain_server = FaultyServer(op, fault, is_async=False)
    with handler_client(plain_server, **_client_kwargs(fault)) as client:
        plain = run_sync(op, client)

    harness.instrument()
    server = FaultyServer(op, fault, is_async=False)
    with handler_client(server, **_client_kwargs(fault)) as client:
        traced = run_sync(op, client)
        if _transient_pending(op, traced):
            # A poll or cancel that failed transiently leaves the background response's span open...
            assert harness.counter.open == 1
            assert harness.instrumentor.response_registry.sizes()[0] == 1  # type: ignore[union-attr]
            # ...and the next successful one ends it.
            server.recovered = True
            op.call(client)
            assert traced.summary() == plain.summary()
            assert harness.counter.open == 0
            assert harness.instrumentor.response_registry.sizes()[0] == 0  # type: ignore[union-attr]
            check_recovered(harness)
            return
    check_case(harness, op, fault, plain, traced, (plain_server.attempts, server.attempts))


@pytest.mark.parametrize(("op", "fault"), CASES)
async def test_fault_async(harness: Harness, op: Op, fault: str) -> None:
    if not sdk_has(op.requires):
        pytest.skip(f"this openai has no {op.requires}")
    plain_server = FaultyServer(op, fault, is_async=True)
    async with handler_async_client(plain_server, **_client_kwargs(fault)) as client:
        plain = await run_async(op, client)

    harness.instrument()
    server = FaultyServer(op, fault, is_async=True)
    async with handler_async_client(server, **_client_kwargs(fault)) as client:
        traced = await run_async(op, client)
        if _transient_pending(op, traced):
            assert harness.counter.open == 1
            assert harness.instrumentor.response_registry.sizes()[0] == 1  # type: ignore[union-attr]
            server.recovered = True
            await op.call(client)
            assert traced.summary() == plain.summary()
            assert harness.counter.open == 0
            assert harness.instrumentor.response_registry.sizes()[0] == 0  # type: ignore[union-attr]
            check_recovered(harness)
            return
    check_case(harness, op, fault, plain, traced, (plain_server.attempts, server.attempts))


def test_fault_case_count() -> None:
    """The matrix: every operation against every fault that applies to it, run sync and async."""
    assert len(OPS) == 15
    assert len(CASES) == 15 * 15 + 6 * 2 == 237  # 15 faults for all, 2 more for the 6 streamed operations
