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
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from opentelemetry import metrics, trace

from .config import ContentCapture, Settings
from .hook import RequestHook
from .instruments import Instruments
from .package import _instruments
from .responses_wrappers import ResponseRegistry
from .routes import RouteTable
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
    content_max_length: characters kept of each captured string (0: no limit)
    emitted_ids_capacity, emitted_ids_ttl_seconds: bounds of the finished-response id set
    pending_max_age_seconds: when an unfinished background response's span is ended anyway
    propagate_trace_context: inject W3C traceparent into outgoing requests (default False)
    """

    def __init__(self, **options: Any) -> None:
        self._options = dict(options)
        self._registry: ResponseRegistry | None = None

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
        telemetry = Telemetry(tracer, Instruments(meter), settings)
        registry = ResponseRegistry(telemetry, settings)
        hook = RequestHook(telemetry, RouteTable(registry))
        wrap_function_wrapper(_BASE_CLIENT_MODULE, "SyncAPIClient.request", hook.sync_wrapper)
        wrap_function_wrapper(_BASE_CLIENT_MODULE, "AsyncAPIClient.request", hook.async_wrapper)
        self._registry = registry

    def _uninstrument(self, **kwargs: Any) -> None:
        import openai._base_client as base_client

        for class_name, method_name in _WRAPPED:
            unwrap(getattr(base_client, class_name), method_name)
        registry, self._registry = self._registry, None
        if registry is not None:
            registry.end_all("uninstrumented")
