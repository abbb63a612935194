"""Content capture turns OpenAI bodies into the exact GenAI message structures, never copying base64."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from openai._models import construct_type_unchecked
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.responses import Response, ResponseOutputItem
from pydantic import TypeAdapter

from conftest import OPENAI_VERSION
from opentelemetry.instrumentation.openai.content import (
    chat_finish_reason,
    chat_input_messages,
    chat_output_messages,
    responses_finish_reason,
    responses_input_messages,
    responses_output_messages,
    system_instructions,
    to_json,
    tool_definitions,
)

# 2048 bytes of every byte value: a realistic payload with both letter cases, digits, '+' and '/'.
B64 = base64.b64encode(bytes(range(256)) * 8).decode()
SIZE = 2048
PNG_URL = f"data:image/png;base64,{B64}"
PDF_URL = f"data:application/pdf;base64,{B64}"


# Older SDKs lack some item types used here (custom tool calls, newer reasoning fields); they get the objects the
# SDK itself would build from such a response body: it parses bodies without validating them.
SDK_HAS_EVERY_TYPE = OPENAI_VERSION >= (1, 101)


def output_item(data: dict[str, Any]) -> Any:
    """A Responses output item parsed into its real SDK model."""
    if not SDK_HAS_EVERY_TYPE:
        return construct_type_unchecked(value=data, type_=ResponseOutputItem)
    return TypeAdapter(ResponseOutputItem).validate_python(data)


def assert_no_base64(result: Any) -> None:
    text = to_json(result)
    assert B64 not in text
    assert B64[600:700] not in text


def blob(modality: str, mime: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "blob", "modality": modality}
    if mime:
        part["mime_type"] = mime
    part["content"] = f"<base64 {mime + ' ' if mime else ''}{SIZE} bytes>"
    return part


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def text(content: str, kind: str = "text") -> dict[str, Any]:
    return {"type": kind, "content": content}


# ---- Chat Completions input -------------------------------------------------------------------------------------

CHAT_INPUT_CASES = [
    pytest.param(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        [{"role": "system", "parts": [text("Be brief.")]}, user(text("Hi"))],
        id="system-stays-in-input",
    ),
    pytest.param(
        [{"role": "developer", "content": [{"type": "text", "text": "Rules"}]}],
        [{"role": "developer", "parts": [text("Rules")]}],
        id="developer-role-preserved",
    ),
    pytest.param(
        [{"role": "user", "name": "ann", "content": [{"type": "text", "text": "Look"}]}],
        [{"role": "user", "parts": [text("Look")], "name": "ann"}],
        id="participant-name",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG_URL, "detail": "low"}}]}],
        [user(blob("image", "image/png"))],
        id="image-data-url-is-blob",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x.test/cat.png"}}]}],
        [user({"type": "uri", "modality": "image", "uri": "https://x.test/cat.png"})],
        id="image-url-is-uri",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": B64, "format": "mp3"}}]}],
        [user(blob("audio", "audio/mpeg"))],
        id="input-audio",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "file", "file": {"file_data": PDF_URL, "filename": "a.pdf"}}]}],
        [user(blob("document", "application/pdf"))],
        id="file-data-url",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "file", "file": {"file_data": B64, "filename": "scan.png"}}]}],
        [user(blob("image", "image/png"))],
        id="file-raw-base64-mime-from-filename",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-123"}}]}],
        [user({"type": "file", "modality": "document", "file_id": "file-123"})],
        id="file-id",
    ),
    pytest.param(
        [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "https://v"}}]}],
        [user({"type": "video_url", "video_url": {"url": "https://v"}})],
        id="unknown-part-is-generic",
    ),
    pytest.param(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
                    {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": "{not json"}},
                    {"id": "c3", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}},
                ],
            }
        ],
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}},
                    {"type": "tool_call", "id": "c2", "name": "echo", "arguments": "{not json"},
                    {"type": "tool_call", "id": "c3", "name": "sql", "arguments": "SELECT 1"},
                ],
            }
        ],
        id="assistant-tool-calls",
    ),
    pytest.param(
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Sure"}, {"type": "refusal", "refusal": "No"}],
                "refusal": "Not that",
                "function_call": {"name": "legacy", "arguments": "{}"},
                "audio": {"id": "audio_1"},
            }
        ],
        [
            {
                "role": "assistant",
                "parts": [
                    text("Sure"),
                    text("No", "refusal"),
                    text("Not that", "refusal"),
                    {"type": "tool_call", "name": "legacy", "arguments": {}},
                    {"type": "audio", "id": "audio_1"},
                ],
            }
        ],
        id="assistant-refusal-function-call-audio",
    ),
    pytest.param(
        [
            {"role": "tool", "tool_call_id": "c1", "content": "rainy, 57°F"},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "ok"}]},
            {"role": "function", "name": "legacy", "content": "42"},
        ],
        [
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "rainy, 57°F"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": [text("ok")]}]},
            {"role": "function", "parts": [{"type": "tool_call_response", "response": "42"}], "name": "legacy"},
        ],
        id="tool-results",
    ),
    pytest.param(
        [ChatCompletionMessage(role="assistant", content="Earlier answer")],
        [{"role": "assistant", "parts": [text("Earlier answer")]}],
        id="sdk-message-object",
    ),
    pytest.param(
        [
            ChatCompletionMessage.model_validate(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                }
            )
        ],
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}]}],
        id="sdk-message-with-tool-calls",
    ),
    pytest.param(
        [None, 42, object(), "plain string", {"role": "user"}],
        [user(text("plain string")), user()],
        id="garbage-items-skipped",
    ),
]


@pytest.mark.parametrize(("messages", "expected"), CHAT_INPUT_CASES)
def test_chat_input_messages(messages: Any, expected: list[dict[str, Any]]) -> None:
    result = chat_input_messages(messages, 8192)
    assert result == expected
    assert json.loads(to_json(result)) == expected
    assert_no_base64(result)


# ---- Chat Completions output ------------------------------------------------------------------------------------


def completion(*choices: dict[str, Any]) -> ChatCompletion:
    data = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o", "choices": choices}
    if not SDK_HAS_EVERY_TYPE:
        return construct_type_unchecked(value=data, type_=ChatCompletion)
    return ChatCompletion.model_validate(data)


CHAT_OUTPUT_CASES = [
    pytest.param(
        completion({"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello"}}),
        [{"role": "assistant", "parts": [text("Hello")], "finish_reason": "stop"}],
        id="text",
    ),
    pytest.param(
        completion(
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": [1, 2]}'}},
                        {"id": "c2", "type": "custom", "custom": {"name": "g", "input": "raw"}},
                    ],
                },
            }
        ),
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"x": [1, 2]}},
                    {"type": "tool_call", "id": "c2", "name": "g", "arguments": "raw"},
                ],
                "finish_reason": "tool_call",
            }
        ],
        id="tool-calls",
    ),
    pytest.param(
        completion(
            {
                "index": 0,
                "finish_reason": "content_filter",
                "message": {"role": "assistant", "content": None, "refusal": "I can't."},
            },
            {"index": 1, "finish_reason": "length", "message": {"role": "assistant", "content": "Part"}},
        ),
        [
            {"role": "assistant", "parts": [text("I can't.", "refusal")], "finish_reason": "content_filter"},
            {"role": "assistant", "parts": [text("Part")], "finish_reason": "length"},
        ],
        id="refusal-and-two-choices",
    ),
    pytest.param(
        completion(
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "audio": {"id": "a1", "data": B64, "expires_at": 1, "transcript": "Hi there"},
                },
            }
        ),
        [
            {
                "role": "assistant",
                "parts": [{**blob("audio", None), "transcript": "Hi there"}],
                "finish_reason": "stop",
            }
        ],
        id="audio-output",
    ),
    pytest.param(
        completion(
            {
                "index": 0,
                "finish_reason": "function_call",
                "message": {
                    "role": "assistant",
                    "content": "Thinking done",
                    "reasoning_content": "Let me see",
                    "function_call": {"name": "legacy", "arguments": "[]"},
                },
            }
        ),
        [
            {
                "role": "assistant",
                "parts": [
                    text("Let me see", "reasoning"),
                    text("Thinking done"),
                    {"type": "tool_call", "name": "legacy", "arguments": []},
                ],
                "finish_reason": "tool_call",
            }
        ],
        id="reasoning-extra-and-legacy-function-call",
    ),
]


@pytest.mark.parametrize(("response", "expected"), CHAT_OUTPUT_CASES)
def test_chat_output_messages(response: ChatCompletion, expected: list[dict[str, Any]]) -> None:
    result = chat_output_messages(response.choices, 8192)
    assert result == expected
    assert_no_base64(result)


def test_chat_output_from_plain_objects_and_garbage() -> None:
    class Choice:
        finish_reason = None
        message = {"role": "assistant", "content": "streamed"}

    assert chat_output_messages([Choice(), None], None) == [
        {"role": "assistant", "parts": [text("streamed")]},
        {"role": "assistant", "parts": []},
    ]
    assert chat_output_messages([{"text": "legacy", "finish_reason": "stop"}]) == [
        {"role": "assistant", "parts": [text("legacy")], "finish_reason": "stop"}
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("stop", "stop"), ("tool_calls", "tool_call"), ("function_call", "tool_call"), ("other", "other"), (None, None)],
)
def test_chat_finish_reason(raw: Any, expected: str | None) -> None:
    assert chat_finish_reason(raw) == expected


# ---- Responses input --------------------------------------------------------------------------------------------

WEB_SEARCH = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "q"},
}
WEB_SEARCH_PARTS = [
    {
        "type": "server_tool_call",
        "id": "ws_1",
        "name": "web_search",
        "server_tool_call": {"type": "web_search", "action": {"type": "search", "query": "q"}},
    },
    {
        "type": "server_tool_call_response",
        "id": "ws_1",
        "server_tool_call_response": {"type": "web_search", "status": "completed"},
    },
]

RESPONSES_INPUT_CASES = [
    pytest.param("Tell me a joke", [user(text("Tell me a joke"))], id="string"),
    pytest.param(
        [{"role": "system", "content": "Be nice"}, {"role": "user", "content": "Hi"}],
        [{"role": "system", "parts": [text("Be nice")]}, user(text("Hi"))],
        id="easy-messages",
    ),
    pytest.param(
        [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
                    {"type": "input_image", "image_url": "https://x.test/a.jpg", "detail": "auto"},
                    {"type": "input_image", "file_id": "file-img", "detail": "auto"},
                    {"type": "input_file", "file_data": PDF_URL, "filename": "doc.pdf"},
                    {"type": "input_file", "file_id": "file-doc", "filename": "doc.pdf"},
                    {"type": "input_file", "file_url": "https://x.test/doc.pdf"},
                    {"type": "input_audio", "input_audio": {"data": B64, "format": "wav"}},
                ],
            }
        ],
        [
            user(
                text("What is this?"),
                blob("image", "image/png"),
                {"type": "uri", "modality": "image", "uri": "https://x.test/a.jpg"},
                {"type": "file", "modality": "image", "file_id": "file-img"},
                blob("document", "application/pdf"),
                {"type": "file", "modality": "document", "mime_type": "application/pdf", "file_id": "file-doc"},
                {"type": "uri", "modality": "document", "uri": "https://x.test/doc.pdf"},
                blob("audio", "audio/wav"),
            )
        ],
        id="multimodal-parts",
    ),
    pytest.param(
        [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "Answer", "annotations": []},
                    {"type": "refusal", "refusal": "Not this"},
                ],
            }
        ],
        [{"role": "assistant", "parts": [text("Answer"), text("Not this", "refusal")]}],
        id="assistant-output-message",
    ),
    pytest.param(
        [
            {"role": "user", "content": "Weather?"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Need tools"}],
                "encrypted_content": "gAAAA-secret-blob",
            },
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": '{"city":"Rome"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "rainy"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "sunny"}]},
        ],
        [
            user(text("Weather?")),
            {
                "role": "assistant",
                "parts": [
                    text("Need tools", "reasoning"),
                    {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}},
                    {"type": "tool_call", "id": "c2", "name": "weather", "arguments": {"city": "Rome"}},
                ],
            },
            {
                "role": "tool",
                "parts": [
                    {"type": "tool_call_response", "id": "c1", "response": "rainy"},
                    {"type": "tool_call_response", "id": "c2", "response": [text("sunny")]},
                ],
            },
        ],
        id="reasoning-and-parallel-function-calls-grouped",
    ),
    pytest.param(
        [
            {"type": "custom_tool_call", "call_id": "k1", "name": "grammar", "input": "a+b"},
            {"type": "custom_tool_call_output", "call_id": "k1", "output": "ok"},
            {
                "type": "computer_call",
                "call_id": "p1",
                "id": "cu_1",
                "status": "completed",
                "action": {"type": "click", "x": 1, "y": 2, "button": "left"},
                "pending_safety_checks": [],
            },
            {
                "type": "computer_call_output",
                "call_id": "p1",
                "output": {"type": "computer_screenshot", "image_url": PNG_URL},
            },
            {
                "type": "local_shell_call",
                "id": "ls_1",
                "call_id": "l1",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"], "env": {}},
            },
            {"type": "local_shell_call_output", "id": "l1", "output": "a.txt"},
        ],
        [
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "grammar", "arguments": "a+b"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "k1", "response": "ok"}]},
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "p1",
                        "name": "computer",
                        "arguments": {"type": "click", "x": 1, "y": 2, "button": "left"},
                    }
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "p1", "response": [blob("image", "image/png")]}],
            },
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "l1",
                        "name": "local_shell",
                        "arguments": {"type": "exec", "command": ["ls"], "env": {}},
                    }
                ],
            },
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "l1", "response": "a.txt"}]},
        ],
        id="client-side-tools",
    ),
    pytest.param(
        [{"role": "user", "content": "Search"}, WEB_SEARCH, {"type": "item_reference", "id": "msg_9"}],
        [
            user(text("Search")),
            {"role": "assistant", "parts": WEB_SEARCH_PARTS},
            user({"type": "item_reference", "id": "msg_9"}),
        ],
        id="built-in-call-and-item-reference",
    ),
    pytest.param(
        [{"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}, {"type": "future_item", "x": 1}, None],
        [
            {"role": "assistant", "parts": [{"type": "compaction", "id": "cmp_1"}]},
            user({"type": "future_item", "x": 1}),
        ],
        id="compaction-and-unknown",
    ),
]


@pytest.mark.parametrize(("input_value", "expected"), RESPONSES_INPUT_CASES)
def test_responses_input_messages(input_value: Any, expected: list[dict[str, Any]]) -> None:
    result = responses_input_messages(input_value, 8192)
    assert result == expected
    assert "gAAAA" not in to_json(result)
    assert_no_base64(result)


# ---- Responses output -------------------------------------------------------------------------------------------

MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [
        {"type": "output_text", "text": "Done", "annotations": []},
        {"type": "refusal", "refusal": "Not all"},
    ],
}
FUNCTION_CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}', "id": "fc_1"}
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "First"}, {"type": "summary_text", "text": "Second"}],
    "encrypted_content": "gAAAA-opaque",
}
CODE = {
    "type": "code_interpreter_call",
    "id": "ci_1",
    "status": "completed",
    "code": "print(1)",
    "container_id": "cntr_1",
    "outputs": [{"type": "logs", "logs": "1"}],
}
FILE_SEARCH = {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"], "results": None}
MCP = {
    "type": "mcp_call",
    "id": "mcp_1",
    "server_label": "docs",
    "name": "lookup",
    "arguments": '{"term":"otel"}',
    "output": "found",
}
IMAGE = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": B64, "output_format": "webp"}
MCP_LIST = {
    "type": "mcp_list_tools",
    "id": "ml_1",
    "server_label": "docs",
    "tools": [{"name": "lookup", "input_schema": {}}],
}


def response(status: str | None, *items: dict[str, Any], reason: str | None = None) -> Response:
    details = {"reason": reason} if reason else None
    return Response.model_construct(
        id="resp_1",
        status=status,
        output=[output_item(item) for item in items],
        incomplete_details=details,
    )


RESPONSES_OUTPUT_CASES = [
    pytest.param(
        response("completed", REASONING, MESSAGE),
        [text("First", "reasoning"), text("Second", "reasoning"), text("Done"), text("Not all", "refusal")],
        "stop",
        id="reasoning-and-message",
    ),
    pytest.param(
        response("completed", FUNCTION_CALL),
        [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}}],
        "tool_call",
        id="function-call",
    ),
    pytest.param(
        response("completed", CODE, FILE_SEARCH, MESSAGE),
        [
            {
                "type": "server_tool_call",
                "id": "ci_1",
                "name": "code_interpreter",
                "server_tool_call": {"type": "code_interpreter", "code": "print(1)", "container_id": "cntr_1"},
            },
            {
                "type": "server_tool_call_response",
                "id": "ci_1",
                "server_tool_call_response": {
                    "type": "code_interpreter",
                    "outputs": [{"type": "logs", "logs": "1"}],
                    "status": "completed",
                },
            },
            {
                "type": "server_tool_call",
                "id": "fs_1",
                "name": "file_search",
                "server_tool_call": {"type": "file_search", "queries": ["q"]},
            },
            {
                "type": "server_tool_call_response",
                "id": "fs_1",
                "server_tool_call_response": {"type": "file_search", "status": "completed"},
            },
            text("Done"),
            text("Not all", "refusal"),
        ],
        "stop",
        id="built-in-tools-do-not-make-tool-call",
    ),
    pytest.param(
        response("completed", MCP, IMAGE),
        [
            {
                "type": "server_tool_call",
                "id": "mcp_1",
                "name": "lookup",
                "server_tool_call": {
                    "type": "mcp",
                    "server_label": "docs",
                    "name": "lookup",
                    "arguments": {"term": "otel"},
                },
            },
            {
                "type": "server_tool_call_response",
                "id": "mcp_1",
                "server_tool_call_response": {"type": "mcp", "output": "found"},
            },
            {
                "type": "server_tool_call",
                "id": "ig_1",
                "name": "image_generation",
                "server_tool_call": {"type": "image_generation", "output_format": "webp"},
            },
            {
                "type": "server_tool_call_response",
                "id": "ig_1",
                "server_tool_call_response": {"type": "image_generation", "status": "completed"},
            },
            blob("image", "image/webp"),
        ],
        "stop",
        id="mcp-and-generated-image",
    ),
    pytest.param(
        response("completed", MCP_LIST),
        [
            {
                "type": "mcp_list_tools",
                "id": "ml_1",
                "server_label": "docs",
                "tools": [{"name": "lookup", "input_schema": {}}],
            }
        ],
        "stop",
        id="unknown-item-is-generic",
    ),
    pytest.param(response("incomplete", MESSAGE, reason="max_output_tokens"), None, "length", id="max-tokens"),
    pytest.param(response("incomplete", reason="content_filter"), [], "content_filter", id="content-filter"),
    pytest.param(response("incomplete", reason="max_messages"), [], "max_messages", id="other-incomplete-reason"),
    pytest.param(response("failed"), [], "error", id="failed"),
    pytest.param(response("cancelled"), [], "cancelled", id="cancelled"),
]


@pytest.mark.parametrize(("value", "parts", "finish_reason"), RESPONSES_OUTPUT_CASES)
def test_responses_output_messages(value: Response, parts: list[dict[str, Any]] | None, finish_reason: str) -> None:
    result = responses_output_messages(value, 8192)
    assert len(result) == 1
    assert result[0]["role"] == "assistant"
    assert result[0]["finish_reason"] == finish_reason
    if parts is not None:
        assert result[0]["parts"] == parts
    assert responses_finish_reason(value) == finish_reason
    assert "gAAAA" not in to_json(result)
    assert_no_base64(result)


def test_responses_output_from_dicts_and_missing_output() -> None:
    assert responses_output_messages({"status": "completed", "output": [{"type": "message", "content": "hi"}]}) == [
        {"role": "assistant", "parts": [text("hi")], "finish_reason": "stop"}
    ]
    assert responses_output_messages(Response.model_construct()) == []
    assert responses_output_messages(None) == []
    assert responses_finish_reason(None) is None


# ---- System instructions and tool definitions -------------------------------------------------------------------

INSTRUCTION_CASES = [
    pytest.param("Never tell jokes", [text("Never tell jokes")], id="string"),
    pytest.param("", [], id="empty"),
    pytest.param(None, [], id="none"),
    pytest.param(
        [
            {"role": "developer", "content": "Rule one"},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Rule two"}]},
            {"type": "input_text", "text": "Rule three"},
            "Rule four",
        ],
        [text("Rule one"), text("Rule two"), text("Rule three"), text("Rule four")],
        id="list-of-items",
    ),
]


@pytest.mark.parametrize(("instructions", "expected"), INSTRUCTION_CASES)
def test_system_instructions(instructions: Any, expected: list[dict[str, Any]]) -> None:
    assert system_instructions(instructions, 8192) == expected


def test_system_instructions_from_response_object() -> None:
    value = Response.model_construct(instructions=[{"role": "system", "content": "From the response"}])
    assert system_instructions(value.instructions) == [text("From the response")]


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"type": "function", "function": {"name": "weather", "description": "Get weather", "parameters": WEATHER_SCHEMA}},
    {"type": "custom", "custom": {"name": "sql", "description": "Run SQL", "format": {"type": "text"}}},
    {"type": "function", "name": "lookup", "description": "Look up", "parameters": WEATHER_SCHEMA, "strict": True},
    {"type": "web_search", "search_context_size": "low"},
    {
        "type": "mcp",
        "server_label": "docs",
        "server_url": "https://mcp.test",
        "headers": {"Authorization": "Bearer sk-secret"},
        "authorization": "sk-secret-token",
    },
    {
        "type": "code_interpreter",
        "container": {
            "type": "auto",
            "network_policy": {"type": "allowlist", "domain_secrets": [{"domain": "a", "name": "K", "value": "sk-x"}]},
        },
    },
    None,
    42,
]


def test_tool_definitions_default_has_required_fields_only() -> None:
    assert tool_definitions(TOOLS) == [
        {"type": "function", "name": "weather"},
        {"type": "custom", "name": "sql"},
        {"type": "function", "name": "lookup"},
        {"type": "web_search", "name": "web_search"},
        {"type": "mcp", "name": "docs"},
        {"type": "code_interpreter", "name": "code_interpreter"},
    ]


def test_tool_definitions_with_details_never_copy_secrets() -> None:
    result = tool_definitions(TOOLS, 8192, include_details=True)
    assert result == [
        {"type": "function", "name": "weather", "description": "Get weather", "parameters": WEATHER_SCHEMA},
        {"type": "custom", "name": "sql", "description": "Run SQL", "format": {"type": "text"}},
        {"type": "function", "name": "lookup", "description": "Look up", "parameters": WEATHER_SCHEMA},
        {"type": "web_search", "name": "web_search", "search_context_size": "low"},
        {"type": "mcp", "name": "docs", "server_label": "docs", "server_url": "https://mcp.test"},
        {
            "type": "code_interpreter",
            "name": "code_interpreter",
            "container": {"type": "auto", "network_policy": {"type": "allowlist"}},
        },
    ]
    assert "sk-" not in to_json(result)


def test_tool_definitions_namespace_and_sdk_objects() -> None:
    from openai.types.responses import FunctionTool

    namespace = {"type": "namespace", "name": "crm", "description": "CRM", "tools": [{"type": "function", "name": "a"}]}
    tool = FunctionTool(type="function", name="sdk_tool", parameters=WEATHER_SCHEMA, strict=True)
    assert tool_definitions([namespace, tool], include_details=True) == [
        {"type": "namespace", "name": "crm", "description": "CRM", "tools": [{"type": "function", "name": "a"}]},
        {"type": "function", "name": "sdk_tool", "parameters": WEATHER_SCHEMA},
    ]


# ---- Truncation -------------------------------------------------------------------------------------------------


def test_long_strings_are_truncated_at_the_limit() -> None:
    long = "abcdefghij" * 3
    marker = "abcdefghij…[truncated 20 chars]"
    messages = [
        {"role": "user", "content": long},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": json.dumps({"q": long})}}],
        },
        {"role": "assistant", "tool_calls": [{"id": "d", "function": {"name": "f", "arguments": long}}]},
        {"role": "tool", "tool_call_id": "c", "content": long},
    ]
    assert chat_input_messages(messages, 10) == [
        user(text(marker)),
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": {"q": marker}}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "d", "name": "f", "arguments": marker}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c", "response": marker}]},
    ]
    assert system_instructions(long, 10) == [text(marker)]
    assert responses_input_messages(long, 10) == [user(text(marker))]


@pytest.mark.parametrize("limit", [None, 0, -1])
def test_no_limit_keeps_everything(limit: int | None) -> None:
    long = "word " * 5000
    assert chat_input_messages([{"role": "user", "content": long}], limit) == [user(text(long))]


def test_exactly_at_limit_is_not_truncated() -> None:
    assert chat_input_messages([{"role": "user", "content": "abc"}], 3) == [user(text("abc"))]


# ---- Base64 and robustness --------------------------------------------------------------------------------------


def test_base64_never_copied_from_any_field() -> None:
    noisy = [
        {"role": "user", "content": B64},
        {"role": "user", "content": [{"type": "mystery", "payload": B64, "url": PNG_URL}]},
        {"role": "tool", "tool_call_id": "c", "content": PNG_URL},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": json.dumps({"img": B64})}}],
        },
    ]
    result = chat_input_messages(noisy, None)
    assert_no_base64(result)
    assert result[0] == user(text(f"<base64 {SIZE} bytes>"))
    assert result[1]["parts"][0]["url"] == f"<base64 image/png {SIZE} bytes>"


def test_ordinary_long_text_is_not_mistaken_for_base64() -> None:
    for sample in ("x" * 400, "deadbeef" * 64, "Hello world " * 40):
        assert chat_input_messages([{"role": "user", "content": sample}], None) == [user(text(sample))]


class Exploding:
    """Every attribute access fails, as a broken proxy might."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


GARBAGE = [None, 0, 3.5, "", "text", b"bytes", object(), Exploding(), [None, 1, object(), Exploding()], {"a": 1}]


@pytest.mark.parametrize("value", GARBAGE, ids=lambda v: type(v).__name__)
def test_no_function_raises_on_garbage(value: Any) -> None:
    for function in (chat_input_messages, chat_output_messages, responses_input_messages, tool_definitions):
        assert isinstance(function(value, 10), list)
    assert isinstance(responses_output_messages(value, 10), list)
    assert isinstance(system_instructions(value, 10), list)
    assert isinstance(to_json(value), str)
    responses_finish_reason(value)
    chat_finish_reason(value)


def test_garbage_inside_known_structures() -> None:
    messages = [
        {
            "role": "assistant",
            "tool_calls": [None, 5, {"function": None}, {"id": "c9", "function": None}],
            "content": [None, 7],
        },
        {"role": 5, "content": {"type": "text", "text": "single part"}},
    ]
    assert chat_input_messages(messages) == [
        {
            "role": "assistant",
            "parts": [{"type": "unknown", "content": 7}, {"type": "tool_call", "id": "c9", "name": ""}],
        },
        user(text("single part")),
    ]


# ---- JSON -------------------------------------------------------------------------------------------------------


def test_to_json_is_compact_and_keeps_unicode() -> None:
    assert to_json([{"role": "user", "parts": [text("café 雪")]}]) == (
        '[{"role":"user","parts":[{"type":"text","content":"café 雪"}]}]'
    )


def test_to_json_never_raises() -> None:
    circular: list[Any] = []
    circular.append(circular)
    assert json.loads(to_json({"x": object.__new__(Exploding)}))
    assert json.loads(to_json({"n": float("nan"), "b": b"\x00\x01", (1, 2): "tuple key"})) == {
        "n": "nan",
        "b": "<binary 2 bytes>",
        "(1, 2)": "tuple key",
    }
    assert isinstance(json.loads(to_json(circular)), list)
    assert to_json("\ud800") == '"?"'
    assert json.loads(to_json(ChatCompletionMessage(role="assistant", content="x"))) == {
        "role": "assistant",
        "content": "x",
    }
