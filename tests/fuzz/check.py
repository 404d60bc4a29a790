"""Check one drawn spec end to end: render, lint, train beside Lightning, compare.

`Fuzzer.check(draw)` returns an `Outcome`, one of:

- `passed`: the script is lint-clean and trains as Lightning does (torch.equal weights, the Probe's validation
  points, batch counts, learning rates and step counts, the checkpoint files and what they hold, the loggers'
  files cell by cell);
- `raised`: Lightning raised, and so did the script, at the same training step, with the same message and an
  exception of Lightning's type or a subclass of the same builtin;
- `refused`: loopgen refused the spec at render time, exit status 2, every line naming a key and saying why;
- `failed`: anything else (a render that crashed, a bare refusal, a lint finding, a difference in training,
  one side raising alone), with what went wrong.

The Lightning side runs in a fork server of its venv (tests/fuzz/runner.py): 2.x in this interpreter's, 1.9.5 in
`.venv195` (or $LOOPGEN_VENV195). The script runs in the 2.x server, beside the reference.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.fuzz.specs import Draw
from tests.harness import ROOT, env_with_root, in_directory

RUFF_RULES = "E,F,W,B,ARG"
# a refusal must say more than this (why, and what to use instead)
BARE_REFUSAL = re.compile(r"not supported( by loopgen| yet)?\.?\s*$")
REFUSAL_LINE = re.compile(r"^loopgen: error: \S.*\S")


@dataclass
class Outcome:
    kind: str  # passed | raised | refused | failed
    why: list[str] = field(default_factory=list)


def venv195_python() -> Path | None:
    python = Path(os.environ.get("LOOPGEN_VENV195", ROOT / ".venv195")) / "bin" / "python"
    return python if python.exists() else None


class Server:
    """One `python -m tests.fuzz.runner serve` process."""

    def __init__(self, python: str | Path, code: Path | None = None) -> None:
        env = env_with_root()
        if code is not None:  # where drawn module files are written (tests/fuzz/code.py)
            env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")])
        env.setdefault("PYTHONWARNINGS", "ignore")
        self.process = subprocess.Popen(
            [str(python), "-m", "tests.fuzz.runner", "serve"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = self.process.stdout.readline()  # type: ignore[union-attr]
        if not ready:
            raise RuntimeError(f"the fuzz runner ({python}) did not start (exit {self.process.wait()})")
        self.version = json.loads(ready)["ready"]

    def send(self, jobs: list[list[str]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(jobs) + "\n")
        self.process.stdin.flush()

    def receive(self) -> list[int]:
        assert self.process.stdout is not None
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f"the fuzz runner died (exit {self.process.wait()})")
        return json.loads(reply)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


class Fuzzer:
    """Renders, lints and trains drawn specs; keeps its servers between examples."""

    def __init__(self, workdir: Path, seed_era: bool = True) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.keep = False  # keep every example's directory
        self.code = self.workdir / "code"  # drawn module files, importable by both sides and by the render
        self.code.mkdir(exist_ok=True)
        if str(self.code) not in sys.path:
            sys.path.insert(0, str(self.code))
        self.main = Server(sys.executable, self.code)
        python195 = venv195_python() if seed_era else None
        self.seed_era = Server(python195, self.code) if python195 is not None else None

    def close(self) -> None:
        for server in (self.main, self.seed_era):
            if server is not None:
                server.close()

    def check(self, draw: Draw) -> Outcome:
        self.count += 1
        directory = self.workdir / f"example-{self.count:04d}"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        try:
            return self._check(draw, directory)
        finally:
            if not self.keep:
                shutil.rmtree(directory, ignore_errors=True)

    def _check(self, draw: Draw, directory: Path) -> Outcome:
        if draw.reference == "1.9.5" and self.seed_era is None:
            return Outcome("skipped", ["no Lightning 1.9.5 venv: run `bash .ci/setup --lightning-1.9.5`"])
        if draw.code:
            import importlib

            from tests.fuzz.code import module_name

            (self.code / f"{module_name(draw.code)}.py").write_text(draw.code, encoding="utf-8")
            importlib.invalidate_caches()
        sides = {"reference": directory / "reference", "script": directory / "script"}
        for path in sides.values():
            path.mkdir()
        script = sides["script"] / "train.py"
        script_spec = write_spec(sides["script"] / "spec.yaml", in_directory(draw.spec, sides["script"]))
        status, messages = render(script_spec, script)
        if status == 2:
            return refusal(messages)
        if status != 0 or not script.exists():
            return Outcome("failed", [f"render exited {status}", *messages[-20:]])
        findings = lint(script)
        outcome = self._train(draw, sides, script, script_spec)
        if findings:  # trained anyway: what else differs is worth knowing too
            return Outcome("failed", ["the script is not lint-clean:", *findings, *outcome.why])
        return outcome

    def _train(self, draw: Draw, sides: dict[str, Path], script: Path, script_spec: Path) -> Outcome:
        reference_spec = write_spec(sides["reference"] / "spec.yaml", in_directory(draw.spec, sides["reference"]))
        job = [str(reference_spec), "", str(sides["reference"] / "out.pt"), str(sides["reference"] / "output.log")]
        ours = ["script", str(script_spec), str(script), str(sides["script"] / "out.pt"),
                str(sides["script"] / "output.log")]  # fmt: skip
        if draw.reference == "1.9.5":
            assert self.seed_era is not None
            self.seed_era.send([["lightning195", *job]])
            self.main.send([ours])
            statuses = self.seed_era.receive() + self.main.receive()
        else:
            self.main.send([["lightning", *job], ours])
            statuses = self.main.receive()
        for (name, path), status in zip(sides.items(), statuses):
            if status != 0:
                return Outcome("failed", [f"the {name} run exited {status}", *tail(path / "output.log")])
        import torch

        theirs, mine = (torch.load(path / "out.pt", weights_only=False) for path in sides.values())
        return compare(theirs, mine, draw.reference, sides)


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def render(spec: Path, script: Path) -> tuple[int, list[str]]:
    """`loopgen render SPEC -o SCRIPT` in this process: its exit status and what it printed."""
    from loopgen.cli import main

    output = io.StringIO()
    with contextlib.redirect_stderr(output), contextlib.redirect_stdout(output):
        try:
            status = main(["render", str(spec), "-o", str(script)])
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
        except Exception as error:  # noqa: BLE001 - a crash is a finding, not the fuzzer's end
            import traceback

            traceback.print_exc()
            status = f"a crash ({type(error).__name__}: {error})"  # type: ignore[assignment]
    return status, output.getvalue().splitlines()


def refusal(messages: list[str]) -> Outcome:
    """A render that exited 2: `refused` when every line names a key and says why, else `failed`."""
    lines = [line for line in messages if line.strip()]
    bad = [line for line in lines if not REFUSAL_LINE.match(line) or BARE_REFUSAL.search(line)]
    if not lines or bad or any("Traceback" in line for line in lines):
        return Outcome("failed", ["a refusal that does not say why:", *(bad or lines or ["(no message)"])])
    return Outcome("refused", lines)


def lint(script: Path) -> list[str]:
    """ruff (E, F, W, B, ARG) and black --check with black's defaults: the findings, one line each."""
    import black

    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", RUFF_RULES, "--output-format", "concise",
         "--no-cache", str(script)],
        capture_output=True, text=True,
    )  # fmt: skip
    findings = [line for line in ruff.stdout.splitlines() if line.startswith(str(script))]
    if ruff.returncode not in (0, 1):
        findings.append(f"ruff exited {ruff.returncode}: {ruff.stderr.strip()}")
    text = script.read_text(encoding="utf-8")
    try:
        formatted = black.format_str(text, mode=black.Mode())
    except Exception as error:  # noqa: BLE001 - black refusing the text is a finding
        findings.append(f"black cannot format it: {error}")
    else:
        if formatted != text:
            findings.append("black --check would reformat it")
    return findings


def tail(log: Path, lines: int = 25) -> list[str]:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no output)"
    return text.splitlines()[-lines:]


def compare(theirs: dict, mine: dict, reference: str, sides: dict[str, Path]) -> Outcome:
    if theirs["error"] is not None or mine["error"] is not None:
        return compare_errors(theirs, mine, sides)
    found = weight_differences(theirs["state_dict"], mine["state_dict"])
    if (theirs["records"] is None) != (mine["records"] is None):
        found.append("the Probe recorded on one side only")
    elif theirs["records"] is not None:
        from tests.parity.test_parity import nested_difference

        for key in theirs["records"]:
            difference = nested_difference(theirs["records"][key], mine["records"][key])
            if difference is not None:
                found.append(f"{key}{difference}")
    if theirs["steps"] != mine["steps"]:
        found.append(f"training_step calls: Lightning {theirs['steps']}, script {mine['steps']}")
    from tests.parity.test_parity import checkpoint_differences, log_differences

    found += checkpoint_differences(theirs["checkpoints"], mine["checkpoints"])
    if reference == "1.9.5":
        found += log_differences(unordered_columns(theirs["logs"]), unordered_columns(mine["logs"]))
    else:
        found += log_differences(theirs["logs"], mine["logs"])
    return Outcome("failed", found) if found else Outcome("passed")


def compare_errors(theirs: dict, mine: dict, sides: dict[str, Path]) -> Outcome:
    a, b = theirs["error"], mine["error"]
    if a is None:
        return Outcome("failed", [f"only the script raised, after {mine['steps']} steps: {b['type']}: {b['message']}",
                                  *tail(sides["script"] / "output.log")])  # fmt: skip
    if b is None:
        return Outcome("failed", [f"only Lightning raised, after {theirs['steps']} steps: {a['type']}: {a['message']}",
                                  *tail(sides["reference"] / "output.log")])  # fmt: skip
    found = []
    if a["type"] != b["type"] and a["builtin"] not in b["builtins"]:  # Lightning's type, or its builtin's subclass
        found.append(f"exception: Lightning {a['type']} ({a['builtin']}), script {b['type']} ({b['builtin']})")
    if a["message"] != b["message"]:
        found.append(f"message: Lightning {a['message']!r}, script {b['message']!r}")
    if theirs["steps"] != mine["steps"]:
        found.append(f"raised after training_step calls: Lightning {theirs['steps']}, script {mine['steps']}")
    return Outcome("failed", found) if found else Outcome("raised", [f"{a['type']}: {a['message']}"])


def weight_differences(theirs: dict, mine: dict) -> list[str]:
    import torch

    if theirs.keys() != mine.keys():
        return [f"state_dict keys differ: Lightning {sorted(theirs)}, script {sorted(mine)}"]
    found = []
    for name, a in theirs.items():
        b = mine[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            found.append(f"weight {name}: Lightning {a.dtype}{list(a.shape)}, script {b.dtype}{list(b.shape)}")
        elif not torch.equal(a, b):
            gap = (a.double() - b.double()).abs().max().item()
            found.append(f"weight {name} differs (max abs difference {gap:.3g})")
    return found


def unordered_columns(logs: list[dict]) -> list[dict]:
    """Log facts with each metrics.csv as rows of {column: cell} without the empty cells: 1.9.5 orders the columns
    as it first saw them, 2.x (and the scripts) sort them."""
    facts = []
    for entry in logs:
        entry = dict(entry)
        if "rows" in entry:
            header, *rows = entry.pop("rows")
            entry["rows"] = [{k: v for k, v in zip(header, row) if v != ""} for row in rows]
        facts.append(entry)
    return facts
