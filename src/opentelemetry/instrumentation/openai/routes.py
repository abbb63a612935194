"""The single source of truth for what is instrumented: HTTP method and path to operation."""

from __future__ import annotations

from urllib.parse import unquote

from .inference_wrappers import CHAT, COMPLETIONS, EMBEDDINGS
from .operation import Operation
from .responses_wrappers import ResponseRegistry, ResponsesCancel, ResponsesCreate, ResponsesRetrieve

_RESPONSES_PREFIX = "/responses/"


class RouteTable:
    """Resolves `options.method` + `options.url` (relative, as the SDK builds it) to an operation.

    Everything not listed (files, list endpoints, input_items, delete, ...) passes through
    untraced at the cost of one dict lookup.
    """

    def __init__(self, registry: ResponseRegistry) -> None:
        self._fixed: dict[tuple[str, str], Operation] = {
            ("post", "/responses"): ResponsesCreate(registry),  # create, parse, stream()
            ("post", "/chat/completions"): CHAT,  # create, parse, stream()
            ("post", "/completions"): COMPLETIONS,
            ("post", "/embeddings"): EMBEDDINGS,
        }
        # /responses/{id}{suffix}
        self._by_response_id: dict[tuple[str, str], Operation] = {
            ("get", ""): ResponsesRetrieve(registry),  # retrieve, retrieve(stream=True), stream(response_id=)
            ("post", "/cancel"): ResponsesCancel(registry),
        }

    def resolve(self, method: str, url: str) -> tuple[Operation, str | None] | None:
        method = method.lower()
        operation = self._fixed.get((method, url))
        if operation is not None:
            return operation, None
        if not url.startswith(_RESPONSES_PREFIX):
            return None
        response_id, slash, suffix = url[len(_RESPONSES_PREFIX) :].partition("/")
        operation = self._by_response_id.get((method, slash + suffix))
        if operation is None or not response_id:
            return None
        return operation, unquote(response_id) if "%" in response_id else response_id
