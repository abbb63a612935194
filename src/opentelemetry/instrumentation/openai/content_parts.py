"""Safe field access, string clipping, base64 placeholders and GenAI message parts for content capture."""

from __future__ import annotations

import enum
import json
import math
import mimetypes
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

Part = dict[str, Any]
T = TypeVar("T")

# Bounds the walk over arbitrary objects, so a cycle or a pathological nesting cannot recurse without end.
_MAX_DEPTH = 32
# Raw base64 shorter than this is left alone: short tokens are ids far more often than payloads.
_RAW_BASE64_MIN = 256
_RAW_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
# Provider payloads that are opaque and large; they carry nothing a reader of a trace can use.
_OPAQUE_KEYS = frozenset({"encrypted_content"})
_AUDIO_MIME = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "flac": "audio/flac",
    "opus": "audio/opus",
    "pcm16": "audio/pcm",
}


def guard(function: Callable[..., T], *args: Any) -> T | None:
    """Runs one conversion step; a surprise in one item must not cost the others, nor the caller's request."""
    try:
        return function(*args)
    except Exception:
        return None


def is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)` that keeps SDK model classes (no `__getitem__`) out of the ABC's cache:
    under pydantic 2.11/2.12 the SDK builds new ones per context, and each cache entry adds to that leak."""
    return type(value) is dict or (hasattr(type(value), "__getitem__") and isinstance(value, Mapping))


def get(source: Any, key: str, default: Any = None) -> Any:
    """Reads a key from a mapping or an attribute from an object (SDK model, TypedDict, anything)."""
    if source is None:
        return default
    try:
        value = source.get(key, default) if is_mapping(source) else getattr(source, key, default)
    except Exception:
        return default
    # A name such as `copy` resolves to a pydantic method, not a field.
    return default if callable(value) and not isinstance(value, type) else value


def get_str(source: Any, key: str) -> str | None:
    value = get(source, key)
    return value if isinstance(value, str) else None


def as_list(value: Any) -> list[Any]:
    """The items of a list or other iterable; a lone mapping or model is one item; strings and scalars give none."""
    if value is None or isinstance(value, (str, bytes, bytearray)):
        return []
    if is_mapping(value) or hasattr(type(value), "model_fields"):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    try:
        return list(value)
    except Exception:
        return []


def base64_size(text: str, start: int = 0) -> int:
    """Decoded byte count estimated from the encoded length, without decoding or copying the payload."""
    end = len(text)
    while end > start and text[end - 1] in "= \r\n":
        end -= 1
    return (end - start) * 3 // 4


def placeholder(size: int, mime_type: str | None = None) -> str:
    kind = f"{mime_type} " if mime_type else ""
    return f"<base64 {kind}{size} bytes>"


def data_url_info(text: str) -> tuple[str | None, int] | None:
    """(media type, decoded size) of a base64 `data:` URL, or None for anything else."""
    if text[:5].lower() != "data:":
        return None
    comma = text.find(",", 0, 512)
    if comma < 0 or not text[:comma].lower().endswith(";base64"):
        return None
    mime_type = text[5:comma].split(";", 1)[0].strip().lower()
    return (mime_type or None), base64_size(text, comma + 1)


def _looks_like_raw_base64(text: str) -> bool:
    # Mixed letter cases plus digits: prose, hex digests and repeated characters do not qualify.
    if len(text) < _RAW_BASE64_MIN or not _RAW_BASE64.fullmatch(text):
        return False
    return any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)


def clip(text: str, limit: int | None) -> str:
    """The string as captured: base64 becomes a placeholder, anything longer than `limit` is cut."""
    data_url = data_url_info(text)
    if data_url is not None:
        return placeholder(data_url[1], data_url[0])
    if _looks_like_raw_base64(text):
        return placeholder(base64_size(text))
    if limit and limit > 0 and len(text) > limit:
        return f"{text[:limit]}…[truncated {len(text) - limit} chars]"
    return text


def _object_fields(value: Any) -> dict[str, Any] | None:
    """Public fields of an SDK model or plain object, read from its instance dict (no model_dump)."""
    try:
        fields = dict(vars(value))
    except TypeError:
        return None
    extra = getattr(value, "__pydantic_extra__", None)
    if isinstance(extra, dict):
        fields.update(extra)
    # Unset optional fields of SDK models are noise, so None is dropped here (not in plain mappings).
    return {k: v for k, v in fields.items() if isinstance(k, str) and not k.startswith("_") and v is not None}


def plain(value: Any, limit: int | None, depth: int = 0) -> Any:
    """A JSON-ready copy of any value, with every string clipped; never raises on odd objects."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return clip(str.__str__(value), limit)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<binary {len(value)} bytes>"
    if depth >= _MAX_DEPTH:
        return "<nested too deep>"
    if is_mapping(value):
        items = list(value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item, limit, depth + 1) for item in value]
    else:
        fields = _object_fields(value)
        if fields is None:
            return clip(_safe_str(value), limit)
        items = list(fields.items())
    return {str(k): plain(v, limit, depth + 1) for k, v in items if k not in _OPAQUE_KEYS}


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def parse_arguments(raw: Any, limit: int | None) -> Any:
    """Tool call arguments as a JSON value when they parse (strings inside clipped), else the clipped string."""
    if isinstance(raw, str):
        try:
            return plain(json.loads(raw), limit)
        except ValueError:
            return clip(raw, limit)
    return plain(raw, limit)


def modality_of(mime_type: str | None, fallback: str) -> str:
    head = (mime_type or "").split("/", 1)[0]
    return head if head in ("image", "audio", "video") else fallback


def text_part(text: str, limit: int | None, kind: str = "text") -> Part:
    return {"type": kind, "content": clip(text, limit)}


def blob_part(size: int, modality: str, mime_type: str | None) -> Part:
    """Inline data as a blob part whose content is a placeholder: the bytes themselves are never copied."""
    part: Part = {"type": "blob", "modality": modality}
    if mime_type:
        part["mime_type"] = mime_type
    part["content"] = placeholder(size, mime_type)
    return part


def file_part(file_id: str, modality: str, mime_type: str | None = None) -> Part:
    part: Part = {"type": "file", "modality": modality}
    if mime_type:
        part["mime_type"] = mime_type
    part["file_id"] = file_id
    return part


def url_part(url: str, modality: str, limit: int | None) -> Part:
    """A `data:` URL becomes a blob, anything else a uri part (the spec keeps data URLs out of uri parts)."""
    data_url = data_url_info(url)
    if data_url is not None:
        mime_type, size = data_url
        return blob_part(size, modality_of(mime_type, modality), mime_type)
    return {"type": "uri", "modality": modality, "uri": clip(url, limit)}


def _guess_mime(filename: str | None) -> str | None:
    return mimetypes.guess_type(filename, strict=False)[0] if filename else None


def _file_data_part(file_data: str, filename: str | None) -> Part:
    data_url = data_url_info(file_data)
    mime_type, size = data_url if data_url is not None else (_guess_mime(filename), base64_size(file_data))
    return blob_part(size, modality_of(mime_type, "document"), mime_type)


def _audio_part(audio: Any) -> Part | None:
    data, fmt = get_str(audio, "data"), get_str(audio, "format")
    if data is None:
        return None
    mime_type = _AUDIO_MIME.get(fmt, f"audio/{fmt}") if fmt else None
    return blob_part(base64_size(data), "audio", mime_type)


def _file(source: Any, limit: int | None) -> Part | None:
    """Chat `file` objects and Responses `input_file` parts: inline data, an uploaded file id, or a URL."""
    filename = get_str(source, "filename")
    file_data, file_id, file_url = get_str(source, "file_data"), get_str(source, "file_id"), get_str(source, "file_url")
    if file_data:
        return _file_data_part(file_data, filename)
    mime_type = _guess_mime(filename)
    if file_id:
        return file_part(file_id, modality_of(mime_type, "document"), mime_type)
    if file_url:
        part = url_part(file_url, modality_of(mime_type, "document"), limit)
        if mime_type and part["type"] == "uri":
            part["mime_type"] = mime_type
        return part
    return None


def _image(source: Any, limit: int | None) -> Part | None:
    """Chat `image_url` parts, Responses `input_image` parts and computer screenshots."""
    image_url = get(source, "image_url")
    url = image_url if isinstance(image_url, str) else get_str(image_url, "url")
    if url:
        return url_part(url, "image", limit)
    file_id = get_str(source, "file_id")
    return file_part(file_id, "image") if file_id else None


def generic_part(source: Any, limit: int | None) -> Part:
    """A part type the spec does not define: kept with its own `type` and its fields, strings clipped."""
    fields = plain(source, limit)
    if not isinstance(fields, dict):
        return {"type": "unknown", "content": fields}
    if not isinstance(fields.get("type"), str):
        fields["type"] = "unknown"
    return fields


def content_part(item: Any, limit: int | None) -> Part:
    """One content part of a Chat Completions or Responses message."""
    if isinstance(item, str):
        return text_part(item, limit)
    kind = get_str(item, "type")
    if kind in ("text", "input_text", "output_text"):
        return text_part(get_str(item, "text") or "", limit)
    if kind == "refusal":
        # The spec has no refusal part; a generic part keeps it apart from ordinary text.
        return text_part(get_str(item, "refusal") or "", limit, "refusal")
    part: Part | None = None
    if kind in ("image_url", "input_image", "computer_screenshot"):
        part = _image(item, limit)
    elif kind == "input_audio":
        part = _audio_part(get(item, "input_audio"))
    elif kind in ("file", "input_file"):
        part = _file(get(item, "file") if kind == "file" else item, limit)
    return part if part is not None else generic_part(item, limit)


def content_parts(content: Any, limit: int | None) -> list[Part]:
    """A message `content`: a string, a list of parts, or a single part; empty text is left out."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [text_part(content, limit)]
    parts = (guard(content_part, item, limit) for item in as_list(content) if item is not None)
    return [part for part in parts if part is not None]


def tool_call_part(call_id: Any, name: Any, arguments: Any) -> Part:
    part: Part = {"type": "tool_call"}
    if isinstance(call_id, str):
        part["id"] = call_id
    part["name"] = name if isinstance(name, str) else ""
    if arguments is not None:
        part["arguments"] = arguments
    return part


def tool_response_part(call_id: Any, output: Any, limit: int | None) -> Part:
    """A tool result: text stays text (not parsed), a list of content parts becomes parts."""
    part: Part = {"type": "tool_call_response"}
    if isinstance(call_id, str):
        part["id"] = call_id
    if isinstance(output, str):
        part["response"] = clip(output, limit)
    elif isinstance(output, (list, tuple)):
        part["response"] = content_parts(output, limit)
    else:
        part["response"] = plain(output, limit)
    return part


def audio_output_part(audio: Any, limit: int | None) -> Part:
    """Chat Completions audio output: the base64 data becomes a placeholder, the transcript is kept."""
    part = blob_part(base64_size(get_str(audio, "data") or ""), "audio", None)
    transcript = get_str(audio, "transcript")
    if transcript:
        part["transcript"] = clip(transcript, limit)
    return part
