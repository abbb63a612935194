"""Chat Completions, legacy Completions and Embeddings: one span per call, built from the extractors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import semconv
from .chat_extract import (
    CompletionStreamAccumulator,
    chat_request_attributes,
    completion_request_attributes,
    completion_result_attributes,
)
from .content_capture import API_CHAT, API_COMPLETIONS
from .embeddings_extract import embeddings_request_attributes, embeddings_result_attributes
from .extract_common import Attributes
from .operation import Operation, Request, StreamRecorder, unfinished
from .telemetry import Telemetry, TracedData


class CompletionStreamRecorder(StreamRecorder):
    """Chat and legacy completion streams: no terminal event, so the end of the stream ends the span."""

    __slots__ = ("accumulator",)

    def __init__(self, telemetry: Telemetry, traced: TracedData) -> None:
        super().__init__(telemetry, traced)
        self.accumulator = CompletionStreamAccumulator(collect_content=traced.content is not None)

    def add(self, item: Any) -> None:
        self.accumulator.add(item)

    def complete(self, error: BaseException | None, end_reason: str | None) -> None:
        attributes = self.accumulator.attributes()
        if not self.accumulator.finished:  # an error before the finish is unfinished too, as for Responses
            unfinished(attributes, end_reason)
        self.telemetry.end(self.traced, attributes, error=error, result=self.accumulator.assembled())


class SimpleOperation(Operation):
    """A route whose span starts at the request and ends with its one result."""

    def __init__(
        self,
        request_attributes: Callable[[Mapping[str, Any]], Attributes],
        result_attributes: Callable[[Any], Attributes],
        streams: bool,
        content_api: str | None,
    ) -> None:
        self._request_attributes = request_attributes
        self._result_attributes = result_attributes
        self._streams = streams
        self._content_api = content_api

    def begin(self, telemetry: Telemetry, request: Request) -> TracedData | None:
        attributes = self._request_attributes(request.body)
        operation_name = str(attributes[semconv.OPERATION_NAME])
        model = attributes.get(semconv.REQUEST_MODEL)
        return telemetry.start(
            operation_name,
            model if isinstance(model, str) else None,
            attributes,
            request.server_attributes,
            self._content_api,
            request.body,
        )

    def on_result(self, telemetry: Telemetry, traced: TracedData, request: Request, result: Any) -> None:
        telemetry.end(traced, self._result_attributes(result), result=result)

    def recorder(self, telemetry: Telemetry, traced: TracedData, request: Request) -> StreamRecorder:
        if self._streams:
            return CompletionStreamRecorder(telemetry, traced)
        return StreamRecorder(telemetry, traced)


CHAT = SimpleOperation(chat_request_attributes, completion_result_attributes, streams=True, content_api=API_CHAT)
COMPLETIONS = SimpleOperation(
    completion_request_attributes, completion_result_attributes, streams=True, content_api=API_COMPLETIONS
)
EMBEDDINGS = SimpleOperation(
    embeddings_request_attributes, embeddings_result_attributes, streams=False, content_api=None
)
