"""The seed's dict returns feed trainer.callback_metrics: a ReduceLROnPlateau monitoring the "val_loss" that
validation_epoch_end returns trains exactly like a hand-written loop that steps the scheduler with it."""

from __future__ import annotations

import subprocess
import sys

import torch

from tests.helpers import env_with_root, render, train_script

MODEL = """
import torch
from torch.utils.data import DataLoader, TensorDataset


class SeedStyle(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 1)
        self.records = []

    def _loader(self, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(24, 3, generator=g)
        return DataLoader(TensorDataset(x, x.sum(1, keepdim=True) + torch.randn(24, 1, generator=g)), batch_size=8)

    def train_dataloader(self):
        return self._loader(0)

    def val_dataloader(self):
        return self._loader(1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        return {"loss": loss, "log": {"train_loss": loss}, "progress_bar": {"shown": loss}}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_epoch_end(self, outputs):
        return {"val_loss": torch.stack(outputs).mean(), "log": {"val_logged": torch.stack(outputs).mean()}}

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.5)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5, threshold=0.9)
        self.optimizer = optimizer
        return {"optimizer": optimizer, "lr_scheduler": plateau, "monitor": "val_loss"}

    def on_train_epoch_end(self):
        metrics = self.trainer.callback_metrics
        self.records.append(sorted(metrics))
"""

REFERENCE = """
import sys, torch
sys.path.insert(0, sys.argv[2])
from seedstyle.models import SeedStyle
torch.manual_seed(0)
model = SeedStyle()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5, threshold=0.9)
train, val = model.train_dataloader(), model.val_dataloader()
for epoch in range(4):
    for batch in train:
        loss = model.training_step(batch, 0)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = torch.stack([model.validation_step(b, i) for i, b in enumerate(val)]).mean()
    model.train()
    plateau.step(val_loss)
torch.save({"state_dict": model.state_dict(), "lr": optimizer.param_groups[0]["lr"]}, sys.argv[1])
"""


def test_seed_dict_returns_drive_the_plateau_scheduler(tmp_path, monkeypatch):
    (tmp_path / "seedstyle").mkdir()
    (tmp_path / "seedstyle" / "__init__.py").write_text("")
    (tmp_path / "seedstyle" / "models.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    spec = {
        "seed_everything": 0,
        "model": "seedstyle.models.SeedStyle",
        "trainer": {
            "accelerator": "cpu",
            "max_epochs": 4,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
        },
    }
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    assert "log_returned(metrics, model.validation_epoch_end(outputs), top_level=True)" in script.read_text()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    ours = train_script(script, tmp_path / "ours.pt")
    result = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(tmp_path / "ref.pt"), str(tmp_path)],
        env=env_with_root(tmp_path),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    reference = torch.load(tmp_path / "ref.pt")
    assert all(torch.equal(v, ours["state_dict"][k]) for k, v in reference["state_dict"].items())
    assert reference["lr"] < 0.5  # the plateau scheduler did reduce the learning rate
    assert ours["records"][-1] == ["shown", "train_loss", "val_logged", "val_loss"]
