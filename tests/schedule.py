"""How `pytest -n N` hands the tests to its workers: the longest work first, and a module's tests that share an
expensive module-scoped fixture on one worker.

pytest-xdist's default (`--dist load`) sends the tests in collection order, in chunks: a long test collected late
runs at the end while the other worker idles, and a module's tests split across the workers set the module's
fixture up once per worker (tests/test_ddp.py's launches, tests/test_resume.py's uninterrupted run). With plain
`-n N` (tests/conftest.py asks for it), `LongestFirst` hands out work units instead: one per test, or one per
module of GROUPED (its tests in their order), each time the heaviest unit left. A unit's weight is what its tests
took last time: the seconds this checkout's last `-n` run measured (pytest's cache, `loopgen/durations`), else
the committed table tests/durations.json (by test, else by module: seconds per test), else DEFAULT seconds.
An explicit `--dist` keeps xdist's own.

    python -m tests.schedule     # rewrite tests/durations.json from the last `-n` run's measurements

Nothing here changes what a test does or checks; only which worker runs it, and when.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "durations.json"
CACHE_KEY = "loopgen/durations"
DEFAULT = 1.0  # seconds: a test no measurement names
MINIMUM = 0.5  # seconds: lighter tests have no line of their own in tests/durations.json (their module's mean)
# Modules whose tests share a module-scoped fixture that trains or launches something: one worker runs them all
GROUPED = (
    "tests/test_ddp.py",
    "tests/test_resume.py",
    "tests/test_plot.py",
    "tests/test_text.py",
    "tests/test_progress.py",
    "tests/test_coverage.py",
    "tests/fuzz/test_fuzz.py",
    "tests/test_horovod_files.py",
    "tests/test_xla_files.py",
    "tests/test_timer.py",
    "tests/test_manual_profiler.py",
    "tests/test_guards.py",
)


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The work unit a test belongs to: its module's (GROUPED) or its own."""
    module = module_of(nodeid)
    return module if module in GROUPED else nodeid


def known_durations(config: Any) -> dict[str, float]:
    """Seconds by test id, and by module (a test of the module that has no figure of its own): the committed
    table, overridden by this checkout's last measurements."""
    durations: dict[str, float] = {}
    if TABLE.exists():
        durations.update(json.loads(TABLE.read_text(encoding="utf-8")))
    cache = getattr(config, "cache", None)
    if cache is not None:
        durations.update(cache.get(CACHE_KEY, {}))
    return durations


def seconds(durations: dict[str, float], nodeid: str) -> float:
    """What a test is expected to take: its own figure, else its module's (per test), else DEFAULT."""
    found = durations.get(nodeid)
    if found is None:
        found = durations.get(module_of(nodeid), DEFAULT)
    return found


def make_scheduler(config: Any, log: Any) -> Any:
    """A LongestFirst scheduler for plain `-n N` (xdist's `load`), else None (xdist picks its own)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    durations = known_durations(config)

    class HeaviestFirst(OrderedDict):
        """xdist's work queue (unit -> {test id: done}); popitem(last=False) gives the heaviest unit left."""

        def popitem(self, last: bool = True) -> tuple[str, dict[str, bool]]:
            if last or not self:
                return super().popitem(last)
            unit = max(self, key=weight)
            return unit, self.pop(unit)

    weights: dict[str, float] = {}

    def weight(unit: str) -> float:
        if unit not in weights:
            weights[unit] = sum(seconds(durations, test) for test in queue[unit])
        return weights[unit]

    queue = HeaviestFirst()

    class LongestFirst(LoadScopeScheduling):
        def __init__(self, config: Any, log: Any = None) -> None:
            super().__init__(config, log)
            self.workqueue = queue

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return LongestFirst(config, log)


class Recorder:
    """In the controller: every test's setup + call + teardown seconds, saved to pytest's cache at the end (merged
    with what earlier runs measured, so that a run of a few files keeps the others' figures)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is None or not self.seconds:
            return
        merged = {**cache.get(CACHE_KEY, {}), **{test: round(s, 2) for test, s in self.seconds.items()}}
        cache.set(CACHE_KEY, merged)


def main() -> int:
    """Rewrite the lines of tests/durations.json of the modules that the last `-n` runs in this checkout measured."""
    cache = TABLE.parent.parent / ".pytest_cache" / "v" / CACHE_KEY
    if not cache.exists():
        print(f"no measurements at {cache}: run `pytest -n 2` first", file=sys.stderr)
        return 1
    measured = {test: s for test, s in json.loads(cache.read_text(encoding="utf-8")).items() if "::" in test}
    modules: dict[str, list[float]] = {}
    for test, s in measured.items():
        modules.setdefault(module_of(test), []).append(s)
    # a module's mean per test, then the tests that take long enough to be worth their own line
    table = json.loads(TABLE.read_text(encoding="utf-8")) if TABLE.exists() else {}
    table = {name: s for name, s in table.items() if module_of(name) not in modules}  # the modules not measured
    table.update({module: round(sum(times) / len(times), 2) for module, times in modules.items()})
    table.update({test: round(s, 1) for test, s in measured.items() if s >= MINIMUM})
    TABLE.write_text(json.dumps(dict(sorted(table.items())), indent=0) + "\n", encoding="utf-8")
    own = sum("::" in name for name in table)
    print(f"{TABLE}: {len(modules)} modules measured ({len(measured)} tests); {own} tests have a line of their own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
