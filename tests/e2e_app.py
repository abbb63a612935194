"""A small app run under `opentelemetry-instrument` by test_auto_instrumentation.py.

It has no telemetry code of its own: the distro's auto-instrumentation finds the instrumentor through its
entry point. OPENAI_BASE_URL and OPENAI_API_KEY come from the environment (the fake API on loopback).
"""

from __future__ import annotations

from openai import OpenAI

RESPONSES_MODEL = "gpt-4o-mini"
CHAT_MODEL = "gpt-4o"
STREAM_MODEL = "gpt-3.5-turbo"
QUESTION = "What is the capital of France?"


def main() -> None:
    with OpenAI(max_retries=0) as client:
        response = client.responses.create(model=RESPONSES_MODEL, input=QUESTION)
        print("responses:", response.output_text, flush=True)

        completion = client.chat.completions.create(model=CHAT_MODEL, messages=[{"role": "user", "content": QUESTION}])
        print("chat:", completion.choices[0].message.content, flush=True)

        stream = client.chat.completions.create(
            model=STREAM_MODEL,
            messages=[{"role": "user", "content": QUESTION}],
            stream=True,
            stream_options={"include_usage": True},
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        print("stream:", text, flush=True)


if __name__ == "__main__":
    main()
