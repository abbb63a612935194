"""Quick overhead check of THIS package in the current interpreter (e.g. the dev venv): no venvs, ~1 minute.

    .venv/bin/python bench/overhead.py            # figures
    .venv/bin/python bench/overhead.py --profile  # and where the time goes (cProfile), per call and per chunk

Prints, for responses.create and chat.completions.create: uninstrumented and instrumented CPU µs per call,
the added µs, the SDK floor (the OpenTelemetry SDK alone starting and ending one span with the attributes
this package sets on that call) and added / floor; then the µs added per item of a 50-chunk chat stream
and a 50-event Responses stream. Off/on repetitions are interleaved (see workload.time_pairs).
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload

OURS_PATH = "opentelemetry/instrumentation/openai/"
# Code that runs only because of the instrumentation; the rest (openai, httpx, the fake) runs either way.
INSTRUMENTATION_PATHS = ("/opentelemetry/", "/wrapt/", "/cachetools/")


def _short(func: tuple[str, int, str]) -> str:
    path, line, name = func
    path = path.split(OURS_PATH)[-1] if OURS_PATH in path else path.split("site-packages/")[-1]
    return f"{path}:{line}({name})"


def _is_instrumentation(path: str) -> bool:
    return any(part in path for part in INSTRUMENTATION_PATHS)


def profile(harness: workload.Harness, call: Any, calls: int, items: int, added_us: float, label: str) -> None:
    """cProfile over `calls` instrumented calls. Each function of this package is charged its own time plus
    the OpenTelemetry SDK / wrapt / cachetools work it calls directly (edge times from the profile), but not
    the time of other functions of this package it calls, nor of openai: so the rows do not overlap.
    cProfile inflates small functions; the estimated µs scale the shares to the measured added time."""
    for _ in range(20):
        call()
    workload.settle()  # a full collection inside the profile would be charged to whatever allocated last
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        call()
        if i % 50 == 0:
            harness.clear()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    charged: dict[tuple[str, int, str], float] = {}
    per_call: dict[tuple[str, int, str], float] = {}
    for func, (_, ncalls, tottime, _, callers) in stats.items():
        path = func[0]
        if OURS_PATH in path:
            charged[func] = charged.get(func, 0.0) + tottime
            per_call[func] = ncalls / calls
        elif _is_instrumentation(path):
            # charge this SDK function's time, call edge by call edge, to a direct caller in this package;
            # SDK-to-SDK edges are already inside the SDK caller's edge time
            for caller, edge in callers.items():
                if OURS_PATH in caller[0]:
                    charged[caller] = charged.get(caller, 0.0) + edge[3]
                elif not _is_instrumentation(caller[0]):
                    # called from openai or C (e.g. wrapt calling our wrapper's SDK hooks): charge as itself
                    charged[func] = charged.get(func, 0.0) + edge[3]
                    per_call[func] = ncalls / calls
    total = sum(charged.values())
    print(f"\n{label}: where the added time goes (cProfile; {calls} calls, {items} item(s) each)")
    print(f"  {'share':>6} {'est. µs':>8} {'calls':>6}  function (own time + the SDK work it calls directly)")
    for func, seconds in sorted(charged.items(), key=lambda kv: kv[1], reverse=True)[:8]:
        share = seconds / total if total else 0.0
        estimate = share * added_us / items
        print(f"  {share:6.1%} {estimate:8.2f} {per_call.get(func, 0) / items:6.2f}  {_short(func)}")
    unit = "per item" if items > 1 else "per call"
    print(f"  (est. µs {unit}: share x measured added µs{' / items' if items > 1 else ''}; calls {unit})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier)")
    parser.add_argument("--profile", action="store_true", help="also profile responses.create and the streams")
    parser.add_argument("--content", choices=("off", "on"), default="off", help="content capture (span_only)")
    args = parser.parse_args()
    content_on = args.content == "on"
    workload.configure_content_env("ours", content_on)
    harness = workload.Harness()
    harness.responses_stream()
    toggle = workload.PatchToggle()
    workload.instrument("ours", content_on, harness.tracer_provider, harness.meter_provider)
    toggle.capture()
    calls, reps = (24, 10) if args.quick else (48, 30)

    def pairs(method: str, n: int) -> dict[str, Any]:
        call = getattr(harness, method)
        return workload.time_pairs(harness, call, toggle.switch, n, reps, warmup=max(3, n // 5))

    print(
        f"opentelemetry-instrumentation-openai {metadata.version('opentelemetry-instrumentation-openai')} · "
        f"openai {metadata.version('openai')} · opentelemetry-sdk {metadata.version('opentelemetry-sdk')} · "
        f"Python {platform.python_version()} · content capture {args.content}"
    )
    print(f"CPU µs per call of this thread; median of {reps} interleaved uninstrumented/instrumented repetitions\n")
    header = (
        f"{'operation':<26}{'uninstr.':>10}{'instr.':>10}{'added':>9}{'SDK floor':>11}{'added/floor':>12}"
        f"{'floor+metrics':>15}{'floor in situ':>15}"
    )
    measured: dict[str, float] = {}
    rows = []
    shapes = {}
    for op, method in (("responses.create", "responses_create"), ("chat.completions.create", "chat_create")):
        figure = pairs(method, calls)
        toggle.switch(True)
        shapes[op] = workload.first_span_attributes(harness, getattr(harness, method))
        floor = workload.sdk_floor(harness, shapes[op], args.quick) if shapes[op] else None
        measured[op] = figure["added_us"]
        rows.append((op, figure, floor))
    toggle.switch(False)  # the bare wrapper goes where ours was
    in_situ = workload.in_situ_floor(harness, {op: shape for op, shape in shapes.items() if shape}, args.quick)
    toggle.switch(True)
    print(header)
    for op, figure, floor in rows:
        span_only = floor["span_only"]["median_us"] if floor else float("nan")
        with_metrics = floor["span_and_metrics"]["median_us"] if floor else float("nan")
        situ = in_situ.get(op, {}).get("added_us", float("nan"))
        print(
            f"{op:<26}{figure['uninstrumented_us']:>10.1f}{figure['instrumented_us']:>10.1f}"
            f"{figure['added_us']:>+9.1f}{span_only:>11.1f}{figure['added_us'] / span_only:>11.1f}x"
            f"{with_metrics:>15.1f}{situ:>+15.1f}"
        )
    print(f"\n{'stream':<30}{'uninstr.':>10}{'instr.':>10}{'added':>9}{'added per item':>16}")
    streams = (("Responses stream, 50 events", "responses_stream"), ("chat stream, 50 chunks", "chat_stream"))
    for label, method in streams:
        figure = pairs(method, max(5, calls // 6))
        measured[method] = figure["added_us"]
        print(
            f"{label:<30}{figure['uninstrumented_us']:>10.1f}{figure['instrumented_us']:>10.1f}"
            f"{figure['added_us']:>+9.1f}{figure['added_us'] / workload.STREAM_ITEMS:>+16.2f}"
        )
    print(
        "\nSDK floor: the SDK alone starting and ending one CLIENT span with the same attributes, same provider\n"
        "(SimpleSpanProcessor -> in-memory exporter), in a tight loop; floor+metrics adds the 3 histogram records\n"
        "made per call; floor in situ: the µs added to the real call by a bare wrapt wrapper at the same choke\n"
        "point that only starts and ends that span (cold caches inside the SDK call make it dearer than the loop)."
    )
    if args.profile:
        toggle.switch(True)
        profile(harness, harness.responses_create, 500, 1, measured["responses.create"], "responses.create")
        items = workload.STREAM_ITEMS
        profile(harness, harness.chat_stream, 100, items, measured["chat_stream"], "chat stream, per chunk")
        profile(
            harness, harness.responses_stream, 100, items, measured["responses_stream"], "Responses stream, per event"
        )


if __name__ == "__main__":
    main()
