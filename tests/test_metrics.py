"""GenAI client metrics: one duration point per call, token usage equal to the API's usage, and
time-to-first-chunk for streams only, with the conventions' bucket boundaries.

Recorded values come from the cassettes in `test_openai_metrics/`, `test_responses/` and
`test_completions/` (read from the recorded bodies); fake-API values follow its documented
tokenizer: prompt tokens = words + 3, output tokens = reply words (5 by default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import fake_openai
from conftest import (
    HTTP,
    cassette,
    handler_client,
    metric_points,
    recorded_async_client,
    recorded_client,
)
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

pytestmark = pytest.mark.usefixtures("instrumentor")

DURATION = "gen_ai.client.operation.duration"
TOKENS = "gen_ai.client.token.usage"
TTFC = "gen_ai.client.operation.time_to_first_chunk"

# gen-ai-metrics.md: the boundaries of the duration and time-to-first-chunk histograms, and of token usage.
DURATION_BOUNDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BOUNDS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)

OPENAI_SERVER = {"server.address": "api.openai.com", "server.port": 443}
FAKE_SERVER = {"server.address": "localhost", "server.port": 8080}


def metric_attrs(
    request_model: str,
    response_model: str | None,
    server: dict[str, Any],
    operation: str = "chat",
    error_type: str | None = None,
) -> dict[str, Any]:
    expected: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": request_model,
        **server,
    }
    if response_model is not None:
        expected["gen_ai.response.model"] = response_model
    if error_type is not None:
        expected["error.type"] = error_type
    return expected


def metrics_by_name(reader: InMemoryMetricReader) -> dict[str, Any]:
    data = reader.get_metrics_data()
    found: dict[str, Any] = {}
    if data is None:
        return found
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                assert metric.name not in found, f"{metric.name} reported twice"
                found[metric.name] = metric
    return found


def token_points(reader: InMemoryMetricReader) -> dict[str, Any]:
    points: dict[str, Any] = {}
    for point in metric_points(reader, TOKENS):
        token_type = point.attributes["gen_ai.token.type"]
        assert token_type not in points, f"two {token_type} token points"
        points[token_type] = point
    return points


def assert_call_metrics(
    reader: InMemoryMetricReader,
    expected: dict[str, Any],
    input_tokens: int | None,
    output_tokens: int | None,
    stream: bool,
) -> None:
    """Exactly one call's worth of points: duration, tokens (as given), time to first chunk for streams."""
    metrics = metrics_by_name(reader)
    assert metrics[DURATION].unit == "s"
    durations = metric_points(reader, DURATION)
    assert len(durations) == 1, [dict(p.attributes) for p in durations]
    (duration,) = durations
    assert dict(duration.attributes) == expected
    assert duration.count == 1
    assert duration.sum > 0
    assert tuple(duration.explicit_bounds) == DURATION_BOUNDS

    tokens = token_points(reader)
    wanted = {"input": input_tokens, "output": output_tokens}
    wanted = {kind: value for kind, value in wanted.items() if value is not None}
    assert set(tokens) == set(wanted)
    for kind, value in wanted.items():
        point = tokens[kind]
        assert dict(point.attributes) == {**expected, "gen_ai.token.type": kind}
        assert (point.count, point.sum, point.min, point.max) == (1, value, value, value)
        assert tuple(point.explicit_bounds) == TOKEN_BOUNDS
    if tokens:
        assert metrics[TOKENS].unit == "{token}"

    first_chunks = metric_points(reader, TTFC)
    if not stream:
        assert first_chunks == []
        assert TTFC not in metrics
        return
    assert metrics[TTFC].unit == "s"
    assert len(first_chunks) == 1
    (first_chunk,) = first_chunks
    assert dict(first_chunk.attributes) == expected
    assert first_chunk.count == 1
    assert 0 < first_chunk.sum <= duration.sum
    assert tuple(first_chunk.explicit_bounds) == DURATION_BOUNDS


# ---- recorded traffic -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    cassette: str
    call: Callable[[Any], Any]
    stream: bool
    expected: dict[str, Any]
    input_tokens: int
    output_tokens: int | None
    base_url: str | None = None


POEM = [
    {
        "role": "system",
        "content": (
            "You are a poetic assistant, skilled in explaining complex programming concepts with creative flair."
        ),
    },
    {"role": "user", "content": "Compose a poem that explains the concept of recursion in programming."},
]
STORY = "Tell me a three sentence bedtime story about a unicorn."
JOKE = "Tell me a joke about opentelemetry"

RECORDED: dict[tuple[str, bool], Recorded] = {}
for _async in (False, True):
    RECORDED["responses_create", _async] = Recorded(
        "test_responses/test_responses.yaml",
        lambda c: c.responses.create(model="gpt-4.1-nano", input="What is the capital of France?"),
        False,
        metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", OPENAI_SERVER),
        14,
        8,
    )
    RECORDED["chat", _async] = Recorded(
        "test_openai_metrics/test_chat_completion_metrics.yaml",
        lambda c: c.chat.completions.create(model="gpt-3.5-turbo", messages=POEM),
        False,
        metric_attrs("gpt-3.5-turbo", "gpt-3.5-turbo-0125", OPENAI_SERVER),
        39,
        160,
    )
    RECORDED["chat_stream_include_usage", _async] = Recorded(
        "test_openai_metrics/test_chat_streaming_metrics.yaml",
        lambda c: c.chat.completions.create(
            model="deepseek-chat", messages=POEM, stream=True, stream_options={"include_usage": True}
        ),
        True,
        metric_attrs("deepseek-chat", "deepseek-chat", {"server.address": "api.deepseek.com", "server.port": 443}),
        32,
        324,
        base_url="https://api.deepseek.com/v1",
    )
    RECORDED["embeddings", _async] = Recorded(
        "test_openai_metrics/test_embeddings_metrics.yaml",
        lambda c: c.embeddings.create(model="text-embedding-ada-002", input=JOKE),
        False,
        metric_attrs("text-embedding-ada-002", "text-embedding-ada-002", OPENAI_SERVER, "embeddings"),
        8,
        None,
    )
RECORDED["responses_stream", False] = Recorded(
    "test_responses/test_responses_streaming.yaml",
    lambda c: c.responses.create(model="gpt-4.1-nano", input=STORY, stream=True),
    True,
    metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", OPENAI_SERVER),
    18,
    79,
)
RECORDED["responses_stream", True] = Recorded(
    "test_responses/test_responses_streaming_async.yaml",
    lambda c: c.responses.create(model="gpt-4.1-nano", input=STORY, stream=True),
    True,
    metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", OPENAI_SERVER),
    18,
    77,
)
RECORDED["completions", False] = Recorded(
    "test_completions/test_completion.yaml",
    lambda c: c.completions.create(model="davinci-002", prompt=JOKE),
    False,
    metric_attrs("davinci-002", "davinci-002", OPENAI_SERVER, "text_completion"),
    8,
    16,
)
RECORDED["completions", True] = Recorded(
    "test_completions/test_async_completion.yaml",
    lambda c: c.completions.create(model="davinci-002", prompt=JOKE),
    False,
    metric_attrs("davinci-002", "davinci-002", OPENAI_SERVER, "text_completion"),
    8,
    16,
)


@pytest.mark.parametrize("name", sorted({name for name, _ in RECORDED}))
def test_recorded_sync(name: str, metric_reader: InMemoryMetricReader) -> None:
    case = RECORDED[name, False]
    kwargs = {"base_url": case.base_url} if case.base_url else {}
    with cassette(case.cassette), recorded_client(**kwargs) as client:
        result = case.call(client)
        if case.stream:
            for _ in result:
                pass
    assert_call_metrics(metric_reader, case.expected, case.input_tokens, case.output_tokens, case.stream)


@pytest.mark.parametrize("name", sorted({name for name, _ in RECORDED}))
async def test_recorded_async(name: str, metric_reader: InMemoryMetricReader) -> None:
    case = RECORDED[name, True]
    kwargs = {"base_url": case.base_url} if case.base_url else {}
    with cassette(case.cassette):
        async with recorded_async_client(**kwargs) as client:
            result = await case.call(client)
            if case.stream:
                async for _ in result:
                    pass
    assert_call_metrics(metric_reader, case.expected, case.input_tokens, case.output_tokens, case.stream)


def test_recorded_calls_accumulate_one_point_per_call(metric_reader: InMemoryMetricReader) -> None:
    """The cassette holds the same chat call recorded six times: six calls, six measurements."""
    with cassette("test_openai_metrics/test_chat_completion_metrics.yaml"), recorded_client() as client:
        for _ in range(6):
            client.chat.completions.create(model="gpt-3.5-turbo", messages=POEM)
    (duration,) = metric_points(metric_reader, DURATION)
    assert duration.count == 6
    tokens = token_points(metric_reader)
    assert (tokens["input"].count, tokens["input"].sum, tokens["input"].max) == (6, 39 * 6, 39)
    # completion tokens of the six recorded answers
    assert (tokens["output"].count, tokens["output"].sum) == (6, 160 + 185 + 178 + 176 + 165 + 161)
    assert (tokens["output"].min, tokens["output"].max) == (160, 185)


# ---- the fake API (deterministic usage) -----------------------------------------------------------------------


@dataclass(frozen=True)
class FakeCase:
    call: Callable[[Any], Any]
    stream: bool
    expected: dict[str, Any]
    input_tokens: int | None
    output_tokens: int | None


CHAT_MESSAGES = [{"role": "user", "content": "Hello there friend"}]  # 3 words + 3 = 6 prompt tokens
FAKE: dict[str, FakeCase] = {
    # instructions "Be brief" + input "one two three four" = 6 words + 3
    "responses_create": FakeCase(
        lambda c: c.responses.create(model="gpt-4.1-nano", instructions="Be brief", input="one two three four"),
        False,
        metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER),
        9,
        5,
    ),
    "responses_stream": FakeCase(
        lambda c: c.responses.create(
            model="gpt-4.1-nano", input="one two three four", stream=True, metadata={"fake_stream_chunks": "7"}
        ),
        True,
        metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER),
        7,
        7,
    ),
    "chat": FakeCase(
        lambda c: c.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES),
        False,
        metric_attrs("gpt-4o-mini", "gpt-4o-mini-2024-07-18", FAKE_SERVER),
        6,
        5,
    ),
    "chat_stream_include_usage": FakeCase(
        lambda c: c.chat.completions.create(
            model="gpt-4o-mini", messages=CHAT_MESSAGES, stream=True, stream_options={"include_usage": True}
        ),
        True,
        metric_attrs("gpt-4o-mini", "gpt-4o-mini-2024-07-18", FAKE_SERVER),
        6,
        5,
    ),
    # without include_usage the API sends no usage: no token points, duration and first chunk still
    "chat_stream_without_usage": FakeCase(
        lambda c: c.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, stream=True),
        True,
        metric_attrs("gpt-4o-mini", "gpt-4o-mini-2024-07-18", FAKE_SERVER),
        None,
        None,
    ),
    "completions": FakeCase(
        lambda c: c.completions.create(model="gpt-3.5-turbo-instruct", prompt="one two three", max_tokens=4),
        False,
        metric_attrs("gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct", FAKE_SERVER, "text_completion"),
        6,
        4,
    ),
    "completions_stream": FakeCase(
        lambda c: c.completions.create(model="gpt-3.5-turbo-instruct", prompt="one two three", stream=True),
        True,
        metric_attrs("gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct", FAKE_SERVER, "text_completion"),
        None,
        None,
    ),
    "embeddings": FakeCase(
        lambda c: c.embeddings.create(model="text-embedding-3-small", input=["one two", "three four five"]),
        False,
        metric_attrs("text-embedding-3-small", "text-embedding-3-small", FAKE_SERVER, "embeddings"),
        5,
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(FAKE))
def test_fake_sync(name: str, client: openai.OpenAI, metric_reader: InMemoryMetricReader) -> None:
    case = FAKE[name]
    result = case.call(client)
    if case.stream:
        for _ in result:
            pass
    assert_call_metrics(metric_reader, case.expected, case.input_tokens, case.output_tokens, case.stream)


@pytest.mark.parametrize("name", sorted(FAKE))
async def test_fake_async(name: str, async_client: openai.AsyncOpenAI, metric_reader: InMemoryMetricReader) -> None:
    case = FAKE[name]
    result = await case.call(async_client)
    if case.stream:
        async for _ in result:
            pass
    assert_call_metrics(metric_reader, case.expected, case.input_tokens, case.output_tokens, case.stream)


def test_stream_helper_records_first_chunk(client: openai.OpenAI, metric_reader: InMemoryMetricReader) -> None:
    with client.responses.stream(model="gpt-4.1-nano", input="one two") as stream:
        for _ in stream:
            pass
    assert_call_metrics(
        metric_reader, metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER), 5, 5, stream=True
    )


def test_nothing_recorded_before_a_call(metric_reader: InMemoryMetricReader) -> None:
    assert metric_points(metric_reader, DURATION) == []
    assert metric_points(metric_reader, TOKENS) == []
    assert metric_points(metric_reader, TTFC) == []


# ---- background responses -------------------------------------------------------------------------------------

BACKGROUND_EXPECTED = metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER)


def assert_no_call_metrics(reader: InMemoryMetricReader) -> None:
    assert metric_points(reader, DURATION) == []
    assert metric_points(reader, TOKENS) == []
    assert metric_points(reader, TTFC) == []


def test_background_response_records_once_when_it_finishes(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader, fake: fake_openai.FakeOpenAI
) -> None:
    fake.polls_to_complete = 3
    response = client.responses.create(model="gpt-4.1-nano", input="one two three", background=True)
    assert response.status == "queued"
    assert_no_call_metrics(metric_reader)  # not at create
    statuses = []
    while response.status in ("queued", "in_progress"):
        response = client.responses.retrieve(response.id)
        statuses.append(response.status)
        if response.status == "in_progress":
            assert_no_call_metrics(metric_reader)  # not per poll
    assert statuses == ["in_progress", "in_progress", "completed"]
    # 3 words + 3; 5 reply words
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=False)
    # a later retrieve of the finished id records nothing
    client.responses.retrieve(response.id)
    client.responses.retrieve(response.id)
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=False)


async def test_background_response_records_once_when_it_finishes_async(
    async_client: openai.AsyncOpenAI, metric_reader: InMemoryMetricReader
) -> None:
    response = await async_client.responses.create(model="gpt-4.1-nano", input="one two three", background=True)
    assert_no_call_metrics(metric_reader)
    polls = 0
    while response.status in ("queued", "in_progress"):
        response = await async_client.responses.retrieve(response.id)
        polls += 1
        if response.status == "in_progress":
            assert_no_call_metrics(metric_reader)
    assert polls == 2
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=False)
    await async_client.responses.retrieve(response.id)
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=False)


def failing_first_poll(fake: fake_openai.FakeOpenAI, status: int = 429) -> Callable[[Any], Any]:
    """A transport handler answering the first GET with an HTTP error, everything else from the fake."""
    failures = iter([status])

    def handler(request: Any) -> Any:
        if request.method == "GET":
            code = next(failures, None)
            if code is not None:
                body = b'{"error":{"message":"Rate limited.","type":"requests","param":null,"code":"rate_limit"}}'
                return HTTP.Response(code, headers={"content-type": "application/json"}, content=body)
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    return handler


def test_background_poll_error_records_nothing_until_it_finishes(
    instrumentor: OpenAIInstrumentor, metric_reader: InMemoryMetricReader, fake: fake_openai.FakeOpenAI
) -> None:
    with handler_client(failing_first_poll(fake)) as client:
        response = client.responses.create(model="gpt-4.1-nano", input="one two three", background=True)
        with pytest.raises(openai.RateLimitError):
            client.responses.retrieve(response.id)  # transient: the response stays pending
        assert_no_call_metrics(metric_reader)
        while response.status in ("queued", "in_progress"):
            response = client.responses.retrieve(response.id)
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=False)


def test_background_stream_records_once(client: openai.OpenAI, metric_reader: InMemoryMetricReader) -> None:
    stream = client.responses.create(model="gpt-4.1-nano", input="one two three", background=True, stream=True)
    for _ in stream:
        pass
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, 6, 5, stream=True)


def test_cancelled_background_response_records_duration_once_without_tokens(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader
) -> None:
    response = client.responses.create(model="gpt-4.1-nano", input="one two three", background=True)
    client.responses.cancel(response.id)
    client.responses.retrieve(response.id)
    # the cancelled response carries no usage
    assert_call_metrics(metric_reader, BACKGROUND_EXPECTED, None, None, stream=False)


# ---- errors and finished ids ----------------------------------------------------------------------------------

ERROR_CALLS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "chat": (
        lambda c: c.chat.completions.create(model="fake-error-429", messages=CHAT_MESSAGES),
        "chat",
    ),
    "responses": (lambda c: c.responses.create(model="fake-error-429", input="hi"), "chat"),
    "responses_stream": (lambda c: c.responses.create(model="fake-error-429", input="hi", stream=True), "chat"),
    "embeddings": (lambda c: c.embeddings.create(model="fake-error-429", input="hi"), "embeddings"),
    "completions": (lambda c: c.completions.create(model="fake-error-429", prompt="hi"), "text_completion"),
}


@pytest.mark.parametrize("name", sorted(ERROR_CALLS))
def test_api_error_records_duration_with_error_type_and_no_tokens(
    name: str, client: openai.OpenAI, metric_reader: InMemoryMetricReader
) -> None:
    call, operation = ERROR_CALLS[name]
    with pytest.raises(openai.RateLimitError):
        call(client)
    expected = metric_attrs("fake-error-429", None, FAKE_SERVER, operation, error_type="RateLimitError")
    assert_call_metrics(metric_reader, expected, None, None, stream=False)


@pytest.mark.parametrize("name", sorted(ERROR_CALLS))
async def test_api_error_records_duration_with_error_type_and_no_tokens_async(
    name: str, async_client: openai.AsyncOpenAI, metric_reader: InMemoryMetricReader
) -> None:
    call, operation = ERROR_CALLS[name]
    with pytest.raises(openai.RateLimitError):
        await call(async_client)
    expected = metric_attrs("fake-error-429", None, FAKE_SERVER, operation, error_type="RateLimitError")
    assert_call_metrics(metric_reader, expected, None, None, stream=False)


def test_server_error_records_its_error_type(client: openai.OpenAI, metric_reader: InMemoryMetricReader) -> None:
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_MESSAGES, extra_body={"fake_error": "500"})
    expected = metric_attrs("gpt-4o-mini", None, FAKE_SERVER, error_type="InternalServerError")
    assert_call_metrics(metric_reader, expected, None, None, stream=False)


def test_failed_response_records_duration_with_error_type(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader
) -> None:
    """status "failed" is an error of the response, reported with its error code; it carries no usage."""
    client.responses.create(model="gpt-4.1-nano", input="hi", metadata={"fake_outcome": "failed"})
    expected = metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER, error_type="server_error")
    assert_call_metrics(metric_reader, expected, None, None, stream=False)


def test_retrieve_of_a_finished_id_records_nothing(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader, span_exporter: InMemorySpanExporter
) -> None:
    response = client.responses.create(model="gpt-4.1-nano", input="one two three")
    expected = metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER)
    assert_call_metrics(metric_reader, expected, 6, 5, stream=False)
    for _ in range(3):
        assert client.responses.retrieve(response.id).status == "completed"
    assert_call_metrics(metric_reader, expected, 6, 5, stream=False)
    assert len(span_exporter.get_finished_spans()) == 1


async def test_retrieve_of_a_finished_id_records_nothing_async(
    async_client: openai.AsyncOpenAI, metric_reader: InMemoryMetricReader
) -> None:
    response = await async_client.responses.create(model="gpt-4.1-nano", input="one two three")
    await async_client.responses.retrieve(response.id)
    expected = metric_attrs("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", FAKE_SERVER)
    assert_call_metrics(metric_reader, expected, 6, 5, stream=False)


# ---- bucket boundaries, read from every exported point --------------------------------------------------------


def test_explicit_bucket_boundaries_follow_the_conventions(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader
) -> None:
    for _ in client.chat.completions.create(
        model="gpt-4o-mini", messages=CHAT_MESSAGES, stream=True, stream_options={"include_usage": True}
    ):
        pass
    client.embeddings.create(model="text-embedding-3-small", input="one")
    bounds = {
        name: {tuple(point.explicit_bounds) for point in metric_points(metric_reader, name)}
        for name in (DURATION, TOKENS, TTFC)
    }
    assert bounds == {DURATION: {DURATION_BOUNDS}, TOKENS: {TOKEN_BOUNDS}, TTFC: {DURATION_BOUNDS}}
