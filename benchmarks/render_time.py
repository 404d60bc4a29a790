"""`loopgen render` time in a fresh interpreter per render, as a user or a pre-commit hook runs it, for every
example spec: cold (the cache of scripts off, so every stage runs: reading the spec and the sources, planning,
the templates, black) and cached (an unchanged spec, rendered before).

    python benchmarks/render_time.py [SPEC ...] [--runs N]

Prints, per spec, the median wall time and the median CPU time (user + system: less sensitive to other work on
a shared machine) of N runs of each, then where a cold render's import time goes. Like an installed package,
loopgen and its dependencies run from compiled bytecode (written to a temporary PYTHONPYCACHEPREFIX, even where
PYTHONDONTWRITEBYTECODE is set), and the templates from their compiled form, which loopgen keeps beside the cache
whether or not the cache of scripts is on (see loopgen/render/script.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_render(spec: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one `python -m loopgen render SPEC` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "loopgen", "render", spec], cwd=ROOT, check=True, capture_output=True, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_breakdown(spec: str, env: dict[str, str]) -> list[tuple[int, str]]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loopgen", "render", spec],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env, "LOOPGEN_NO_CACHE": "1"},
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
    parser.add_argument("specs", nargs="*", help="default: every examples/*.yaml")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    specs = args.specs or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.yaml"))
    with tempfile.TemporaryDirectory(prefix="loopgen-bench-") as scratch:
        measure(specs, args.runs, Path(scratch))


def measure(specs: list[str], runs: int, scratch: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["PYTHONPYCACHEPREFIX"] = str(scratch / "pyc")
    base["LOOPGEN_CACHE_DIR"] = str(scratch / "cache")
    cold = {**base, "LOOPGEN_NO_CACHE": "1"}
    start = [timed_render(specs[0], cold) for _ in range(2)]  # bytecode and compiled templates written
    del start
    print(f"{runs} runs each; median wall / median CPU seconds")
    print(f"{'spec':<36} {'cold':>15} {'cached':>15}")
    colds, cacheds = [], []
    for spec in specs:
        timed_render(spec, base)  # fill the cache
        row = []
        for env, into in ((cold, colds), (base, cacheds)):
            times = [timed_render(spec, env) for _ in range(runs)]
            wall, cpu = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
            into.append(wall)
            row.append(f"{wall:.3f} / {cpu:.3f}")
        print(f"{Path(spec).name:<36} {row[0]:>15} {row[1]:>15}")
    print(f"{'median of the specs':<36} {statistics.median(colds):>15.3f} {statistics.median(cacheds):>15.3f}")
    bare = statistics.median(timed_render_bare() for _ in range(runs))
    print(f"bare interpreter start: {bare:.3f} s")
    print("largest top-level imports of a cold render (cumulative):")
    for us, name in import_breakdown(specs[0], base):
        print(f"  {us / 1e6:.3f} s  {name}")


def timed_render_bare() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
