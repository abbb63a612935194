"""Embeddings: request body and result to attributes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import semconv
from .extract_common import Attributes, get_field, put_int, put_str


def embeddings_request_attributes(body: Mapping[str, Any]) -> Attributes:
    attributes: Attributes = {semconv.OPERATION_NAME: semconv.OPERATION_EMBEDDINGS}
    put_str(attributes, semconv.REQUEST_MODEL, body.get("model"))
    encoding_format = body.get("encoding_format")
    if isinstance(encoding_format, str):
        attributes[semconv.REQUEST_ENCODING_FORMATS] = (encoding_format,)
    put_int(attributes, semconv.EMBEDDINGS_DIMENSION_COUNT, body.get("dimensions"))
    return attributes


def embeddings_result_attributes(result: Any) -> Attributes:
    attributes: Attributes = {}
    put_str(attributes, semconv.RESPONSE_MODEL, get_field(result, "model"))
    usage = get_field(result, "usage")
    put_int(attributes, semconv.USAGE_INPUT_TOKENS, get_field(usage, "prompt_tokens"))
    data = get_field(result, "data")
    if isinstance(data, list) and data:
        vector = get_field(data[0], "embedding")
        if isinstance(vector, list):  # base64 payloads carry no countable dimension
            attributes[semconv.EMBEDDINGS_DIMENSION_COUNT] = len(vector)
    return attributes
