"""Long soak: retained memory per call and RSS growth, without and with the instrumentation, in one run.

    .venv/bin/python bench/soak.py                  # 100,000 mixed calls per phase
    .venv/bin/python bench/soak.py --calls 20000    # shorter

The same call mix (responses create, stream, background + polls, chat, chat stream, embeddings,
with_raw_response) goes through the SDK and the in-process fake API (`examples/fake_openai.py`, answered by
the SDK's MockTransport, no sockets), first uninstrumented, then instrumented. Spans go to an exporter that
counts and drops them, as a real exporter sends them away; nothing is kept on purpose.

Figures per phase:
  retained bytes / call   tracemalloc's traced memory after the phase minus before it (after gc), per SDK call
  ..., 2nd half           the same over the second half of the phase only, once bounded caches are full
  RSS growth              resident set size after the phase minus before it (/proc/self/statm, else ru_maxrss)
and, sampled at checkpoints, the retained bytes so far and the instrumentation's `pending`/`emitted` sizes.
A flat checkpoint column is what "bounded" looks like; the older instrumentation grows ~17 KiB per call.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import openai  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from fake_openai import FakeOpenAI, make_transport  # noqa: E402

MODEL = "gpt-4.1-nano"
CHAT_MODEL = "gpt-4o-mini"
KINDS = ("create", "stream", "chat", "chat_stream", "embeddings", "raw", "background")
UNFINISHED = ("queued", "in_progress")
HTTP_MODULE = "httpx2" if hasattr(openai._base_client, "httpx2") else "httpx"


class CountingExporter(SpanExporter):
    """Counts spans and lets them go, like an exporter that ships them elsewhere."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


def make_client(fake: FakeOpenAI) -> openai.OpenAI:
    import importlib

    http = importlib.import_module(HTTP_MODULE)
    return openai.OpenAI(
        api_key="sk-soak",
        base_url="http://localhost:8080/v1",
        http_client=http.Client(transport=make_transport(fake, http)),
        max_retries=0,
    )


def one_call(client: openai.OpenAI, kind: str) -> int:
    """One logical operation; returns the number of SDK calls it made."""
    messages: Any = [{"role": "user", "content": "What is the capital of France?"}]
    if kind == "create":
        client.responses.create(model=MODEL, input="What is the capital of France?")
    elif kind == "stream":
        for _ in client.responses.create(model=MODEL, input="What is the capital of France?", stream=True):
            pass
    elif kind == "chat":
        client.chat.completions.create(model=CHAT_MODEL, messages=messages)
    elif kind == "chat_stream":
        for _ in client.chat.completions.create(model=CHAT_MODEL, messages=messages, stream=True):
            pass
    elif kind == "embeddings":
        client.embeddings.create(model="text-embedding-3-small", input="What is the capital of France?", dimensions=8)
    elif kind == "raw":
        client.responses.with_raw_response.create(model=MODEL, input="What is the capital of France?").parse()
    else:
        response = client.responses.create(model=MODEL, input="What is the capital of France?", background=True)
        calls = 1
        while response.status in UNFINISHED:
            response = client.responses.retrieve(response.id)
            calls += 1
        return calls
    return 1


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def traced_now() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def run_phase(label: str, calls: int, checkpoints: int, sizes: Callable[[], tuple[int, int]] | None) -> dict[str, Any]:
    fake = FakeOpenAI(polls_to_complete=2, max_stored=200)
    client = make_client(fake)
    for index in range(700):  # warm every path, and fill the fake's bounded store, before measuring
        one_call(client, KINDS[index % len(KINDS)])
    gc.collect()
    rss_before = rss_bytes()
    baseline = traced_now()
    samples: list[tuple[int, int, tuple[int, int] | None]] = []
    step = max(1, calls // checkpoints)
    next_sample = step
    done = operations = index = 0
    started = time.perf_counter()
    while done < calls:
        done += one_call(client, KINDS[index % len(KINDS)])
        index += 1
        operations += 1
        if done >= next_sample:
            next_sample += step
            samples.append((done, traced_now() - baseline, sizes() if sizes else None))
            print(f"  {label}: {done:>7} calls, retained {samples[-1][1] / 1024:9.1f} KiB", flush=True)
    seconds = time.perf_counter() - started
    retained = traced_now() - baseline
    client.close()
    half = samples[len(samples) // 2 - 1] if len(samples) >= 2 else (0, 0, None)
    steady = (retained - half[1]) / max(1, done - half[0])  # the second half: after caches filled up
    return {
        "steady_per_call": steady,
        "calls": done,
        "operations": operations,
        "seconds": seconds,
        "retained": retained,
        "per_call": retained / done,
        "rss_growth": rss_bytes() - rss_before,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000, help="SDK calls per phase (default 100,000)")
    parser.add_argument("--checkpoints", type=int, default=10, help="samples per phase (default 10)")
    args = parser.parse_args()

    import pydantic

    print(
        f"soak: {args.calls:,} calls per phase; python {platform.python_version()}, openai {openai.__version__}, "
        f"pydantic {pydantic.VERSION}, {HTTP_MODULE}; mix: {', '.join(KINDS)}",
        flush=True,
    )
    tracemalloc.start(1)
    plain = run_phase("uninstrumented", args.calls, args.checkpoints, None)

    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.instrumentation.openai.telemetry import TracedData

    exporter = CountingExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    registry = instrumentor.response_registry
    assert registry is not None
    traced = run_phase("instrumented", args.calls, args.checkpoints, registry.sizes)
    reader.get_metrics_data()
    pending, emitted = registry.sizes()
    gc.collect()
    live_traced_data = sum(1 for obj in gc.get_objects() if isinstance(obj, TracedData))
    instrumentor.uninstrument()
    tracemalloc.stop()

    def kib(value: float) -> str:
        return f"{value / 1024:,.1f} KiB"

    rows = [
        ("SDK calls", f"{plain['calls']:,}", f"{traced['calls']:,}"),
        ("logical operations", f"{plain['operations']:,}", f"{traced['operations']:,}"),
        ("wall seconds (tracemalloc on)", f"{plain['seconds']:.1f}", f"{traced['seconds']:.1f}"),
        ("retained (tracemalloc)", kib(plain["retained"]), kib(traced["retained"])),
        ("retained bytes / call", f"{plain['per_call']:.2f}", f"{traced['per_call']:.2f}"),
        ("retained bytes / call, 2nd half", f"{plain['steady_per_call']:.2f}", f"{traced['steady_per_call']:.2f}"),
        ("RSS growth", kib(plain["rss_growth"]), kib(traced["rss_growth"])),
    ]
    print()
    print(f"{'':32}{'uninstrumented':>18}{'instrumented':>18}")
    for name, left, right in rows:
        print(f"{name:32}{left:>18}{right:>18}")
    print()
    print("checkpoints (retained so far, KiB):")
    print(f"{'calls':>10}{'uninstrumented':>18}{'instrumented':>18}{'pending':>10}{'emitted':>10}")
    pairs = zip(plain["samples"], traced["samples"], strict=False)
    for (calls, plain_kept, _), (_, traced_kept, traced_sizes) in pairs:
        assert traced_sizes is not None
        print(
            f"{calls:>10,}{plain_kept / 1024:>18.1f}{traced_kept / 1024:>18.1f}"
            f"{traced_sizes[0]:>10}{traced_sizes[1]:>10}"
        )
    print()
    print(
        f"instrumented: spans exported {exporter.count:,} for {traced['operations']:,} operations "
        f"(+{700} warm-up); pending {pending}, emitted ids {emitted} (capacity-bounded), "
        f"live TracedData after the run {live_traced_data}"
    )
    print(
        f"difference: {traced['per_call'] - plain['per_call']:+.2f} retained bytes per call overall, "
        f"{traced['steady_per_call'] - plain['steady_per_call']:+.2f} in the second half "
        "(the emitted-ids cache fills to its capacity, then stays flat)"
    )


if __name__ == "__main__":
    main()
