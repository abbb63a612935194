"""Pure helpers shared by the extractors: read a field from a dict or an object, keep valid values only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from . import semconv

Attributes = dict[str, AttributeValue]


def get_field(source: Any, name: str) -> Any:
    """Request bodies are dicts, SDK results are objects; surprising input gives None."""
    if source is None:
        return None
    if type(source) is dict:  # the common case first: an exact-type check is far cheaper than an ABC one
        return source.get(name)
    try:
        value = getattr(source, name, None)
    except Exception:  # a property that raises is "unknown", not an error
        return None
    # Only a type with `__getitem__` can be a Mapping. Checking that first keeps SDK model classes out of
    # the ABC's cache: under pydantic 2.11/2.12 the SDK builds new ones per context, and each entry would
    # add to that leak.
    if value is None and hasattr(type(source), "__getitem__") and isinstance(source, Mapping):
        return source.get(name)
    return value


def put_str(attributes: Attributes, key: str, value: Any) -> None:
    if isinstance(value, str) and value:
        attributes[key] = value


def put_int(attributes: Attributes, key: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        attributes[key] = value


def put_number(attributes: Attributes, key: str, value: Any) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        attributes[key] = value


def put_str_list(attributes: Attributes, key: str, value: Any) -> None:
    """A single string or a list of strings becomes a list of strings."""
    if isinstance(value, str):
        attributes[key] = (value,)
    elif isinstance(value, (list, tuple)):
        strings = tuple(item for item in value if isinstance(item, str))
        if strings:
            attributes[key] = strings


def output_type(response_format_type: Any) -> str | None:
    """Maps OpenAI's response format names to the conventions' gen_ai.output.type values."""
    if response_format_type in ("json_object", "json_schema"):
        return "json"
    if response_format_type == "text":
        return "text"
    return None


def put_usage(
    attributes: Attributes,
    usage: Any,
    input_name: str,
    output_name: str,
    input_details_name: str,
    output_details_name: str,
) -> None:
    """Token counts, with cached input and reasoning output when the API reports them."""
    if usage is None:
        return
    put_int(attributes, semconv.USAGE_INPUT_TOKENS, get_field(usage, input_name))
    put_int(attributes, semconv.USAGE_OUTPUT_TOKENS, get_field(usage, output_name))
    put_int(
        attributes,
        semconv.USAGE_CACHE_READ_INPUT_TOKENS,
        get_field(get_field(usage, input_details_name), "cached_tokens"),
    )
    put_int(
        attributes,
        semconv.USAGE_REASONING_OUTPUT_TOKENS,
        get_field(get_field(usage, output_details_name), "reasoning_tokens"),
    )
