"""Measure several rendered scripts with coverage, each in a child forked from one interpreter (tests/test_coverage.py):
torch and coverage are imported once, not once a script.

    python -m tests.coverage_runner WORK SCRIPT.py [SCRIPT.py ...]

Each script runs as `coverage run --parallel-mode SCRIPT` would run it (as __main__, its directory first on
sys.path, sys.argv = [SCRIPT]), from WORK/<script's stem>, measured with `include=[SCRIPT]` into
WORK/<stem>/<stem>.coverage.*. A script that checkpoints (it defines stop_on_signals) is stopped by SIGTERM as soon
as it handles the signal, then run again with `--ckpt-path last`: both runs count. A script with evaluation
subcommands then runs each (`evaluation_runs`), and their lines count too. The lines of both are combined,
and WORK/<stem>/<stem>.json gets coverage's JSON report. The last line on stdout is JSON: {stem: percent covered, or why it could not be measured}.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path

import coverage
import torch  # noqa: F401 - imported once, before the children fork

from loopgen.verify import subcommands_of

CHILD_TIMEOUT = 300  # seconds, each run of a script


def catches(pid: int, signum: int) -> bool:
    """Process `pid` has a handler for `signum` (Linux: the SigCgt mask of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.MULTILINE)
    return mask is not None and bool(int(mask.group(1), 16) >> (signum - 1) & 1)


def start(script: Path, directory: Path, args: list[str]) -> int:
    """Fork a child that runs `script` under coverage from `directory`; its pid."""
    pid = os.fork()
    if pid:
        return pid
    status = 0
    try:
        signal.alarm(CHILD_TIMEOUT)
        os.chdir(directory)
        log = os.open(directory / "output.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.argv = [str(script), *args]
        sys.path.insert(0, str(script.parent))
        data = directory / f"{script.stem}.coverage"
        measured = coverage.Coverage(data_file=str(data), data_suffix=True, include=[str(script)], config_file=False)
        measured.start()
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            measured.stop()
            measured.save()
    except BaseException:  # noqa: BLE001 - the child reports every failure by its exit status
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def wait(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def measure(script: Path, directory: Path) -> float:
    """The percentage of `script`'s statements that run (see the module's docstring)."""
    directory.mkdir(parents=True, exist_ok=True)
    args: list[str] = []
    if "def stop_on_signals" in script.read_text(encoding="utf-8"):
        first = start(script, directory, [])
        deadline = time.monotonic() + CHILD_TIMEOUT
        ended = 0
        while not catches(first, signal.SIGTERM) and time.monotonic() < deadline:
            ended, code = os.waitpid(first, os.WNOHANG)
            if ended:
                break
            time.sleep(0.001)
        if ended:
            status = os.waitstatus_to_exitcode(code)
        else:
            os.kill(first, signal.SIGTERM)  # the script stops after its first batch, mid-epoch
            status = wait(first)
        if status != 128 + signal.SIGTERM:
            raise RuntimeError(f"{script.name}: the first run ended with {status}: {output(directory)}")
        args = ["--ckpt-path", "last"]
    status = wait(start(script, directory, args))
    if status != 0:
        raise RuntimeError(f"{script.name}: exit status {status}: {output(directory)}")
    for args in evaluation_runs(script.read_text(encoding="utf-8")):
        status = wait(start(script, directory, args))
        if status != 0:
            raise RuntimeError(f"{script.name} {' '.join(args)}: exit status {status}: {output(directory)}")
    return combined_percent(script, directory)


# The guards' functions (templates/guards.j2) are measured apart: a start on unchanged code checks each file's
# sha256 and its classes' bases, and tests/test_guards.py runs what follows a change.
GUARDS = Path(__file__).resolve().parent.parent / "templates" / "guards.j2"


def combined_percent(script: Path, directory: Path) -> float:
    """The coverage data files in `directory` combined; the percentage of `script`'s statements that ran, less the
    guards' functions (their report in <directory>/<stem>.json)."""
    data = directory / f"{script.stem}.coverage"
    combined = coverage.Coverage(data_file=str(data), include=[str(script)], config_file=False)
    combined.combine([str(directory)])
    combined.save()
    for name in re.findall(r"^def (\w+)\(", GUARDS.read_text(encoding="utf-8"), re.MULTILINE):
        combined.exclude(rf"^def {name}\(")
    report = directory / f"{script.stem}.json"
    combined.json_report(outfile=str(report))
    return json.loads(report.read_text())["totals"]["percent_covered"]


def evaluation_runs(text: str) -> list[list[str]]:
    """The script's evaluation subcommands, run after fit: validate from the last checkpoint, test from the best
    one (resolved in this fresh process from the checkpoint files), predict from the model as built, then fit
    again and test its best checkpoint (`fit --test best`); without checkpoints, each from the model as built."""
    commands = subcommands_of(text)
    checkpoints = "def evaluation_checkpoint(command, ckpt_path, callback, directories)" in text
    options = {"validate": ["--ckpt-path", "last"], "test": ["--ckpt-path", "best"]} if checkpoints else {}
    runs = [[command, *options.get(command, [])] for command in commands]
    return runs + ([["fit", "--test", "best"]] if checkpoints and "test" in commands else [])


def output(directory: Path) -> str:
    return (directory / "output.log").read_text(encoding="utf-8", errors="replace")[-2000:]


def main() -> int:
    work, *scripts = sys.argv[1:]
    figures: dict[str, float | str] = {}
    for script in [Path(script).resolve() for script in scripts]:
        try:
            figures[script.stem] = measure(script, Path(work).resolve() / script.stem)
        except Exception as error:  # noqa: BLE001 - one script's failure is its test's, not the others'
            figures[script.stem] = f"{type(error).__name__}: {error}"
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
