"""OpenTelemetry instrumentation for the OpenAI Python SDK: `OpenAIInstrumentor`.

Usage::

    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=..., meter_provider=...)

It wraps one choke point of the SDK (`SyncAPIClient.request` / `AsyncAPIClient.request`) and
resolves each request against a route table (see `routes.py`), so clients created before
`instrument()`, `with_raw_response` and `with_streaming_response` are all covered.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from opentelemetry import _logs, metrics, trace

from .config import ContentCapture, Settings
from .content_capture import ContentRecorder
from .hook import RequestHook
from .instruments import Instruments
from .package import _instruments
from .responses_wrappers import ResponseRegistry
from .routes import RouteTable
from .self_observation import register_gauges, warn_if_known_leak
from .telemetry import Telemetry
from .version import __version__

__all__ = ["ContentCapture", "OpenAIInstrumentor", "__version__"]

logger = logging.getLogger(__name__)

_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
_BASE_CLIENT_MODULE = "openai._base_client"
# (class, method) pairs wrapped at the choke point; the sync and async clients.
_WRAPPED = (("SyncAPIClient", "request"), ("AsyncAPIClient", "request"))


class OpenAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Instruments the OpenAI SDK. Keyword arguments here or to `instrument()` override the environment:

    capture_content: "no_content" (default) | "span_only" | "event_only" | "span_and_event" | bool
        (events go through `logger_provider=`, as `gen_ai.client.inference.operation.details`)
    content_max_length: characters kept of each captured string (0: no limit)
    emitted_ids_capacity, emitted_ids_ttl_seconds: bounds of the finished-response id set
    pending_max_age_seconds: when an unfinished background response's span is ended anyway
    propagate_trace_context: inject W3C traceparent into outgoing requests (default False)
    """

    def __init__(self, **options: Any) -> None:
        self._options = dict(options)
        # BaseInstrumentor is a singleton, so `OpenAIInstrumentor().uninstrument()` runs this again on
        # the live instance: keep its registry (pending spans, gauges) and gauge bookkeeping.
        if "_registry" in self.__dict__:
            return
        self._registry: ResponseRegistry | None = None
        # Meters that already carry our gauges: registering twice would duplicate instruments.
        self._gauged_meters: weakref.WeakSet[Any] = weakref.WeakSet()

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    @property
    def response_registry(self) -> ResponseRegistry | None:
        """The live `pending`/`emitted` registry while instrumented (for tests and diagnostics)."""
        return self._registry

    def _instrument(self, **kwargs: Any) -> None:
        settings = Settings.from_options({**self._options, **kwargs})
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider"), schema_url=_SCHEMA_URL
        )
        meter = metrics.get_meter(
            __name__, __version__, meter_provider=kwargs.get("meter_provider"), schema_url=_SCHEMA_URL
        )
        content = None
        if settings.capture_content.value != "no_content":
            event_logger = _logs.get_logger(
                __name__, __version__, logger_provider=kwargs.get("logger_provider"), schema_url=_SCHEMA_URL
            )
            content = ContentRecorder(settings.capture_content, settings.content_max_length, event_logger)
        telemetry = Telemetry(tracer, Instruments(meter), settings, content)
        registry = ResponseRegistry(telemetry, settings)
        hook = RequestHook(telemetry, RouteTable(registry))
        wrap_function_wrapper(_BASE_CLIENT_MODULE, "SyncAPIClient.request", hook.sync_wrapper)
        wrap_function_wrapper(_BASE_CLIENT_MODULE, "AsyncAPIClient.request", hook.async_wrapper)
        self._registry = registry
        if meter not in self._gauged_meters:
            register_gauges(meter, lambda: self._registry)
            self._gauged_meters.add(meter)
        warn_if_known_leak()

    def _uninstrument(self, **kwargs: Any) -> None:
        import openai._base_client as base_client

        for class_name, method_name in _WRAPPED:
            unwrap(getattr(base_client, class_name), method_name)
        registry, self._registry = self._registry, None
        if registry is not None:
            registry.end_all("uninstrumented")
