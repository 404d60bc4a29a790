"""Run on its own spec, almost every line of a rendered script executes: a script carries the branches its spec
needs and no others. Measured with coverage on every example script; docs/script.md lists each figure. The scripts
are measured once for the module (`figures`), each in a child forked from one interpreter (tests/coverage_runner.py),
a DDP script under torchrun (`measure`).

    python -m tests.test_coverage      # print docs/script.md's table from a fresh measurement
"""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.golden import example_specs, golden_path
from tests.helpers import ROOT, env_with_root

pytestmark = pytest.mark.slow

MINIMUM = 90  # percent of an example script's statements that run on its own spec
# The spec the back half is measured by: validation, accumulation over 3 batches, norm clipping, and a StepLR
# that configure_optimizers returns as ([optimizer], [scheduler]).
REFERENCE = "accumulate_clip"
REFERENCE_MINIMUM, REFERENCE_MAX_CODE_LINES = 95, 200
# Every script checks the user's code before it runs (the guards, templates/guards.j2: their functions and tables,
# the same whatever the spec): the reference's bound is on the rest, and the guards have their own.
GUARDS_TEMPLATE = ROOT / "templates" / "guards.j2"
GUARDS_MAX_CODE_LINES = 200


def measure(script: Path, directory: Path) -> float:
    """The percentage of `script`'s statements that run when it trains (in a fresh interpreter, in
    `directory`). A script that checkpoints is stopped by SIGTERM as soon as it handles the signal (it saves
    last.ckpt after its first batch), then resumed with `--ckpt-path last`: the statements of both runs count."""
    directory = directory / script.stem
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / f"{script.stem}.coverage"
    env = {**env_with_root(), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "coverage", "run", "--parallel-mode", f"--data-file={data}", f"--include={script}"]
    devices = re.search(r"^DEVICES = (\d+)", script.read_text(encoding="utf-8"), re.MULTILINE)
    if devices:  # a DDP script: every process under coverage, started by torchrun
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={devices[1]}"]
        command = [*torchrun, "-m", *command[2:]]
    if "def stop_on_signals" in script.read_text(encoding="utf-8"):
        first = subprocess.Popen([*command, str(script)], cwd=directory, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 300
        while not catches(first.pid, signal.SIGTERM) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        first.send_signal(signal.SIGTERM)  # the script stops after its first batch, mid-epoch
        assert first.wait(timeout=300) == 128 + signal.SIGTERM, first.stderr.read()[-2000:]
        command_tail = [str(script), "--ckpt-path", "last"]
    else:
        command_tail = [str(script)]
    run = subprocess.run([*command, *command_tail], cwd=directory, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    from tests.coverage_runner import combined_percent  # imports torch and coverage: only when measuring

    return combined_percent(script, directory)


def launched(script: Path) -> bool:
    """A DDP script: it runs under torchrun (`measure`), not forked by tests/coverage_runner.py."""
    return re.search(r"^DEVICES = (\d+)", script.read_text(encoding="utf-8"), re.MULTILINE) is not None


def measure_all(scripts: list[Path], directory: Path) -> dict[str, float | str]:
    """`measure` of each script, by stem (or why it failed): DDP scripts one by one, the others in one run of
    tests/coverage_runner.py (each script in a child forked from one interpreter: torch is imported once)."""
    figures: dict[str, float | str] = {}
    for script in filter(launched, scripts):
        try:
            figures[script.stem] = measure(script, directory)
        except Exception as error:  # noqa: BLE001 - one script's failure is its test's, not the others'
            figures[script.stem] = f"{type(error).__name__}: {error}"
    forked = [str(script) for script in scripts if not launched(script)]
    if forked:
        run = subprocess.run(
            [sys.executable, "-m", "tests.coverage_runner", str(directory), *forked],
            cwd=ROOT, env={**env_with_root(), "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
            timeout=300 * len(forked),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-4000:]
        figures.update(json.loads(run.stdout.strip().splitlines()[-1]))
    return figures


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float | str]:
    """Every example script's figure, measured once (tests/schedule.py runs this module on one worker)."""
    return measure_all([golden_path(spec) for spec in example_specs()], tmp_path_factory.mktemp("coverage"))


def figure(figures: dict[str, float | str], stem: str) -> float:
    """The script's percentage; its test fails with the reason when it could not be measured."""
    found = figures[stem]
    if isinstance(found, str):
        pytest.fail(f"{stem}: {found}", pytrace=False)
    return found


def catches(pid: int, signum: int) -> bool:
    """Process `pid` has a handler for `signum` (Linux: the SigCgt mask of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.MULTILINE)
    return mask is not None and bool(int(mask.group(1), 16) >> (signum - 1) & 1)


def code_lines(script: Path) -> int:
    """Lines of code: not blank, not a comment, not the header docstring."""
    text = script.read_text(encoding="utf-8")
    header = ast.parse(text).body[0]
    skip = range(header.lineno, header.end_lineno + 1)
    return sum(
        1
        for number, line in enumerate(text.splitlines(), 1)
        if number not in skip and line.strip() and not line.strip().startswith("#")
    )


FIGURES_PAGE = ROOT / "docs" / "script.md"  # its coverage table: `| `name.py` | NN% | lines |`


def listed_figures() -> dict[str, int]:
    """The `| example | percent |` rows of docs/script.md's coverage table."""
    rows = re.findall(r"^\| `(\w+)\.py` \| (\d+)% \|", FIGURES_PAGE.read_text(encoding="utf-8"), re.MULTILINE)
    return {name: int(percent) for name, percent in rows}


def test_the_table_lists_every_example() -> None:
    """docs/script.md has one row for each example script, and none for a script that is gone (no measuring)."""
    listed = set(listed_figures())
    examples = {spec.stem for spec in example_specs()}
    missing, extra = sorted(examples - listed), sorted(listed - examples)
    assert not missing and not extra, f"docs/script.md's coverage table: missing {missing}, extra {extra}"


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_almost_every_line_runs(spec: Path, figures: dict[str, float | str]) -> None:
    percent = figure(figures, spec.stem)
    assert percent >= MINIMUM, f"{spec.stem}: only {percent:.1f}% of the script ran"
    listed = listed_figures().get(spec.stem)
    assert listed == round(percent), (
        f"docs/script.md lists {listed}% for {spec.stem}.py, measured {round(percent)}%: update it"
        " (python -m tests.test_coverage prints the table)"
    )


def guard_lines(script: Path) -> int:
    """The lines of code of the guards' functions and tables in `script` (the names guards.j2 defines)."""
    names = set(re.findall(r"^(?:def )?(\w+)\b(?:\(| = )", GUARDS_TEMPLATE.read_text(encoding="utf-8"), re.MULTILINE))
    text = script.read_text(encoding="utf-8")
    lines = text.splitlines()
    spans = [
        range(node.lineno, node.end_lineno + 1)
        for node in ast.parse(text).body
        if getattr(node, "name", None) in names
        or isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) in names for t in node.targets)
    ]
    code = [n for span in spans for n in span if lines[n - 1].strip() and not lines[n - 1].strip().startswith("#")]
    return len(code)


def test_reference_spec_is_short_and_runs_almost_entirely(figures: dict[str, float | str]) -> None:
    script = golden_path(ROOT / "examples" / f"{REFERENCE}.yaml")
    guards = guard_lines(script)
    assert 100 < guards <= GUARDS_MAX_CODE_LINES, guards
    assert code_lines(script) - guards <= REFERENCE_MAX_CODE_LINES
    assert figure(figures, REFERENCE) >= REFERENCE_MINIMUM


def main() -> int:
    with tempfile.TemporaryDirectory() as directory:
        print("| script | lines that run | lines of code |\n|---|---|---|")
        scripts = [golden_path(spec) for spec in example_specs()]
        figures = measure_all(scripts, Path(directory))
        for script in scripts:
            found = figures[script.stem]
            shown = f"{round(found)}%" if isinstance(found, float) else found
            print(f"| `{script.name}` | {shown} | {code_lines(script)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
