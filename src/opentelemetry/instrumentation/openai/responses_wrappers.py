"""Responses API lifecycle: create/retrieve/cancel, the `pending` and `emitted` registries, one span each."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from . import semconv
from .config import Settings
from .content_capture import API_RESPONSES
from .emitted_ids import EmittedIds
from .extract_common import Attributes, get_field
from .operation import Operation, Request, StreamRecorder, unfinished
from .responses_extract import (
    UNFINISHED_STATUSES,
    ResponseStreamAccumulator,
    fetch_attributes,
    request_attributes,
    response_attributes,
    response_error,
)
from .telemetry import Telemetry, TracedData

# HTTP statuses after which polling the response again cannot succeed: its span ends with the error.
_FINAL_ERROR_STATUSES = frozenset((400, 401, 403, 404, 410, 422))


class ResponseRegistry:
    """The only per-response state that outlives a call, both bounded, behind one lock.

    `pending`: background responses still queued or in progress, by id, so a later retrieve
    or cancel ends the one span the create started. Exact (never evicted for size); an entry
    leaves when its span ends, or is ended and dropped after `pending_max_age_seconds`.
    `emitted`: ids whose span was emitted (a preallocated table of id hashes, bounded by size
    and age, see emitted_ids.py), so a retrieve of a finished response emits no second span.
    Losing an id only lets a retrieve be traced as a short fetch_response span.
    """

    def __init__(self, telemetry: Telemetry, settings: Settings) -> None:
        self._telemetry = telemetry
        self._clock = settings.clock
        self._max_age = settings.pending_max_age_seconds
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, TracedData] = OrderedDict()
        self._emitted = EmittedIds(settings.emitted_ids_capacity, settings.emitted_ids_ttl_seconds, settings.clock)

    def add_pending(self, response_id: str, traced: TracedData) -> None:
        now = self._clock()
        traced.response_id = response_id
        traced.background = True
        traced.pending_since = now
        with self._lock:
            self._pending[response_id] = traced
            self._pending.move_to_end(response_id)
            expired = self._take_expired(now)
        self._end_expired(expired)

    def get_pending(self, response_id: str | None) -> TracedData | None:
        if response_id is None:
            return None
        with self._lock:
            return self._pending.get(response_id)

    def take_pending(self, response_id: str | None, traced: TracedData) -> bool:
        """Removes the entry if it is still `traced`'s; True means the caller ends the span."""
        if response_id is None:
            return False
        with self._lock:
            if self._pending.get(response_id) is not traced:
                return False
            del self._pending[response_id]
            self._emitted.add(response_id)
            return True

    def mark_emitted(self, response_id: str) -> None:
        with self._lock:
            self._emitted.add(response_id)

    def was_emitted(self, response_id: str | None) -> bool:
        if response_id is None:
            return False
        with self._lock:
            return response_id in self._emitted

    def expire(self) -> int:
        """Ends and drops pending entries older than the maximum age; returns how many."""
        with self._lock:
            expired = self._take_expired(self._clock())
        self._end_expired(expired)
        return len(expired)

    def end_all(self, end_reason: str) -> None:
        """Ends every pending span (on uninstrument), so none is left open."""
        with self._lock:
            remaining = list(self._pending.values())
            self._pending.clear()
        for traced in remaining:
            self._telemetry.end(traced, unfinished({}, end_reason))

    def sizes(self) -> tuple[int, int]:
        """(pending, emitted) entry counts, for the self-observation gauge and tests."""
        with self._lock:
            pending = len(self._pending)
        # Counting live ids scans every slot of the table: done outside the lock so a metrics
        # collection never holds up calls (a racing add only shifts the count by one).
        return pending, len(self._emitted)

    def _take_expired(self, now: float) -> list[TracedData]:
        expired: list[TracedData] = []
        pending = self._pending
        while pending:
            response_id, traced = next(iter(pending.items()))
            if now - traced.pending_since <= self._max_age:
                break
            del pending[response_id]
            self._emitted.add(response_id)
            expired.append(traced)
        return expired

    def _end_expired(self, expired: list[TracedData]) -> None:
        for traced in expired:
            self._telemetry.end(traced, unfinished({}, "max_age_exceeded"))


def _end_with_response(telemetry: Telemetry, traced: TracedData, response: Any, end_reason: str | None = None) -> None:
    attributes = response_attributes(response)
    if end_reason:
        attributes[semconv.OPENAI_RESPONSE_END_REASON] = end_reason
    failure = response_error(response)
    if failure is None:
        telemetry.end(traced, attributes, result=response)
    else:
        telemetry.end(traced, attributes, error_type=failure[0], error_message=failure[1], result=response)


def _is_final_error(error: BaseException) -> bool:
    """Transient failures (timeouts, 429, 5xx) leave a background response pending; these do not."""
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and status in _FINAL_ERROR_STATUSES


class ResponseStreamRecorder(StreamRecorder):
    """Responses streams: the terminal event ends the span; a cut background stream stays resumable."""

    __slots__ = ("accumulator", "registry", "resumable")

    def __init__(self, telemetry: Telemetry, traced: TracedData, registry: ResponseRegistry, resumable: bool) -> None:
        super().__init__(telemetry, traced)
        self.registry = registry
        self.resumable = resumable
        self.accumulator = ResponseStreamAccumulator()

    def add(self, item: Any) -> None:
        if self.accumulator.add(item):
            self.finish()

    def complete(self, error: BaseException | None, end_reason: str | None) -> None:
        accumulator = self.accumulator
        traced = self.traced
        response_id = accumulator.response_id or traced.response_id
        ended = accumulator.final is not None or accumulator.error is not None
        if not ended and error is None and self.resumable and response_id:
            # The response goes on server-side; a later retrieve(stream=True) or poll finishes it.
            if not traced.background:
                self.registry.add_pending(response_id, traced)
            return
        if traced.background and not self.registry.take_pending(response_id, traced):
            return  # another poller already ended this response's span
        if accumulator.final is not None:
            if error is None:
                _end_with_response(self.telemetry, traced, accumulator.final)
            else:
                self.telemetry.end(
                    traced, response_attributes(accumulator.final), error=error, result=accumulator.final
                )
            self._remember(response_id)
            return
        attributes = response_attributes(accumulator.latest)
        if accumulator.error is not None:
            code, message = accumulator.error
            self.telemetry.end(traced, attributes, error_type=code, error_message=message)
        else:
            self.telemetry.end(traced, unfinished(attributes, end_reason), error=error)
        self._remember(response_id)

    def _remember(self, response_id: str | None) -> None:
        if response_id and not self.traced.background:
            self.registry.mark_emitted(response_id)


class FetchStreamRecorder(StreamRecorder):
    """A streamed retrieve of a response this process did not start: identity and state only."""

    __slots__ = ("accumulator",)

    def __init__(self, telemetry: Telemetry, traced: TracedData) -> None:
        super().__init__(telemetry, traced)
        self.accumulator = ResponseStreamAccumulator()

    def add(self, item: Any) -> None:
        if self.accumulator.add(item):
            self.finish()

    def complete(self, error: BaseException | None, end_reason: str | None) -> None:
        attributes = fetch_attributes(self.accumulator.latest)
        if self.accumulator.error is not None and error is None:  # an `error` event is yielded, not raised
            code, message = self.accumulator.error
            self.telemetry.end(self.traced, attributes, error_type=code, error_message=message)
            return
        if self.accumulator.final is None and error is None:
            unfinished(attributes, end_reason)
        self.telemetry.end(self.traced, attributes, error=error)


class ResponsesCreate(Operation):
    """POST /responses: create, parse, and the stream() helper; starts the one span per response."""

    def __init__(self, registry: ResponseRegistry) -> None:
        self.registry = registry

    def begin(self, telemetry: Telemetry, request: Request) -> TracedData | None:
        attributes = request_attributes(request.body)
        if request.stream:  # the `stream` argument is the truth: parse() may send a different body flag
            attributes[semconv.REQUEST_STREAM] = True
        else:
            attributes.pop(semconv.REQUEST_STREAM, None)
        model = attributes.get(semconv.REQUEST_MODEL)
        return telemetry.start(
            semconv.OPERATION_CHAT,
            model if isinstance(model, str) else None,
            attributes,
            request.server_attributes,
            API_RESPONSES,
            request.body,
        )

    def on_result(self, telemetry: Telemetry, traced: TracedData, request: Request, result: Any) -> None:
        response_id = get_field(result, "id")
        if get_field(result, "status") in UNFINISHED_STATUSES and isinstance(response_id, str):
            traced.span.set_attributes(response_attributes(result))
            self.registry.add_pending(response_id, traced)
            return
        _end_with_response(telemetry, traced, result)
        if isinstance(response_id, str) and request.body.get("store") is not False:
            self.registry.mark_emitted(response_id)

    def recorder(self, telemetry: Telemetry, traced: TracedData, request: Request) -> StreamRecorder:
        return ResponseStreamRecorder(telemetry, traced, self.registry, bool(request.body.get("background")))


class ResponsesRetrieve(Operation):
    """GET /responses/{id}: merges into a pending response's span, or is a short fetch_response span."""

    def __init__(self, registry: ResponseRegistry) -> None:
        self.registry = registry

    def begin(self, telemetry: Telemetry, request: Request) -> TracedData | None:
        response_id = request.resource_id
        traced = self.registry.get_pending(response_id)
        if traced is not None:
            return traced
        if self.registry.was_emitted(response_id):
            return None  # its one span is already out
        attributes: Attributes = {
            semconv.OPERATION_NAME: semconv.OPERATION_FETCH_RESPONSE,
            semconv.OPENAI_API_TYPE: semconv.API_TYPE_RESPONSES,
        }
        if response_id:
            attributes[semconv.RESPONSE_ID] = response_id
        return telemetry.start(semconv.OPERATION_FETCH_RESPONSE, None, attributes, request.server_attributes)

    def on_result(self, telemetry: Telemetry, traced: TracedData, request: Request, result: Any) -> None:
        if not traced.background:
            telemetry.end(traced, fetch_attributes(result))
        elif get_field(result, "status") not in UNFINISHED_STATUSES and self.registry.take_pending(
            request.resource_id, traced
        ):
            _end_with_response(telemetry, traced, result)

    def on_error(self, telemetry: Telemetry, traced: TracedData, request: Request, error: BaseException) -> None:
        # A fetch span always ends; a pending response's span only on an error polling cannot outlive.
        if traced.background and not (
            _is_final_error(error) and self.registry.take_pending(request.resource_id, traced)
        ):
            return
        telemetry.end(traced, error=error)

    def recorder(self, telemetry: Telemetry, traced: TracedData, request: Request) -> StreamRecorder:
        if traced.background:
            return ResponseStreamRecorder(telemetry, traced, self.registry, resumable=True)
        return FetchStreamRecorder(telemetry, traced)


class ResponsesCancel(Operation):
    """POST /responses/{id}/cancel: ends a pending response's span, marked as cancelled."""

    def __init__(self, registry: ResponseRegistry) -> None:
        self.registry = registry

    def begin(self, telemetry: Telemetry, request: Request) -> TracedData | None:
        return self.registry.get_pending(request.resource_id)

    def on_result(self, telemetry: Telemetry, traced: TracedData, request: Request, result: Any) -> None:
        if self.registry.take_pending(request.resource_id, traced):
            _end_with_response(telemetry, traced, result, end_reason="cancelled")

    def on_error(self, telemetry: Telemetry, traced: TracedData, request: Request, error: BaseException) -> None:
        if _is_final_error(error) and self.registry.take_pending(request.resource_id, traced):
            telemetry.end(traced, error=error)
