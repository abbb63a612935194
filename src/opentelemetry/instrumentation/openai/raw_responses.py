"""Proxies for `with_raw_response` / `with_streaming_response` results: the span follows `.parse()`."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import wrapt

if TYPE_CHECKING:
    from .hook import Call


class _RawResponseProxyBase(wrapt.ObjectProxy):  # type: ignore[misc,type-arg]
    """The first `parse()` hands its result to the call (model: span ends; stream: proxied stream)."""

    def __init__(self, raw: Any, call: Call) -> None:
        super().__init__(raw)
        self._self_call: Call | None = call
        self._self_parsed: Any = None
        self._self_result: Any = None

    def _self_complete(self, parsed: Any) -> Any:
        if self._self_parsed is not None and parsed is self._self_parsed:
            return self._self_result  # the SDK caches parse(); so do we, proxy included
        call = self._self_call
        if call is None:
            return parsed  # a later parse(to=...) of another type: nothing left to record
        self._self_call = None
        self._self_parsed = parsed
        self._self_result = call.complete(parsed)
        return self._self_result

    def _self_failed(self, error: BaseException) -> None:
        call = self._self_call
        if call is not None:
            self._self_call = None
            call.fail(error)

    def _self_body_was_read(self) -> bool:
        """A plain (not SSE) body is in memory, read with `read()`/`json()`/`text()`, but never `parse()`d."""
        if self._self_call is None or getattr(self.__wrapped__, "_is_sse_stream", True):
            return False
        return getattr(getattr(self.__wrapped__, "http_response", None), "is_stream_consumed", False) is True

    def _self_closed(self, end_reason: str) -> None:
        call = self._self_call
        if call is not None:
            self._self_call = None
            call.abandon(end_reason)
            return
        # The context manager closes the HTTP response under a parsed stream's feet.
        recorder = getattr(self._self_result, "_self_recorder", None)
        if recorder is not None:
            recorder.finish(end_reason=end_reason)

    def __del__(self) -> None:
        if getattr(self, "_self_call", None) is not None:
            self._self_closed("abandoned")


class SyncRawResponseProxy(_RawResponseProxyBase):
    """`APIResponse` (and a streamed `LegacyAPIResponse`), whose `parse()` is synchronous."""

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        try:
            parsed = self.__wrapped__.parse(*args, **kwargs)
        except BaseException as error:
            self._self_failed(error)
            raise
        return self._self_complete(parsed)

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            if self._self_body_was_read():
                # The body is in memory: the span gets the response it describes (or, failing, ends below).
                with contextlib.suppress(Exception):
                    self._self_complete(self.__wrapped__.parse())
            self._self_closed("closed")


class AsyncRawResponseProxy(_RawResponseProxyBase):
    """`AsyncAPIResponse`, whose `parse()` and `close()` are coroutines."""

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        try:
            parsed = await self.__wrapped__.parse(*args, **kwargs)
        except BaseException as error:
            self._self_failed(error)
            raise
        return self._self_complete(parsed)

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            if self._self_body_was_read():
                with contextlib.suppress(Exception):
                    self._self_complete(await self.__wrapped__.parse())
            self._self_closed("closed")
