"""Span lifecycle in one place: start a span with its request attributes, end it exactly once."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from . import semconv
from .config import Settings
from .content_capture import ContentRecorder
from .instruments import Instruments

logger = logging.getLogger(__name__)

Attributes = dict[str, AttributeValue]


class TracedData:
    """Telemetry state of one model response, from its request to the end of its span.

    It lives on the call (the wrapper's locals, a stream proxy), and only for unfinished
    background responses in the `pending` registry; nothing else keeps it.
    """

    __slots__ = (
        "background",
        "content",
        "ended",
        "first_chunk_at",
        "metric_attributes",
        "pending_since",
        "response_id",
        "span",
        "started_at",
    )

    def __init__(self, span: Span, metric_attributes: Attributes) -> None:
        self.span = span
        self.metric_attributes = metric_attributes
        self.started_at = time.perf_counter()
        self.first_chunk_at: float | None = None
        self.ended = False
        self.response_id: str | None = None
        self.background = False
        self.pending_since = 0.0
        # Captured input content (opt-in only), kept for the output attribute and the event.
        self.content: dict[str, Any] | None = None


def error_type_of(error: BaseException) -> str:
    """The conventions want the exception's type name; the qualified name stays readable."""
    return type(error).__qualname__


class Telemetry:
    """What one `instrument()` call set up: tracer, histograms, settings. No per-call state."""

    def __init__(
        self,
        tracer: Tracer,
        instruments: Instruments,
        settings: Settings,
        content: ContentRecorder | None = None,
    ) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.settings = settings
        # None unless content capture is opted in: then nothing content-related runs at all.
        self.content = content

    def start(
        self,
        operation_name: str,
        request_model: str | None,
        attributes: Attributes,
        server_attributes: Attributes,
        content_api: str | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> TracedData:
        """Starts a CLIENT span with every attribute known at request time, set in one batch.

        `content_api` names the request's content shape, read from `body` only when capture is on.
        """
        content = None
        if self.content is not None and content_api is not None and body is not None:
            content = self.content.on_request(content_api, body, attributes)
        attributes.update(server_attributes)
        name = f"{operation_name} {request_model}" if request_model else operation_name
        span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        metric_attributes: Attributes = {semconv.OPERATION_NAME: operation_name}
        metric_attributes.update(server_attributes)
        if request_model:
            metric_attributes[semconv.REQUEST_MODEL] = request_model
        traced = TracedData(span, metric_attributes)
        traced.content = content
        return traced

    def end(
        self,
        traced: TracedData,
        attributes: Mapping[str, AttributeValue] | None = None,
        *,
        error: BaseException | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        result: Any = None,
    ) -> None:
        """Ends the span once; later calls are no-ops. Never raises.

        `result` (the response, or what a stream assembled) is read only for opt-in content.
        """
        if traced.ended:
            return
        traced.ended = True
        span = traced.span
        try:
            if error is not None:
                error_type = error_type_of(error)
                error_message = error_message or str(error)
            final: Attributes = dict(attributes) if attributes else {}
            if error_type:
                final[semconv.ERROR_TYPE] = error_type
                span.set_status(Status(StatusCode.ERROR, error_message or error_type))
            if traced.content is not None and self.content is not None:
                self.content.on_end(span, traced.content, result, final)
            if final:
                span.set_attributes(final)
            self._record_metrics(traced, final)
        except Exception:  # never let telemetry break the caller
            logger.debug("openai instrumentation: failed to finish span attributes", exc_info=True)
        finally:
            try:
                span.end()
            except Exception:
                logger.debug("openai instrumentation: span.end() raised", exc_info=True)

    def _record_metrics(self, traced: TracedData, final: Mapping[str, AttributeValue]) -> None:
        attributes = dict(traced.metric_attributes)
        response_model = final.get(semconv.RESPONSE_MODEL)
        if response_model:
            attributes[semconv.RESPONSE_MODEL] = response_model
        error_type = final.get(semconv.ERROR_TYPE)
        if error_type:
            attributes[semconv.ERROR_TYPE] = error_type
        instruments = self.instruments
        instruments.operation_duration.record(time.perf_counter() - traced.started_at, attributes)
        if traced.first_chunk_at is not None:
            instruments.time_to_first_chunk.record(traced.first_chunk_at - traced.started_at, attributes)
        self._record_tokens(attributes, final.get(semconv.USAGE_INPUT_TOKENS), semconv.TOKEN_TYPE_INPUT)
        self._record_tokens(attributes, final.get(semconv.USAGE_OUTPUT_TOKENS), semconv.TOKEN_TYPE_OUTPUT)

    def _record_tokens(self, attributes: Attributes, tokens: Any, token_type: str) -> None:
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            self.instruments.token_usage.record(tokens, {**attributes, semconv.TOKEN_TYPE: token_type})
