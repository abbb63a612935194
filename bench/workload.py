"""Benchmark worker: runs inside ONE contender's virtual environment and writes its figures as JSON.

It needs only the standard library, openai, opentelemetry-sdk and the contender's package; the fake
OpenAI API (`examples/fake_openai.py`) answers in-process through the SDK's MockTransport, so no socket
is opened and the fake's own cost is part of the uninstrumented baseline.

Modes (one process each, started by `bench/run.py`):
  timing  the uninstrumented client first (a pass before any instrumentor is imported), then the contender
          instrumented (content capture per --content) in interleaved off/on pairs (`PatchToggle`), for
          responses.create, chat.completions.create, embeddings.create and the two 50-item streams;
          for `ours` also the SDK floor (a bare span with the attributes ours sets on the call).
  extras  spans per response (create + 3 retrieves; background create + polls), then retained memory
          (tracemalloc) over N calls of responses.create and the growth of module-level state.
  smoke   one call of each kind: proves the contender imports, instruments and emits spans.

Usage: python bench/workload.py --contender ours --mode timing --content off --out /tmp/ours.json [--quick]
"""

from __future__ import annotations

import argparse
import collections
import gc
import importlib
import json
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

CONTENDERS = ("ours", "older", "genai", "openinference", "none")
# Module prefixes scanned for module-level containers that grow (the contender's own state).
STATE_PREFIXES = {
    "ours": ("opentelemetry.instrumentation.openai",),
    "older": ("opentelemetry.instrumentation.openai",),
    "genai": (
        "opentelemetry.instrumentation.genai",
        "opentelemetry.instrumentation.openai_v2",
        "opentelemetry.util.genai",
    ),
    "openinference": ("openinference",),
    "none": (),
}
DISTRIBUTIONS = {
    "ours": ("opentelemetry-instrumentation-openai",),
    "older": ("opentelemetry-instrumentation-openai", "opentelemetry-semantic-conventions-ai"),
    "genai": (
        "opentelemetry-instrumentation-genai-openai",
        "opentelemetry-instrumentation-openai-v2",
        "opentelemetry-util-genai",
    ),
    "openinference": ("openinference-instrumentation-openai", "openinference-instrumentation"),
    "none": (),
}

# Request shapes. Stream lengths are chosen so the caller sees exactly 50 items:
# Responses: created, in_progress, item.added, part.added, N deltas, text.done, part.done, item.done, completed.
RESPONSES_STREAM_WORDS = 42  # 42 + 8 = 50 events
# Chat (with usage): role chunk, N deltas, finish chunk, usage chunk.
CHAT_STREAM_WORDS = 47  # 47 + 3 = 50 chunks
STREAM_ITEMS = 50
WARMUP_CALLS = 300  # before the memory curve starts: imports, caches and first-use allocations settle

RESPONSES_KW: dict[str, Any] = {
    "model": "gpt-4.1-nano",
    "instructions": "You are a terse assistant.",
    "input": "Write one sentence about the sea.",
    "temperature": 0.2,
    "max_output_tokens": 256,
}
CHAT_KW: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Write one sentence about the sea."},
    ],
    "temperature": 0.2,
    "max_tokens": 256,
}
EMBEDDINGS_KW: dict[str, Any] = {"model": "text-embedding-3-small", "input": "The sea is calm tonight."}


def configure_content_env(contender: str, content_on: bool) -> None:
    """Env switches, set before any contender module is imported (some read them at import or instrument time)."""
    if contender == "older":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if content_on else "false"
    elif contender == "genai":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY" if content_on else "NO_CONTENT"
    elif contender == "ours":
        # ours takes the keyword argument below; the env var (shared with genai) is cleared so it cannot interfere
        os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)


def instrument(contender: str, content_on: bool, tracer_provider: Any, meter_provider: Any) -> tuple[Any, str]:
    """Instruments with the contender's own instrumentor and content switch; returns (instrumentor, how)."""
    if contender == "ours":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        mode = "span_only" if content_on else "no_content"
        instrumentor = OpenAIInstrumentor(capture_content=mode)
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        return instrumentor, f"OpenAIInstrumentor(capture_content={mode!r})"
    if contender == "older":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        switch = os.environ["TRACELOOP_TRACE_CONTENT"]
        return instrumentor, f"OpenAIInstrumentor() with TRACELOOP_TRACE_CONTENT={switch}"
    if contender == "genai":
        try:
            module = importlib.import_module("opentelemetry.instrumentation.genai.openai")
        except ImportError:
            module = importlib.import_module("opentelemetry.instrumentation.openai_v2")
        instrumentor = module.OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        value = os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
        return instrumentor, f"{module.__name__}.OpenAIInstrumentor() with CAPTURE_MESSAGE_CONTENT={value}"
    if contender == "openinference":
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.openai import OpenAIInstrumentor

        config = TraceConfig() if content_on else TraceConfig(hide_inputs=True, hide_outputs=True)
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, config=config)
        how = "TraceConfig()" if content_on else "TraceConfig(hide_inputs=True, hide_outputs=True)"
        return instrumentor, f"OpenAIInstrumentor().instrument(config={how}) (no metrics)"
    raise ValueError(f"{contender} has no instrumentor")


class Harness:
    """TracerProvider (SimpleSpanProcessor -> in-memory exporter), MeterProvider (in-memory reader), a client."""

    def __init__(self, max_stored: int = 10_000) -> None:
        import openai
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        import fake_openai

        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metric_reader])
        # openai 3.x speaks httpx2; 1.x and 2.x speak httpx
        http = importlib.import_module("httpx2" if hasattr(openai._base_client, "httpx2") else "httpx")
        self.fake = fake_openai.FakeOpenAI(max_stored=max_stored)
        self.client = openai.OpenAI(
            api_key="sk-bench",
            base_url="http://localhost:8080/v1",
            max_retries=0,
            http_client=http.Client(transport=fake_openai.make_transport(self.fake, http)),
        )

    def clear(self) -> None:
        self.exporter.clear()

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    # ---- the calls ----

    def responses_create(self) -> Any:
        return self.client.responses.create(**RESPONSES_KW)

    def chat_create(self) -> Any:
        return self.client.chat.completions.create(**CHAT_KW)

    def embeddings_create(self) -> Any:
        return self.client.embeddings.create(**EMBEDDINGS_KW)

    def responses_stream(self) -> int:
        count = 0
        stream = self.client.responses.create(
            **RESPONSES_KW, stream=True, extra_body={"fake_stream_chunks": str(RESPONSES_STREAM_WORDS)}
        )
        for _ in stream:
            count += 1
        return count

    def chat_stream(self) -> int:
        count = 0
        stream = self.client.chat.completions.create(
            **CHAT_KW,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"fake_stream_chunks": str(CHAT_STREAM_WORDS)},
        )
        for _ in stream:
            count += 1
        return count


def settle() -> None:
    """Once per figure, not per repetition (a full collection costs ~60 ms here): collect, then freeze what
    survives so the collections that the measured calls trigger do not rescan the ~100k objects of the
    imported modules, which would land in whichever repetition they happen to fall."""
    gc.collect()
    gc.freeze()


def _timed_rep(harness: Harness, call: Callable[[], Any], calls: int) -> tuple[float, float, int]:
    """One repetition: (CPU µs per call, wall µs per call, spans exported)."""
    harness.clear()
    wall_start = time.perf_counter()
    cpu_start = time.thread_time()
    for _ in range(calls):
        call()
    cpu = time.thread_time() - cpu_start
    wall = time.perf_counter() - wall_start
    spans = len(harness.spans())
    harness.clear()
    return cpu / calls * 1e6, wall / calls * 1e6, spans


def time_calls(harness: Harness, call: Callable[[], Any], calls: int, reps: int, warmup: int) -> dict[str, Any]:
    """Median over `reps` repetitions of the mean µs per call over `calls` calls.

    The figure is the calling thread's CPU time (`time.thread_time`): everything here runs in this one
    thread (the fake API answers in-process), so CPU time is the cost, and it does not count the time
    the process sat preempted by other work on the machine. Wall-clock medians are kept alongside.
    """
    for _ in range(warmup):
        call()
    settle()
    samples, wall_samples, spans = [], [], 0
    for _ in range(reps):
        cpu, wall, spans = _timed_rep(harness, call, calls)
        samples.append(cpu)
        wall_samples.append(wall)
    return {
        "median_us": statistics.median(samples),
        "min_us": min(samples),
        "samples_us": [round(s, 2) for s in samples],
        "wall_median_us": statistics.median(wall_samples),
        "calls_per_rep": calls,
        "spans_per_call": spans / calls,
    }


def time_pairs(
    harness: Harness,
    call: Callable[[], Any],
    switch: Callable[[bool], None],
    calls: int,
    reps: int,
    warmup: int,
) -> dict[str, Any]:
    """Uninstrumented and instrumented repetitions interleaved (off/on, then on/off, ...), so that whatever
    else the machine does drifts into both alike; `added_us` is the median of the paired differences."""
    for state in (False, True):
        switch(state)
        for _ in range(warmup):
            call()
    settle()
    off: list[float] = []
    on: list[float] = []
    spans_off = spans_on = 0
    for rep in range(reps):
        for state in (False, True) if rep % 2 == 0 else (True, False):
            switch(state)
            cpu, _, spans = _timed_rep(harness, call, calls)
            if state:
                on.append(cpu)
                spans_on = spans
            else:
                off.append(cpu)
                spans_off += spans
    switch(True)
    differences = [b - a for a, b in zip(off, on, strict=True)]
    quartiles = statistics.quantiles(differences, n=4) if len(differences) > 1 else [0.0, 0.0, 0.0]
    return {
        "uninstrumented_us": statistics.median(off),
        "instrumented_us": statistics.median(on),
        "added_us": statistics.median(differences),
        # standard error of that median, from the spread of the differences (0.93 ≈ 1.2533 / 1.349)
        "added_se_us": 0.93 * (quartiles[2] - quartiles[0]) / math.sqrt(len(differences)),
        "ratio": statistics.median(on) / statistics.median(off),
        "uninstrumented_samples_us": [round(x, 2) for x in off],
        "instrumented_samples_us": [round(x, 2) for x in on],
        "calls_per_rep": calls,
        "spans_per_call": spans_on / calls,
        # must be 0: proves the uninstrumented repetitions really ran without the instrumentation
        "spans_while_off": spans_off,
    }


class PatchToggle:
    """Switches an instrumentation off and on again without its `uninstrument()`, for interleaved timing.

    It records every function-like attribute of the openai and httpx modules and of the classes they
    define, before and after `instrument()`; whatever `instrument()` replaced or added is the patch set.
    `switch(False)` puts the originals back, `switch(True)` the instrumented ones. Contender-agnostic:
    wrapt wrappers on classes or on `OpenAI.request` alike.
    """

    PREFIXES = ("openai", "httpx", "httpx2")

    # imported before the scan, so that patches an instrumentor puts on them are seen as changes
    MODULES = (
        "openai.resources.responses.responses",
        "openai.resources.chat.completions",
        "openai.resources.embeddings",
        "openai.resources.completions",
    )

    def __init__(self) -> None:
        for module in self.MODULES:
            try:
                importlib.import_module(module)
            except ImportError:
                continue
        self._before = self._scan()
        self._changes: list[tuple[Any, str, Any, Any]] = []  # (owner, attribute, original or _MISSING, patched)
        self._on = True

    _MISSING = object()

    @classmethod
    def _scan(cls) -> dict[tuple[int, str], tuple[Any, Any]]:
        state: dict[tuple[int, str], tuple[Any, Any]] = {}
        for name, module in list(sys.modules.items()):
            if module is None or name.split(".")[0] not in cls.PREFIXES or name.startswith("openai.types"):
                continue  # openai.types: thousands of pydantic models, nothing an instrumentation patches
            owners: list[Any] = [module]
            # issubclass(type(v), ...), not isinstance: openai's lazy proxies import their target on `__class__`
            owners += [v for v in list(vars(module).values()) if issubclass(type(v), type) and v.__module__ == name]
            for owner in owners:
                for attr, value in list(vars(owner).items()):
                    state[(id(owner), attr)] = (owner, value)
        return state

    def capture(self) -> int:
        """Call right after `instrument()`; returns how many attributes the instrumentation patched."""
        after = self._scan()
        owners = {id(owner) for owner, _ in self._before.values()}
        for key, (owner, value) in after.items():
            if key[0] not in owners or issubclass(type(value), (type, types.ModuleType)):
                continue  # modules first imported by instrument() are not toggled
            original = self._before.get(key, (owner, self._MISSING))[1]
            if original is not value and (callable(value) or issubclass(type(value), (staticmethod, classmethod))):
                self._changes.append((owner, key[1], original, value))
        return len(self._changes)

    def switch(self, on: bool) -> None:
        if on == self._on:
            return
        self._on = on
        for owner, attr, original, patched in self._changes:
            if on:
                setattr(owner, attr, patched)
            elif original is self._MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)

    def describe(self) -> list[str]:
        names = []
        for owner, attr, *_ in self._changes:
            names.append(f"{getattr(owner, '__qualname__', getattr(owner, '__name__', '?'))}.{attr}")
        return sorted(names)


OPERATIONS = {
    "responses.create": ("responses_create", 1),
    "chat.completions.create": ("chat_create", 1),
    "embeddings.create": ("embeddings_create", 1),
    "responses.stream50": ("responses_stream", 6),
    "chat.stream50": ("chat_stream", 6),
}


def measure_all(harness: Harness, quick: bool, reps: int | None = None) -> dict[str, Any]:
    """Each operation; a 50-item stream costs ~6x a plain call, so it gets a sixth of the calls."""
    calls, default_reps = (24, 3) if quick else (150, 9)
    figures = {}
    for name, (method, divisor) in OPERATIONS.items():
        call = getattr(harness, method)
        n = max(5, calls // divisor)
        figures[name] = time_calls(harness, call, n, reps or default_reps, warmup=max(3, n // 5))
    return figures


def measure_pairs(harness: Harness, switch: Callable[[bool], None], quick: bool) -> dict[str, Any]:
    # many short pairs rather than a few long ones: each pair's halves run close together in time
    calls, reps = (20, 6) if quick else (48, 30)
    figures = {}
    for name, (method, divisor) in OPERATIONS.items():
        n = max(5, calls // divisor)
        figures[name] = time_pairs(harness, getattr(harness, method), switch, n, reps, warmup=max(3, n // 5))
    return figures


def first_span_attributes(harness: Harness, call: Callable[[], Any]) -> dict[str, Any] | None:
    harness.clear()
    call()
    spans = harness.spans()
    harness.clear()
    if not spans:
        return None
    span = spans[-1]
    return {
        "name": span.name,
        "kind": span.kind.name,
        "attributes": dict(span.attributes or {}),
        "events": len(span.events),
        "spans": len(spans),
    }


def sdk_floor(harness: Harness, span_info: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The SDK alone: start and end one CLIENT span with ours' attributes (same provider and exporter).

    `span_only`: exactly that. `span_and_metrics`: plus the three histogram records ours makes per
    non-streamed call (duration, input tokens, output tokens) with its metric attributes.
    """
    from opentelemetry.trace import SpanKind

    tracer = harness.tracer_provider.get_tracer("bench.sdk_floor")
    meter = harness.meter_provider.get_meter("bench.sdk_floor")
    duration = meter.create_histogram("bench.duration", unit="s")
    tokens = meter.create_histogram("bench.tokens", unit="{token}")
    name = span_info["name"]
    attributes = dict(span_info["attributes"])
    metric_attributes = {
        k: attributes[k]
        for k in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model")
        if k in attributes
    }
    metric_attributes.update({k: v for k, v in attributes.items() if k.startswith("server.")})

    def span_only() -> None:
        tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes).end()

    def span_and_metrics() -> None:
        started = time.perf_counter()
        tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes).end()
        duration.record(time.perf_counter() - started, metric_attributes)
        tokens.record(12, {**metric_attributes, "gen_ai.token.type": "input"})
        tokens.record(5, {**metric_attributes, "gen_ai.token.type": "output"})

    calls, reps = (1_000, 3) if quick else (10_000, 9)
    return {
        "span_name": name,
        "attribute_count": len(attributes),
        "attributes": attributes,
        "span_only": time_calls(harness, span_only, calls, reps, warmup=500),
        "span_and_metrics": time_calls(harness, span_and_metrics, calls, reps, warmup=500),
    }


def in_situ_floor(harness: Harness, spans: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The floor inside a real call: a bare wrapt wrapper at ours' choke point that only starts and ends
    a span with ours' attributes. Cold caches inside a full SDK call make the span cost more than in a
    tight loop; this is what any instrumentation that emits such a span pays at the least."""
    import openai._base_client as base_client
    from opentelemetry.instrumentation.utils import unwrap
    from opentelemetry.trace import SpanKind
    from wrapt import wrap_function_wrapper

    tracer = harness.tracer_provider.get_tracer("bench.sdk_floor")
    calls, reps = (20, 6) if quick else (48, 30)
    out = {}
    for op, method in (("responses.create", "responses_create"), ("chat.completions.create", "chat_create")):
        info = spans.get(op)
        if info is None:
            continue
        name, attributes = info["name"], dict(info["attributes"])

        def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any, span_info: Any = (name, attributes)) -> Any:
            span = tracer.start_span(span_info[0], kind=SpanKind.CLIENT, attributes=span_info[1])
            try:
                return wrapped(*args, **kwargs)
            finally:
                span.end()

        def switch(on: bool, wrapper: Any = wrapper) -> None:
            if on and not hasattr(base_client.SyncAPIClient.request, "__wrapped__"):
                wrap_function_wrapper("openai._base_client", "SyncAPIClient.request", wrapper)
            elif not on and hasattr(base_client.SyncAPIClient.request, "__wrapped__"):
                unwrap(base_client.SyncAPIClient, "request")

        try:
            out[op] = time_pairs(harness, getattr(harness, method), switch, calls, reps, warmup=20)
        finally:
            switch(False)
    return out


def run_timing(contender: str, content_on: bool, quick: bool) -> dict[str, Any]:
    """Uninstrumented first (never instrumented yet), then instrument, then interleaved off/on pairs."""
    harness = Harness()
    out: dict[str, Any] = {"content": "on" if content_on else "off"}
    out["stream_items"] = {"responses.stream50": harness.responses_stream(), "chat.stream50": harness.chat_stream()}
    out["uninstrumented"] = measure_all(harness, quick, reps=3 if quick else 5)
    if contender == "none":
        return out
    toggle = PatchToggle()
    instrumentor, how = instrument(contender, content_on, harness.tracer_provider, harness.meter_provider)
    out["instrumented_with"] = how
    out["patched"] = toggle.capture() and toggle.describe()
    out["pairs"] = measure_pairs(harness, toggle.switch, quick)
    toggle.switch(True)
    out["span_shapes"] = {
        "responses.create": first_span_attributes(harness, harness.responses_create),
        "chat.completions.create": first_span_attributes(harness, harness.chat_create),
    }
    if contender == "ours" and not content_on:
        shapes = {op: info for op, info in out["span_shapes"].items() if info is not None}
        out["sdk_floor"] = {op: sdk_floor(harness, info, quick) for op, info in shapes.items()}
        instrumentor.uninstrument()
        out["sdk_floor_in_situ"] = in_situ_floor(harness, shapes, quick)
    return out


# ---- extras: spans per response, memory ----


def spans_per_response(harness: Harness, flows: int = 5) -> dict[str, Any]:
    client = harness.client
    harness.clear()
    for _ in range(flows):
        response = client.responses.create(**RESPONSES_KW)
        for _ in range(3):
            client.responses.retrieve(response.id)
    retrieve_spans = harness.spans()
    harness.clear()
    polls = 0
    for _ in range(flows):
        response = client.responses.create(**RESPONSES_KW, background=True)
        while response.status in ("queued", "in_progress"):
            response = client.responses.retrieve(response.id)
            polls += 1
            if polls > 100 * flows:
                raise RuntimeError("background response never completed")
    background_spans = harness.spans()
    harness.clear()
    return {
        "create_plus_3_retrieves": {
            "spans_per_response": len(retrieve_spans) / flows,
            "span_names": sorted(collections.Counter(s.name for s in retrieve_spans).items()),
        },
        "background_create_plus_polls": {
            "spans_per_response": len(background_spans) / flows,
            "polls_per_response": polls / flows,
            "span_names": sorted(collections.Counter(s.name for s in background_spans).items()),
        },
    }


def _deep_size(obj: Any, seen: set[int], depth: int = 0) -> int:
    """Approximate bytes of a container and what it holds (bounded depth; shared objects counted once)."""
    if id(obj) in seen or depth > 6:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj, 0)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen, depth + 1) + _deep_size(v, seen, depth + 1) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
        size += sum(_deep_size(v, seen, depth + 1) for v in obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        size += _deep_size(vars(obj), seen, depth + 1)
    elif hasattr(obj, "__slots__"):
        for slot in getattr(type(obj), "__slots__", ()):
            size += _deep_size(getattr(obj, slot, None), seen, depth + 1)
    return size


def module_state(prefixes: tuple[str, ...]) -> dict[str, int]:
    """len() of every module-level container in the contender's modules."""
    sizes: dict[str, int] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(prefixes):
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") or isinstance(value, type):
                continue
            if isinstance(value, (dict, list, set, collections.deque, collections.OrderedDict)) or (
                hasattr(value, "__len__") and hasattr(value, "__contains__") and type(value).__module__ != "builtins"
            ):
                try:
                    sizes[f"{module_name}.{attr}"] = len(value)
                except Exception:
                    continue
    return sizes


def older_responses_dict() -> Any:
    module = sys.modules.get("opentelemetry.instrumentation.openai.v1.responses_wrappers")
    return getattr(module, "responses", None) if module is not None else None


def run_memory(contender: str, harness: Harness, instrumentor: Any, total: int, every: int) -> dict[str, Any]:
    """Retained bytes (tracemalloc, after gc) as responses.create calls accumulate, after a warm-up."""
    for _ in range(WARMUP_CALLS):
        harness.responses_create()
    harness.clear()
    harness.metric_reader.get_metrics_data()
    gc.collect()
    state_before = module_state(STATE_PREFIXES[contender])
    tracemalloc.start(1)
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    snapshot_before = tracemalloc.take_snapshot()
    curve = [(0, 0)]
    started = time.perf_counter()
    for i in range(1, total + 1):
        harness.responses_create()
        if i % 100 == 0:
            harness.clear()
        if i % every == 0:
            harness.clear()
            harness.metric_reader.get_metrics_data()
            gc.collect()
            curve.append((i, tracemalloc.get_traced_memory()[0] - base))
    elapsed = time.perf_counter() - started
    snapshot_after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    top = [
        {"where": str(stat.traceback[0]), "size_diff": stat.size_diff, "count_diff": stat.count_diff}
        for stat in snapshot_after.compare_to(snapshot_before, "lineno")[:8]
    ]
    state_after = module_state(STATE_PREFIXES[contender])
    growth = {
        name: {"before": state_before.get(name, 0), "after": size}
        for name, size in state_after.items()
        if size != state_before.get(name, 0)
    }
    out: dict[str, Any] = {
        "calls": total,
        "curve": curve,
        "retained_bytes": curve[-1][1],
        "retained_bytes_per_call": curve[-1][1] / total,
        "top_allocation_sites": top,
        "module_state_growth": growth,
        "seconds_under_tracemalloc": elapsed,
    }
    if contender == "older":
        responses = older_responses_dict()
        if responses is not None:
            out["older_responses_dict"] = {"entries": len(responses), "approx_bytes": _deep_size(responses, set())}
    if contender == "ours" and instrumentor is not None and getattr(instrumentor, "response_registry", None):
        pending, emitted = instrumentor.response_registry.sizes()
        out["ours_registry"] = {"pending": pending, "emitted_ids": emitted}
    return out


def run_extras(contender: str, memory_calls: int) -> dict[str, Any]:
    # the fake keeps the newest `max_stored` responses; a small number keeps its own memory flat after the warm-up
    harness = Harness(max_stored=10)
    instrumentor = None
    out: dict[str, Any] = {}
    if contender != "none":
        instrumentor, out["instrumented_with"] = instrument(
            contender, False, harness.tracer_provider, harness.meter_provider
        )
        out["spans"] = spans_per_response(harness)
    out["memory"] = run_memory(contender, harness, instrumentor, memory_calls, max(1, memory_calls // 10))
    return out


def run_smoke(contender: str) -> dict[str, Any]:
    harness = Harness()
    out: dict[str, Any] = {}
    if contender != "none":
        _, out["instrumented_with"] = instrument(contender, False, harness.tracer_provider, harness.meter_provider)
    counts = {}
    for name, (method, _) in OPERATIONS.items():
        harness.clear()
        getattr(harness, method)()
        counts[name] = len(harness.spans())
    out["spans_per_operation"] = counts
    return out


def versions(contender: str) -> dict[str, str]:
    from importlib import metadata

    names = ("openai", "opentelemetry-api", "opentelemetry-sdk", "pydantic", *DISTRIBUTIONS[contender])
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    for http in ("httpx2", "httpx"):
        try:
            found[http] = metadata.version(http)
        except metadata.PackageNotFoundError:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contender", required=True, choices=CONTENDERS)
    parser.add_argument("--mode", required=True, choices=("timing", "extras", "smoke"))
    parser.add_argument("--content", choices=("off", "on"), default="off")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--memory-calls", type=int, default=0, help="extras: calls traced (10,000; --quick 1,000)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    content_on = args.content == "on"
    configure_content_env(args.contender, content_on)
    started = time.perf_counter()
    if args.mode == "timing":
        result = run_timing(args.contender, content_on, args.quick)
    elif args.mode == "extras":
        result = run_extras(args.contender, args.memory_calls or (1_000 if args.quick else 10_000))
    else:
        result = run_smoke(args.contender)
    result["contender"] = args.contender
    result["mode"] = args.mode
    result["versions"] = versions(args.contender)
    result["python"] = platform.python_version()
    result["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
