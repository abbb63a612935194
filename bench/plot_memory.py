"""Draws memory.png from results.json: retained memory against calls, one line per contender.

Run by bench/run.py with the `plot` venv's python (matplotlib lives only there):
    bench/.venvs/plot/bin/python bench/plot_memory.py bench/results/results.json bench/results/memory.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

STYLES = {"ours": "-o", "older": "-s", "genai": "-^", "openinference": "-D", "none": "--x"}


def main() -> None:
    results = json.loads(Path(sys.argv[1]).read_text())
    figure, (linear, logarithmic) = plt.subplots(1, 2, figsize=(13, 5), dpi=110)
    for name, info in results["contenders"].items():
        memory = info.get("memory")
        if not memory:
            continue
        calls = [point[0] for point in memory["curve"]]
        retained = [max(point[1], 0) / 1e6 for point in memory["curve"]]
        label = f"{name} ({info['package']} {info['version']})" if info.get("package") else f"{name} (uninstrumented)"
        for axes in (linear, logarithmic):
            axes.plot(calls, retained, STYLES.get(name, "-."), label=label, markersize=4)
    env = results["environment"]
    for axes in (linear, logarithmic):
        axes.set_xlabel("responses.create calls (after a 300-call warm-up)")
        axes.set_ylabel("retained memory, MB (tracemalloc, after gc)")
        axes.grid(True, alpha=0.3)
    logarithmic.set_yscale("symlog", linthresh=0.01)
    logarithmic.set_title("same, log scale (linear below 10 kB)")
    linear.set_title("linear scale")
    linear.legend(fontsize=8)
    figure.suptitle(
        f"Memory retained with each instrumentation: openai {results['openai_pinned']}, Python {env['python']}"
    )
    figure.tight_layout()
    figure.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
