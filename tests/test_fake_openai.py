"""The fake OpenAI API parses into the real SDK's types with the values its rules promise."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from conftest import HTTP, requires_openai  # HTTP: httpx2 for openai 3.x, httpx for 1.x/2.x

EXAMPLES = str(Path(__file__).resolve().parents[1] / "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)

from fake_openai import (  # noqa: E402
    PROMPT_OVERHEAD,
    REASONING_TOKENS,
    FakeOpenAI,
    async_mock_transport,
    dispatch,
    make_transport,
    mock_transport,
    serve,
)

# mock_transport()/async_mock_transport() build httpx2 transports, which only openai 3.x clients accept
needs_httpx2 = pytest.mark.skipif(HTTP.__name__ != "httpx2", reason="openai < 3 clients are built on httpx, not httpx2")
QUESTION = "What is the capital of France?"  # 6 words
REPLY = "This is a deterministic reply"  # the default 5-word reply
STREAM_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    *["response.output_text.delta"] * 5,
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
    },
}


@pytest.fixture
def fake() -> FakeOpenAI:
    return FakeOpenAI()


@pytest.fixture
def client(fake: FakeOpenAI) -> OpenAI:
    http_client = HTTP.Client(transport=make_transport(fake, HTTP))
    return OpenAI(api_key="test", base_url="http://localhost/v1", http_client=http_client, max_retries=0)


@pytest.fixture
def async_client(fake: FakeOpenAI) -> AsyncOpenAI:
    http_client = HTTP.AsyncClient(transport=make_transport(fake, HTTP, asynchronous=True))
    return AsyncOpenAI(api_key="test", base_url="http://localhost/v1", http_client=http_client, max_retries=0)


# ---- Responses ----


@requires_openai("1.73", "ResponseUsage.input_tokens_details is not a model field (a plain dict)")
def test_response_create_echoes_dated_model_and_counts_words(client: OpenAI) -> None:
    response = client.responses.create(model="gpt-4.1-nano", input=QUESTION)
    assert response.id.startswith("resp_")
    assert (response.object, response.status, response.model) == ("response", "completed", "gpt-4.1-nano-2025-04-14")
    assert response.output_text == REPLY
    assert response.output[0].type == "message"
    assert response.service_tier == "default"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (6 + PROMPT_OVERHEAD, 5, 14)
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0


def test_response_counts_instructions_cache_key_and_reasoning(client: OpenAI) -> None:
    response = client.responses.create(
        model="gpt-5-nano",
        instructions="Be brief",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Count the letters"}]}],
        prompt_cache_key="k",
        reasoning={"effort": "low"},
        service_tier="priority",
    )
    assert response.model == "gpt-5-nano-2025-08-07"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.usage.input_tokens == 5 + PROMPT_OVERHEAD
    assert response.usage.input_tokens_details.cached_tokens == (5 + PROMPT_OVERHEAD) // 2
    assert response.usage.output_tokens == 5 + REASONING_TOKENS
    assert response.usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS
    assert (response.reasoning.effort, response.service_tier) == ("low", "priority")


def test_response_stream_emits_the_real_event_sequence(client: OpenAI) -> None:
    events = list(client.responses.create(model="gpt-4.1-nano", input=QUESTION, stream=True))
    assert [e.type for e in events] == STREAM_EVENTS
    assert [e.sequence_number for e in events] == list(range(len(STREAM_EVENTS)))
    assert events[0].response.status == "in_progress" and events[0].response.usage is None
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == REPLY
    assert events[-1].response.output_text == REPLY
    assert events[-1].response.usage.total_tokens == 14


def test_response_stream_length_comes_from_metadata(client: OpenAI) -> None:
    stream = client.responses.create(model="m", input="x", stream=True, metadata={"fake_stream_chunks": "42"})
    assert len(list(stream)) == 50  # 42 deltas and the 8 events around them


def test_response_stream_helper_accumulates_final_response(client: OpenAI) -> None:
    with client.responses.stream(model="gpt-4.1-nano", input=QUESTION) as stream:
        final = stream.get_final_response()
    assert final.output_text == REPLY and final.usage.output_tokens == 5


def test_background_response_completes_after_polls(client: OpenAI) -> None:
    created = client.responses.create(model="gpt-4.1-nano", input=QUESTION, background=True)
    assert (created.status, created.background, created.output, created.usage) == ("queued", True, [], None)
    assert client.responses.retrieve(created.id).status == "in_progress"
    done = client.responses.retrieve(created.id)
    assert (done.status, done.output_text, done.usage.total_tokens) == ("completed", REPLY, 14)
    assert client.responses.retrieve(created.id).status == "completed"


def test_retrieve_stream_resumes_after_sequence_number(client: OpenAI) -> None:
    created = client.responses.create(model="gpt-4.1-nano", input=QUESTION, background=True)
    events = list(client.responses.retrieve(created.id, stream=True, starting_after=2))
    # a background stream has response.queued at 1 and response.in_progress at 2
    assert events[0].sequence_number == 3 and events[0].type == "response.output_item.added"
    assert events[-1].type == "response.completed" and events[-1].response.output_text == REPLY
    assert client.responses.retrieve(created.id).status == "completed"


def test_cancel_background_response(client: OpenAI) -> None:
    created = client.responses.create(model="gpt-4.1-nano", input=QUESTION, background=True)
    assert client.responses.cancel(created.id).status == "cancelled"
    assert client.responses.retrieve(created.id).status == "cancelled"


def test_cancel_foreground_response_is_rejected(client: OpenAI) -> None:
    created = client.responses.create(model="gpt-4.1-nano", input=QUESTION)
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(created.id)


def test_failed_outcome_carries_server_error(client: OpenAI) -> None:
    response = client.responses.create(model="m", input="x", metadata={"fake_outcome": "failed"})
    assert (response.status, response.error.code, response.usage) == ("failed", "server_error", None)
    events = list(client.responses.create(model="m", input="x", stream=True, metadata={"fake_outcome": "failed"}))
    assert [e.type for e in events] == ["response.created", "response.in_progress", "response.failed"]


def test_incomplete_outcome_and_token_limit(client: OpenAI) -> None:
    response = client.responses.create(model="m", input="x", metadata={"fake_outcome": "incomplete"})
    assert (response.status, response.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    limited = client.responses.create(model="m", input="x", max_output_tokens=3, stream=True)
    last = list(limited)[-1]
    assert last.type == "response.incomplete"
    assert (last.response.output_text, last.response.usage.output_tokens) == ("This is a", 3)


def test_background_failed_outcome_shows_on_final_poll(client: OpenAI) -> None:
    created = client.responses.create(model="m", input="x", background=True, metadata={"fake_outcome": "failed"})
    client.responses.retrieve(created.id)
    assert client.responses.retrieve(created.id).status == "failed"


def test_unknown_response_id_is_404(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.retrieve("resp_missing")
    assert caught.value.status_code == 404 and caught.value.type == "invalid_request_error"


def test_error_model_answers_429(client: OpenAI) -> None:
    with pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="fake-error-429", input="x")
    assert caught.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=[], metadata={"fake_error": "503"})


# ---- Chat Completions ----


def test_chat_honours_n_and_reports_usage_details(client: OpenAI) -> None:
    messages = [{"role": "system", "content": "Be kind"}, {"role": "user", "content": QUESTION}]
    completion = client.chat.completions.create(model="gpt-3.5-turbo", messages=messages, n=2, prompt_cache_key="k")
    assert completion.id.startswith("chatcmpl-") and completion.model == "gpt-3.5-turbo-0125"
    assert [c.index for c in completion.choices] == [0, 1]
    assert {c.message.content for c in completion.choices} == {REPLY}
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 10, 21)
    assert usage.prompt_tokens_details.cached_tokens == 5
    assert usage.completion_tokens_details.reasoning_tokens == 0
    assert (completion.system_fingerprint, completion.service_tier) == ("fp_fake0000", "default")


def test_chat_stream_without_usage(client: OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert all(c.usage is None and c.choices for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == REPLY
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_chat_stream_with_usage_ends_with_usage_chunk(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 1 + PROMPT_OVERHEAD + 5
    assert chunks[-2].choices[0].finish_reason == "stop"


def test_chat_tools_reply_with_a_tool_call(client: OpenAI) -> None:
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    completion = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_") and call.function.name == "get_current_weather"
    assert json.loads(call.function.arguments) == {"location": "fake"}
    chunks = list(client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL], stream=True))
    arguments = "".join(c.choices[0].delta.tool_calls[0].function.arguments for c in chunks[:-1])
    assert json.loads(arguments) == {"location": "fake"} and chunks[-1].choices[0].finish_reason == "tool_calls"


def test_chat_stream_helper_accumulates(client: OpenAI) -> None:
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}], n=2) as stream:
        final = stream.get_final_completion()
    assert [c.message.content for c in final.choices] == [REPLY, REPLY]


# ---- Completions and Embeddings ----


def test_completions_plain_and_stream(client: OpenAI) -> None:
    completion = client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say hi", max_tokens=2)
    assert (completion.object, completion.choices[0].text, completion.choices[0].finish_reason) == (
        "text_completion",
        "This is",
        "length",
    )
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (2 + PROMPT_OVERHEAD, 2)
    chunks = list(client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say hi", stream=True))
    assert "".join(c.choices[0].text for c in chunks) == REPLY
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_embeddings_honour_dimensions_and_both_encodings(client: OpenAI) -> None:
    default = client.embeddings.create(model="text-embedding-3-small", input=["a b", "c"], dimensions=8)
    assert [len(d.embedding) for d in default.data] == [8, 8] and [d.index for d in default.data] == [0, 1]
    assert (default.usage.prompt_tokens, default.usage.total_tokens) == (3, 3)
    floats = client.embeddings.create(model="text-embedding-3-small", input="a b", encoding_format="float")
    assert len(floats.data[0].embedding) == 1536
    assert math.isclose(sum(v * v for v in floats.data[0].embedding), 1.0, rel_tol=1e-9)
    # base64 travels as float32, so compare to float32 precision
    assert default.data[0].embedding == pytest.approx(
        client.embeddings.create(model="m", input="a b", dimensions=8, encoding_format="float").data[0].embedding,
        rel=1e-6,
    )


# ---- async clients ----


async def test_async_client_streams_and_polls(async_client: AsyncOpenAI) -> None:
    events = [e async for e in await async_client.responses.create(model="m", input=QUESTION, stream=True)]
    assert [e.type for e in events] == STREAM_EVENTS
    created = await async_client.responses.create(model="m", input=QUESTION, background=True)
    await async_client.responses.retrieve(created.id)
    assert (await async_client.responses.retrieve(created.id)).output_text == REPLY
    chat = await async_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content == REPLY


@needs_httpx2
async def test_sync_mock_transport_also_serves_async_client(fake: FakeOpenAI) -> None:
    httpx2 = pytest.importorskip("httpx2")
    http_client = httpx2.AsyncClient(transport=mock_transport(fake))
    client = AsyncOpenAI(api_key="test", base_url="http://localhost/v1", http_client=http_client)
    assert (await client.embeddings.create(model="m", input="x", dimensions=4)).data[0].embedding


@needs_httpx2
def test_make_transport_takes_a_module_name(fake: FakeOpenAI) -> None:
    httpx2 = pytest.importorskip("httpx2")
    http_client = httpx2.Client(transport=make_transport(fake, "httpx2"))
    client = OpenAI(api_key="test", base_url="http://localhost/v1", http_client=http_client)
    assert client.responses.create(model="m", input="x").status == "completed"
    assert isinstance(async_mock_transport(fake), httpx2.MockTransport)


def test_make_transport_serves_legacy_httpx_clients(fake: FakeOpenAI) -> None:
    httpx = pytest.importorskip("httpx")  # openai 1.x/2.x clients are built on httpx
    http_client = httpx.Client(transport=make_transport(fake, httpx))
    client = OpenAI(api_key="test", base_url="http://localhost/v1", http_client=http_client)
    assert [e.type for e in client.responses.create(model="m", input="x", stream=True)] == STREAM_EVENTS


# ---- pure core ----


def test_handle_accepts_paths_with_and_without_v1(fake: FakeOpenAI) -> None:
    with_prefix = fake.handle("POST", "/v1/chat/completions", {}, {"model": "m", "messages": []})
    without = fake.handle("POST", "/chat/completions", {}, {"model": "m", "messages": []})
    assert (with_prefix.status, without.status) == (200, 200)
    stream = fake.handle("POST", "/responses", {}, {"model": "m", "input": "x", "stream": True})
    assert stream.is_sse and stream.headers["content-type"].startswith("text/event-stream")
    missing = fake.handle("POST", "/v1/nowhere", {}, None)
    assert missing.status == 404 and set(json.loads(missing.body)["error"]) == {"message", "type", "param", "code"}
    assert dispatch(fake, "POST", "/v1/responses", {}, b"{not json").status == 400


def test_stored_responses_are_bounded() -> None:
    fake = FakeOpenAI(max_stored=3)
    ids = [json.loads(fake.handle("POST", "/responses", {}, {"model": "m", "input": "x"}).body)["id"] for _ in range(5)]
    assert [fake.handle("GET", f"/responses/{i}", {}, None).status for i in ids] == [404, 404, 200, 200, 200]


# ---- loopback server ----


def test_loopback_server_serves_the_sdk() -> None:
    server, base_url = serve(FakeOpenAI(stream_chunks=3))
    # trust_env=False: a proxy from the environment must not see loopback traffic
    client = OpenAI(api_key="test", base_url=base_url, http_client=HTTP.Client(trust_env=False), max_retries=0)
    try:
        events = list(client.responses.create(model="m", input=QUESTION, stream=True))
        assert events[-1].type == "response.completed" and events[-1].response.output_text == "This is a"
        chunks = list(client.chat.completions.create(model="m", messages=[], stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "This is a"
        assert client.responses.retrieve(events[-1].response.id).status == "completed"
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve("resp_missing")
    finally:
        client.close()
        server.stop()
