"""Retained bytes per completed call, for every form of Responses call, instrumented vs not, in one run.

    .venv/bin/python bench/memory_per_form.py [--calls 2000]

For each form: a warm-up (caches, the id table), then `--calls` calls between two tracemalloc
snapshots taken after gc. Spans go to an in-memory exporter that is cleared as it fills, so what
remains is what the instrumentation (or the SDK) keeps.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from opentelemetry.instrumentation.openai import OpenAIInstrumentor

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import fake_openai

MODEL = "gpt-4.1-nano"


class Answer(BaseModel):
    text: str


def structured_output_handler(fake: fake_openai.FakeOpenAI) -> Callable[[httpx2.Request], httpx2.Response]:
    """The fake API (keeping only its last 50 responses, so its own state stops growing in the warm-up),
    answering JSON that `parse(text_format=Answer)` accepts (it replies in prose)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        reply = fake_openai.dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        body = reply.body
        if reply.status == 200 and not reply.is_sse and b'"json_schema"' in request.content:
            data = json.loads(body)
            for item in data.get("output") or []:
                if item.get("type") == "message":
                    item["content"][0]["text"] = json.dumps({"text": item["content"][0]["text"]})
            body = json.dumps(data).encode()
        return httpx2.Response(reply.status, headers=reply.headers, content=body)

    return handler


def forms(client: openai.OpenAI) -> dict[str, Callable[[], Any]]:
    def create() -> Any:
        return client.responses.create(model=MODEL, input="hello there")

    def stream() -> None:
        for _ in client.responses.create(model=MODEL, input="hello there", stream=True):
            pass

    def stream_helper() -> None:
        with client.responses.stream(model=MODEL, input="hello there") as events:
            for _ in events:
                pass

    def parse() -> Any:
        return client.responses.parse(model=MODEL, input="hello there", text_format=Answer)

    def background() -> None:
        response = client.responses.create(model=MODEL, input="hello there", background=True)
        while response.status in ("queued", "in_progress"):
            response = client.responses.retrieve(response.id)

    def raw() -> Any:
        return client.responses.with_raw_response.create(model=MODEL, input="hello there").parse()

    def create_and_3_retrieves() -> None:
        response = client.responses.create(model=MODEL, input="hello there")
        for _ in range(3):
            client.responses.retrieve(response.id)

    return {
        "create": create,
        "create(stream=True)": stream,
        "stream() helper": stream_helper,
        "parse(text_format)": parse,
        "background + polls": background,
        "with_raw_response": raw,
        "create + 3 retrieves": create_and_3_retrieves,
    }


def retained_per_call(call: Callable[[], Any], calls: int, exporter: InMemorySpanExporter) -> float:
    for _ in range(300):
        call()
    exporter.clear()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for index in range(calls):
        call()
        if index % 200 == 0:
            exporter.clear()
    exporter.clear()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider([InMemoryMetricReader()])
    client = openai.OpenAI(
        api_key="bench",
        base_url="http://localhost:8080/v1",
        max_retries=0,
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(structured_output_handler(fake_openai.FakeOpenAI(max_stored=50)))
        ),
    )
    instrumentor = OpenAIInstrumentor()
    print(f"openai {openai.__version__}, {args.calls} calls per form after 300 warm-up calls\n")
    print(f"{'form':<24}{'uninstrumented B/call':>24}{'instrumented B/call':>22}{'difference':>12}{'spans':>8}")
    for name, call in forms(client).items():
        bare = retained_per_call(call, args.calls, exporter)
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        traced = retained_per_call(call, args.calls, exporter)
        exporter.clear()
        call()
        spans = len(exporter.get_finished_spans())
        registry = instrumentor.response_registry
        pending = registry.sizes()[0] if registry is not None else -1
        instrumentor.uninstrument()
        print(f"{name:<24}{bare:>24.1f}{traced:>22.1f}{traced - bare:>+12.1f}{spans:>8}   pending={pending}")


if __name__ == "__main__":
    main()
