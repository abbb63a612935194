"""The hooks every instrumented route implements, and the base of the per-stream recorders."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from . import semconv
from .telemetry import Telemetry, TracedData

logger = logging.getLogger(__name__)


class Request:
    """The request as the SDK is about to send it: JSON body already transformed, id from the URL."""

    __slots__ = ("body", "resource_id", "server_attributes", "stream")

    def __init__(
        self,
        body: Mapping[str, Any],
        stream: bool,
        resource_id: str | None,
        server_attributes: dict[str, AttributeValue],
    ) -> None:
        self.body = body
        self.stream = stream
        self.resource_id = resource_id
        self.server_attributes = server_attributes


class StreamRecorder:
    """Watches one stream's items and ends its span exactly once, however the stream ends."""

    __slots__ = ("done", "item_failed", "telemetry", "traced")

    def __init__(self, telemetry: Telemetry, traced: TracedData) -> None:
        self.telemetry = telemetry
        self.traced = traced
        self.done = False
        self.item_failed = False

    def observe(self, item: Any) -> None:
        """Called for every item the caller receives; never raises."""
        traced = self.traced
        if traced.first_chunk_at is None:
            traced.first_chunk_at = time.perf_counter()
        try:
            self.add(item)
        except Exception:
            if not self.item_failed:  # one debug record per stream, not one per chunk
                self.item_failed = True
                logger.debug("openai instrumentation: could not read a stream item", exc_info=True)

    def finish(self, error: BaseException | None = None, end_reason: str | None = None) -> None:
        """Ends the stream's telemetry; only the first call counts. Never raises."""
        if self.done:
            return
        self.done = True
        try:
            self.complete(error, end_reason)
        except Exception:
            logger.debug("openai instrumentation: could not finish a stream span", exc_info=True)
            self.telemetry.end(self.traced, error=error)

    def add(self, item: Any) -> None:
        """Folds one item into the recorder's state."""

    def complete(self, error: BaseException | None, end_reason: str | None) -> None:
        """Ends (or hands on) the span with what the stream showed."""
        self.telemetry.end(self.traced, error=error)


def unfinished(attributes: dict[str, AttributeValue], end_reason: str | None) -> dict[str, AttributeValue]:
    """Marks a span that ended before its response was seen to finish, and says why."""
    attributes[semconv.OPENAI_RESPONSE_FINISH_OBSERVED] = False
    attributes[semconv.OPENAI_RESPONSE_END_REASON] = end_reason or "stream_ended"
    return attributes


class Operation:
    """One instrumented API route: what starts a span, what a result or an error does to it."""

    def begin(self, telemetry: Telemetry, request: Request) -> TracedData | None:
        """The span's data for this call, or None to let the call through untraced."""
        raise NotImplementedError

    def on_result(self, telemetry: Telemetry, traced: TracedData, request: Request, result: Any) -> None:
        """A non-streamed result arrived."""
        telemetry.end(traced)

    def on_error(self, telemetry: Telemetry, traced: TracedData, request: Request, error: BaseException) -> None:
        """The SDK raised; the error goes back to the caller unchanged after this."""
        telemetry.end(traced, error=error)

    def recorder(self, telemetry: Telemetry, traced: TracedData, request: Request) -> StreamRecorder:
        """The recorder for a streamed result."""
        return StreamRecorder(telemetry, traced)
