"""The one choke point: wrappers around the SDK's `SyncAPIClient.request` / `AsyncAPIClient.request`."""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.util.types import AttributeValue

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

from . import semconv
from .operation import Operation, Request, unfinished
from .raw_responses import AsyncRawResponseProxy, SyncRawResponseProxy
from .routes import RouteTable
from .streams import AsyncStreamProxy, SyncStreamProxy
from .telemetry import Telemetry, TracedData

logger = logging.getLogger(__name__)

_AZURE_CLIENT_NAMES = frozenset(("AzureOpenAI", "AsyncAzureOpenAI"))
_AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def server_attributes_for(client: Any) -> dict[str, AttributeValue]:
    """Provider, server.address and server.port of a client's base URL."""
    attributes: dict[str, AttributeValue] = {semconv.PROVIDER_NAME: semconv.PROVIDER_OPENAI}
    url = getattr(client, "base_url", None)
    host = getattr(url, "host", None)
    if isinstance(host, str) and host:
        attributes[semconv.SERVER_ADDRESS] = host
        port = getattr(url, "port", None)
        if not isinstance(port, int):
            port = 443 if getattr(url, "scheme", "https") == "https" else 80
        attributes[semconv.SERVER_PORT] = port
    is_azure = any(cls.__name__ in _AZURE_CLIENT_NAMES for cls in type(client).__mro__)
    if is_azure or (isinstance(host, str) and host.endswith(_AZURE_HOST_SUFFIXES)):
        attributes[semconv.PROVIDER_NAME] = semconv.PROVIDER_AZURE
    return attributes


class SdkTypes:
    """The SDK classes a result is checked against, imported once at `instrument()`."""

    def __init__(self) -> None:
        from openai import AsyncStream, Stream
        from openai._legacy_response import LegacyAPIResponse
        from openai._response import APIResponse, AsyncAPIResponse

        self.sync_stream = Stream
        self.async_stream = AsyncStream
        self.legacy_response = LegacyAPIResponse
        self.raw_responses = (LegacyAPIResponse, APIResponse, AsyncAPIResponse)
        self.async_raw_response = AsyncAPIResponse


class Call:
    """One intercepted request: what the result or error does to its span. Dies with the call."""

    __slots__ = ("context_token", "hook", "operation", "request", "traced")

    def __init__(self, hook: RequestHook, operation: Operation, request: Request, traced: TracedData) -> None:
        self.hook = hook
        self.operation = operation
        self.request = request
        self.traced = traced
        self.context_token: object = None

    def __enter__(self) -> Call:
        """While the SDK sends the request, the span is current (HTTP spans nest under it)."""
        self.context_token = otel_context.attach(trace.set_span_in_context(self.traced.span))
        return self

    def __exit__(self, exc_type: Any, error: BaseException | None, traceback: Any) -> None:
        try:
            if error is not None:
                self.fail(error)
        finally:
            otel_context.detach(self.context_token)  # type: ignore[arg-type]

    def complete(self, result: Any) -> Any:
        """Records the result; returns it, or a transparent proxy of it. Never raises."""
        telemetry = self.hook.telemetry
        types = self.hook.types
        try:
            if isinstance(result, types.sync_stream):
                return SyncStreamProxy(result, self.operation.recorder(telemetry, self.traced, self.request))
            if isinstance(result, types.async_stream):
                return AsyncStreamProxy(result, self.operation.recorder(telemetry, self.traced, self.request))
            if isinstance(result, types.raw_responses):
                return self._raw(result)
            self.operation.on_result(telemetry, self.traced, self.request, result)
        except Exception:
            logger.debug("openai instrumentation: could not record a result", exc_info=True)
            telemetry.end(self.traced)
        return result

    def fail(self, error: BaseException) -> None:
        try:
            self.operation.on_error(self.hook.telemetry, self.traced, self.request, error)
        except Exception:
            logger.debug("openai instrumentation: could not record an error", exc_info=True)
            self.hook.telemetry.end(self.traced, error=error)

    def abandon(self, end_reason: str) -> None:
        """A raw response closed or dropped without `parse()`: end with what is known."""
        if self.traced.background:
            return  # an unread poll of a pending background response: a later poll or the max age ends it
        self.hook.telemetry.end(self.traced, unfinished({}, end_reason))

    def _raw(self, raw: Any) -> Any:
        types = self.hook.types
        if isinstance(raw, types.legacy_response) and not getattr(raw, "_stream", False):
            # `with_raw_response`: the body is already read and `parse()` caches, so parsing now
            # costs the caller nothing later and ends the span when the call returns.
            try:
                parsed = raw.parse()
            except Exception as error:
                self.fail(error)
                return raw
            self.complete(parsed)
            return raw
        if isinstance(raw, types.async_raw_response):
            return AsyncRawResponseProxy(raw, self)
        return SyncRawResponseProxy(raw, self)


class RequestHook:
    """Builds a Call for each instrumented request; the sync and async wrappers are thin shells."""

    def __init__(self, telemetry: Telemetry, routes: RouteTable) -> None:
        self.telemetry = telemetry
        self.routes = routes
        self.types = SdkTypes()
        self.propagate = telemetry.settings.propagate_trace_context
        # Per client, not per call; weak so clients are not kept alive.
        self._servers: weakref.WeakKeyDictionary[Any, tuple[Any, dict[str, AttributeValue]]] = (
            weakref.WeakKeyDictionary()
        )

    def _server_attributes(self, client: Any) -> dict[str, AttributeValue]:
        base_url = getattr(client, "_base_url", None)
        cached = self._servers.get(client)
        if cached is not None and cached[0] is base_url:
            return cached[1]
        attributes = server_attributes_for(client)
        with contextlib.suppress(TypeError):  # not weak-referenceable: computed each time
            self._servers[client] = (base_url, attributes)
        return attributes

    def begin(self, client: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Call | None:
        """None lets the request through untraced; never raises."""
        try:
            if not is_instrumentation_enabled():
                return None
            options: Any = args[1] if len(args) > 1 else kwargs["options"]
            resolved = self.routes.resolve(options.method, options.url)
            if resolved is None:
                return None
            operation, resource_id = resolved
            body = options.json_data
            request = Request(
                body if isinstance(body, dict) else {},
                bool(kwargs.get("stream", False)),
                resource_id,
                self._server_attributes(client),
            )
            traced = operation.begin(self.telemetry, request)
            if traced is None:
                return None
            if self.propagate:
                self._inject(options, traced)
            return Call(self, operation, request, traced)
        except Exception:
            logger.debug("openai instrumentation: could not start a span", exc_info=True)
            return None

    @staticmethod
    def _inject(options: Any, traced: TracedData) -> None:
        """W3C trace context into a new headers dict: the caller's `extra_headers` stay untouched."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(traced.span))
        headers = options.headers if isinstance(options.headers, Mapping) else {}
        options.headers = {**headers, **carrier}

    def sync_wrapper(self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = self.begin(instance, args, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        with call:
            result = wrapped(*args, **kwargs)
        return call.complete(result)

    async def async_wrapper(self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = self.begin(instance, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        with call:
            result = await wrapped(*args, **kwargs)
        return call.complete(result)
