"""gen_ai.provider.name, server.address and server.port come from the client the call was made with."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from conftest import HTTP, metric_points
from fake_openai import FakeOpenAI, dispatch
from test_chat_cassettes import freeze_before_test  # noqa: F401 - keeps gc.collect() cheap

MESSAGES = [{"role": "user", "content": "Say hello"}]


@pytest.fixture(autouse=True)
def no_environment_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def openai_client(fake: FakeOpenAI, **kwargs: Any) -> openai.OpenAI:
    """A client for any base URL, answered by the fake API (whatever path prefix the base URL has)."""

    def handler(request: Any) -> Any:
        path = "/v1/" + request.url.path.rsplit("/v1/", 1)[1]
        reply = dispatch(fake, request.method, path, dict(request.url.params), request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    return openai.OpenAI(
        api_key="sk-test-key",
        max_retries=0,
        http_client=HTTP.Client(transport=HTTP.MockTransport(handler)),
        **kwargs,
    )


def server_of(span: Any) -> tuple[Any, Any, Any]:
    attributes = span.attributes or {}
    return attributes["gen_ai.provider.name"], attributes["server.address"], attributes["server.port"]


@pytest.mark.parametrize(
    ("base_url", "address", "port"),
    [
        (None, "api.openai.com", 443),  # the SDK's default
        ("http://127.0.0.1:8765/v1", "127.0.0.1", 8765),
        ("https://api.deepseek.com/v1", "api.deepseek.com", 443),  # an OpenAI-compatible host
        ("http://vllm.internal/v1", "vllm.internal", 80),
        ("https://gateway.example.com:8443/openai/v1", "gateway.example.com", 8443),
    ],
    ids=["default", "custom-port", "compatible-https", "compatible-http", "explicit-https-port"],
)
def test_server_from_base_url(
    base_url: str | None, address: str, port: int, instrumentor: Any, span_exporter: Any, metric_reader: Any
) -> None:
    fake = FakeOpenAI()
    with openai_client(fake, **({"base_url": base_url} if base_url else {})) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
        client.embeddings.create(model="text-embedding-3-small", input="hello")
    chat, embeddings = span_exporter.get_finished_spans()
    assert server_of(chat) == ("openai", address, port)
    assert server_of(embeddings) == ("openai", address, port)
    for point in metric_points(metric_reader, "gen_ai.client.operation.duration"):
        assert point.attributes["gen_ai.provider.name"] == "openai"
        assert point.attributes["server.address"] == address
        assert point.attributes["server.port"] == port


def test_base_url_changed_after_first_call(instrumentor: Any, span_exporter: Any) -> None:
    with openai_client(FakeOpenAI(), base_url="http://127.0.0.1:8765/v1") as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
        client.base_url = "http://127.0.0.2:9000/v1"  # type: ignore[assignment]
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
    first, second = span_exporter.get_finished_spans()
    assert server_of(first) == ("openai", "127.0.0.1", 8765)
    assert server_of(second) == ("openai", "127.0.0.2", 9000)


def test_copied_client_reports_its_own_server(instrumentor: Any, span_exporter: Any) -> None:
    with openai_client(FakeOpenAI(), base_url="http://127.0.0.1:8765/v1") as client:
        other = client.with_options(base_url="http://localhost:7000/v1")
        other.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
    copied, original = span_exporter.get_finished_spans()
    assert server_of(copied) == ("openai", "localhost", 7000)
    assert server_of(original) == ("openai", "127.0.0.1", 8765)


# ---- Azure ----

AZURE_ENDPOINT = "https://my-resource.openai.azure.com"
API_VERSION = "2024-10-21"


def azure_handler(fake: FakeOpenAI, seen: list[str]) -> Callable[[Any], Any]:
    """Azure's URL shape (/openai/deployments/{name}/...?api-version=) answered by the fake API."""

    def handler(request: Any) -> Any:
        seen.append(str(request.url))
        assert request.url.params["api-version"] == API_VERSION
        path = request.url.path.split("/deployments/", 1)[1].split("/", 1)[1]
        reply = dispatch(fake, request.method, f"/v1/{path}", {}, request.content)
        return HTTP.Response(reply.status, headers=reply.headers, content=reply.body)

    return handler


def test_azure_openai_chat_and_embeddings(instrumentor: Any, span_exporter: Any, span_counter: Any) -> None:
    seen: list[str] = []
    with openai.AzureOpenAI(
        api_key="azure-key",
        api_version=API_VERSION,
        azure_endpoint=AZURE_ENDPOINT,
        max_retries=0,
        http_client=HTTP.Client(transport=HTTP.MockTransport(azure_handler(FakeOpenAI(), seen))),
    ) as client:
        client.chat.completions.create(model="my-gpt-4o-deployment", messages=MESSAGES)  # type: ignore[arg-type]
        client.embeddings.create(model="my-embedding-deployment", input="hello")
    assert seen == [
        f"{AZURE_ENDPOINT}/openai/deployments/my-gpt-4o-deployment/chat/completions?api-version={API_VERSION}",
        f"{AZURE_ENDPOINT}/openai/deployments/my-embedding-deployment/embeddings?api-version={API_VERSION}",
    ]
    chat, embeddings = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 2
    assert chat.name == "chat my-gpt-4o-deployment"
    assert embeddings.name == "embeddings my-embedding-deployment"
    for span in (chat, embeddings):
        assert server_of(span) == ("azure.ai.openai", "my-resource.openai.azure.com", 443)
    assert (chat.attributes or {})["gen_ai.response.model"] == "my-gpt-4o-deployment-2025-04-14"


async def test_async_azure_openai_with_deployment(instrumentor: Any, span_exporter: Any) -> None:
    seen: list[str] = []

    async def handler(request: Any) -> Any:
        return azure_handler(FakeOpenAI(), seen)(request)

    async with openai.AsyncAzureOpenAI(
        api_key="azure-key",
        api_version=API_VERSION,
        azure_endpoint=AZURE_ENDPOINT,
        azure_deployment="fixed-deployment",
        max_retries=0,
        http_client=HTTP.AsyncClient(transport=HTTP.MockTransport(handler)),
    ) as client:
        await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
    assert seen == [f"{AZURE_ENDPOINT}/openai/deployments/fixed-deployment/chat/completions?api-version={API_VERSION}"]
    (span,) = span_exporter.get_finished_spans()
    assert span.name == "chat gpt-4o-mini"
    assert server_of(span) == ("azure.ai.openai", "my-resource.openai.azure.com", 443)


def test_azure_v1_endpoint_with_plain_openai_client(instrumentor: Any, span_exporter: Any) -> None:
    """Azure's OpenAI-compatible v1 endpoint is used through the plain `OpenAI` client: still Azure."""
    with openai_client(FakeOpenAI(), base_url="https://my-resource.openai.azure.com/openai/v1") as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]
    (span,) = span_exporter.get_finished_spans()
    assert server_of(span) == ("azure.ai.openai", "my-resource.openai.azure.com", 443)


def test_plain_openai_reports_openai(instrumentor: Any, span_exporter: Any) -> None:
    with openai_client(FakeOpenAI()) as client:
        client.responses.create(model="gpt-4o-mini", input="hello")
    (span,) = span_exporter.get_finished_spans()
    assert server_of(span) == ("openai", "api.openai.com", 443)


def _azure_stream(request: Any) -> Any:
    """Azure OpenAI's stream shape: an opening chunk of prompt filter results with an empty id and model."""
    base = {
        "created": 1727000000,
        "id": "chatcmpl-AzUrE",
        "model": "gpt-4o-2024-08-06",
        "object": "chat.completion.chunk",
    }
    chunks = [
        {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}],
        },
        {**base, "system_fingerprint": "fp_azure", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {**base, "system_fingerprint": "fp_azure", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {**base, "system_fingerprint": "fp_azure", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}},
    ]
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    return HTTP.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def test_azure_stream_opening_filter_chunk_does_not_hide_the_response(
    instrumentor: Any, span_exporter: Any, span_counter: Any
) -> None:
    with openai.AzureOpenAI(
        api_key="azure-key",
        api_version=API_VERSION,
        azure_endpoint=AZURE_ENDPOINT,
        max_retries=0,
        http_client=HTTP.Client(transport=HTTP.MockTransport(_azure_stream)),
    ) as client:
        stream = client.chat.completions.create(
            model="my-gpt-4o-deployment",
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    assert (chunks[0].id, chunks[0].model) == ("", "")
    (span,) = span_exporter.get_finished_spans()
    assert span_counter.started == span_counter.ended == 1
    attributes = span.attributes or {}
    assert server_of(span) == ("azure.ai.openai", "my-resource.openai.azure.com", 443)
    assert attributes["gen_ai.response.id"] == "chatcmpl-AzUrE"
    assert attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert attributes["openai.response.system_fingerprint"] == "fp_azure"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.usage.input_tokens"] == 9
    assert attributes["gen_ai.usage.output_tokens"] == 1
