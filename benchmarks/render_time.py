"""`loopgen render` time in a fresh interpreter per render, as a user or a pre-commit hook runs it: with the
render cache off (every stage runs) and with it on (an unchanged spec, rendered before).

    python benchmarks/render_time.py [SPEC] [--runs N]

Prints the median and the slowest of N runs of each, and where the uncached render's import time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cold_render(spec: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "loopgen", "render", spec], cwd=ROOT, check=True, capture_output=True, env=env
    )
    return time.perf_counter() - start


def import_breakdown(spec: str) -> list[tuple[int, str]]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loopgen", "render", spec],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "LOOPGEN_NO_CACHE": "1"},
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
    print(f"spec: {args.spec}, {args.runs} runs")
    uncached = {**os.environ, "LOOPGEN_NO_CACHE": "1"}
    cached = {**os.environ, "LOOPGEN_CACHE_DIR": tempfile.mkdtemp(prefix="loopgen-bench-")}
    cold_render(args.spec, cached)  # fill the cache
    for label, env in (("cache off", uncached), ("cached", cached)):
        times = [cold_render(args.spec, env) for _ in range(args.runs)]
        print(f"render, {label}: median {statistics.median(times):.3f} s, slowest {max(times):.3f} s")
    print(f"bare interpreter start: median {statistics.median(baseline):.3f} s")
    print("largest top-level imports of an uncached render (cumulative):")
    for us, name in import_breakdown(args.spec):
        print(f"  {us / 1e6:.3f} s  {name}")


if __name__ == "__main__":
    main()
