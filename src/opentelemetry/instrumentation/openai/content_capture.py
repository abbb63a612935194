"""Opt-in message content: span attributes (JSON) and/or one inference-details event per response."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.util.types import AttributeValue

from opentelemetry import trace

from . import semconv
from .config import ContentCapture
from .content import (
    chat_input_messages,
    chat_output_messages,
    responses_input_messages,
    responses_output_messages,
    system_instructions,
    to_json,
    tool_definitions,
)
from .content_parts import as_list, is_mapping, text_part

logger = logging.getLogger(__name__)

EVENT_NAME = "gen_ai.client.inference.operation.details"

API_CHAT = "chat"
API_COMPLETIONS = "completions"
API_RESPONSES = "responses"

# Span attributes copied onto the event, so it stands on its own in a log backend.
_EVENT_ATTRIBUTES = (
    semconv.OPERATION_NAME,
    semconv.PROVIDER_NAME,
    semconv.REQUEST_MODEL,
    semconv.RESPONSE_ID,
    semconv.RESPONSE_MODEL,
    semconv.RESPONSE_FINISH_REASONS,
    semconv.USAGE_INPUT_TOKENS,
    semconv.USAGE_OUTPUT_TOKENS,
    semconv.SERVER_ADDRESS,
    semconv.SERVER_PORT,
    semconv.ERROR_TYPE,
)
_STRUCTURED_KEYS = (
    semconv.SYSTEM_INSTRUCTIONS,
    semconv.INPUT_MESSAGES,
    semconv.TOOL_DEFINITIONS,
    semconv.OUTPUT_MESSAGES,
)


def _completion_prompt_messages(prompt: Any, limit: int | None) -> list[dict[str, Any]]:
    """Legacy Completions: each prompt string is one user message."""
    prompts = [prompt] if isinstance(prompt, str) else as_list(prompt)
    return [{"role": "user", "parts": [text_part(text, limit)]} for text in prompts if isinstance(text, str)]


def request_content(api: str, body: Mapping[str, Any], limit: int | None) -> dict[str, Any]:
    """The structured input content of a request, keyed by the conventions' attribute names."""
    content: dict[str, Any] = {"api": api}
    if api == API_RESPONSES:
        instructions = system_instructions(body.get("instructions"), limit)
        if instructions:
            content[semconv.SYSTEM_INSTRUCTIONS] = instructions
        content[semconv.INPUT_MESSAGES] = responses_input_messages(body.get("input"), limit)
    elif api == API_CHAT:
        content[semconv.INPUT_MESSAGES] = chat_input_messages(body.get("messages"), limit)
    else:
        content[semconv.INPUT_MESSAGES] = _completion_prompt_messages(body.get("prompt"), limit)
    tools = tool_definitions(body.get("tools"), limit)
    if tools:
        content[semconv.TOOL_DEFINITIONS] = tools
    return content


def output_messages(api: str, result: Any, limit: int | None) -> list[dict[str, Any]]:
    if api == API_RESPONSES:
        return responses_output_messages(result, limit)
    choices = result.get("choices") if is_mapping(result) else getattr(result, "choices", None)
    return chat_output_messages(choices, limit)


class ContentRecorder:
    """Exists only when capture is on; the instrumentation checks `telemetry.content is None` and
    does nothing else when it is off (the default)."""

    def __init__(self, mode: ContentCapture, limit: int, event_logger: Logger | None) -> None:
        self.on_span = mode.on_span
        self.event_logger = event_logger if mode.on_event else None
        self.limit = limit or None

    def on_request(self, api: str, body: Mapping[str, Any], attributes: dict[str, AttributeValue]) -> dict[str, Any]:
        """Returns the input content to keep on the TracedData; adds JSON span attributes if asked."""
        try:
            content = request_content(api, body, self.limit)
        except Exception:
            logger.debug("openai instrumentation: could not capture request content", exc_info=True)
            return {"api": api}
        if self.on_span:
            for key in (semconv.SYSTEM_INSTRUCTIONS, semconv.INPUT_MESSAGES, semconv.TOOL_DEFINITIONS):
                if key in content:
                    attributes[key] = to_json(content[key])
        return content

    def on_end(
        self,
        span: trace.Span,
        content: dict[str, Any],
        result: Any,
        final: dict[str, AttributeValue],
    ) -> None:
        """Adds the output to the span's final attributes and emits the event. Never raises."""
        try:
            if result is not None:
                content[semconv.OUTPUT_MESSAGES] = output_messages(content["api"], result, self.limit)
                if self.on_span:
                    final[semconv.OUTPUT_MESSAGES] = to_json(content[semconv.OUTPUT_MESSAGES])
            if self.event_logger is not None:
                self._emit(span, content, final)
        except Exception:
            logger.debug("openai instrumentation: could not capture response content", exc_info=True)

    def _emit(self, span: trace.Span, content: dict[str, Any], final: Mapping[str, AttributeValue]) -> None:
        attributes: dict[str, Any] = {}
        span_attributes = getattr(span, "attributes", None) or {}
        for key in _EVENT_ATTRIBUTES:
            value = final.get(key, span_attributes.get(key))
            if value is not None:
                attributes[key] = value
        for key in _STRUCTURED_KEYS:
            if key in content:
                attributes[key] = content[key]  # log attributes take structured values
        assert self.event_logger is not None
        self.event_logger.emit(
            event_name=EVENT_NAME,
            attributes=attributes,
            context=trace.set_span_in_context(span),
        )
