"""Run on its own spec, most of a rendered script executes: the lines that do not are the other forms of
configure_optimizers() and the run-time errors. Measured with coverage on the example scripts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT, env_with_root

pytestmark = pytest.mark.slow

# measured when written: 75% (rnn_tbptt) to 88% (lit_classifier)
EXAMPLES = ["classifier", "mlp_data", "lit_classifier", "gan", "rnn_tbptt", "lbfgs"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_most_of_the_script_runs(name, tmp_path):
    script = ROOT / "generated_examples" / f"{name}.py"
    data = tmp_path / "coverage"
    env = {**env_with_root(), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "coverage", "run", f"--data-file={data}", f"--include={script}", str(script)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = subprocess.run(
        [sys.executable, "-m", "coverage", "json", f"--data-file={data}", "-o", str(tmp_path / "cov.json")],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert report.returncode == 0, report.stderr
    percent = json.loads((tmp_path / "cov.json").read_text())["totals"]["percent_covered"]
    assert percent >= 75, f"{name}: only {percent:.0f}% of the script ran"
