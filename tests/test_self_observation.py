"""Self-observation: gauges of the live `pending`/`emitted` registry and of the SDK's TypeAdapter cache,
and the one-time warning about the openai/pydantic combination that leaks."""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import fake_openai
from conftest import SpanCounter, make_client, metric_points
from opentelemetry.instrumentation.openai import OpenAIInstrumentor, self_observation
from opentelemetry.instrumentation.openai.self_observation import has_known_leak, warn_if_known_leak

PENDING = "openai.instrumentation.pending_responses"
EMITTED = "openai.instrumentation.emitted_response_ids"
TYPE_ADAPTERS = "openai.sdk.type_adapter_cache.size"
GAUGES = (PENDING, EMITTED, TYPE_ADAPTERS)
LOGGER = "opentelemetry.instrumentation.openai.self_observation"


def gauge(reader: InMemoryMetricReader, name: str) -> int | None:
    """The gauge's one value, or None when it reported nothing."""
    points = metric_points(reader, name)
    assert len(points) <= 1, points
    return points[0].value if points else None


def sizes(reader: InMemoryMetricReader) -> tuple[int | None, int | None]:
    return gauge(reader, PENDING), gauge(reader, EMITTED)


def start_background(client: openai.OpenAI, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        response = client.responses.create(model="gpt-4.1-nano", input="Hello there", background=True)
        assert response.status == "queued"
        ids.append(response.id)
    return ids


def finish(client: openai.OpenAI, response_id: str) -> None:
    response = client.responses.retrieve(response_id)
    while response.status in ("queued", "in_progress"):
        response = client.responses.retrieve(response_id)
    assert response.status == "completed"


# ---- the registry gauges ----------------------------------------------------------------------------------------


def test_gauges_read_the_registry_sizes(
    client: openai.OpenAI,
    instrumentor: OpenAIInstrumentor,
    metric_reader: InMemoryMetricReader,
    span_exporter: InMemorySpanExporter,
) -> None:
    assert sizes(metric_reader) == (0, 0)
    ids = start_background(client, 3)
    assert sizes(metric_reader) == (3, 0)
    assert instrumentor.response_registry is not None
    assert instrumentor.response_registry.sizes() == (3, 0)
    assert span_exporter.get_finished_spans() == ()

    finish(client, ids[0])
    assert sizes(metric_reader) == (2, 1)
    finish(client, ids[1])
    finish(client, ids[2])
    assert sizes(metric_reader) == (0, 3)
    assert len(span_exporter.get_finished_spans()) == 3

    # finished non-background responses are remembered too (stored by default); unstored ones are not
    client.responses.create(model="gpt-4.1-nano", input="Hello")
    client.responses.create(model="gpt-4.1-nano", input="Hello", store=False)
    assert sizes(metric_reader) == (0, 4)
    # retrieving a finished id neither adds nor removes anything
    client.responses.retrieve(ids[0])
    assert sizes(metric_reader) == (0, 4)


def test_cancel_and_errors_leave_pending(client: openai.OpenAI, metric_reader: InMemoryMetricReader) -> None:
    first, second = start_background(client, 2)
    client.responses.cancel(first)
    assert sizes(metric_reader) == (1, 1)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_unknown")  # a fetch of an unknown id: nothing pending, nothing remembered
    assert sizes(metric_reader) == (1, 1)
    finish(client, second)
    assert sizes(metric_reader) == (0, 2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


CLOCK = Clock()


@pytest.mark.parametrize("instrument_options", [{"clock": CLOCK, "pending_max_age_seconds": 60}])
def test_collecting_the_pending_gauge_ends_over_age_responses(
    client: openai.OpenAI, metric_reader: InMemoryMetricReader, span_exporter: InMemorySpanExporter
) -> None:
    start_background(client, 2)
    assert sizes(metric_reader) == (2, 0)
    CLOCK.now += 61  # an idle process: no request arrives to expire them
    assert gauge(metric_reader, PENDING) == 0
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 2
    for span in spans:
        assert span.attributes["openai.response.finish_observed"] is False
        assert span.attributes["openai.response.end_reason"] == "max_age_exceeded"
    assert gauge(metric_reader, EMITTED) == 2  # a late retrieve of them emits nothing


# ---- re-instrumenting: one instrument per name, always the live registry -----------------------------------------


class CountingMeter:
    """Passes everything to an SDK meter, counting the gauges created on it."""

    def __init__(self, meter: Any, counts: Counter[str]) -> None:
        self._meter = meter
        self._counts = counts

    def create_observable_gauge(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self._counts[name] += 1
        return self._meter.create_observable_gauge(name, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._meter, name)


class CountingMeterProvider:
    """Hands out one CountingMeter per scope, as the SDK hands out one meter per scope."""

    def __init__(self, provider: MeterProvider) -> None:
        self._provider = provider
        self._meters: dict[tuple[Any, ...], CountingMeter] = {}
        self.gauges: Counter[str] = Counter()

    def get_meter(self, name: str, version: str | None = None, schema_url: str | None = None, *a: Any, **k: Any) -> Any:
        key = (name, version, schema_url)
        if key not in self._meters:
            self._meters[key] = CountingMeter(self._provider.get_meter(name, version, schema_url, *a, **k), self.gauges)
        return self._meters[key]


def test_reinstrumenting_keeps_one_gauge_per_name_reading_the_live_registry(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
    span_counter: SpanCounter,
    fake: fake_openai.FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    counting = CountingMeterProvider(meter_provider)
    caplog.set_level(logging.WARNING)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=counting)
    try:
        with make_client(fake) as client:
            first = start_background(client, 1)
            assert sizes(metric_reader) == (1, 0)
            first_registry = OpenAIInstrumentor().response_registry  # the singleton, constructed again
            assert first_registry is not None
            assert sizes(metric_reader) == (1, 0)

            OpenAIInstrumentor().uninstrument()  # ends the pending span: nothing stays open
            assert span_counter.open == 0
            assert sizes(metric_reader) == (None, None)  # nothing to observe while uninstrumented

            OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=counting)
            second_registry = OpenAIInstrumentor().response_registry
            assert second_registry is not None and second_registry is not first_registry
            assert sizes(metric_reader) == (0, 0)  # the new registry, not the old one
            ids = start_background(client, 2)
            assert sizes(metric_reader) == (2, 0)
            for response_id in ids:
                finish(client, response_id)
            assert sizes(metric_reader) == (0, 2)
            client.responses.retrieve(first[0])  # the old registry's response: a plain fetch, then gone
            assert sizes(metric_reader) == (0, 2)
    finally:
        OpenAIInstrumentor().uninstrument()
    assert span_counter.open == 0
    assert counting.gauges == Counter(dict.fromkeys(GAUGES, 1))
    # the SDK warns when an instrument name is registered twice on a meter
    assert not [r for r in caplog.records if "created already" in r.getMessage()]
    data = metric_reader.get_metrics_data()
    assert data is not None
    names = [m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    for name in GAUGES:
        assert names.count(name) <= 1, names


def test_three_instrument_rounds_on_one_provider(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
    fake: fake_openai.FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three instrument/uninstrument rounds on one SDK provider: no duplicate-instrument warning, live values."""
    caplog.set_level(logging.WARNING)
    for round_number in range(1, 4):
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        try:
            with make_client(fake) as client:
                start_background(client, round_number)
                assert sizes(metric_reader) == (round_number, 0)
        finally:
            OpenAIInstrumentor().uninstrument()
    assert not [r for r in caplog.records if "created already" in r.getMessage()]


# ---- the SDK's TypeAdapter cache ------------------------------------------------------------------------------


def test_type_adapter_gauge_equals_the_sdk_cache_size(
    instrumentor: OpenAIInstrumentor, metric_reader: InMemoryMetricReader
) -> None:
    from openai import _models

    cache = getattr(_models, "_CachedTypeAdapter", None)
    if cache is None:
        pytest.skip(f"openai {openai.__version__} has no _CachedTypeAdapter")
    before = cache.cache_info().currsize
    assert gauge(metric_reader, TYPE_ADAPTERS) == before

    class Fresh(openai.BaseModel):  # a type the cache cannot have seen
        value: int

    cache(Fresh)
    cache(list[Fresh])
    cache(Fresh)  # a hit: no new entry
    assert cache.cache_info().currsize == before + 2
    assert gauge(metric_reader, TYPE_ADAPTERS) == before + 2


def test_type_adapter_gauge_reports_nothing_without_the_cache(
    instrumentor: OpenAIInstrumentor, metric_reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openai import _models

    monkeypatch.delattr(_models, "_CachedTypeAdapter", raising=False)
    assert gauge(metric_reader, TYPE_ADAPTERS) is None
    assert sizes(metric_reader) == (0, 0)  # the other gauges are unaffected


# ---- the known leak -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("openai_version", "pydantic_version", "leaks"),
    [
        ("3.16.1", "2.12.5", True),
        ("3.16.2", "2.12.5", False),
        ("2.54.0", "2.11.7", True),
        ("2.54.0", "2.13.0", False),
        ("1.66.0", "2.10.6", False),
    ],
)
def test_has_known_leak(openai_version: str, pydantic_version: str, leaks: bool) -> None:
    assert has_known_leak(openai_version, pydantic_version) is leaks


def versions(openai_version: str, pydantic_version: str) -> Callable[[str], str]:
    table = {"openai": openai_version, "pydantic": pydantic_version}

    def version_of(name: str) -> str:
        return table[name]

    return version_of


@pytest.fixture
def fresh_warning_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(self_observation, "_warned", False)


def leak_log_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == LOGGER]


@pytest.mark.usefixtures("fresh_warning_state")
def test_warns_once_for_the_affected_combination(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with pytest.warns(RuntimeWarning) as caught:
        assert warn_if_known_leak(version_of=versions("3.16.1", "2.12.5")) is True
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "openai 3.16.1 with pydantic 2.12.5" in message
    assert "3.16.2" in message and "2.13" in message
    (record,) = leak_log_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == message

    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert warn_if_known_leak(version_of=versions("3.16.1", "2.12.5")) is False
        assert warn_if_known_leak(version_of=versions("2.54.0", "2.11.7")) is False
    assert again == []
    assert len(leak_log_records(caplog)) == 1


@pytest.mark.usefixtures("fresh_warning_state")
@pytest.mark.parametrize(
    ("openai_version", "pydantic_version"),
    [("3.16.2", "2.12.5"), ("2.54.0", "2.13.0"), ("1.66.0", "2.10.6"), ("3.57.0", "2.11.7")],
)
def test_never_warns_otherwise(openai_version: str, pydantic_version: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert warn_if_known_leak(version_of=versions(openai_version, pydantic_version)) is False
    assert caught == []
    assert leak_log_records(caplog) == []
    assert self_observation._warned is False  # an unaffected check does not use up the one warning
    with pytest.warns(RuntimeWarning):
        assert warn_if_known_leak(version_of=versions("2.54.0", "2.11.7")) is True


@pytest.mark.usefixtures("fresh_warning_state")
def test_unknown_versions_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    def missing(name: str) -> str:
        raise ModuleNotFoundError(name)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_if_known_leak(version_of=missing) is False
    assert caught == []
    assert leak_log_records(caplog) == []


@pytest.mark.usefixtures("fresh_warning_state")
def test_instrument_checks_the_installed_versions(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """instrument() runs the check against the real installed versions, here forced to the leaking pair."""
    pairs = {"openai": "3.16.1", "pydantic": "2.12.5"}
    # `version_of` defaults to importlib.metadata.version, bound at import: swap the default
    monkeypatch.setattr(self_observation.warn_if_known_leak, "__defaults__", (lambda name: pairs[name],))
    with pytest.warns(RuntimeWarning, match="openai 3.16.1 with pydantic 2.12.5"):
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        OpenAIInstrumentor().uninstrument()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []  # once per process
    finally:
        OpenAIInstrumentor().uninstrument()


def test_installed_versions_do_not_warn(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    from importlib import metadata

    if has_known_leak(metadata.version("openai"), metadata.version("pydantic")):
        pytest.skip("the installed openai/pydantic pair is the leaking one")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        OpenAIInstrumentor().uninstrument()
    assert [w for w in caught if "leaks memory" in str(w.message)] == []
