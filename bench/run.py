"""Compares this package with the other OpenAI instrumentations; one command: `python bench/run.py [--quick]`.

Creates one virtual environment per contender under bench/.venvs/ (pip, reused while its requirements are
unchanged; `ours` is rebuilt from the working tree every run), runs `bench/workload.py` in each, and writes
bench/results/results.json, RESULTS.md and memory.png (bench/results/quick/ with --quick).
Needs only a python3 >= 3.10 and PyPI; see bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = BENCH / ".venvs"
WORKLOAD = BENCH / "workload.py"
PLOT = BENCH / "plot_memory.py"

OLDER_PIN = "opentelemetry-instrumentation-openai==0.62.4"
# The upstream OpenTelemetry package was renamed; the first name that PyPI has is used (both are pre-releases,
# so the specifier names a pre-release to let pip pick one).
GENAI_NAMES = ("opentelemetry-instrumentation-genai-openai>=0.1b0", "opentelemetry-instrumentation-openai-v2>=2.0b0")
OPENINFERENCE = "openinference-instrumentation-openai"
SDK = "opentelemetry-sdk"
# When a contender does not work with the newest openai: the newest 2.x, then the newest 1.x.
OPENAI_FALLBACKS = ("openai>=2,<3", "openai>=1,<2")
CONTENDERS = ("ours", "older", "genai", "openinference", "none")
INSTRUMENTED = ("ours", "older", "genai", "openinference")
PACKAGE_OF = {
    "ours": "opentelemetry-instrumentation-openai",
    "older": "opentelemetry-instrumentation-openai",
    "genai": "opentelemetry-instrumentation-genai-openai",
    "openinference": "openinference-instrumentation-openai",
}
OPERATION_LABELS = {
    "responses.create": "responses.create",
    "chat.completions.create": "chat.completions.create",
    "embeddings.create": "embeddings.create",
    "responses.stream50": "Responses stream, 50 events",
    "chat.stream50": "chat stream, 50 chunks",
}
STREAM_ITEMS = 50

_print_lock = threading.Lock()
_started = time.monotonic()


def log(message: str) -> None:
    with _print_lock:
        print(f"[{time.monotonic() - _started:6.0f}s] {message}", file=sys.stderr, flush=True)


# ---- virtual environments ----


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def pip(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(venv_python(name)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=1200)


def ensure_venv(name: str, requirements: list[str], always: list[list[str]] | None = None) -> None:
    """Creates the venv and installs `requirements` unless its stamp says they are in; `always` runs each time."""
    stamp = VENVS / name / "bench-stamp.json"
    wanted = {"python": sys.version, "requirements": requirements}
    if not venv_python(name).exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENVS / name)], check=True, timeout=300)
    current = json.loads(stamp.read_text()) if stamp.exists() else None
    if current != wanted:
        log(f"{name}: pip install {' '.join(requirements)}")
        stamp.unlink(missing_ok=True)
        done = pip(name, *requirements)
        if done.returncode != 0:
            raise RuntimeError(f"pip install failed for {name}:\n{done.stderr[-3000:]}")
        stamp.write_text(json.dumps(wanted))
    for args in always or []:
        done = pip(name, *args)
        if done.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(args)} failed for {name}:\n{done.stderr[-3000:]}")


def installed(name: str, distribution: str) -> str | None:
    code = f"from importlib.metadata import version\ntry: print(version({distribution!r}))\nexcept Exception: pass"
    done = subprocess.run([str(venv_python(name)), "-c", code], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None


def build_ours_wheel() -> Path:
    """A wheel of the working tree (uncommitted changes included), rebuilt every run."""
    target = VENVS / "_wheel"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(target), str(ROOT)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"could not build a wheel of {ROOT}:\n{done.stderr[-3000:]}")
    return next(target.glob("*.whl"))


def setup_ours(name: str, wheel: Path, openai_spec: str) -> None:
    # the wheel's file name does not change between runs: force it in, then let pip add any new dependency
    ensure_venv(
        name,
        [openai_spec, SDK, "wrapt", "cachetools", "opentelemetry-instrumentation"],
        always=[["--force-reinstall", "--no-deps", str(wheel)], [str(wheel)]],
    )


def base_requirements(contender: str, openai_spec: str, genai_name: str | None) -> list[str]:
    if contender == "older":
        return [OLDER_PIN, openai_spec, SDK]
    if contender == "genai":
        return [genai_name or GENAI_NAMES[0], openai_spec, SDK]
    if contender == "openinference":
        return [OPENINFERENCE, openai_spec, SDK]
    return [openai_spec, SDK]


# ---- workers ----


def run_worker(
    venv: str, contender: str, mode: str, quick: bool, content: str = "off", timeout: int = 1800, memory_calls: int = 0
) -> Any:
    with tempfile.NamedTemporaryFile(suffix=".tmp", delete=False, dir=BENCH / "results") as handle:
        out = Path(handle.name)
    command = [str(venv_python(venv)), str(WORKLOAD), "--contender", contender, "--mode", mode, "--out", str(out)]
    command += ["--content", content] + (["--quick"] if quick else [])
    if memory_calls:
        command += ["--memory-calls", str(memory_calls)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACELOOP_", "OPENINFERENCE_"))}
    env["PYTHONHASHSEED"] = "0"
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{venv} {mode} {content} failed:\n{done.stderr[-4000:]}")
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


def smoke(venv: str, contender: str) -> tuple[bool, str]:
    try:
        result = run_worker(venv, contender, "smoke", quick=True, timeout=300)
    except Exception as error:
        return False, str(error)[-1500:]
    spans = result.get("spans_per_operation", {})
    if contender != "none" and not any(spans.values()):
        return False, f"instrumented but no span: {spans}"
    return True, json.dumps(spans)


# ---- figures ----


def summarize_timing(run: dict[str, Any]) -> dict[str, Any]:
    """Headline figures from the interleaved off/on pairs; the never-instrumented first pass is kept beside."""
    if "pairs" not in run:
        return {op: {"uninstrumented_us": f["median_us"]} for op, f in run["uninstrumented"].items()}
    figures: dict[str, Any] = {}
    keys = ("uninstrumented_us", "instrumented_us", "added_us", "added_se_us", "ratio", "spans_per_call")
    for op, pair in run["pairs"].items():
        figure = {key: pair[key] for key in keys}
        figure["spans_while_off"] = pair["spans_while_off"]
        figure["uninstrumented_first_us"] = run["uninstrumented"][op]["median_us"]
        if op.endswith("stream50"):
            figure["added_us_per_item"] = figure["added_us"] / STREAM_ITEMS
        figures[op] = figure
    return figures


def fmt_us(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def fmt_added(figure: dict[str, Any] | None, per_item: bool = False) -> str:
    if not figure or "added_us" not in figure:
        return "n/a"
    if per_item:
        return f"{figure['added_us_per_item']:+.1f} ±{figure['added_se_us'] / STREAM_ITEMS:.1f}"
    return f"{figure['added_us']:+,.0f} ±{figure['added_se_us']:,.0f} ({figure['ratio']:.2f}x)"


def fmt_bytes(value: float) -> str:
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


def render_markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    contenders = results["contenders"]
    names = [c for c in CONTENDERS if c in contenders]
    instrumented = [c for c in names if c != "none"]
    lines = [
        "# Benchmark: OpenAI instrumentations",
        "",
        f"Date: {env['date']} · Python {env['python']} · machine: `platform.processor()`="
        f"{env['processor']!r} ({env['cpu_model']}), {env['cores']} cores · load average at start: "
        f"{env['load_average_at_start']} · {'QUICK smoke run' if results['quick'] else 'full run'} "
        f"({results['seconds']:.0f} s)",
        "",
        "| contender | package (version) | openai | opentelemetry-sdk | instrumented with |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in names:
        info = contenders[name]
        package = f"{info['package']} ({info['version']})" if info.get("package") else "(none: baseline)"
        how = info.get("instrumented_with", {}).get("off", "")
        lines.append(f"| {name} | {package} | {info['openai']} | {info['sdk']} | {how} |")
    extra = [n for n in contenders if n not in CONTENDERS]
    for name in extra:
        info = contenders[name]
        lines.append(f"| {name} | {info['package']} ({info['version']}) | {info['openai']} | {info['sdk']} | |")
    lines += [
        "",
        "CPU µs per call of the calling thread. The fake API answers in-process, so the uninstrumented call",
        "(the `none` column, ~1 ms) includes the fake's own work and a real API call would take 100s of ms:",
        "read the added µs, not the ratios. Cells: added µs = median of 30 paired differences instrumented -",
        "uninstrumented (interleaved in one process), ± its standard error, and (ratio instrumented / uninstrumented).",
        "",
    ]
    for content in ("off", "on"):
        header = "| operation | none (µs) | " + " | ".join(instrumented) + " |"
        lines += [f"### Content capture {content}", "", header, "|" + " --- |" * (2 + len(instrumented))]
        baseline = contenders.get("none", {}).get("timing", {}).get("off", {})
        for op, label in OPERATION_LABELS.items():
            cells = [fmt_added(contenders[c].get("timing", {}).get(content, {}).get(op)) for c in instrumented]
            base = fmt_us(baseline.get(op, {}).get("uninstrumented_us"))
            lines.append(f"| {label} | {base} | " + " | ".join(cells) + " |")
            if op.endswith("stream50"):
                per = [
                    fmt_added(contenders[c].get("timing", {}).get(content, {}).get(op), per_item=True)
                    for c in instrumented
                ]
                lines.append("| ↳ added µs per item | | " + " | ".join(per) + " |")
        lines.append("")
    floor = contenders.get("ours", {}).get("sdk_floor")
    if floor:
        lines += [
            "### SDK floor (measured in the `ours` run, content off)",
            "",
            "| operation | attributes | span alone (tight loop) | span + 3 histogram records | bare span wrapper "
            "inside the call | ours added | ours added / span alone |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for op, f in floor.items():
            ours = contenders["ours"]["timing"]["off"].get(op, {})
            ours_added = ours.get("added_us")
            ratio = ours_added / f["span_only_us"] if ours_added is not None and f["span_only_us"] else float("nan")
            lines.append(
                f"| {op} | {f['attribute_count']} | {fmt_us(f['span_only_us'])} | {fmt_us(f['span_and_metrics_us'])} "
                f"| {fmt_us(f.get('in_situ_added_us'))} | {fmt_us(ours_added)} | {ratio:.1f}x |"
            )
        lines.append("")
    lines += [
        "### Memory and state (content off)",
        "",
        "| contender | retained after N calls | retained bytes / call | minus `none` | module-level state that grew |",
        "| --- | --- | --- | --- | --- |",
    ]
    none_per_call = contenders.get("none", {}).get("memory", {}).get("retained_bytes_per_call", 0.0)
    for name in names:
        memory = contenders[name].get("memory")
        if not memory:
            continue
        grew = memory.get("state_note", "") or "—"
        lines.append(
            f"| {name} | {fmt_bytes(memory['retained_bytes'])} after {memory['calls']:,} | "
            f"{memory['retained_bytes_per_call']:,.0f} | {memory['retained_bytes_per_call'] - none_per_call:+,.0f} | "
            f"{grew} |"
        )
    lines += [
        "",
        "### Spans per model response (content off)",
        "",
        "| contender | create + 3 retrieves | background create + polls until completed |",
        "| --- | --- | --- |",
    ]
    for name in instrumented:
        spans = contenders[name].get("spans")
        if not spans:
            continue
        a, b = spans["create_plus_3_retrieves"], spans["background_create_plus_polls"]
        lines.append(
            f"| {name} | {a['spans_per_response']:g} | {b['spans_per_response']:g} "
            f"({b['polls_per_response']:g} polls) |"
        )
    if results.get("notes"):
        lines += ["", "### Notes", ""] + [f"- {note}" for note in results["notes"]]
    lines.append("")
    return "\n".join(lines)


def state_note(contender: str, memory: dict[str, Any]) -> str:
    parts = []
    if "older_responses_dict" in memory:
        d = memory["older_responses_dict"]
        parts.append(f"`responses` dict: {d['entries']:,} entries, ~{fmt_bytes(d['approx_bytes'])}")
    if "ours_registry" in memory:
        r = memory["ours_registry"]
        parts.append(f"registry: {r['pending']} pending, {r['emitted_ids']:,} emitted ids (capped)")
    for attr, change in memory.get("module_state_growth", {}).items():
        if contender == "older" and attr.endswith("responses_wrappers.responses"):
            continue
        parts.append(f"`{attr}`: {change['before']:,} → {change['after']:,}")
    return "; ".join(parts)


def environment() -> dict[str, Any]:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "cpu_model": cpu_model or platform.machine(),
        "cores": os.cpu_count(),
        "load_average_at_start": ", ".join(f"{x:.1f}" for x in load) if load else "n/a",
        "platform": platform.platform(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a ~2-minute smoke version (fewer calls)")
    parser.add_argument("--only", nargs="+", choices=CONTENDERS, help="a subset of contenders")
    parser.add_argument("--memory-calls", type=int, default=0, help="calls on the memory curve (10,000; quick 1,000)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel memory/spans workers (timing is sequential)")
    args = parser.parse_args()
    if sys.version_info < (3, 10):  # noqa: UP036 (the script may be started by any python3)
        sys.exit("bench/run.py needs Python >= 3.10")
    chosen = [c for c in CONTENDERS if not args.only or c in args.only]
    out_dir = BENCH / "results" / "quick" if args.quick else BENCH / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    VENVS.mkdir(parents=True, exist_ok=True)
    env = environment()
    log(f"load average {env['load_average_at_start']}; venvs in {VENVS}")
    notes: list[str] = []

    # 1. ours first, with the newest openai: that version is pinned for everyone else
    wheel = build_ours_wheel()
    setup_ours("ours", wheel, "openai")
    openai_version = installed("ours", "openai")
    if not openai_version:
        sys.exit("could not install openai in the `ours` venv")
    log(f"newest openai: {openai_version}")
    pin = f"openai=={openai_version}"

    # 2. the others in parallel (pip is mostly waiting on the network), then a smoke test each
    genai_name: list[str | None] = [None]

    def setup(contender: str) -> tuple[str, str, str]:
        """Returns (venv, openai spec used, note)."""
        if contender == "ours":
            return "ours", pin, ""
        if contender == "genai":
            errors = []
            for candidate in GENAI_NAMES:
                try:
                    ensure_venv("genai", base_requirements("genai", pin, candidate))
                    genai_name[0] = candidate
                    break
                except RuntimeError as error:
                    errors.append(str(error)[-300:])
            else:
                raise RuntimeError("neither genai package name installs: " + " | ".join(errors))
        else:
            ensure_venv(contender, base_requirements(contender, pin, None))
        ok, detail = smoke(contender, contender)
        if ok:
            return contender, pin, ""
        for spec in OPENAI_FALLBACKS:
            log(f"{contender}: does not work with {pin} ({detail[-200:]}); trying {spec}")
            ensure_venv(contender, base_requirements(contender, spec, genai_name[0]))
            ok, detail = smoke(contender, contender)
            if ok:
                return contender, spec, f"{contender} fails with {pin}; measured with {spec}"
        raise RuntimeError(f"{contender} works with no openai version tried: {detail}")

    setups: dict[str, tuple[str, str, str]] = {}
    failed: dict[str, str] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {pool.submit(setup, c): c for c in chosen}
        plot_future = pool.submit(ensure_venv, "plot", ["matplotlib"])
        for future in concurrent.futures.as_completed(futures):
            contender = futures[future]
            try:
                setups[contender] = future.result()
                log(f"{contender}: ready")
            except Exception as error:
                failed[contender] = str(error)
                log(f"{contender}: SKIPPED: {error}")
        try:
            plot_future.result()
            can_plot = True
        except Exception as error:
            can_plot = False
            notes.append(f"memory.png not drawn: matplotlib did not install ({str(error)[-200:]})")
    for contender, reason in failed.items():
        notes.append(f"{contender} skipped: {reason[-300:]}")
    ok, detail = smoke("ours", "ours") if "ours" in setups else (True, "")
    if not ok:
        sys.exit(f"ours does not work: {detail}")

    # a contender pushed to an older openai: measure ours on that same openai too
    runs: dict[str, tuple[str, str]] = {c: (venv, c) for c, (venv, _, _) in setups.items()}
    for contender, (_, _spec, note) in setups.items():
        if note:
            notes.append(note)
            version = installed(contender, "openai")
            label = f"ours@openai-{version}"
            if label not in runs:
                setup_ours(label, wheel, f"openai=={version}")
                runs[label] = (label, "ours")

    # 3. timing: one process per (contender, content), sequentially so they do not compete for the 2 cores
    results: dict[str, Any] = {}
    timing_raw: dict[str, dict[str, Any]] = {label: {} for label in runs}
    for content in ("off", "on"):
        for label, (venv, contender) in runs.items():
            if contender == "none" and content == "on":
                continue
            log(f"timing {label} content {content}")
            timing_raw[label][content] = run_worker(venv, contender, "timing", args.quick, content)

    # 4. spans and memory: tracemalloc makes these slow, and timing is done, so they may run side by side
    extras_raw: dict[str, Any] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {
            pool.submit(run_worker, venv, contender, "extras", args.quick, memory_calls=args.memory_calls): label
            for label, (venv, contender) in runs.items()
        }
        for label in runs:
            log(f"memory and spans {label} queued")
        for future in concurrent.futures.as_completed(futures):
            label = futures[future]
            extras_raw[label] = future.result()
            log(f"memory and spans {label}: done")

    # 5. assemble
    contenders: dict[str, Any] = {}
    for label, (_venv, contender) in runs.items():
        timing = timing_raw[label]
        versions = timing["off"]["versions"]
        package = PACKAGE_OF.get(contender)
        if contender == "genai" and genai_name[0]:
            package = genai_name[0].split(">")[0].split("=")[0]
        info: dict[str, Any] = {
            "package": package,
            "version": versions.get(package, "") if package else "",
            "openai": versions.get("openai"),
            "sdk": versions.get("opentelemetry-sdk"),
            "versions": versions,
            "instrumented_with": {c: r.get("instrumented_with", "") for c, r in timing.items()},
            "timing": {c: summarize_timing(r) for c, r in timing.items()},
            "timing_raw": timing,
        }
        if "sdk_floor" in timing.get("off", {}):
            info["sdk_floor"] = {}
            for op, f in timing["off"]["sdk_floor"].items():
                situ = timing["off"].get("sdk_floor_in_situ", {}).get(op, {})
                info["sdk_floor"][op] = {
                    "span_name": f["span_name"],
                    "attribute_count": f["attribute_count"],
                    "attributes": f["attributes"],
                    "span_only_us": f["span_only"]["median_us"],
                    "span_and_metrics_us": f["span_and_metrics"]["median_us"],
                    "in_situ_added_us": situ.get("added_us"),
                }
        for content, figures in info["timing"].items():
            leaked = [op for op, f in figures.items() if f.get("spans_while_off")]
            if leaked:
                notes.append(f"{label} (content {content}): spans while switched off in {leaked}: figures suspect")
        extras = extras_raw.get(label, {})
        if "memory" in extras:
            memory = extras["memory"]
            memory["state_note"] = state_note(contender, memory)
            info["memory"] = memory
        if "spans" in extras:
            info["spans"] = extras["spans"]
        contenders[label] = info
    results = {
        "environment": env,
        "quick": args.quick,
        "openai_pinned": openai_version,
        "genai_package_used": genai_name[0],
        "contenders": contenders,
        "notes": notes,
        "seconds": time.monotonic() - _started,
    }
    # a drift check: the same uninstrumented call measured in different processes should agree
    baselines = [
        c["timing"]["off"]["responses.create"]["uninstrumented_us"] for c in contenders.values() if "off" in c["timing"]
    ]
    if len(baselines) > 1:
        spread = (max(baselines) - min(baselines)) / statistics.median(baselines)
        results["baseline_spread"] = spread
        notes.append(
            f"machine noise: the same uninstrumented responses.create measured {fmt_us(min(baselines))} to "
            f"{fmt_us(max(baselines))} µs across the {len(baselines)} processes (load average at start "
            f"{env['load_average_at_start']}); the added µs come from off/on halves interleaved within one process, "
            "which cancels most of that: their ± is the standard error of the median difference"
        )
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if can_plot:
        done = subprocess.run(
            [str(venv_python("plot")), str(PLOT), str(out_dir / "results.json"), str(out_dir / "memory.png")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            notes.append(f"memory.png not drawn: {done.stderr[-300:]}")
            (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out_dir / "RESULTS.md").write_text(render_markdown(results))
    log(f"wrote {out_dir / 'RESULTS.md'}, results.json, memory.png")
    print((out_dir / "RESULTS.md").read_text())


if __name__ == "__main__":
    main()
