"""What the model and the user's callbacks put into a checkpoint comes back when the run resumes: their
on_save_checkpoint / on_load_checkpoint hooks and a callback's state_dict / load_state_dict, as Lightning
calls them; hyper_parameters let `load_from_checkpoint` rebuild the model."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.helpers import env_with_root, render

pytestmark = pytest.mark.slow

MODULES = '''
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class Counting(pl.LightningModule):
    """Keeps a count of its training steps outside its weights, in the checkpoint's "steps_seen"."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, width)
        self.head = torch.nn.Linear(width, 1)
        self.steps_seen = 0
        self.loaded = None

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(40, 4, generator=g), torch.randn(40, 1, generator=g)), batch_size=8)

    def training_step(self, batch, batch_idx):
        self.steps_seen += 1
        x, y = batch
        return torch.nn.functional.mse_loss(self.head(self.layer(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def on_save_checkpoint(self, checkpoint):
        checkpoint["steps_seen"] = self.steps_seen

    def on_load_checkpoint(self, checkpoint):
        self.steps_seen = self.loaded = checkpoint["steps_seen"]

    def on_train_end(self):
        torch.save({"steps_seen": self.steps_seen, "loaded": self.loaded}, "model.pt")


class Tally(pl.Callback):
    """A callback whose state rides in the checkpoint."""

    def __init__(self):
        self.batches = 0
        self.saves = 0
        self.loads = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1

    def state_dict(self):
        return {"batches": self.batches}

    def load_state_dict(self, state_dict):
        self.batches = state_dict["batches"]

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        self.saves += 1

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        self.loads.append(checkpoint["global_step"])

    def on_train_end(self, trainer, pl_module):
        torch.save({"batches": self.batches, "loads": self.loads}, "callback.pt")
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    (tmp_path / "hookproj").mkdir()
    (tmp_path / "hookproj" / "__init__.py").write_text("")
    (tmp_path / "hookproj" / "modules.py").write_text(textwrap.dedent(MODULES))
    spec = {
        "seed_everything": 1,
        "model": {"class_path": "hookproj.modules.Counting", "init_args": {"width": 6}},
        "trainer": {
            "accelerator": "cpu", "max_epochs": 2, "logger": False, "enable_progress_bar": False,
            "callbacks": [
                "hookproj.modules.Tally",
                {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "every_n_train_steps": 3,
                                                                "save_top_k": -1}},
            ],
        },
    }  # fmt: skip
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        path = tmp_path / "train.py"
        path.write_text(render(spec, tmp_path))
    finally:
        os.chdir(cwd)
    return path


def run(script: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=env_with_root(script.parent),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_hooks_and_states_travel_through_the_checkpoint(script: Path) -> None:
    run(script)
    folder = script.parent
    files = sorted(p.name for p in (folder / "ck").iterdir())
    assert files == ["epoch=0-step=3.ckpt", "epoch=1-step=6.ckpt", "epoch=1-step=9.ckpt"]
    # Lightning's load_from_checkpoint reads with weights_only=True: the files hold plain data and tensors
    checkpoint = torch.load(folder / "ck" / "epoch=1-step=6.ckpt", weights_only=True)
    assert checkpoint["steps_seen"] == 6  # the model's on_save_checkpoint
    assert checkpoint["callbacks"]["Tally"] == {"batches": 6}  # the callback's state_dict, under its state_key
    assert checkpoint["hyper_parameters"] == {"width": 6} and checkpoint["hparams_name"] == "kwargs"
    assert checkpoint["epoch"] == 1 and checkpoint["global_step"] == 6

    for name in ("model.pt", "callback.pt"):
        (folder / name).unlink()
    run(script, "--ckpt-path", "ck/epoch=1-step=6.ckpt")
    model, callback = torch.load(folder / "model.pt"), torch.load(folder / "callback.pt")
    assert model == {"steps_seen": 10, "loaded": 6}  # on_load_checkpoint, then 4 more steps
    assert callback == {"batches": 10, "loads": [6]}  # load_state_dict and on_load_checkpoint


def test_load_from_checkpoint_rebuilds_the_model(script: Path) -> None:
    run(script)
    code = (
        "import sys, torch; from hookproj.modules import Counting;"
        " model = Counting.load_from_checkpoint(sys.argv[1]);"
        " saved = torch.load(sys.argv[1], weights_only=False)['state_dict'];"
        " print(model.hparams.width, all(torch.equal(v, model.state_dict()[k]) for k, v in saved.items()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "ck/epoch=1-step=9.ckpt"],
        cwd=script.parent,
        env=env_with_root(script.parent),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["6", "True"]
