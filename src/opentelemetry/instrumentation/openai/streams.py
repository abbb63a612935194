"""ONE sync and ONE async stream proxy, shared by every streamed operation; each ends its span once."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import wrapt

from .operation import StreamRecorder


class _ClosingResponseProxy(wrapt.ObjectProxy):  # type: ignore[misc,type-arg]
    """The stream's HTTP response. The SDK helpers (`responses.stream()`, `chat.completions.stream()`)
    close `raw_stream.response` directly on an early exit, so closing it must end the span too."""

    def __init__(self, response: Any, recorder: StreamRecorder) -> None:
        super().__init__(response)
        self._self_recorder = recorder

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_recorder.finish(end_reason="closed")

    async def aclose(self) -> None:
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_recorder.finish(end_reason="closed")


class _StreamProxyBase(wrapt.ObjectProxy):  # type: ignore[misc,type-arg]
    """What both proxies share: the recorder, the response proxy, and the end on garbage collection."""

    def __init__(self, stream: Any, recorder: StreamRecorder) -> None:
        super().__init__(stream)
        self._self_recorder = recorder
        self._self_response: Any = None

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = _ClosingResponseProxy(self.__wrapped__.response, self._self_recorder)
        return self._self_response

    def _self_stopped(self, error: BaseException, exhausted: type[BaseException]) -> None:
        """The stream ran out (`exhausted`) or raised: either way its span ends now."""
        self._self_recorder.finish(error=None if isinstance(error, exhausted) else error)

    def __del__(self) -> None:
        # An abandoned stream (dropped after a `break`, never read) still ends its span.
        recorder = getattr(self, "_self_recorder", None)
        if recorder is not None:
            recorder.finish(end_reason="abandoned")


class SyncStreamProxy(_StreamProxyBase):
    """Wraps `openai.Stream`; isinstance checks and every other attribute pass through."""

    def __iter__(self) -> SyncStreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            item = self.__wrapped__.__next__()
        except BaseException as error:
            self._self_stopped(error, StopIteration)
            raise
        self._self_recorder.observe(item)
        return item

    def __enter__(self) -> SyncStreamProxy:
        self.__wrapped__.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> Any:
        try:
            return self.__wrapped__.__exit__(exc_type, exc, traceback)
        finally:
            self._self_recorder.finish(error=exc, end_reason="closed")

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_recorder.finish(end_reason="closed")


class AsyncStreamProxy(_StreamProxyBase):
    """Wraps `openai.AsyncStream`; `close()`/`aclose()` are awaited, never left pending."""

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self.__wrapped__.__anext__()
        except BaseException as error:
            self._self_stopped(error, StopAsyncIteration)
            raise
        self._self_recorder.observe(item)
        return item

    async def __aenter__(self) -> AsyncStreamProxy:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> Any:
        try:
            return await self.__wrapped__.__aexit__(exc_type, exc, traceback)
        finally:
            self._self_recorder.finish(error=exc, end_reason="closed")

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_recorder.finish(end_reason="closed")

    async def aclose(self) -> None:
        await self.close()
