"""End to end, as a user runs it: `opentelemetry-instrument` + the entry point + a real exporter, no test fixtures.

A subprocess runs tests/e2e_app.py under `opentelemetry-instrument` against the fake API's loopback server;
spans and metrics go over OTLP/HTTP to a receiver on loopback (or to stdout with the console exporter).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

import e2e_app
import fake_openai
from otlp_receiver import OtlpReceiver, attributes_of

TESTS = Path(__file__).resolve().parent
APP = TESTS / "e2e_app.py"
TIMEOUT = 60
SCOPE = "opentelemetry.instrumentation.openai"
# the fake API's usage rule: one token per word, plus the per-request framing
INPUT_TOKENS = fake_openai.count_tokens(e2e_app.QUESTION) + fake_openai.PROMPT_OVERHEAD
OUTPUT_TOKENS = fake_openai.FakeOpenAI().stream_chunks  # the default reply: one word per chunk
REPLY = "This is a deterministic reply"


def opentelemetry_instrument() -> str:
    """The launcher of the venv running the tests (not whatever is first on PATH)."""
    path = Path(sys.executable).parent / "opentelemetry-instrument"
    if not path.exists():
        pytest.skip(f"opentelemetry-instrument not installed next to {sys.executable}")
    return str(path)


@pytest.fixture
def fake_api() -> Iterator[str]:
    server, base_url = fake_openai.serve(fake_openai.FakeOpenAI())
    try:
        yield base_url
    finally:
        server.stop()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


def app_env(base_url: str, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        # the parent's OTel settings and proxies must not leak into the app; loopback goes direct
        if not key.startswith("OTEL_") and key.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="test",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_app(env: dict[str, str], *exporter_args: str) -> subprocess.CompletedProcess[str]:
    command = [
        opentelemetry_instrument(),
        *exporter_args,
        "--logs_exporter",
        "none",
        "--service_name",
        "e2e",
        sys.executable,
        str(APP),
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=TESTS)
    assert result.returncode == 0, f"app exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert f"responses: {REPLY}" in result.stdout
    assert f"stream: {REPLY}" in result.stdout
    return result


def span_named(spans: list[tuple[str, Span]], name: str) -> tuple[Span, dict[str, Any]]:
    matching = [span for scope, span in spans if scope == SCOPE and span.name == name]
    assert len(matching) == 1, f"{len(matching)} span(s) named {name!r} in {[s.name for _, s in spans]}"
    return matching[0], attributes_of(matching[0])


def test_otlp_exporters_receive_spans_and_metrics(fake_api: str, receiver: OtlpReceiver) -> None:
    env = app_env(
        fake_api,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_METRIC_EXPORT_INTERVAL="200",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    run_app(env, "--traces_exporter", "otlp", "--metrics_exporter", "otlp")

    spans = receiver.spans()
    ours = [span for scope, span in spans if scope == SCOPE]
    assert len(ours) == 3, [span.name for span in ours]
    assert receiver.resource_attributes().get("service.name") == "e2e"
    host, port = fake_api.split("//", 1)[1].split("/", 1)[0].split(":")

    responses_span, responses = span_named(spans, f"chat {e2e_app.RESPONSES_MODEL}")
    chat_span, chat = span_named(spans, f"chat {e2e_app.CHAT_MODEL}")
    stream_span, stream = span_named(spans, f"chat {e2e_app.STREAM_MODEL}")
    for span, attributes in ((responses_span, responses), (chat_span, chat), (stream_span, stream)):
        assert span.kind == Span.SpanKind.SPAN_KIND_CLIENT
        assert span.status.code != span.status.STATUS_CODE_ERROR
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["server.address"] == host
        assert attributes["server.port"] == int(port)
        assert attributes["gen_ai.usage.input_tokens"] == INPUT_TOKENS
        assert attributes["gen_ai.usage.output_tokens"] == OUTPUT_TOKENS
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert "error.type" not in attributes
    assert responses["openai.api.type"] == "responses"
    assert responses["gen_ai.request.model"] == e2e_app.RESPONSES_MODEL
    assert responses["gen_ai.response.id"].startswith("resp_")
    assert chat["openai.api.type"] == "chat_completions"
    assert chat["gen_ai.response.model"].startswith(e2e_app.CHAT_MODEL)
    assert stream["openai.api.type"] == "chat_completions"
    assert stream["gen_ai.request.stream"] is True

    durations = receiver.metric_points("gen_ai.client.operation.duration")
    assert durations, "no gen_ai.client.operation.duration points arrived"
    models = {attributes_of(point).get("gen_ai.request.model") for point in durations}
    assert models == {e2e_app.RESPONSES_MODEL, e2e_app.CHAT_MODEL, e2e_app.STREAM_MODEL}
    assert all(point.count >= 1 and point.sum > 0 for point in durations)
    assert all(attributes_of(point)["gen_ai.operation.name"] == "chat" for point in durations)

    tokens = receiver.metric_points("gen_ai.client.token.usage")
    assert tokens, "no gen_ai.client.token.usage points arrived"
    by_type: dict[str, set[float]] = {}
    for point in tokens:
        attributes = attributes_of(point)
        by_type.setdefault(attributes["gen_ai.token.type"], set()).add(point.sum / point.count)
    # cumulative temporality: every export repeats the totals, so compare per-call averages
    assert by_type == {"input": {INPUT_TOKENS}, "output": {OUTPUT_TOKENS}}

    first_chunk = receiver.metric_points("gen_ai.client.operation.time_to_first_chunk")
    assert {attributes_of(point).get("gen_ai.request.model") for point in first_chunk} == {e2e_app.STREAM_MODEL}


def test_console_exporter_prints_the_spans(fake_api: str) -> None:
    result = run_app(app_env(fake_api), "--traces_exporter", "console", "--metrics_exporter", "none")
    for model in (e2e_app.RESPONSES_MODEL, e2e_app.CHAT_MODEL, e2e_app.STREAM_MODEL):
        assert f'"name": "chat {model}"' in result.stdout, result.stdout
    assert result.stdout.count('"kind": "SpanKind.CLIENT"') >= 3
    assert '"gen_ai.operation.name": "chat"' in result.stdout
    assert '"service.name": "e2e"' in result.stdout
