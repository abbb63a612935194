"""Chat Completions and legacy Completions: request body, result and stream chunks to attributes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import semconv
from .extract_common import (
    Attributes,
    get_field,
    output_type,
    put_int,
    put_number,
    put_str,
    put_str_list,
    put_usage,
)


def _sampling_attributes(attributes: Attributes, body: Mapping[str, Any]) -> None:
    """Parameters shared by chat and legacy completions."""
    put_number(attributes, semconv.REQUEST_TEMPERATURE, body.get("temperature"))
    put_number(attributes, semconv.REQUEST_TOP_P, body.get("top_p"))
    put_number(attributes, semconv.REQUEST_FREQUENCY_PENALTY, body.get("frequency_penalty"))
    put_number(attributes, semconv.REQUEST_PRESENCE_PENALTY, body.get("presence_penalty"))
    put_int(attributes, semconv.REQUEST_SEED, body.get("seed"))
    put_str_list(attributes, semconv.REQUEST_STOP_SEQUENCES, body.get("stop"))
    choice_count = body.get("n")
    if choice_count != 1:  # the conventions ask to leave out the default of one choice
        put_int(attributes, semconv.REQUEST_CHOICE_COUNT, choice_count)
    put_str(attributes, semconv.OPENAI_REQUEST_SERVICE_TIER, body.get("service_tier"))
    if body.get("stream"):
        attributes[semconv.REQUEST_STREAM] = True


def chat_request_attributes(body: Mapping[str, Any]) -> Attributes:
    attributes: Attributes = {
        semconv.OPERATION_NAME: semconv.OPERATION_CHAT,
        semconv.OPENAI_API_TYPE: semconv.API_TYPE_CHAT_COMPLETIONS,
    }
    put_str(attributes, semconv.REQUEST_MODEL, body.get("model"))
    max_tokens = body.get("max_completion_tokens")
    put_int(attributes, semconv.REQUEST_MAX_TOKENS, body.get("max_tokens") if max_tokens is None else max_tokens)
    _sampling_attributes(attributes, body)
    kind = output_type(get_field(body.get("response_format"), "type"))
    if kind:
        attributes[semconv.OUTPUT_TYPE] = kind
    return attributes


def completion_request_attributes(body: Mapping[str, Any]) -> Attributes:
    attributes: Attributes = {semconv.OPERATION_NAME: semconv.OPERATION_TEXT_COMPLETION}
    put_str(attributes, semconv.REQUEST_MODEL, body.get("model"))
    put_int(attributes, semconv.REQUEST_MAX_TOKENS, body.get("max_tokens"))
    _sampling_attributes(attributes, body)
    return attributes


def _common_result_attributes(attributes: Attributes, result: Any) -> None:
    put_str(attributes, semconv.RESPONSE_ID, get_field(result, "id"))
    put_str(attributes, semconv.RESPONSE_MODEL, get_field(result, "model"))
    put_str(attributes, semconv.OPENAI_RESPONSE_SERVICE_TIER, get_field(result, "service_tier"))
    put_str(attributes, semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT, get_field(result, "system_fingerprint"))
    put_usage(
        attributes,
        get_field(result, "usage"),
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
    )


def completion_result_attributes(result: Any) -> Attributes:
    """Works for ChatCompletion and Completion: both carry choices with finish_reason."""
    attributes: Attributes = {}
    _common_result_attributes(attributes, result)
    choices = get_field(result, "choices")
    if isinstance(choices, list):
        reasons = tuple(str(get_field(choice, "finish_reason") or "") for choice in choices)
        if any(reasons):
            attributes[semconv.RESPONSE_FINISH_REASONS] = reasons
    return attributes


class _ChoiceContent:
    """What one streamed choice said, assembled from its deltas (opt-in content only)."""

    __slots__ = ("texts", "tool_calls")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}

    def add(self, choice: Any) -> None:
        delta = get_field(choice, "delta")
        text = get_field(delta, "content") if delta is not None else get_field(choice, "text")
        if isinstance(text, str):
            self.texts.append(text)
        for call in get_field(delta, "tool_calls") or ():
            index = get_field(call, "index")
            entry = self.tool_calls.setdefault(index if isinstance(index, int) else len(self.tool_calls), {})
            call_id = get_field(call, "id")
            if call_id:
                entry["id"] = call_id
            function = get_field(call, "function")
            name = get_field(function, "name")
            if name:
                entry["name"] = name
            arguments = get_field(function, "arguments")
            if isinstance(arguments, str):
                entry["arguments"] = entry.get("arguments", "") + arguments

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.texts) or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id"),
                    "type": "function",
                    "function": {"name": call.get("name"), "arguments": call.get("arguments", "")},
                }
                for _, call in sorted(self.tool_calls.items())
            ]
        return message


class CompletionStreamAccumulator:
    """Folds chat or legacy completion chunks into what the final span needs; O(1) per chunk.

    With `collect_content` (opt-in capture only) it also assembles each choice's text and tool calls.
    """

    __slots__ = ("contents", "finish_reasons", "head", "usage")

    def __init__(self, collect_content: bool = False) -> None:
        self.head: Any = None  # the first chunk with an id or model: id, model, fingerprint, tier
        self.usage: Any = None
        self.finish_reasons: dict[int, str] = {}
        self.contents: dict[int, _ChoiceContent] | None = {} if collect_content else None

    def add(self, chunk: Any) -> None:
        # Azure opens with a chunk of prompt filter results whose id and model are empty: skip it.
        if self.head is None and (get_field(chunk, "id") or get_field(chunk, "model")):
            self.head = chunk
        usage = get_field(chunk, "usage")
        if usage is not None:
            self.usage = usage
        choices = get_field(chunk, "choices")
        if choices:
            for choice in choices:
                reason = get_field(choice, "finish_reason")
                index = get_field(choice, "index")
                index = index if isinstance(index, int) else 0
                if reason:
                    self.finish_reasons[index] = reason
                if self.contents is not None:
                    self.contents.setdefault(index, _ChoiceContent()).add(choice)

    def assembled(self) -> dict[str, Any] | None:
        """A ChatCompletion-shaped dict of what was streamed, for content capture; None when not collected."""
        if self.contents is None:
            return None
        return {
            "choices": [
                {"index": index, "message": content.message(), "finish_reason": self.finish_reasons.get(index)}
                for index, content in sorted(self.contents.items())
            ]
        }

    def attributes(self) -> Attributes:
        attributes: Attributes = {}
        if self.head is not None:
            _common_result_attributes(attributes, self.head)
        put_usage(
            attributes,
            self.usage,
            "prompt_tokens",
            "completion_tokens",
            "prompt_tokens_details",
            "completion_tokens_details",
        )
        if self.finish_reasons:
            attributes[semconv.RESPONSE_FINISH_REASONS] = tuple(
                str(self.finish_reasons[index]) for index in sorted(self.finish_reasons)
            )
        return attributes

    @property
    def finished(self) -> bool:
        """A chat stream has no terminal event; a finish reason is the best sign it completed."""
        return bool(self.finish_reasons)
