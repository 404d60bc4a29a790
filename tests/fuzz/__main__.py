"""The long fuzz profile: draw N specs, check each end to end, count the outcomes, keep the failures.

    python -m tests.fuzz --examples 500 --seed 1 [--failures DIR] [--workdir DIR] [--no-seed-era]
    python -m tests.fuzz --replay DIR_OR_SPEC...

Prints one line per example (its number, outcome and model) and the counts per outcome at the end; every
failing example is written to the failures directory (default `fuzz-failures/`) as `NNNN.yaml`: the drawn spec,
its reference, and why it failed. `--replay` checks such files (or a directory of them) again. Exit status 1
when an example failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from tests.fuzz.check import Fuzzer, Outcome
from tests.fuzz.specs import Draw


def explore(fuzzer: Fuzzer, examples: int, seed: int, seed_era: bool, report) -> None:
    """Check `examples` drawn specs (hypothesis, seeded: the same seed draws the same specs), calling
    report(draw, outcome) for each. Nothing is shrunk: each example trains both sides."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    from tests.fuzz.specs import draws

    @seeded(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(draws(seed_era))
    def one(draw: Draw) -> None:
        report(draw, fuzzer.check(draw))

    one()


def save_failure(directory: Path, number: int, draw: Draw, outcome: Outcome) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{number:04d}.yaml"
    record = {"reference": draw.reference, "why": outcome.why, "spec": draw.spec}
    if draw.code:
        record["code"] = draw.code
    path.write_text(yaml.safe_dump(record, sort_keys=False, width=120), encoding="utf-8")
    return path


def load_failures(paths: list[str]) -> list[tuple[str, Draw]]:
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    found = []
    for path in files:
        record = yaml.safe_load(path.read_text(encoding="utf-8"))
        found.append((str(path), Draw(record["spec"], record.get("reference", "2.x"), record.get("code", ""))))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="how many specs to draw (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis' seed (default 0)")
    parser.add_argument("--failures", default="fuzz-failures", help="where failing specs go (default fuzz-failures/)")
    parser.add_argument("--workdir", help="where the examples train (default: a temporary directory)")
    parser.add_argument("--no-seed-era", action="store_true", help="draw no Lightning 1.9.5 specs")
    parser.add_argument("--keep", action="store_true", help="keep every example's directory (with --workdir)")
    parser.add_argument("--replay", nargs="+", metavar="FILE", help="check saved failures again")
    args = parser.parse_args(argv)

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="loopgen-fuzz-"))
    failures = Path(args.failures)
    counts: Counter = Counter()
    started = time.monotonic()
    fuzzer = Fuzzer(workdir, seed_era=not args.no_seed_era)
    fuzzer.keep = args.keep

    def report(draw: Draw, outcome: Outcome, name: str = "") -> None:
        counts[outcome.kind] += 1
        number = sum(counts.values())
        line = f"{number:5d} {outcome.kind:8s} {draw.reference:5s} {draw.model}"
        if outcome.kind == "failed":
            path = save_failure(failures, number, draw, outcome) if not name else name
            line += f"  -> {path}: {outcome.why[0] if outcome.why else ''}"
        elif outcome.kind == "refused":
            line += f"  ({outcome.why[0][:150]})"
        print(line, flush=True)

    try:
        if args.replay:
            for name, draw in load_failures(args.replay):
                outcome = fuzzer.check(draw)
                report(draw, outcome, name)
                if outcome.kind == "failed":
                    print("\n".join("    " + line for line in outcome.why[:40]), flush=True)
        else:
            explore(fuzzer, args.examples, args.seed, not args.no_seed_era, report)
    finally:
        fuzzer.close()
    minutes = (time.monotonic() - started) / 60
    summary = ", ".join(f"{counts[kind]} {kind}" for kind in ("passed", "raised", "refused", "failed", "skipped"))
    print(f"{sum(counts.values())} examples in {minutes:.1f} min: {summary}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
