"""OpenAI request and response content as GenAI semantic-convention messages, parts and tool definitions."""

from __future__ import annotations

import json
from typing import Any

from .content_parts import (
    Part,
    as_list,
    audio_output_part,
    base64_size,
    blob_part,
    clip,
    content_part,
    content_parts,
    generic_part,
    get,
    get_str,
    guard,
    parse_arguments,
    plain,
    text_part,
    tool_call_part,
    tool_response_part,
)

Message = dict[str, Any]

__all__ = [
    "chat_finish_reason",
    "chat_input_messages",
    "chat_output_messages",
    "responses_finish_reason",
    "responses_input_messages",
    "responses_output_messages",
    "system_instructions",
    "to_json",
    "tool_definitions",
]

# OpenAI's plural/legacy values mapped onto the spec's FinishReason enum; others pass through unchanged.
_CHAT_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call"}
_INCOMPLETE_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}

# Responses items run by the application: the model stops and waits for their output, like a chat tool call.
# (tool name after the item type, the fields that hold the call's arguments)
_CLIENT_CALLS = {
    "computer_call": ("computer", ("action", "actions")),
    "local_shell_call": ("local_shell", ("action",)),
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
}
_CLIENT_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
    }
)
# Responses items run by OpenAI: (tool name, call detail fields, result fields), after the spec's example.
_SERVER_CALLS = {
    "web_search_call": ("web_search", ("action",), ()),
    "file_search_call": ("file_search", ("queries",), ("results",)),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), ("outputs",)),
    "image_generation_call": (
        "image_generation",
        ("action", "background", "output_format", "quality", "size", "revised_prompt"),
        ("error",),
    ),
    "mcp_call": ("mcp", ("server_label", "name", "arguments"), ("output", "error")),
}
_TOOL_ROLE_ITEMS = _CLIENT_OUTPUTS | {"program_output", "tool_search_output"}
_ASSISTANT_ROLE_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "reasoning", "compaction", "mcp_list_tools", "mcp_approval_request"}
    | {"tool_search_call", "program", *_CLIENT_CALLS, *_SERVER_CALLS}
)
_TOOL_CALL_FINISH_ITEMS = frozenset({"function_call", "custom_tool_call", *_CLIENT_CALLS})
_IMAGE_MIME = {"svg": "image/svg+xml"}
# Tool configuration keys that can hold credentials; built-in tool details never copy them.
_SECRET_KEYS = frozenset(
    {"headers", "authorization", "api_key", "apikey", "domain_secrets", "password", "secret", "client_secret", "token"}
)


def _message(role: str, parts: list[Part], name: Any = None) -> Message:
    message: Message = {"role": role, "parts": parts}
    if isinstance(name, str) and name:
        message["name"] = name
    return message


# ---- Chat Completions -------------------------------------------------------------------------------------------


def chat_finish_reason(raw: Any) -> str | None:
    """A Chat Completions finish_reason in the spec's vocabulary (`tool_calls` becomes `tool_call`)."""
    return _CHAT_FINISH.get(raw, raw) if isinstance(raw, str) and raw else None


def _chat_tool_call(call: Any, limit: int | None) -> Part | None:
    custom, function = get(call, "custom"), get(call, "function")
    if custom is None and function is None and get(call, "id") is None:
        return None  # nothing known about this call
    if get_str(call, "type") == "custom" or custom is not None:
        # Custom tool input is free text by design, so it is kept as a string.
        text = get_str(custom, "input")
        return tool_call_part(get(call, "id"), get(custom, "name"), clip(text, limit) if text is not None else None)
    return tool_call_part(get(call, "id"), get(function, "name"), parse_arguments(get(function, "arguments"), limit))


def _chat_calls(message: Any, limit: int | None) -> list[Part]:
    """Refusal, tool calls and the legacy function call of an assistant message, in that order."""
    parts: list[Part] = []
    refusal = get_str(message, "refusal")
    if refusal:
        parts.append(text_part(refusal, limit, "refusal"))
    parts.extend(p for p in (guard(_chat_tool_call, c, limit) for c in as_list(get(message, "tool_calls"))) if p)
    function_call = get(message, "function_call")
    if function_call is not None:
        arguments = parse_arguments(get(function_call, "arguments"), limit)
        parts.append(tool_call_part(None, get(function_call, "name"), arguments))
    return parts


def _chat_message(message: Any, limit: int | None) -> Message | None:
    if isinstance(message, str):
        return _message("user", [text_part(message, limit)])
    if get(message, "role") is None and get(message, "content") is None:
        return None  # not a message at all (None, a number, an unrelated object)
    # The role is kept as sent (developer, function included), as the spec asks for provider roles.
    role = get_str(message, "role") or "user"
    if role in ("tool", "function"):
        parts = [tool_response_part(get(message, "tool_call_id"), get(message, "content"), limit)]
        return _message(role, parts, get(message, "name"))
    parts = content_parts(get(message, "content"), limit)
    parts.extend(_chat_calls(message, limit))
    audio_id = get_str(get(message, "audio"), "id")
    if audio_id:
        # A reference to an earlier audio answer; the audio itself is not in the request.
        parts.append({"type": "audio", "id": audio_id})
    return _message(role, parts, get(message, "name"))


def chat_input_messages(messages: Any, limit: int | None = None) -> list[Message]:
    """gen_ai.input.messages from a Chat Completions request's `messages` (system messages included)."""
    converted = (guard(_chat_message, message, limit) for message in as_list(messages))
    return [message for message in converted if message is not None]


def _chat_reasoning(message: Any, limit: int | None) -> list[Part]:
    # Not part of OpenAI's schema, but OpenAI-compatible servers return it as an extra field.
    for key in ("reasoning_content", "reasoning"):
        text = get_str(message, key)
        if text:
            return [text_part(text, limit, "reasoning")]
    return []


def _chat_choice(choice: Any, limit: int | None) -> Message:
    message = get(choice, "message")
    parts = _chat_reasoning(message, limit)
    if message is None and isinstance(get(choice, "text"), str):
        parts.extend(content_parts(get(choice, "text"), limit))  # a legacy Completions choice
    parts.extend(content_parts(get(message, "content"), limit))
    audio = get(message, "audio")
    if audio is not None:
        parts.append(audio_output_part(audio, limit))
    parts.extend(_chat_calls(message, limit))
    result = _message(get_str(message, "role") or "assistant", parts)
    finish_reason = chat_finish_reason(get(choice, "finish_reason"))
    if finish_reason:
        result["finish_reason"] = finish_reason
    return result


def chat_output_messages(choices: Any, limit: int | None = None) -> list[Message]:
    """gen_ai.output.messages from ChatCompletion `choices`: one message per choice, read by attribute."""
    converted = (guard(_chat_choice, choice, limit) for choice in as_list(choices))
    return [message for message in converted if message is not None]


# ---- Responses --------------------------------------------------------------------------------------------------


def _server_call(item: Any, kind: str, limit: int | None) -> list[Part]:
    """A built-in tool run by OpenAI: a server_tool_call part, then a server_tool_call_response part."""
    tool, call_fields, result_fields = _SERVER_CALLS[kind]
    item_id = get_str(item, "id")
    details: dict[str, Any] = {"type": tool}
    for field in call_fields:
        value = get(item, field)
        if value is not None:
            details[field] = parse_arguments(value, limit) if field == "arguments" else plain(value, limit)
    call: Part = {"type": "server_tool_call", "id": item_id, "name": get_str(item, "name") or tool}
    call["server_tool_call"] = details
    parts = [call]
    outcome: dict[str, Any] = {"type": tool}
    outcome.update({f: plain(get(item, f), limit) for f in (*result_fields, "status") if get(item, f) is not None})
    if len(outcome) > 1:
        parts.append({"type": "server_tool_call_response", "id": item_id, "server_tool_call_response": outcome})
    image = get_str(item, "result") if kind == "image_generation_call" else None
    if image:
        fmt = get_str(item, "output_format") or "png"
        parts.append(blob_part(base64_size(image), "image", _IMAGE_MIME.get(fmt, f"image/{fmt}")))
    if item_id is None:
        for part in parts:
            part.pop("id", None)
    return parts


def _reasoning(item: Any, limit: int | None) -> list[Part]:
    """Summary texts, then any raw reasoning text; the encrypted form is never copied."""
    texts = [get_str(entry, "text") for key in ("summary", "content") for entry in as_list(get(item, key))]
    return [text_part(text, limit, "reasoning") for text in texts if text]


def item_parts(item: Any, limit: int | None) -> list[Part]:
    """The parts of one Responses input or output item (message content, calls, results, reasoning)."""
    if isinstance(item, str):
        return [text_part(item, limit)]
    kind = get_str(item, "type")
    if kind in (None, "message") and get(item, "content") is not None:
        return content_parts(get(item, "content"), limit)
    if kind == "function_call":
        return [tool_call_part(get(item, "call_id"), get(item, "name"), parse_arguments(get(item, "arguments"), limit))]
    if kind == "custom_tool_call":
        text = get_str(item, "input")
        return [tool_call_part(get(item, "call_id"), get(item, "name"), clip(text, limit) if text else None)]
    if kind in _CLIENT_CALLS:
        tool, fields = _CLIENT_CALLS[kind]
        arguments = next((plain(get(item, f), limit) for f in fields if get(item, f) is not None), None)
        return [tool_call_part(get(item, "call_id"), tool, arguments)]
    if kind in _CLIENT_OUTPUTS:
        call_id = get(item, "call_id") or get(item, "id")
        output = get(item, "output")
        if kind == "computer_call_output" and output is not None:
            output = [output]  # one screenshot, shown as an image part
        return [tool_response_part(call_id, output, limit)]
    if kind in _SERVER_CALLS:
        return _server_call(item, kind, limit)
    if kind == "reasoning":
        return _reasoning(item, limit)
    if kind == "compaction":
        compaction: Part = {"type": "compaction"}
        if get_str(item, "id"):
            compaction["id"] = get_str(item, "id")
        return [compaction]
    return [generic_part(item, limit)]


def _item_role(item: Any) -> tuple[str, bool]:
    """(role, is an explicit message): messages carry their role, other items get the role of their author."""
    if isinstance(item, str):
        return "user", True
    kind, role = get_str(item, "type"), get_str(item, "role")
    if kind in (None, "message") and role:
        return role, True
    if kind in _TOOL_ROLE_ITEMS:
        return "tool", False
    if kind in _ASSISTANT_ROLE_ITEMS:
        return "assistant", False
    # Item references, approvals and unknown items: the application put them in the input.
    return role or "user", False


def responses_input_messages(input: Any, limit: int | None = None) -> list[Message]:
    """gen_ai.input.messages from a Responses request's `input` (a string or a list of items).

    Explicit messages map one to one; consecutive other items of the same role (parallel function
    calls, their outputs, reasoning) are grouped into one message, as Chat Completions would show them.
    """
    if isinstance(input, str):
        return [_message("user", [text_part(input, limit)])] if input else []
    messages: list[Message] = []
    grouping = False
    for item in as_list(input):
        if item is None:
            continue
        role_info, parts = guard(_item_role, item), guard(item_parts, item, limit)
        if role_info is None or parts is None:
            continue
        role, explicit = role_info
        if not explicit and grouping and messages[-1]["role"] == role:
            messages[-1]["parts"].extend(parts)
            continue
        messages.append(_message(role, parts))
        grouping = not explicit
    return messages


def responses_finish_reason(response: Any) -> str | None:
    """A finish reason for a Response, which has a status rather than a finish reason.

    completed -> "stop", or "tool_call" when the output asks the application to run a tool (as Chat
    Completions reports it); incomplete -> "length" / "content_filter" / the raw reason; failed -> "error";
    other statuses pass through.
    """
    status = get_str(response, "status")
    if status == "incomplete":
        reason = get_str(get(response, "incomplete_details"), "reason")
        return _INCOMPLETE_FINISH.get(reason, reason) if reason else "incomplete"
    if status == "failed":
        return "error"
    if status not in (None, "completed"):
        return status
    kinds = {get_str(item, "type") for item in as_list(get(response, "output"))}
    if kinds & _TOOL_CALL_FINISH_ITEMS:
        return "tool_call"
    return "stop" if status == "completed" or kinds else None


def responses_output_messages(response: Any, limit: int | None = None) -> list[Message]:
    """gen_ai.output.messages from a `Response`: its whole `output` is one assistant message (one candidate)."""
    output = get(response, "output")
    if output is None:
        return []
    parts: list[Part] = []
    for item in as_list(output):
        parts.extend((guard(item_parts, item, limit) or []) if item is not None else [])
    message = _message("assistant", parts)
    finish_reason = guard(responses_finish_reason, response)
    if finish_reason:
        message["finish_reason"] = finish_reason
    return [message]


def _instruction_parts(item: Any, limit: int | None) -> list[Part]:
    if isinstance(item, str):
        return [text_part(item, limit)] if item else []
    if get(item, "content") is not None or get_str(item, "role"):
        return content_parts(get(item, "content"), limit)
    return [content_part(item, limit)]


def system_instructions(instructions: Any, limit: int | None = None) -> list[Part]:
    """gen_ai.system_instructions from Responses `instructions` (a string or a list of input items).

    Only instructions given apart from the chat history belong here: chat system and developer
    messages stay in gen_ai.input.messages, as the spec asks.
    """
    if isinstance(instructions, str):
        return [text_part(instructions, limit)] if instructions else []
    parts: list[Part] = []
    for item in as_list(instructions):
        parts.extend((guard(_instruction_parts, item, limit) or []) if item is not None else [])
    return parts


# ---- Tool definitions -------------------------------------------------------------------------------------------


def _without_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_secrets(v) for k, v in value.items() if k.lower() not in _SECRET_KEYS}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def _function_definition(kind: str, tool: Any, limit: int | None, details: bool) -> dict[str, Any]:
    # Chat nests the definition under `function` / `custom`; Responses has it flat.
    inner = get(tool, kind) if get(tool, kind) is not None else tool
    definition: dict[str, Any] = {"type": kind, "name": get_str(inner, "name") or ""}
    if details:
        for field in ("description", "parameters", "format"):
            value = get(inner, field)
            if value is not None:
                definition[field] = plain(value, limit)
    return definition


def _tool_definition(tool: Any, limit: int | None, details: bool) -> dict[str, Any] | None:
    if all(get(tool, key) is None for key in ("type", "name", "function")):
        return None  # not a tool definition
    kind = get_str(tool, "type") or "function"
    if kind in ("function", "custom"):
        return _function_definition(kind, tool, limit, details)
    # Built-in tools keep the provider's own type; MCP servers are known by their label.
    name = get_str(tool, "name") or get_str(tool, "server_label") or kind
    definition: dict[str, Any] = {"type": kind, "name": name}
    if details:
        config = _without_secrets(plain(tool, limit))
        if isinstance(config, dict):
            if kind == "namespace":
                config["tools"] = tool_definitions(get(tool, "tools"), limit, include_details=True)
            definition.update({k: v for k, v in config.items() if k not in ("type", "name")})
    return definition


def tool_definitions(tools: Any, limit: int | None = None, *, include_details: bool = False) -> list[dict[str, Any]]:
    """gen_ai.tool.definitions from Chat or Responses `tools`.

    Only the required `type` and `name` by default: the spec does not recommend the optional
    properties (description, parameters, built-in tool configuration) unless the user asks for them.
    Credentials in built-in tool configuration (MCP headers, authorization, secrets) are never copied.
    """
    converted = (guard(_tool_definition, tool, limit, include_details) for tool in as_list(tools))
    return [definition for definition in converted if definition is not None]


# ---- Serialization ----------------------------------------------------------------------------------------------


def to_json(value: Any) -> str:
    """Compact JSON for an attribute value; unknown objects are converted rather than raising."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except Exception:
        try:
            text = json.dumps(plain(value, None), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except Exception:
            text = '"<unserializable>"'
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates would make the exporter drop the whole span.
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
