"""loopgen's own code stays clean under ruff (with the project's settings in pyproject.toml)."""

import subprocess
import sys

from tests.helpers import ROOT


def test_ruff_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "loopgen", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_black_clean():
    """loopgen's own code is formatted with black, at the project's settings."""
    result = subprocess.run(
        [sys.executable, "-m", "black", "--check", "--quiet", "loopgen", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
