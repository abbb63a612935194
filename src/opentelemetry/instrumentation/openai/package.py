"""The openai versions this instrumentation supports (checked by BaseInstrumentor)."""

_instruments = ("openai >= 1.66, < 4",)
