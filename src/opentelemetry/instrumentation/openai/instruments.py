"""The GenAI client histograms, with the bucket boundaries the semantic conventions recommend."""

from __future__ import annotations

from opentelemetry.metrics import Histogram, Meter

# Boundaries from the GenAI metrics conventions (gen-ai-metrics.md).
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)


class Instruments:
    """The three client histograms; created once per `instrument()`."""

    __slots__ = ("operation_duration", "time_to_first_chunk", "token_usage")

    def __init__(self, meter: Meter) -> None:
        self.operation_duration: Histogram = meter.create_histogram(
            name="gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.token_usage: Histogram = meter.create_histogram(
            name="gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.time_to_first_chunk: Histogram = meter.create_histogram(
            name="gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of a streamed response",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
