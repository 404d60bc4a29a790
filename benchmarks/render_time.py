"""Cold `loopgen render` time: a fresh interpreter per render, as a user or a pre-commit hook runs it.

    python benchmarks/render_time.py [SPEC] [--runs N]

Prints the median and the slowest of N runs, and where the import time goes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cold_render(spec: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "loopgen", "render", spec], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def import_breakdown(spec: str) -> list[tuple[int, str]]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loopgen", "render", spec], cwd=ROOT, capture_output=True, text=True
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        try:
            rows.append((int(cumulative), name.rstrip()))
        except ValueError:
            continue
    top = [(us, name.strip()) for us, name in rows if not name.startswith("   ")]  # top-level imports only
    return sorted(top, reverse=True)[:6]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", nargs="?", default="examples/lit_classifier.yaml")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    baseline = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - start)
    times = [cold_render(args.spec) for _ in range(args.runs)]
    print(f"spec: {args.spec}, {args.runs} runs")
    print(f"cold render: median {statistics.median(times):.3f} s, slowest {max(times):.3f} s")
    print(f"bare interpreter start: median {statistics.median(baseline):.3f} s")
    print("largest top-level imports (cumulative):")
    for us, name in import_breakdown(args.spec):
        print(f"  {us / 1e6:.3f} s  {name}")


if __name__ == "__main__":
    main()
