"""Replays of every recorded Chat Completions cassette (chat, functions, chat_parse, chat_response_format,
openai_metrics) through the instrumented SDK, asserting span attributes equal to the recorded bodies.

The recorded requests come from openai 1.x tests; each replay sends the recorded request body again
(vcrpy's default matcher ignores bodies) and makes as many calls as the cassette holds interactions, in
order. Expected values are read from the recorded responses (gzip bodies decoded, SSE streams parsed),
and a few are pinned literally below. The `_with_events_with_content` / `_with_events_with_no_content`
cassettes replay the same traffic; content capture is off by default, so no content may appear.

Not replayed: `test_assistant/*` (the deprecated Assistants beta, which is not instrumented).

The replay engine here is shared with test_completions_cassettes.py and test_embeddings_cassettes.py.
"""

from __future__ import annotations

import base64
import functools
import gc
import gzip
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pydantic
import pytest
import yaml
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from conftest import CASSETTES, HTTP, cassette, metric_points, recorded_async_client, recorded_client

CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
)
USAGE_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
)
# Every attribute a response (or its failure) can set; one not expected must be absent.
RESULT_KEYS = (
    "gen_ai.response.id",
    "gen_ai.response.model",
    "gen_ai.response.finish_reasons",
    "openai.response.service_tier",
    "openai.response.system_fingerprint",
    "gen_ai.embeddings.dimension.count",
    "openai.response.finish_observed",
    "error.type",
    *USAGE_KEYS,
)
ERROR_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 429: "RateLimitError"}


@pytest.fixture(autouse=True)
def freeze_before_test() -> None:
    """conftest freezes the heap after collection; what the SDK builds lazily since (pydantic models, decoded
    cassettes) would be scanned again by every teardown's gc.collect(). Freezing before each test leaves
    each collection only what that test created."""
    gc.freeze()


# ---- reading cassettes ----


@dataclass
class Interaction:
    """One recorded request and its response, decoded."""

    method: str
    url: str
    request: dict[str, Any]
    status: int
    body: dict[str, Any] | None  # a JSON response
    chunks: list[dict[str, Any]] | None  # an SSE response, without [DONE]

    @property
    def base_url(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/v1"

    @property
    def server(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        assert parts.hostname is not None
        return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def streamed(self) -> bool:
        return bool(self.request.get("stream"))


def _header(headers: dict[str, Any], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return ""


@functools.cache
def load(relative: str) -> list[Interaction]:
    path = CASSETTES / relative
    if not path.exists():
        pytest.skip(f"cassette {relative} not available")
    data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    interactions = []
    for recorded in data["interactions"]:
        request, response = recorded["request"], recorded["response"]
        raw = response["body"]["string"]
        if isinstance(raw, str):
            raw = raw.encode()
        if _header(response["headers"], "content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        text = raw.decode()
        body = chunks = None
        if "text/event-stream" in _header(response["headers"], "content-type"):
            lines = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
            chunks = [json.loads(line) for line in lines if line.strip() != "[DONE]"]
        else:
            body = json.loads(text)
        request_body = request["body"]
        interactions.append(
            Interaction(
                method=request["method"],
                url=request["uri"],
                request=json.loads(request_body) if request_body else {},
                status=response["status"]["code"],
                body=body,
                chunks=chunks,
            )
        )
    return interactions


# ---- expected attributes, read from the recording ----


def _put(expected: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != "":
        expected[key] = value


def _usage(expected: dict[str, Any], usage: dict[str, Any] | None) -> None:
    if not usage:
        return
    _put(expected, "gen_ai.usage.input_tokens", usage.get("prompt_tokens"))
    _put(expected, "gen_ai.usage.output_tokens", usage.get("completion_tokens"))
    _put(
        expected,
        "gen_ai.usage.cache_read.input_tokens",
        (usage.get("prompt_tokens_details") or {}).get("cached_tokens"),
    )
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    _put(expected, "gen_ai.usage.reasoning.output_tokens", reasoning)


def expected_completion(interaction: Interaction) -> dict[str, Any]:
    """Chat or legacy completion: what the span must carry after the whole response was read."""
    if interaction.status >= 400:
        return {"error.type": ERROR_TYPES[interaction.status]}
    expected: dict[str, Any] = {}
    if interaction.chunks is not None:
        head = interaction.chunks[0]
        usages = [chunk["usage"] for chunk in interaction.chunks if chunk.get("usage")]
        usage = usages[-1] if usages else None  # usage only when the stream carried it
        reasons: dict[int, str] = {}
        for chunk in interaction.chunks:
            for choice in chunk.get("choices") or []:
                if choice.get("finish_reason"):
                    reasons[choice.get("index") or 0] = choice["finish_reason"]
        finish_reasons = tuple(reasons[index] for index in sorted(reasons))
    else:
        assert interaction.body is not None
        head = interaction.body
        usage = head.get("usage")
        finish_reasons = tuple(choice["finish_reason"] for choice in interaction.body["choices"])
    _put(expected, "gen_ai.response.id", head.get("id"))
    _put(expected, "gen_ai.response.model", head.get("model"))
    _put(expected, "openai.response.service_tier", head.get("service_tier"))
    _put(expected, "openai.response.system_fingerprint", head.get("system_fingerprint"))
    _usage(expected, usage)
    if finish_reasons:
        expected["gen_ai.response.finish_reasons"] = finish_reasons
    return expected


def expected_embeddings(interaction: Interaction) -> dict[str, Any]:
    if interaction.status >= 400:
        return {"error.type": ERROR_TYPES[interaction.status]}
    body = interaction.body
    assert body is not None
    expected: dict[str, Any] = {"gen_ai.response.model": body["model"]}
    _put(expected, "gen_ai.usage.input_tokens", body["usage"]["prompt_tokens"])
    vector = body["data"][0]["embedding"]
    # The SDK asks for base64 and decodes it into float32 values for the caller.
    count = len(vector) if isinstance(vector, list) else len(base64.b64decode(vector)) // 4
    expected["gen_ai.embeddings.dimension.count"] = count
    return expected


def expected_request(interaction: Interaction, operation: str) -> dict[str, Any]:
    body = interaction.request
    address, port = interaction.server
    expected: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": body["model"],
        "gen_ai.provider.name": "azure.ai.openai" if address.endswith(".openai.azure.com") else "openai",
        "server.address": address,
        "server.port": port,
    }
    if operation == "chat":
        expected["openai.api.type"] = "chat_completions"
        if (body.get("response_format") or {}).get("type") in ("json_schema", "json_object"):
            expected["gen_ai.output.type"] = "json"
    if operation == "embeddings":
        expected["gen_ai.request.encoding_formats"] = ("base64",)
    if interaction.streamed:
        expected["gen_ai.request.stream"] = True
    _put(expected, "openai.request.service_tier", body.get("service_tier"))
    for key, name in (
        ("gen_ai.request.temperature", "temperature"),
        ("gen_ai.request.top_p", "top_p"),
        ("gen_ai.request.seed", "seed"),
        ("gen_ai.request.max_tokens", "max_tokens"),
    ):
        _put(expected, key, body.get(name))
    return expected


def assert_span(span: ReadableSpan, interaction: Interaction, operation: str, expected: dict[str, Any]) -> None:
    attributes = dict(span.attributes or {})
    assert span.name == f"{operation} {interaction.request['model']}"
    assert span.kind is SpanKind.CLIENT
    for key, value in {**expected_request(interaction, operation), **expected}.items():
        assert attributes.get(key) == value, f"{key}: {attributes.get(key)!r} != {value!r}"
    for key in RESULT_KEYS:
        if key not in expected:
            assert key not in attributes, f"{key} should not be set: {attributes[key]!r}"
    # Content capture is opt-in: nothing of the messages, by attribute or event.
    for key in CONTENT_KEYS:
        assert key not in attributes
    assert not span.events
    if "error.type" in expected:
        assert span.status.status_code is StatusCode.ERROR
    else:
        assert span.status.status_code is StatusCode.UNSET


# ---- replaying ----


@dataclass(frozen=True)
class Case:
    """A recorded test: how to call the SDK for each of its interactions."""

    name: str  # folder/file without .yaml
    is_async: bool = False
    variants: bool = False  # also _with_events_with_content / _with_events_with_no_content
    call: str = "create"  # create | parse | raw | azure
    parse_model: type[pydantic.BaseModel] | None = None
    consume: str = "all"  # how a stream is read
    extra: dict[str, Any] = field(default_factory=dict)

    def files(self) -> list[str]:
        suffixes = ("", "_with_events_with_content", "_with_events_with_no_content") if self.variants else ("",)
        return [f"{self.name}{suffix}.yaml" for suffix in suffixes]


def expand(cases: list[Case]) -> list[Any]:
    return [pytest.param(case, path, id=Path(path).stem) for case in cases for path in case.files()]


@functools.lru_cache(maxsize=1)
def ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle costs ~50 ms per client; replays never reach the network, so share one."""
    return ssl.create_default_context()


def client_for(interaction: Interaction, case: Case) -> Any:
    """One client per cassette, aimed at the recorded host (every interaction of a cassette shares it)."""
    kwargs: dict[str, Any] = {"http_client": (HTTP.AsyncClient if case.is_async else HTTP.Client)(verify=ssl_context())}
    if interaction.server[0] != "api.openai.com" and case.call != "azure":
        kwargs["base_url"] = interaction.base_url  # vLLM, a local proxy, DeepSeek...
    if case.call == "azure":
        parts = urlsplit(interaction.url)
        deployment = parts.path.split("/deployments/")[1].split("/")[0]
        api_version = dict(item.split("=") for item in parts.query.split("&"))["api-version"]
        factory: Callable[..., Any] = openai.AsyncAzureOpenAI if case.is_async else openai.AzureOpenAI
        return factory(
            api_key="test-key",
            api_version=api_version,
            azure_endpoint=f"{parts.scheme}://{parts.netloc}",
            azure_deployment=deployment,
            max_retries=0,
            **kwargs,
        )
    return (recorded_async_client if case.is_async else recorded_client)(**kwargs)


def resource_for(client: Any, operation: str, case: Case) -> Any:
    resource = {
        "chat": lambda: client.chat.completions,
        "text_completion": lambda: client.completions,
        "embeddings": lambda: client.embeddings,
        "image": lambda: client.images,
    }[operation]()
    return resource.with_raw_response if case.call == "raw" else resource


def request_arguments(interaction: Interaction, operation: str) -> dict[str, Any]:
    arguments = dict(interaction.request)
    if operation == "embeddings":
        arguments.pop("encoding_format", None)  # as the recorded test: the SDK adds base64 itself
    return arguments


def sync_call(client: Any, interaction: Interaction, operation: str, case: Case) -> Any:
    resource = resource_for(client, operation, case)
    arguments = request_arguments(interaction, operation)
    if case.call == "parse":
        return resource.parse(
            model=arguments["model"], messages=arguments["messages"], response_format=case.parse_model
        )
    method = resource.generate if operation == "image" else resource.create
    result = method(**arguments)
    if case.call == "raw":
        result = result.parse()
    if interaction.streamed:
        return list(result)
    return result


async def async_call(client: Any, interaction: Interaction, operation: str, case: Case) -> Any:
    resource = resource_for(client, operation, case)
    arguments = request_arguments(interaction, operation)
    if case.call == "parse":
        return await resource.parse(
            model=arguments["model"], messages=arguments["messages"], response_format=case.parse_model
        )
    method = resource.generate if operation == "image" else resource.create
    result = await method(**arguments)
    if case.call == "raw":
        result = result.parse()
    if interaction.streamed:
        return [item async for item in result]
    return result


def _ok_or_recorded_error(interaction: Interaction, call: Callable[[], Any]) -> Any:
    if interaction.status < 400:
        return call()
    with pytest.raises(openai.APIStatusError) as raised:
        call()
    assert raised.value.status_code == interaction.status
    assert type(raised.value).__name__ == ERROR_TYPES[interaction.status]
    return None


async def _aok_or_recorded_error(interaction: Interaction, call: Callable[[], Any]) -> Any:
    if interaction.status < 400:
        return await call()
    with pytest.raises(openai.APIStatusError) as raised:
        await call()
    assert raised.value.status_code == interaction.status
    assert type(raised.value).__name__ == ERROR_TYPES[interaction.status]
    return None


def replay(path: str, case: Case, operation: str) -> tuple[list[Interaction], list[Any]]:
    """Makes the recorded calls in order (sync); returns the interactions and what the SDK returned."""
    interactions = load(path)
    results = []
    with cassette(path) as recorded, client_for(interactions[0], case) as client:
        for interaction in interactions:
            results.append(
                _ok_or_recorded_error(interaction, lambda i=interaction: sync_call(client, i, operation, case))
            )
        assert recorded.play_count == len(interactions)
        assert recorded.all_played
    return interactions, results


async def areplay(path: str, case: Case, operation: str) -> tuple[list[Interaction], list[Any]]:
    interactions = load(path)
    results = []
    async with client_for(interactions[0], case) as client:
        with cassette(path) as recorded:
            for interaction in interactions:
                results.append(
                    await _aok_or_recorded_error(
                        interaction, lambda i=interaction: async_call(client, i, operation, case)
                    )
                )
        assert recorded.play_count == len(interactions)
        assert recorded.all_played
    return interactions, results


async def run_case(path: str, case: Case, operation: str) -> tuple[list[Interaction], list[Any]]:
    if case.is_async:
        return await areplay(path, case, operation)
    return replay(path, case, operation)


def check_spans(
    span_exporter: Any,
    span_counter: Any,
    interactions: list[Interaction],
    operation: str,
    expected_result: Callable[[Interaction], dict[str, Any]],
) -> list[ReadableSpan]:
    spans = span_exporter.get_finished_spans()
    assert len(spans) == len(interactions)
    assert span_counter.started == span_counter.ended == len(interactions)
    for span, interaction in zip(spans, interactions, strict=True):
        assert_span(span, interaction, operation, expected_result(interaction))
    return list(spans)


def covered_files(folders: tuple[str, ...], tables: list[list[Case]]) -> tuple[set[str], set[str]]:
    """(files on disk in the folders, files the tables replay)."""
    on_disk = {f"{folder}/{path.name}" for folder in folders for path in (CASSETTES / folder).glob("*.yaml")}
    listed = {path for table in tables for case in table for path in case.files()}
    return on_disk, listed


# ---- the chat tables ----


class StructuredAnswer(pydantic.BaseModel):
    """The recorded tests' response_format for chat_parse."""

    rating: int
    joke: str


class Poem(pydantic.BaseModel):
    """The recorded metrics test's response_format (named StructuredAnswer there)."""

    poem: str
    style: str


CHAT_CASES = [
    Case("test_chat/test_chat", variants=True),
    Case("test_chat/test_chat_async_context_propagation", is_async=True, variants=True),
    Case("test_chat/test_chat_async_streaming", is_async=True, variants=True),
    Case("test_chat/test_chat_context_propagation", variants=True),
    Case("test_chat/test_chat_history_message_dict"),
    Case("test_chat/test_chat_history_message_pydantic"),
    Case("test_chat/test_chat_pydantic_based_tool_calls", variants=True),
    Case("test_chat/test_chat_reasoning"),
    Case("test_chat/test_chat_streaming", variants=True),
    Case("test_chat/test_chat_streaming_exception_during_consumption"),
    Case("test_chat/test_chat_streaming_memory_leak_prevention"),
    Case("test_chat/test_chat_streaming_not_consumed"),
    Case("test_chat/test_chat_streaming_partial_consumption"),
    Case("test_chat/test_chat_tool_calls", variants=True),
    Case("test_chat/test_chat_tools", variants=True),
    Case("test_chat/test_chat_tools_async_streaming", is_async=True, variants=True),
    Case("test_chat/test_chat_tools_streaming", variants=True),
    Case("test_chat/test_chat_with_messages_attributes"),
    Case("test_chat/test_chat_with_service_tier"),
    Case("test_chat/test_with_asyncio_run", is_async=True, variants=True),
]
FUNCTION_CASES = [
    Case("test_functions/test_open_ai_function_calls", variants=True),
    Case("test_functions/test_open_ai_function_calls_tools", variants=True),
    Case("test_functions/test_open_ai_function_calls_tools_parallel", variants=True),
    Case("test_functions/test_open_ai_function_calls_tools_streaming", variants=True),
    Case("test_functions/test_open_ai_function_calls_tools_streaming_parallel", variants=True),
]
PARSE_CASES = [
    Case("test_chat_parse/test_parsed_completion", variants=True, call="parse", parse_model=StructuredAnswer),
    Case("test_chat_parse/test_parsed_refused_completion", variants=True, call="parse", parse_model=StructuredAnswer),
    Case(
        "test_chat_parse/test_async_parsed_completion",
        is_async=True,
        variants=True,
        call="parse",
        parse_model=StructuredAnswer,
    ),
    Case(
        "test_chat_parse/test_async_parsed_refused_completion",
        is_async=True,
        variants=True,
        call="parse",
        parse_model=StructuredAnswer,
    ),
]
RESPONSE_FORMAT_CASES = [
    Case("test_chat_response_format/test_chat_response_format"),
    Case("test_chat_response_format/test_async_chat_response_format", is_async=True),
]
METRICS_CASES = [
    Case("test_openai_metrics/test_chat_completion_metrics"),
    Case("test_openai_metrics/test_chat_completion_metrics_stream"),
    Case("test_openai_metrics/test_chat_parsed_completion_metrics", call="parse", parse_model=Poem),
    Case("test_openai_metrics/test_chat_streaming_metrics"),
]
# Replayed in test_embeddings_cassettes.py (embeddings) and below (images: not instrumented).
OTHER_METRICS_FILES = {
    "test_openai_metrics/test_embeddings_metrics.yaml",
    "test_openai_metrics/test_image_gen_metrics.yaml",
}


def test_every_chat_cassette_is_replayed() -> None:
    folders = ("test_chat", "test_functions", "test_chat_parse", "test_chat_response_format", "test_openai_metrics")
    on_disk, listed = covered_files(
        folders, [CHAT_CASES, FUNCTION_CASES, PARSE_CASES, RESPONSE_FORMAT_CASES, METRICS_CASES]
    )
    if not on_disk:
        pytest.skip("recorded cassettes not available")
    assert on_disk - OTHER_METRICS_FILES == listed
    assert len(listed) == 75


@pytest.mark.parametrize(
    ("case", "path"), expand(CHAT_CASES + FUNCTION_CASES + PARSE_CASES + RESPONSE_FORMAT_CASES + METRICS_CASES)
)
async def test_chat_cassette(case: Case, path: str, instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    interactions, results = await run_case(path, case, "chat")
    spans = check_spans(span_exporter, span_counter, interactions, "chat", expected_completion)
    for span, interaction, result in zip(spans, interactions, results, strict=True):
        attributes = span.attributes or {}
        # the caller got the recorded response, unchanged by the instrumentation
        if interaction.streamed:
            assert [chunk.id for chunk in result] == [chunk["id"] for chunk in interaction.chunks or []]
        else:
            assert result.id == attributes["gen_ai.response.id"]
            assert len(result.choices) == len(attributes["gen_ai.response.finish_reasons"])
        if case.call == "parse":
            parsed = result.choices[0].message.parsed
            assert parsed is None or isinstance(parsed, case.parse_model)  # type: ignore[arg-type]


@pytest.mark.skip(reason="test_assistant/*: the deprecated Assistants beta (threads, runs) is not instrumented")
def test_assistant_cassettes_are_not_replayed() -> None:
    """Kept as a visible skip: those 15 cassettes record /assistants, /threads and /runs calls, none of
    which is in the route table, so a replay would only show that no span is made."""


# ---- literal values, so a decoding slip in the expectations above cannot hide a bug ----


PINNED = [
    (
        "test_chat/test_chat_with_service_tier.yaml",
        0,
        {
            "gen_ai.response.id": "chatcmpl-Cf5wGPHPBqszCcDHyQPt9SNASzZKN",
            "gen_ai.response.model": "gpt-5-2025-08-07",
            "openai.request.service_tier": "priority",
            "openai.response.service_tier": "priority",
            "gen_ai.usage.input_tokens": 8,
            "gen_ai.usage.output_tokens": 82,
            "gen_ai.usage.cache_read.input_tokens": 0,
            "gen_ai.usage.reasoning.output_tokens": 64,
            "gen_ai.response.finish_reasons": ("stop",),
        },
    ),
    (
        "test_chat/test_chat.yaml",
        0,
        {
            "gen_ai.response.id": "chatcmpl-908MD9ivBBLb6EaIjlqwFokntayQK",
            "gen_ai.response.model": "gpt-3.5-turbo-0125",
            "openai.response.system_fingerprint": "fp_2b778c6b35",
            "gen_ai.usage.input_tokens": 15,
            "gen_ai.usage.output_tokens": 19,
        },
    ),
    (
        "test_chat/test_chat_reasoning.yaml",
        2,
        {
            "gen_ai.response.id": "chatcmpl-DPTNHVVTKaRSnC4yW1RxDaPLKtlbj",
            "gen_ai.usage.output_tokens": 138,
            "gen_ai.usage.reasoning.output_tokens": 128,
        },
    ),
    (
        "test_chat/test_chat_streaming.yaml",
        0,
        {
            "gen_ai.response.id": "chatcmpl-7UR4UcvmeD79Xva3UxkKkL2es6b5W",
            "gen_ai.response.model": "gpt-3.5-turbo",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 50,
            "gen_ai.usage.cache_read.input_tokens": 0,
            "gen_ai.response.finish_reasons": ("stop",),
            "server.address": "localhost",
            "server.port": 5002,
        },
    ),
    (
        "test_chat/test_chat_async_streaming.yaml",
        0,
        {
            "gen_ai.response.id": "chatcmpl-9AGW3t9akkLW9f5f93B7mOhiqhNMC",
            "openai.response.system_fingerprint": "fp_b28b39ffa8",
            "gen_ai.request.stream": True,
        },
    ),
    (
        "test_functions/test_open_ai_function_calls.yaml",
        0,
        {"gen_ai.response.finish_reasons": ("function_call",), "gen_ai.response.model": "gpt-4-0613"},
    ),
    (
        "test_functions/test_open_ai_function_calls_tools_streaming_parallel.yaml",
        1,
        {"gen_ai.response.id": "chatcmpl-DPTOvF5JuGlXgYrrfyNsKaLXC8lPH", "openai.response.service_tier": "default"},
    ),
    (
        "test_chat_parse/test_parsed_completion.yaml",
        0,
        {
            "gen_ai.response.id": "chatcmpl-AGC1gNoe1Zyq9yZicdhLc85lmt2Ep",
            "gen_ai.output.type": "json",
            "gen_ai.usage.input_tokens": 68,
            "gen_ai.usage.output_tokens": 41,
        },
    ),
    (
        "test_chat/test_chat_async_context_propagation.yaml",
        0,
        {
            "gen_ai.response.model": "meta-llama/Llama-3.2-1B-Instruct",
            "server.address": "localhost",
            "server.port": 8000,
            "gen_ai.usage.output_tokens": 32,
        },
    ),
]


@pytest.mark.parametrize(("path", "index", "pinned"), PINNED, ids=[f"{p[0]}#{p[1]}" for p in PINNED])
async def test_chat_cassette_pinned_values(
    path: str, index: int, pinned: dict[str, Any], instrumentor: Any, span_exporter: Any
) -> None:
    cases = {file: case for case in CHAT_CASES + FUNCTION_CASES + PARSE_CASES for file in case.files()}
    await run_case(path, cases[path], "chat")
    attributes = span_exporter.get_finished_spans()[index].attributes or {}
    for key, value in pinned.items():
        assert attributes.get(key) == value, key


# ---- the recorded stream-consumption scenarios, played as recorded ----


STREAM_CASSETTE = "test_chat/test_chat_streaming_{}.yaml"


def test_chat_stream_partial_consumption_cassette(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    path = STREAM_CASSETTE.format("partial_consumption")
    first = load(path)[0]
    with cassette(path), recorded_client() as client:
        stream = client.chat.completions.create(**first.request)
        taken = [next(stream) for _ in range(3)]
        stream.close()
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 1
    attributes = span.attributes or {}
    assert taken[0].id == "chatcmpl-908MECg5dMyTTbJEltubwQXeeWlBA"
    assert attributes["gen_ai.response.id"] == "chatcmpl-908MECg5dMyTTbJEltubwQXeeWlBA"
    assert attributes["gen_ai.response.model"] == "gpt-3.5-turbo-0125"
    assert attributes["openai.response.system_fingerprint"] == "fp_2b778c6b35"
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "closed"
    assert "gen_ai.response.finish_reasons" not in attributes
    assert span.status.status_code is StatusCode.UNSET


def test_chat_stream_not_consumed_cassette(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    path = STREAM_CASSETTE.format("not_consumed")
    first = load(path)[0]
    with cassette(path), recorded_client() as client:
        stream = client.chat.completions.create(**first.request)
        del stream
        gc.collect()
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 1
    attributes = span.attributes or {}
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["openai.response.finish_observed"] is False
    assert attributes["openai.response.end_reason"] == "abandoned"
    assert "gen_ai.response.id" not in attributes


def test_chat_stream_exception_during_consumption_cassette(
    instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    path = STREAM_CASSETTE.format("exception_during_consumption")
    first = load(path)[0]
    with cassette(path), recorded_client() as client, pytest.raises(RuntimeError, match="consumer failed"):  # noqa: SIM117
        with client.chat.completions.create(**first.request) as stream:  # the stream's own `with`, on purpose
            for count, _ in enumerate(stream):
                if count == 4:
                    raise RuntimeError("consumer failed")
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 1
    attributes = span.attributes or {}
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == "RuntimeError"
    assert attributes["gen_ai.response.id"] == "chatcmpl-908MECg5dMyTTbJEltubwQXeeWlBA"
    assert attributes["openai.response.finish_observed"] is False


# ---- openai_metrics: the histograms match the recorded usage ----


def _points_by(points: list[Any], *keys: str) -> dict[tuple[Any, ...], Any]:
    return {tuple(point.attributes.get(key) for key in keys): point for point in points}


def assert_metrics(metric_reader: Any, interactions: list[Interaction], operation: str, expected_result: Any) -> None:
    """One duration per call and the recorded token counts, grouped by response model."""
    durations: dict[Any, int] = {}
    tokens: dict[tuple[Any, str], list[int]] = {}
    for interaction in interactions:
        result = expected_result(interaction)
        model = result.get("gen_ai.response.model")
        durations[model] = durations.get(model, 0) + 1
        for token_type, key in (("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")):
            if key in result:
                tokens.setdefault((model, token_type), []).append(result[key])
    points = _points_by(metric_points(metric_reader, "gen_ai.client.operation.duration"), "gen_ai.response.model")
    assert {model: point.count for model, point in points.items()} == {(m,): n for m, n in durations.items()}
    for point in points.values():
        assert point.attributes["gen_ai.operation.name"] == operation
        assert point.attributes["gen_ai.request.model"] == interactions[0].request["model"]
        assert point.attributes["gen_ai.provider.name"] == "openai"
        assert point.attributes["server.address"] == interactions[0].server[0]
    token_points = _points_by(
        metric_points(metric_reader, "gen_ai.client.token.usage"), "gen_ai.response.model", "gen_ai.token.type"
    )
    assert {key: (point.count, point.sum) for key, point in token_points.items()} == {
        key: (len(values), sum(values)) for key, values in tokens.items()
    }


@pytest.mark.parametrize(("case", "path"), expand(METRICS_CASES))
async def test_openai_metrics_cassette(case: Case, path: str, instrumentor: Any, metric_reader: Any) -> None:
    interactions, _ = await run_case(path, case, "chat")
    assert_metrics(metric_reader, interactions, "chat", expected_completion)
    first_chunk = metric_points(metric_reader, "gen_ai.client.operation.time_to_first_chunk")
    streamed = sum(1 for interaction in interactions if interaction.streamed)
    assert sum(point.count for point in first_chunk) == streamed


def test_openai_metrics_pinned_totals(instrumentor: Any, metric_reader: Any) -> None:
    replay("test_openai_metrics/test_chat_streaming_metrics.yaml", METRICS_CASES[3], "chat")
    points = _points_by(metric_points(metric_reader, "gen_ai.client.token.usage"), "gen_ai.token.type")
    assert points[("input",)].sum == 32
    assert points[("output",)].sum == 324
    assert points[("input",)].attributes["server.address"] == "api.deepseek.com"
    assert points[("input",)].attributes["gen_ai.response.model"] == "deepseek-chat"


def test_image_generation_cassette_is_not_instrumented(
    instrumentor: Any, span_exporter: Any, span_counter: Any, metric_reader: Any
) -> None:
    """Images are not in the route table: the calls (and their recorded 400s) pass through untraced."""
    path = "test_openai_metrics/test_image_gen_metrics.yaml"
    interactions, results = replay(path, Case(path[:-5]), "image")
    assert [interaction.status for interaction in interactions] == [200, 400, 400, 200, 200]
    assert [result is not None for result in results] == [True, False, False, True, True]
    assert span_exporter.get_finished_spans() == ()
    assert span_counter.started == 0
    assert metric_points(metric_reader, "gen_ai.client.operation.duration") == []
