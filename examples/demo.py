"""Demo: an example app's OpenAI calls, instrumented, with the spans and metrics printed as they happen.

Offline by default, against the local stand-in in `fake_openai.py` (started on 127.0.0.1 and stopped
at the end). With OPENAI_API_KEY set it calls the real API instead (a few cheap requests).

    scripts/demo            # compact one-line-per-span output
    scripts/demo --full     # the SDK's ConsoleSpanExporter JSON for every span
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import openai
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from opentelemetry.instrumentation.openai import OpenAIInstrumentor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_openai

_SHOWN = (
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.response.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "openai.response.status",
    "openai.response.finish_observed",
    "error.type",
)


class CompactSpanPrinter(SpanExporter):
    """One line per span: name, duration, and the attributes a reader looks at first."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            attributes = span.attributes or {}
            millis = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
            shown = ", ".join(f"{key.split('.', 1)[1]}={attributes[key]!r}" for key in _SHOWN if key in attributes)
            print(f"  [span] {span.name:<28} {millis:8.1f} ms  {span.status.status_code.name:<5} {shown}")
        return SpanExportResult.SUCCESS


def run_calls(client: openai.OpenAI, chat_model: str, responses_model: str, offline: bool) -> None:
    print("\n1. responses.create")
    response = client.responses.create(model=responses_model, input="Say hello in five words.")
    print(f"  -> {response.output_text!r}")

    print("\n2. responses.create(stream=True), read to the end")
    with client.responses.stream(model=responses_model, input="Count to five.") as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
    print(f"  -> {text!r}")

    print("\n3. background response, polled until it finishes (one span, from create to completion)")
    background = client.responses.create(model=responses_model, input="Write a haiku.", background=True)
    polls = 0
    while background.status in ("queued", "in_progress") and polls < 60:
        time.sleep(0 if offline else 1)
        background = client.responses.retrieve(background.id)
        polls += 1
    print(f"  -> {background.status} after {polls} poll(s)")
    for _ in range(3):  # retrieving a finished response emits no second span
        client.responses.retrieve(background.id)

    print("\n4. chat.completions.create")
    completion = client.chat.completions.create(
        model=chat_model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=20
    )
    print(f"  -> {completion.choices[0].message.content!r}")

    print("\n5. chat stream, abandoned after two chunks (its span still ends, marked unfinished)")
    chat_stream = client.chat.completions.create(
        model=chat_model, messages=[{"role": "user", "content": "Tell me a story."}], stream=True
    )
    for index, _chunk in enumerate(chat_stream):
        if index == 1:
            break
    chat_stream.close()

    print("\n6. embeddings.create")
    embedding = client.embeddings.create(model="text-embedding-3-small", input="hello world")
    print(f"  -> {len(embedding.data[0].embedding)} dimensions")

    print("\n7. an API error (recorded on the span, re-raised unchanged)")
    try:
        client.chat.completions.create(model="fake-error-429" if offline else "no-such-model", messages=[])
    except openai.APIStatusError as error:
        print(f"  -> {type(error).__name__}: HTTP {error.status_code}")


async def run_async_call(client: openai.AsyncOpenAI, responses_model: str) -> None:
    print("\n8. AsyncOpenAI responses.create")
    response = await client.responses.create(model=responses_model, input="Say hi.")
    print(f"  -> {response.output_text!r}")


def print_metrics(reader: InMemoryMetricReader) -> None:
    data = reader.get_metrics_data()
    if data is None:
        return
    print("\nMetrics:")
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:
                    attributes = point.attributes or {}
                    label = ", ".join(
                        f"{key}={attributes[key]}"
                        for key in ("gen_ai.operation.name", "gen_ai.request.model", "gen_ai.token.type", "error.type")
                        if key in attributes
                    )
                    value = getattr(point, "sum", getattr(point, "value", None))
                    count = getattr(point, "count", None)
                    suffix = f" count={count} sum={value:.4g}" if count is not None else f" value={value}"
                    print(f"  {metric.name:<44}{suffix}  {{{label}}}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="print every span as the SDK's console JSON")
    args = parser.parse_args()

    tracer_provider = TracerProvider()
    exporter: SpanExporter = ConsoleSpanExporter() if args.full else CompactSpanPrinter()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    metric_reader = InMemoryMetricReader()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider([metric_reader]))

    offline = not os.environ.get("OPENAI_API_KEY")
    server = None
    if offline:
        server, base_url = fake_openai.serve(fake_openai.FakeOpenAI())
        print(f"No OPENAI_API_KEY: using the local stand-in at {base_url}")
        client = openai.OpenAI(api_key="offline-demo", base_url=base_url, max_retries=0)
        async_client = openai.AsyncOpenAI(api_key="offline-demo", base_url=base_url, max_retries=0)
    else:
        print("OPENAI_API_KEY is set: calling the real OpenAI API")
        client, async_client = openai.OpenAI(max_retries=0), openai.AsyncOpenAI(max_retries=0)
    try:
        run_calls(client, "gpt-4o-mini", "gpt-4.1-nano", offline)
        asyncio.run(run_async_call(async_client, "gpt-4.1-nano"))
    finally:
        client.close()
        if server is not None:
            server.stop()
    registry = instrumentor.response_registry
    if registry is not None:
        pending, emitted = registry.sizes()
        print(f"\nInstrumentation state: pending={pending} (unfinished background responses), emitted ids={emitted}")
    print_metrics(metric_reader)
    instrumentor.uninstrument()


if __name__ == "__main__":
    main()
