"""The header's "parity checked against" line names the versions the parity tests train against
(loopgen/parity.py): the test set-up must install exactly those, else the header would claim a check that did
not run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loopgen import parity
from tests.helpers import ROOT, render


def test_the_test_setup_installs_the_versions_the_header_names() -> None:
    import pytorch_lightning
    import torch

    assert torch.__version__.split("+")[0] == parity.TORCH
    assert pytorch_lightning.__version__ == parity.LIGHTNING
    constraints = (ROOT / ".ci" / "constraints.txt").read_text(encoding="utf-8").splitlines()
    assert f"torch=={parity.TORCH}" in constraints and f"pytorch-lightning=={parity.LIGHTNING}" in constraints


def test_the_1_9_5_venv_is_the_version_the_header_names() -> None:
    setup = (ROOT / "tests" / "lightning195" / "setup_venv.sh").read_text(encoding="utf-8")
    assert f"pytorch-lightning=={parity.LIGHTNING_SEED_FLAGS}" in setup and f"torch=={parity.TORCH}" in setup
    python = ROOT / ".venv195" / "bin" / "python"
    if not python.exists():
        pytest.skip("no .venv195 (bash .ci/setup --lightning-1.9.5 makes it)")
    found = subprocess.run([str(python), "-c", "import pytorch_lightning; print(pytorch_lightning.__version__)"],
                           capture_output=True, text=True, timeout=120, check=True).stdout.strip()  # fmt: skip
    assert found == parity.LIGHTNING_SEED_FLAGS


@pytest.mark.parametrize(("model", "trainer", "lightning"), [
    ("examples.models.Classifier", {}, parity.LIGHTNING),
    ("examples.seed_models.SequenceRNN", {"truncated_bptt_steps": 8}, parity.LIGHTNING_SEED_FLAGS),
])  # fmt: skip
def test_the_header_names_the_lightning_the_spec_follows(
    tmp_path: Path, model: str, trainer: dict, lightning: str
) -> None:
    spec = {"seed_everything": 0, "model": model, "trainer": {"max_epochs": 1, **trainer}}
    text = render(spec, tmp_path)
    assert f"\nparity checked against: pytorch_lightning {lightning}, torch {parity.TORCH}\n" in text
