"""A local OpenAI-compatible stand-in (Responses, Chat, Completions, Embeddings) for the demo, tests and benchmarks."""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import importlib
import itertools
import json
import random
import re
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

try:
    import httpx2
except ImportError:  # openai 1.x/2.x environments have only httpx: pass it to make_transport
    httpx2 = None  # type: ignore[assignment]

PROMPT_OVERHEAD = 3  # tokens added to every prompt count, like the real API's per-request framing
REASONING_TOKENS = 16  # reported when the request asks for reasoning (`reasoning` / `reasoning_effort`)
TOOL_CALL_TOKENS = 12  # completion tokens of one chat tool call
REPLY_SENTENCE = "This is a deterministic reply from the fake OpenAI server"
TERMINAL_EVENTS = {"completed": "response.completed", "failed": "response.failed", "incomplete": "response.incomplete"}
ERROR_KINDS = {  # status -> (error.type, error.code) as the real API sends them
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}
MODEL_DATES = {"gpt-3.5-turbo": "-0125", "gpt-4o-mini": "-2024-07-18", "gpt-4o": "-2024-08-06", "gpt-5": "-2025-08-07"}
# request fields a Response echoes back, with the API's value when the request leaves them out
RESPONSE_ECHOES: dict[str, Any] = {
    "instructions": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "prompt_cache_key": None,
    "safety_identifier": None,
    "store": True,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "user": None,
}
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")
_ERROR_MODEL = re.compile(r"^fake-error-(\d{3})$")


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per whitespace-separated word."""
    return len(text.split())


@dataclass
class FakeReply:
    status: int
    headers: dict[str, str]
    body: bytes
    is_sse: bool = False


@dataclass
class _Stored:
    final_json: bytes  # the response once finished, kept encoded: 10,000 of them as dicts would take 30 MB
    final_status: str
    background: bool
    status: str  # what a retrieve shows now: queued, in_progress, cancelled or final_status
    polls: int = 0

    def final(self) -> dict[str, Any]:
        final: dict[str, Any] = json.loads(self.final_json)
        return final

    def view(self) -> FakeReply:
        if self.status == self.final_status:
            return _json_reply(self.final_json)
        return _json_reply(_unfinished(self.final(), self.status))


class FakeOpenAI:
    """Answers OpenAI API requests deterministically, with no network and no model.

    Usage is a pure function of the request: prompt tokens = `count_tokens(all input text) + PROMPT_OVERHEAD`;
    the reply is `stream_chunks` words (one word per stream delta, so streamed and plain calls agree) and
    output tokens = reply words (+ REASONING_TOKENS when reasoning is asked for). A `max_output_tokens` /
    `max_tokens` / `max_completion_tokens` below that cuts the reply (Responses: status "incomplete"; chat and
    completions: finish_reason "length"). `prompt_cache_key` reports half the prompt tokens as cached.

    Knobs, read from request `metadata` or from the top level of the body (`extra_body`), values strings:
      fake_stream_chunks: "50"              reply words, i.e. stream deltas, for this request
      fake_outcome: "failed"|"incomplete"   Responses final status (failed carries error.code "server_error",
                                            incomplete carries incomplete_details.reason "max_output_tokens");
                                            chat: "incomplete" gives finish_reason "length"
      fake_error: "429"                     answer with that HTTP error; so does model "fake-error-429"
    Background responses start "queued"; each GET advances queued -> in_progress -> final status, reached on
    poll number `polls_to_complete`. The newest `max_stored` responses are kept for retrieve and cancel.
    """

    def __init__(self, stream_chunks: int = 5, polls_to_complete: int = 2, max_stored: int = 10_000) -> None:
        self.stream_chunks = stream_chunks
        self.polls_to_complete = polls_to_complete
        self.max_stored = max_stored
        self._stored: OrderedDict[str, _Stored] = OrderedDict()
        self._lock = threading.Lock()  # the loopback server handles requests on many threads
        self._counter = itertools.count(1)

    def handle(self, method: str, path: str, query: dict[str, str], body: dict[str, Any] | None) -> FakeReply:
        parts = path.strip("/").split("/")
        parts = parts[1:] if parts[0] == "v1" else parts
        body = body or {}
        status = _requested_error(body)
        if status:
            kind, code = ERROR_KINDS.get(status, ("api_error", None))
            return _error(status, f"Fake error {status} requested.", kind, code=code)
        match method.upper(), parts:
            case "POST", ["responses"]:
                return self._create_response(body)
            case "GET", ["responses", response_id]:
                return self._retrieve(response_id, query)
            case "POST", ["responses", response_id, "cancel"]:
                return self._cancel(response_id)
            case "POST", ["chat", "completions"]:
                return self._chat(body)
            case "POST", ["completions"]:
                return self._completions(body)
            case "POST", ["embeddings"]:
                return self._embeddings(body)
        return _error(404, f"Invalid URL ({method.upper()} /v1/{'/'.join(parts)})", "invalid_request_error")

    def _new_id(self, prefix: str, width: int = 48) -> str:
        # next() on itertools.count is atomic under the GIL, so ids need no lock
        return f"{prefix}{next(self._counter):0{width}x}"

    # ---- Responses API ----

    def _create_response(self, body: dict[str, Any]) -> FakeReply:
        final = self._final_response(body)
        background = final["background"]
        # a streamed create runs to the end before the client sees the last event
        status = "queued" if background and not body.get("stream") else final["status"]
        entry = _Stored(json.dumps(final, separators=(",", ":")).encode(), final["status"], background, status)
        if background or final["store"]:
            with self._lock:
                self._stored[final["id"]] = entry
                # benchmarks make 100k calls: forget the oldest so memory stays flat
                while len(self._stored) > self.max_stored:
                    self._stored.popitem(last=False)
        if body.get("stream"):
            return _sse_reply(_response_events(final, queued=background), named=True)
        return entry.view()

    def _final_response(self, body: dict[str, Any]) -> dict[str, Any]:
        words, cut = _reply_words(body, self.stream_chunks, body.get("max_output_tokens"))
        outcome = _knob(body, "fake_outcome") or ("incomplete" if cut else "completed")
        outcome = outcome if outcome in TERMINAL_EVENTS else "completed"
        reasoning = body.get("reasoning") is not None
        output: list[dict[str, Any]] = []
        if reasoning:
            output.append({"id": self._new_id("rs_"), "type": "reasoning", "summary": []})
        content = [{"type": "output_text", "annotations": [], "logprobs": [], "text": _reply_text(words)}]
        item_status = "incomplete" if outcome == "incomplete" else "completed"
        output.append({"id": self._new_id("msg_"), "type": "message", "status": item_status, "content": content})
        output[-1]["role"] = "assistant"
        input_tokens = count_tokens(f"{_text_of(body.get('instructions'))} {_text_of(body.get('input'))}")
        input_tokens += PROMPT_OVERHEAD
        output_tokens = words + (REASONING_TOKENS if reasoning else 0)
        usage: dict[str, Any] | None = {
            "input_tokens": input_tokens,
            # cache_write_tokens is newer than the recorded cassettes, but openai 3.x declares it required
            "input_tokens_details": {"cached_tokens": _cached(body, input_tokens), "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS if reasoning else 0},
            "total_tokens": input_tokens + output_tokens,
        }
        error = incomplete = None
        if outcome == "failed":
            output, usage = [], None
            error = {"code": "server_error", "message": "The fake server was asked to fail this response."}
        elif outcome == "incomplete":
            incomplete = {"reason": "max_output_tokens"}
        now = int(time.time())
        return {
            "id": self._new_id("resp_"),
            "object": "response",
            "created_at": now,
            "status": outcome,
            "background": bool(body.get("background")),
            "completed_at": now if outcome == "completed" else None,
            "error": error,
            "incomplete_details": incomplete,
            **{name: body.get(name, default) for name, default in RESPONSE_ECHOES.items()},
            "model": _dated(body.get("model", "gpt-4.1-nano")),
            "output": output,
            "reasoning": {"effort": (body.get("reasoning") or {}).get("effort"), "summary": None},
            "service_tier": _service_tier(body),
            "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
            "usage": usage,
            "metadata": body.get("metadata") or {},
        }

    def _stored_entry(self, response_id: str) -> _Stored | FakeReply:
        entry = self._stored.get(response_id)
        if entry is None:
            return _error(404, f"No response found with id '{response_id}'.", "invalid_request_error", "response_id")
        return entry

    def _retrieve(self, response_id: str, query: dict[str, str]) -> FakeReply:
        with self._lock:
            entry = self._stored_entry(response_id)
            if isinstance(entry, FakeReply):
                return entry
            if query.get("stream", "").lower() != "true":
                if entry.status in ("queued", "in_progress"):
                    entry.polls += 1
                    entry.status = "in_progress" if entry.polls < self.polls_to_complete else entry.final_status
                return entry.view()
            # a streamed retrieve follows the response to its end, as the real API does; a cancelled one stops early
            events = _response_events(entry.final(), queued=entry.background)
            if entry.status == "cancelled":
                events = [e for e in events if e[0] in ("response.created", "response.queued", "response.in_progress")]
            else:
                entry.status = entry.final_status
            after = int(query.get("starting_after", -1))
            return _sse_reply([e for e in events if e[1]["sequence_number"] > after], named=True)

    def _cancel(self, response_id: str) -> FakeReply:
        with self._lock:
            entry = self._stored_entry(response_id)
            if isinstance(entry, FakeReply):
                return entry
            if not entry.background:
                return _error(400, "Only background responses can be cancelled.", "invalid_request_error")
            if entry.status in ("queued", "in_progress"):
                entry.status = "cancelled"
            return entry.view()

    # ---- Chat Completions ----

    def _chat(self, body: dict[str, Any]) -> FakeReply:
        messages = body.get("messages") or []
        prompt_tokens = count_tokens(_text_of([m.get("content") for m in messages])) + PROMPT_OVERHEAD
        n = int(body.get("n") or 1)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        words, cut = _reply_words(body, self.stream_chunks, limit)
        finish = "length" if cut or _knob(body, "fake_outcome") == "incomplete" else "stop"
        tool_call = self._tool_call(body["tools"][0]) if body.get("tools") else None
        if tool_call:
            finish = "tool_calls"
        reasoning = REASONING_TOKENS if body.get("reasoning_effort") else 0
        completion_tokens = n * (TOOL_CALL_TOKENS if tool_call else words) + reasoning
        predictions = dict.fromkeys(("audio_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"), 0)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": _cached(body, prompt_tokens), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning, **predictions},
        }
        base = {"id": self._new_id("chatcmpl-", 29), "created": int(time.time())}
        base |= {"model": _dated(body.get("model", "gpt-4o-mini")), "service_tier": _service_tier(body)}
        base["system_fingerprint"] = "fp_fake0000"
        text = _reply_text(words)
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
            if tool_call:
                message |= {"content": None, "tool_calls": [tool_call]}
            choices = [{"index": i, "message": message, "logprobs": None, "finish_reason": finish} for i in range(n)]
            return _json_reply({**base, "object": "chat.completion", "choices": choices, "usage": usage})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base["object"] = "chat.completion.chunk"
        if include_usage:
            base["usage"] = None  # the real API marks every chunk with usage null when usage comes at the end

        def chunk(i: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": i, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

        chunks = []
        for i in range(n):
            if tool_call:
                name = tool_call["function"]["name"]
                opening = {**tool_call, "index": 0, "function": {"name": name, "arguments": ""}}
                chunks.append(chunk(i, {"role": "assistant", "content": None, "tool_calls": [opening]}))
                for piece in _deltas(tool_call["function"]["arguments"]):
                    chunks.append(chunk(i, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
            else:
                chunks.append(chunk(i, {"role": "assistant", "content": "", "refusal": None}))
                chunks.extend(chunk(i, {"content": piece}) for piece in _deltas(text))
            chunks.append(chunk(i, {}, finish))
        if include_usage:
            chunks.append({**base, "choices": [], "usage": usage})
        return _sse_reply([(None, c) for c in chunks] + [(None, "[DONE]")], named=False)

    def _tool_call(self, tool: dict[str, Any]) -> dict[str, Any]:
        function = tool.get("function") or {}
        params = function.get("parameters") or {}
        arguments = json.dumps(dict.fromkeys(params.get("required") or params.get("properties") or [], "fake"))
        call = {"name": function.get("name", "fake_tool"), "arguments": arguments}
        return {"id": self._new_id("call_", 24), "type": "function", "function": call}

    # ---- legacy Completions and Embeddings ----

    def _completions(self, body: dict[str, Any]) -> FakeReply:
        prompts = _as_list(body.get("prompt", ""))
        words, cut = _reply_words(body, self.stream_chunks, body.get("max_tokens"))
        finish, text = "length" if cut else "stop", _reply_text(words)
        indexes = range(len(prompts) * int(body.get("n") or 1))
        base = {"id": self._new_id("cmpl-", 29), "object": "text_completion", "created": int(time.time())}
        base["model"] = body.get("model", "gpt-3.5-turbo-instruct")
        if not body.get("stream"):
            prompt_tokens = count_tokens(_text_of(prompts)) + PROMPT_OVERHEAD
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(indexes) * words}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            choices = [{"text": text, "index": i, "logprobs": None, "finish_reason": finish} for i in indexes]
            return _json_reply({**base, "choices": choices, "usage": usage})
        chunks = []
        for i in indexes:
            for piece, reason in [(p, None) for p in _deltas(text)] + [("", finish)]:
                choice = {"text": piece, "index": i, "logprobs": None, "finish_reason": reason}
                chunks.append({**base, "choices": [choice]})
        return _sse_reply([(None, c) for c in chunks] + [(None, "[DONE]")], named=False)

    def _embeddings(self, body: dict[str, Any]) -> FakeReply:
        inputs = _as_list(body.get("input", ""))
        model = body.get("model", "text-embedding-3-small")
        dimensions = int(body.get("dimensions") or (3072 if "large" in model else 1536))
        data = []
        for index, item in enumerate(inputs):
            vector = _embedding(_text_of(item), dimensions)
            if body.get("encoding_format") == "base64":  # the SDK's default: it decodes float32 little-endian
                embedding: Any = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            else:
                embedding = list(vector)
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = count_tokens(_text_of(inputs))
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return _json_reply({"object": "list", "data": data, "model": model, "usage": usage})


# ---- pure helpers ----


def _knob(body: dict[str, Any], name: str) -> str | None:
    value = (body.get("metadata") or {}).get(name, body.get(name))
    return None if value is None else str(value)


def _requested_error(body: dict[str, Any]) -> int:
    match = _ERROR_MODEL.match(str(body.get("model", "")))
    value = match.group(1) if match else _knob(body, "fake_error")
    return int(value) if value else 0


def _reply_words(body: dict[str, Any], default: int, limit: int | None) -> tuple[int, bool]:
    """Reply length in words, and whether a token limit cut it."""
    words = max(1, int(_knob(body, "fake_stream_chunks") or default))
    return (limit, True) if limit is not None and limit < words else (words, False)


def _reply_text(words: int) -> str:
    sentence = REPLY_SENTENCE.split()
    return " ".join(sentence[i % len(sentence)] for i in range(words))


def _deltas(text: str) -> list[str]:
    # one word per delta, the space kept at the start of the next word as the real API does
    words = text.split(" ")
    return words[:1] + [" " + w for w in words[1:]]


def _as_list(value: Any) -> list[Any]:
    # a prompt / input is a string, a token array, or a list of either
    return [value] if isinstance(value, str) or not value or isinstance(value[0], int) else list(value)


def _text_of(content: Any) -> str:
    """Text from a string, a list of content parts or messages, or one part; token arrays give nothing."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        return _text_of(content["text"] if "text" in content else content.get("content"))
    return ""


def _cached(body: dict[str, Any], prompt_tokens: int) -> int:
    return prompt_tokens // 2 if body.get("prompt_cache_key") else 0


def _service_tier(body: dict[str, Any]) -> str:
    tier = body.get("service_tier")
    return "default" if tier in (None, "auto") else str(tier)


def _dated(model: str) -> str:
    if _DATED.search(model) or model.startswith("fake-"):
        return model
    return model + next((date for prefix, date in MODEL_DATES.items() if model.startswith(prefix)), "-2025-04-14")


@functools.lru_cache(maxsize=256)  # benchmarks embed the same text over and over
def _embedding(text: str, dimensions: int) -> tuple[float, ...]:
    # seeded by the text so equal inputs embed equally across runs and processes
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    values = [rng.uniform(-1.0, 1.0) for _ in range(dimensions)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return tuple(v / norm for v in values)


def _unfinished(final: dict[str, Any], status: str) -> dict[str, Any]:
    blank = dict.fromkeys(("usage", "error", "incomplete_details", "completed_at"))
    return {**final, **blank, "output": [], "status": status}


def _response_events(final: dict[str, Any], queued: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The Responses SSE events, numbered, that end in `final`."""
    opening = _unfinished(final, "queued" if queued else "in_progress")
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": opening})]
    if queued:
        events.append(("response.queued", {"response": opening}))
    events.append(("response.in_progress", {"response": _unfinished(final, "in_progress")}))
    for index, item in enumerate(final["output"]):
        started = {**item, "status": "in_progress", "content": []} if item["type"] == "message" else item
        events.append(("response.output_item.added", {"output_index": index, "item": started}))
        if item["type"] == "message":
            part = item["content"][0]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events.append(("response.content_part.added", {**where, "part": {**part, "text": ""}}))
            for delta in _deltas(part["text"]):
                events.append(("response.output_text.delta", {**where, "delta": delta, "logprobs": []}))
            events.append(("response.output_text.done", {**where, "text": part["text"], "logprobs": []}))
            events.append(("response.content_part.done", {**where, "part": part}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    events.append((TERMINAL_EVENTS[final["status"]], {"response": final}))
    return [(name, {"type": name, **data, "sequence_number": n}) for n, (name, data) in enumerate(events)]


def _json_reply(obj: dict[str, Any] | bytes, status: int = 200) -> FakeReply:
    body = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    return FakeReply(status, {"content-type": "application/json", "x-request-id": _request_id()}, body)


def _sse_reply(events: Sequence[tuple[str | None, Any]], named: bool) -> FakeReply:
    parts = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        parts.append(f"event: {name}\ndata: {payload}\n\n" if named and name else f"data: {payload}\n\n")
    headers = {"content-type": "text/event-stream; charset=utf-8", "x-request-id": _request_id()}
    return FakeReply(200, headers, "".join(parts).encode(), is_sse=True)


def _error(status: int, message: str, kind: str, param: str | None = None, code: str | None = None) -> FakeReply:
    reply = _json_reply({"error": {"message": message, "type": kind, "param": param, "code": code}}, status)
    if status == 429:
        reply.headers["retry-after"] = "0"  # an SDK with retries left retries at once instead of sleeping
    return reply


_request_ids = itertools.count(1)


def _request_id() -> str:
    return f"req_{next(_request_ids):032x}"


def dispatch(fake: FakeOpenAI, method: str, path: str, query: dict[str, str], content: bytes) -> FakeReply:
    """`fake.handle` for a raw request body, answering unparsable JSON the way the API does."""
    try:
        parsed = json.loads(content) if content else None
    except ValueError:
        return _error(400, "We could not parse the JSON body of your request.", "invalid_request_error")
    return fake.handle(method, path, query, parsed if isinstance(parsed, dict) else None)


# ---- in-process transports ----


def make_transport(fake: FakeOpenAI, http_module: Any = None, *, asynchronous: bool = False) -> Any:
    """A MockTransport of `http_module` (httpx2 by default, or httpx for openai 1.x/2.x; module or name)."""
    module = importlib.import_module(http_module) if isinstance(http_module, str) else (http_module or httpx2)

    def handler(request: Any) -> Any:
        reply = dispatch(fake, request.method, request.url.path, dict(request.url.params), request.content)
        return module.Response(reply.status, headers=reply.headers, content=reply.body)

    async def async_handler(request: Any) -> Any:
        return handler(request)

    return module.MockTransport(async_handler if asynchronous else handler)


def mock_transport(fake: FakeOpenAI) -> httpx2.MockTransport:
    """For `httpx2.Client(transport=...)`; its plain handler serves an `httpx2.AsyncClient` as well."""
    transport: httpx2.MockTransport = make_transport(fake, httpx2)
    return transport


def async_mock_transport(fake: FakeOpenAI) -> httpx2.MockTransport:
    """For `httpx2.AsyncClient(transport=...)`, with a coroutine handler (a sync client refuses it)."""
    transport: httpx2.MockTransport = make_transport(fake, httpx2, asynchronous=True)
    return transport


# ---- loopback HTTP server ----


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI
    thread: threading.Thread

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for benchmarks, and chunked SSE bodies the SDK reads as they come
    server: FakeServer

    def _serve(self) -> None:
        url = urlsplit(self.path)
        content = self.rfile.read(int(self.headers.get("content-length") or 0))
        reply = dispatch(self.server.fake, self.command, url.path, dict(parse_qsl(url.query)), content)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not reply.is_sse:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in reply.body.split(b"\n\n")[:-1]:  # one chunk per event
            event += b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # benchmarks make 100k requests; access logs would swamp the output


def serve(fake: FakeOpenAI, host: str = "127.0.0.1", port: int = 0) -> tuple[FakeServer, str]:
    """Serve `fake` over HTTP from a daemon thread; returns the server (`.stop()` ends it) and its `/v1` base URL."""
    server = FakeServer((host, port), _Handler)
    server.fake = fake
    # a short poll interval lets stop() return in 50 ms instead of the default 500
    server.thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True)
    server.thread.start()
    return server, f"http://{host}:{server.server_address[1]}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--stream-chunks", type=int, default=5)
    parser.add_argument("--polls-to-complete", type=int, default=2)
    args = parser.parse_args()
    server, base_url = serve(FakeOpenAI(args.stream_chunks, args.polls_to_complete), args.host, args.port)
    print(f"fake OpenAI API at {base_url}: OPENAI_BASE_URL={base_url} OPENAI_API_KEY=test; Ctrl-C stops", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
