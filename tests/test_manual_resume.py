"""Manual optimization resumes exactly: a script rendered for tests.parity.manual_models.ManualGAN (two
optimizers stepped in training_step, random noise drawn in it, two steps per batch) and resumed from a
checkpoint written in the middle of an epoch ends with the weights of the run that was never interrupted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, env_with_root, render, write_spec

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

SPEC = {
    "seed_everything": 7,
    "model": "tests.parity.manual_models.ManualGAN",
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": 3,
        "logger": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "callbacks": [
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ckpts", "save_top_k": -1,
                                                            "every_n_train_steps": 6}},
        ],
    },
}  # fmt: skip

RUN = """
import runpy, sys, torch
sys.argv = ["train.py", *sys.argv[1:]]
model = runpy.run_path("train.py", run_name="loopgen_resume")["main"]()
torch.save(model.state_dict(), "final.pt")
"""


def run(directory: Path, *args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", RUN, *args], cwd=directory, env=env_with_root(), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return torch.load(directory / "final.pt")


def test_a_manual_optimization_run_resumed_mid_epoch_ends_as_the_uninterrupted_one(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "train.py").write_text(render(write_spec(tmp_path, SPEC)))
    reference = run(whole)
    saved = sorted(p.name for p in (whole / "ckpts").iterdir())
    # 10 batches of 2 steps per epoch: a file every 3 batches, two of them in the middle of epoch 1
    assert "epoch=1-step=24.ckpt" in saved and "epoch=1-step=30.ckpt" in saved
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    shutil.copy(whole / "train.py", resumed / "train.py")
    shutil.copy(whole / "ckpts" / "epoch=1-step=24.ckpt", resumed / "from.ckpt")
    weights = run(resumed, "--ckpt-path", "from.ckpt")
    assert weights.keys() == reference.keys()
    for name in reference:
        assert torch.equal(weights[name], reference[name]), name
    checkpoint = torch.load(whole / "ckpts" / "epoch=1-step=24.ckpt", weights_only=False)
    assert checkpoint["global_step"] == 24 and len(checkpoint["optimizer_states"]) == 2
