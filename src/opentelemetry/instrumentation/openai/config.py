"""One frozen settings object, built from constructor arguments over environment variables."""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CONTENT_MAX_LENGTH_ENV = "OTEL_INSTRUMENTATION_OPENAI_CONTENT_MAX_LENGTH"
EMITTED_CAPACITY_ENV = "OTEL_INSTRUMENTATION_OPENAI_EMITTED_IDS_CAPACITY"
EMITTED_TTL_ENV = "OTEL_INSTRUMENTATION_OPENAI_EMITTED_IDS_TTL_SECONDS"
PENDING_MAX_AGE_ENV = "OTEL_INSTRUMENTATION_OPENAI_PENDING_MAX_AGE_SECONDS"
PROPAGATE_ENV = "OTEL_INSTRUMENTATION_OPENAI_PROPAGATE_TRACE_CONTEXT"


class ContentCapture(enum.Enum):
    """Where opt-in message content goes: nowhere (default), span attributes, an event, or both."""

    NO_CONTENT = "no_content"
    SPAN_ONLY = "span_only"
    EVENT_ONLY = "event_only"
    SPAN_AND_EVENT = "span_and_event"

    @property
    def on_span(self) -> bool:
        return self in (ContentCapture.SPAN_ONLY, ContentCapture.SPAN_AND_EVENT)

    @property
    def on_event(self) -> bool:
        return self in (ContentCapture.EVENT_ONLY, ContentCapture.SPAN_AND_EVENT)

    @classmethod
    def parse(cls, value: object) -> ContentCapture:
        """Accepts the enum, its values in any case, and the older true/false switch; unknown means off."""
        if isinstance(value, ContentCapture):
            return value
        if isinstance(value, bool):
            return cls.SPAN_ONLY if value else cls.NO_CONTENT
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return cls.SPAN_ONLY
        for member in cls:
            if member.value == text:
                return member
        return cls.NO_CONTENT


def _env_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        number = float(raw)
    except ValueError:
        return default
    return number if number >= 0 else default


def _env_flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in ("true", "1", "yes", "on")


@dataclass(frozen=True)
class Settings:
    """What a user can tune; one instance per `instrument()` call, never mutated."""

    capture_content: ContentCapture = ContentCapture.NO_CONTENT
    # Characters kept of each captured string; 0 keeps everything.
    content_max_length: int = 8192
    # Response ids whose span was emitted, remembered so a later retrieve emits no second span.
    emitted_ids_capacity: int = 10_000
    emitted_ids_ttl_seconds: float = 3600.0
    # A background response not polled to its end is ended (and dropped) after this long.
    pending_max_age_seconds: float = 3600.0
    # Inject W3C trace context into outgoing request headers; off by default because some
    # OpenAI-compatible gateways reject unknown headers.
    propagate_trace_context: bool = False
    # Monotonic clock in seconds; injectable so tests can age pending entries.
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Settings:
        """Constructor/`instrument()` keyword arguments win over the environment."""
        env = os.environ if env is None else env
        if "propagate_trace_context" not in options and "enable_trace_context_propagation" in options:
            # The older package's name for the same switch; its other options are accepted and ignored.
            options = {**options, "propagate_trace_context": options["enable_trace_context_propagation"]}
        capture = options.get("capture_content", env.get(CAPTURE_CONTENT_ENV, ""))
        return cls(
            capture_content=ContentCapture.parse(capture),
            content_max_length=int(
                options.get("content_max_length", _env_number(env, CONTENT_MAX_LENGTH_ENV, cls.content_max_length))
            ),
            emitted_ids_capacity=max(
                1,
                int(
                    options.get(
                        "emitted_ids_capacity", _env_number(env, EMITTED_CAPACITY_ENV, cls.emitted_ids_capacity)
                    )
                ),
            ),
            emitted_ids_ttl_seconds=float(
                options.get("emitted_ids_ttl_seconds", _env_number(env, EMITTED_TTL_ENV, cls.emitted_ids_ttl_seconds))
            ),
            pending_max_age_seconds=float(
                options.get(
                    "pending_max_age_seconds", _env_number(env, PENDING_MAX_AGE_ENV, cls.pending_max_age_seconds)
                )
            ),
            propagate_trace_context=bool(
                options.get("propagate_trace_context", _env_flag(env, PROPAGATE_ENV, cls.propagate_trace_context))
            ),
            clock=options.get("clock", time.monotonic),
        )
