"""No silent render: every example spec either is refused at render time, or its script runs (briefly: a few
optimizer steps) without crashing. A crash here is something render could have seen and did not refuse (a hook, an
API, an argument loopgen does not serve). The parity fixture specs (`case:`) are not run here: tests/parity runs
each of their scripts to its end beside Lightning's Trainer, which a crash fails as well (their specs are still
listed by fixture_specs(), for tests/lint_sweep.py).

The scripts run one after another, each in a child forked from one interpreter (torch imported once), from its own
directory, for at most 2 epochs of 2 training batches (more when an int val_check_interval needs them) and
2 validation batches: every epoch validates, so what monitors a validation metric finds it (a spec that sets
fast_dev_run keeps it). The loggers' packages run offline, as in the parity runner.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.harness import ROOT, env_with_root

pytestmark = pytest.mark.slow

# torch and Lightning (the fixtures' models are LightningModules) are imported once; each script runs in a forked
# child (no state of one script's libraries reaches the next)
RUNNER = """
import json, os, runpy, sys, traceback
import torch
import pytorch_lightning
for name, script, directory in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        os.chdir(directory)
        sys.argv = [script]
        try:
            runpy.run_path(script, run_name="loopgen_no_silent_render")["main"]()
            print(json.dumps([name, None]), flush=True)
        except BaseException as error:
            last = traceback.format_exception(error)[-1].strip()
            print(json.dumps([name, last]), flush=True)
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
"""


def fixture_specs() -> dict[str, dict]:
    """The examples and the parity cases (Lightning 2.x's and the objects / torchmetrics ones), by name."""
    from tests.parity import test_objects, test_parity, test_streams

    specs = {f"example:{p.stem}": yaml.safe_load(p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))}
    for case in [*test_parity.CASES, *test_objects.CASES, *test_streams.CASES]:
        specs[f"case:{case.id}"] = copy.deepcopy(case.spec)
    return specs


def briefly(spec: dict) -> dict | None:
    """The spec bounded to a few batches (None: one that needs files from another run)."""
    if spec.get("ckpt_path"):
        return None
    if "strategy" in (spec.get("trainer") or {}):
        return None  # runs under its launcher (torchrun): tests/test_ddp.py and tests/test_coverage.py run it
    spec = copy.deepcopy(spec)
    trainer = spec["trainer"] = dict(spec.get("trainer") or {})
    trainer.setdefault("accelerator", "cpu")
    trainer.setdefault("logger", False)
    trainer.setdefault("enable_progress_bar", False)
    if not trainer.get("fast_dev_run"):
        interval = trainer.get("val_check_interval")
        trainer["limit_train_batches"] = max(2, interval if isinstance(interval, int) else 0)
        trainer["limit_val_batches"] = 2
        trainer["max_epochs"] = min(trainer.get("max_epochs") or 2, 2)
        for key in ("min_steps", "min_epochs", "max_steps"):
            trainer.pop(key, None)
    return spec


def test_nothing_that_renders_crashes(tmp_path: Path) -> None:
    from loopgen.errors import LoopgenError
    from loopgen.pipeline import render_spec

    jobs, refused = [], []
    for name, spec in fixture_specs().items():
        if name.startswith("case:"):
            continue  # run to its end by tests/parity
        spec = briefly(spec)
        if spec is None:
            continue
        directory = tmp_path / name.replace(":", "_")
        directory.mkdir()
        spec_path = directory / "spec.yaml"
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        try:
            text, _ = render_spec(spec_path, directory / "train.py")
        except LoopgenError:
            refused.append(name)
            continue
        (directory / "train.py").write_text(text, encoding="utf-8")
        jobs.append([name, str(directory / "train.py"), str(directory)])
    assert len(jobs) > 15, f"too few examples render: {refused}"
    from tests.parity.runner import LOGGER_ENVIRONMENT

    result = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(jobs)],
        env={**env_with_root(), **LOGGER_ENVIRONMENT},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    outcomes = dict(json.loads(line) for line in result.stdout.splitlines() if line.startswith('["'))
    crashed = {name: error for name, error in outcomes.items() if error is not None}
    missing = [name for name, _, _ in jobs if name not in outcomes]
    assert not missing, f"the runner stopped early ({result.stderr[-2000:]}): {missing}"
    assert not crashed, "rendered, then crashed:\n" + "\n".join(f"{n}: {e}" for n, e in crashed.items())
