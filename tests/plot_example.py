"""The example run behind the plot in docs/logging.md: `python -m tests.plot_example` writes docs/curves.png.

examples/lit_classifier.yaml with its logger on (a CSVLogger, Lightning's default), rendered into a temporary
directory and run there; then `loopgen plot` of that run. tests/test_plot.py runs the same, for fewer epochs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from tests.helpers import ROOT, env_with_root, write_spec

EXAMPLE = ROOT / "examples" / "lit_classifier.yaml"
IMAGE = ROOT / "docs" / "curves.png"


def example_spec(max_epochs: int = 10) -> dict:
    """lit_classifier.yaml logging every 2 steps, with a LearningRateMonitor; a smaller, slower-learning model, so
    that the curves move."""
    spec = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    spec["model"]["init_args"].update(hidden=16, lr=0.005)
    spec["trainer"].update(logger=True, log_every_n_steps=2, max_epochs=max_epochs)
    spec["trainer"]["callbacks"] = [{"class_path": "LearningRateMonitor"}]
    return spec


def example_run(directory: Path, max_epochs: int = 10) -> Path:
    """Render and run the example in `directory`; its run directory (lightning_logs/version_0)."""
    from loopgen.pipeline import render_spec

    spec = write_spec(directory, example_spec(max_epochs))
    text, _ = render_spec(spec, "train.py")
    (directory / "train.py").write_text(text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "train.py"], cwd=directory, env=env_with_root(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return directory / "lightning_logs" / "version_0"


def main() -> int:
    from loopgen.cli import main as loopgen

    with tempfile.TemporaryDirectory(prefix="loopgen-plot-") as tmp:
        run = example_run(Path(tmp))
        return loopgen(["plot", str(run), "-o", str(IMAGE)])


if __name__ == "__main__":
    sys.exit(main())
