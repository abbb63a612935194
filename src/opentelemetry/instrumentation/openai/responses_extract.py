"""Responses API: request body, Response object and stream events to attributes (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import semconv
from .extract_common import Attributes, get_field, output_type, put_int, put_number, put_str, put_usage

# A response in one of these states will change; its span waits in `pending`.
UNFINISHED_STATUSES = frozenset(("queued", "in_progress"))
TERMINAL_EVENT_TYPES = frozenset(("response.completed", "response.failed", "response.incomplete", "response.cancelled"))
SNAPSHOT_EVENT_TYPES = frozenset(("response.created", "response.in_progress", "response.queued"))
# Tool-call output items: a completed response that ends in one of these asked for a tool.
_TOOL_CALL_ITEM_TYPES = frozenset(("function_call", "custom_tool_call", "computer_call", "mcp_approval_request"))
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _conversation_id(conversation: Any) -> str | None:
    if isinstance(conversation, str):
        return conversation
    conversation_id = get_field(conversation, "id")
    return conversation_id if isinstance(conversation_id, str) else None


def request_attributes(body: Mapping[str, Any]) -> Attributes:
    attributes: Attributes = {
        semconv.OPERATION_NAME: semconv.OPERATION_CHAT,
        semconv.OPENAI_API_TYPE: semconv.API_TYPE_RESPONSES,
    }
    put_str(attributes, semconv.REQUEST_MODEL, body.get("model"))
    put_int(attributes, semconv.REQUEST_MAX_TOKENS, body.get("max_output_tokens"))
    put_number(attributes, semconv.REQUEST_TEMPERATURE, body.get("temperature"))
    put_number(attributes, semconv.REQUEST_TOP_P, body.get("top_p"))
    put_str(attributes, semconv.OPENAI_REQUEST_SERVICE_TIER, body.get("service_tier"))
    put_str(attributes, semconv.CONVERSATION_ID, _conversation_id(body.get("conversation")))
    if body.get("stream"):
        attributes[semconv.REQUEST_STREAM] = True
    if body.get("background"):
        attributes[semconv.OPENAI_REQUEST_BACKGROUND] = True
    kind = output_type(get_field(get_field(body.get("text"), "format"), "type"))
    if kind:
        attributes[semconv.OUTPUT_TYPE] = kind
    return attributes


def finish_reason(response: Any) -> str | None:
    """One finish reason per response, in the vocabulary chat uses (stop, length, tool_calls...)."""
    status = get_field(response, "status")
    if status == "completed":
        output = get_field(response, "output")
        if isinstance(output, list) and output and get_field(output[-1], "type") in _TOOL_CALL_ITEM_TYPES:
            return "tool_calls"
        return "stop"
    if status == "incomplete":
        reason = get_field(get_field(response, "incomplete_details"), "reason")
        return _INCOMPLETE_REASONS.get(reason, reason if isinstance(reason, str) else "incomplete")
    if status == "failed":
        return "error"
    if status == "cancelled":
        return "cancelled"
    return None


def response_error(response: Any) -> tuple[str, str] | None:
    """(error.type, message) of a failed response, else None."""
    if get_field(response, "status") != "failed":
        return None
    error = get_field(response, "error")
    code = get_field(error, "code")
    message = get_field(error, "message")
    return (str(code) if code else "failed", str(message) if message else "response failed")


def response_attributes(response: Any) -> Attributes:
    """Everything the span needs from a Response object (or dict), read field by field."""
    attributes: Attributes = {}
    put_str(attributes, semconv.RESPONSE_ID, get_field(response, "id"))
    put_str(attributes, semconv.RESPONSE_MODEL, get_field(response, "model"))
    put_str(attributes, semconv.OPENAI_RESPONSE_STATUS, get_field(response, "status"))
    put_str(attributes, semconv.OPENAI_RESPONSE_SERVICE_TIER, get_field(response, "service_tier"))
    put_str(attributes, semconv.CONVERSATION_ID, _conversation_id(get_field(response, "conversation")))
    reason = finish_reason(response)
    if reason:
        attributes[semconv.RESPONSE_FINISH_REASONS] = (reason,)
    put_usage(
        attributes,
        get_field(response, "usage"),
        "input_tokens",
        "output_tokens",
        "input_tokens_details",
        "output_tokens_details",
    )
    return attributes


def fetch_attributes(response: Any) -> Attributes:
    """A retrieve of a response this process never started: identity and state, no token counts."""
    attributes: Attributes = {}
    put_str(attributes, semconv.RESPONSE_ID, get_field(response, "id"))
    put_str(attributes, semconv.RESPONSE_MODEL, get_field(response, "model"))
    put_str(attributes, semconv.OPENAI_RESPONSE_STATUS, get_field(response, "status"))
    return attributes


class ResponseStreamAccumulator:
    """Keeps the latest full `response` seen in a stream of Responses events; O(1) per event."""

    __slots__ = ("error", "final", "snapshot")

    def __init__(self) -> None:
        self.snapshot: Any = None  # from response.created / in_progress: id, model, background
        self.final: Any = None  # from the terminal event
        self.error: tuple[str, str] | None = None

    def add(self, event: Any) -> bool:
        """Returns True when the event ends the response."""
        event_type = get_field(event, "type")
        if event_type is None and get_field(event, "event") == "error":
            # openai < 1.99 yields an SSE event not named `response.*` as a typeless {"data", "event"} model
            event = get_field(event, "data")
            event_type = get_field(event, "type") or "error"
        if event_type in TERMINAL_EVENT_TYPES:
            self.final = get_field(event, "response")
            return True
        if event_type in SNAPSHOT_EVENT_TYPES:
            self.snapshot = get_field(event, "response")
        elif event_type == "error":
            code = get_field(event, "code")
            message = get_field(event, "message")
            self.error = (str(code) if code else "error", str(message) if message else "stream error event")
            return True
        return False

    @property
    def latest(self) -> Any:
        return self.final if self.final is not None else self.snapshot

    @property
    def response_id(self) -> str | None:
        response_id = get_field(self.latest, "id")
        return response_id if isinstance(response_id, str) else None
