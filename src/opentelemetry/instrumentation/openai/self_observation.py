"""Self-observation: gauges of the instrumentation's own state, and a warning about a known SDK leak."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from .responses_wrappers import ResponseRegistry

logger = logging.getLogger(__name__)

PENDING_GAUGE = "openai.instrumentation.pending_responses"
EMITTED_GAUGE = "openai.instrumentation.emitted_response_ids"
TYPE_ADAPTER_GAUGE = "openai.sdk.type_adapter_cache.size"

LEAK_WARNING = (
    "openai {openai} with pydantic {pydantic} leaks memory in structured-output calls "
    "(responses.parse / chat.completions.parse) when requests run in fresh threads, tasks or "
    "contextvars contexts, as web servers run them. Upgrade openai to 3.16.2 or newer, or "
    "pydantic to 2.13 or newer. The instrumentation does not add to it; the gauge "
    f"'{TYPE_ADAPTER_GAUGE}' shows the SDK's cache size."
)


def _version_tuple(version: str) -> tuple[int, ...]:
    numbers: list[int] = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def has_known_leak(openai_version: str, pydantic_version: str) -> bool:
    """openai before 3.16.2 with pydantic 2.11.x or 2.12.x (per-context generic-type caches)."""
    openai_parts = _version_tuple(openai_version)
    pydantic_parts = _version_tuple(pydantic_version)
    return bool(openai_parts) and openai_parts < (3, 16, 2) and pydantic_parts[:2] in ((2, 11), (2, 12))


_warned = False


def warn_if_known_leak(version_of: Callable[[str], str] = metadata.version) -> bool:
    """Warns once per process when the installed versions leak; True if it warned this call."""
    global _warned
    if _warned:
        return False
    try:
        openai_version, pydantic_version = version_of("openai"), version_of("pydantic")
    except Exception:
        return False
    if not has_known_leak(openai_version, pydantic_version):
        return False
    _warned = True
    message = LEAK_WARNING.format(openai=openai_version, pydantic=pydantic_version)
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    return True


def _type_adapter_cache_size() -> int | None:
    """Size of the SDK's TypeAdapter cache (`openai._models._CachedTypeAdapter`, an lru_cache)."""
    try:
        from openai import _models

        cache: Any = getattr(_models, "_CachedTypeAdapter", None)
        info = cache.cache_info() if cache is not None else None
        return int(info.currsize) if info is not None else None
    except Exception:
        return None


def register_gauges(meter: Meter, current_registry: Callable[[], ResponseRegistry | None]) -> None:
    """`current_registry` is read at each collection, so one registration survives re-instrumenting."""

    def pending(options: CallbackOptions) -> Iterable[Observation]:
        registry = current_registry()
        if registry is None:
            return []
        registry.expire()  # an idle process still ends over-age background spans
        return [Observation(registry.sizes()[0])]

    def emitted(options: CallbackOptions) -> Iterable[Observation]:
        registry = current_registry()
        return [] if registry is None else [Observation(registry.sizes()[1])]

    def type_adapters(options: CallbackOptions) -> Iterable[Observation]:
        size = _type_adapter_cache_size()
        return [] if size is None else [Observation(size)]

    meter.create_observable_gauge(
        PENDING_GAUGE,
        callbacks=[pending],
        unit="{response}",
        description="Background responses whose span waits for a terminal status",
    )
    meter.create_observable_gauge(
        EMITTED_GAUGE,
        callbacks=[emitted],
        unit="{id}",
        description="Finished response ids remembered to avoid duplicate spans",
    )
    meter.create_observable_gauge(
        TYPE_ADAPTER_GAUGE,
        callbacks=[type_adapters],
        unit="{adapter}",
        description="Entries in the openai SDK's pydantic TypeAdapter cache",
    )
