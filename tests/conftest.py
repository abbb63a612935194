"""Shared fixtures: in-memory exporters, the instrumentor, fake-API clients, cassette replay."""

from __future__ import annotations

import gc
import importlib
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from opentelemetry.instrumentation.openai import OpenAIInstrumentor

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import fake_openai  # noqa: E402

CASSETTES = ROOT.parent / "shared" / "cassettes" / "openai-recorded"

# openai 3.x speaks httpx2; 1.x and 2.x speak httpx. Tests use whichever the SDK uses.
HTTP = importlib.import_module("httpx2" if hasattr(openai._base_client, "httpx2") else "httpx")


class SpanCounter(SpanProcessor):
    """Counts spans started and ended, so every test can assert nothing is left open."""

    def __init__(self) -> None:
        self.started = 0
        self.ended = 0
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        with self._lock:
            self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended += 1

    @property
    def open(self) -> int:
        return self.started - self.ended


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def span_counter() -> SpanCounter:
    return SpanCounter()


@pytest.fixture
def tracer_provider(span_exporter: InMemorySpanExporter, span_counter: SpanCounter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(span_counter)
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    return provider


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(metric_reader: InMemoryMetricReader) -> MeterProvider:
    return MeterProvider(metric_readers=[metric_reader])


@pytest.fixture
def instrument_options() -> dict[str, Any]:
    """Override in a test module (or parametrize) to pass settings to `instrument()`."""
    return {}


@pytest.fixture
def instrumentor(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_counter: SpanCounter,
    instrument_options: dict[str, Any],
) -> Iterator[OpenAIInstrumentor]:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider, **instrument_options)
    try:
        yield instrumentor
    finally:
        # Abandoned streams end on garbage collection: collect before checking nothing is open.
        gc.collect()
        instrumentor.uninstrument()  # ends what is still pending, so nothing may stay open
        assert span_counter.open == 0, f"{span_counter.open} span(s) left open"


@pytest.fixture
def fake() -> fake_openai.FakeOpenAI:
    return fake_openai.FakeOpenAI()


def make_client(fake: fake_openai.FakeOpenAI, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(
        api_key="sk-test-key",
        base_url="http://localhost:8080/v1",
        http_client=HTTP.Client(transport=fake_openai.make_transport(fake, HTTP)),
        **kwargs,
    )


def make_async_client(fake: fake_openai.FakeOpenAI, **kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(
        api_key="sk-test-key",
        base_url="http://localhost:8080/v1",
        http_client=HTTP.AsyncClient(transport=fake_openai.make_transport(fake, HTTP, asynchronous=True)),
        **kwargs,
    )


@pytest.fixture
def client(instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI) -> Iterator[openai.OpenAI]:
    with make_client(fake) as client:
        yield client


@pytest.fixture
async def async_client(instrumentor: OpenAIInstrumentor, fake: fake_openai.FakeOpenAI) -> Any:
    async with make_async_client(fake) as client:
        yield client


def handler_client(handler: Callable[[Any], Any], **kwargs: Any) -> openai.OpenAI:
    """A client whose every request is answered by `handler(request) -> Response` (HTTP module of the SDK)."""
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(
        api_key="sk-test-key",
        base_url="http://localhost:8080/v1",
        http_client=HTTP.Client(transport=HTTP.MockTransport(handler)),
        **kwargs,
    )


def handler_async_client(handler: Callable[[Any], Any], **kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(
        api_key="sk-test-key",
        base_url="http://localhost:8080/v1",
        http_client=HTTP.AsyncClient(transport=HTTP.MockTransport(handler)),
        **kwargs,
    )


def cassette(relative_path: str) -> Any:
    """Replays a recorded cassette; a request it does not hold fails instead of reaching the network."""
    import vcr

    path = CASSETTES / relative_path
    if not path.exists():
        pytest.skip(f"cassette {relative_path} not available")
    return vcr.VCR(record_mode="none", decode_compressed_response=True).use_cassette(str(path))


def recorded_client(**kwargs: Any) -> openai.OpenAI:
    """A client aimed at the real API host, for cassette replay (vcrpy intercepts every request)."""
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(api_key="sk-test-key", **kwargs)


def recorded_async_client(**kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(api_key="sk-test-key", **kwargs)


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    grouped: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        grouped.setdefault(span.name, []).append(span)
    return grouped


def metric_points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """All data points of one metric from the in-memory reader."""
    data = reader.get_metrics_data()
    points: list[Any] = []
    if data is None:
        return points
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == name:
                    points.extend(metric.data.data_points)
    return points


OPENAI_VERSION = tuple(int(part) for part in openai.__version__.split(".")[:3] if part.isdigit())


def requires_openai(minimum: str, reason: str) -> pytest.MarkDecorator:
    """Skips a test on openai releases older than `minimum` ("1.109"); `reason` says what the older SDK lacks."""
    wanted = tuple(int(part) for part in minimum.split("."))
    return pytest.mark.skipif(wanted > OPENAI_VERSION, reason=f"openai {openai.__version__} < {minimum}: {reason}")


def pytest_collection_finish(session: pytest.Session) -> None:
    # Every instrumentor teardown runs gc.collect(); with the SDK's thousands of pydantic classes in the
    # heap each took ~1 s. Frozen, the import-time objects are skipped and a collection sees only new ones.
    gc.collect()
    gc.freeze()


# ---- older SDK lines: a test of API surface that an older openai release does not have is skipped ----

_UNEXPECTED_KEYWORD = re.compile(r"^(\w+\.\w+)\(\) got an unexpected keyword argument '(\w+)'$")
_INSTRUMENTATION = str(ROOT / "src")


def _missing_sdk_surface(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """What an older SDK lacks, when the failure is a test calling a method or parameter it does not have.

    Only on openai < 3 (the newest line must have all of it, so there a typo still fails), and only for
    errors raised before any instrumentation code ran: a TypeError of an SDK resource method refusing a
    keyword, or an AttributeError of an SDK object raised in the test's own frame.
    """
    if OPENAI_VERSION >= (3,):
        return None
    error = excinfo.value
    frames = [entry.frame.code.raw.co_filename for entry in excinfo.traceback]
    if not frames or any(name.startswith(_INSTRUMENTATION) for name in frames):
        return None
    if type(error) is TypeError:
        match = _UNEXPECTED_KEYWORD.match(str(error))
        if match and "/openai/" in frames[-1]:
            return f"{match.group(1)}() has no `{match.group(2)}` parameter"
    if type(error) is AttributeError:
        owner = getattr(error, "obj", None)
        module = type(owner).__module__
        if owner is not None and module.startswith("openai.") and frames[-1].startswith(str(ROOT / "tests")):
            return f"{type(owner).__name__} has no `{error.name}`"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and call.excinfo is not None:
        missing = _missing_sdk_surface(call.excinfo)
        if missing is not None:
            path, lineno, _ = item.reportinfo()
            report.outcome = "skipped"
            report.longrepr = (str(path), (lineno or 0) + 1, f"openai {openai.__version__} predates it: {missing}")
    return report
