"""A module and a callback that read trainer.callback_metrics and trainer.logged_metrics at every hook they have,
for parity with Lightning (2.6.6 and 1.9.5): Lightning brings both up to date when they are read, with the
values of the loop running then (the step values inside its batches, else the epoch values; 1.9.5 the step values
from an epoch's start). The module logs from the epoch-start hooks, the steps and the backward hooks, and scales
its gradients by how many values it sees, so a read that differs changes the weights as well as the records.

Imports under Lightning 2.x and 1.9.5 alike (tests/test_lightning195.py trains it with both).
"""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def _data(n: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=generator)
    return TensorDataset(x, x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=generator))


def _seen(metrics) -> list:
    return [(name, round(float(value), 6)) for name, value in sorted(metrics.items())]


def _record(records: list, where: str, trainer) -> int:
    logged, callback = _seen(trainer.logged_metrics), _seen(trainer.callback_metrics)
    records.append({"where": where, "logged": logged, "callback": callback})
    return len(logged) + len(callback)


class LiveMetricsModel(pl.LightningModule):
    def __init__(self, batch_size: int = 8, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        self.records = []

    def parity_records(self) -> dict:
        """What tests/parity/test_parity.py compares: the reads are the events."""
        empty = {"val_points": [], "val_batches": [], "lrs": [], "optimizer_steps": 0, "final": None, "loads": {}}
        return {**empty, "events": self.records}

    def forward(self, x):
        return self.net(x)

    def train_dataloader(self):
        return DataLoader(_data(48, 0), batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(_data(24, 1), batch_size=self.hparams.batch_size)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def on_train_start(self):
        self.log("started", 1.0)
        _record(self.records, "on_train_start", self.trainer)

    def on_train_epoch_start(self):
        self.log("epoch_start", float(self.current_epoch + 1))
        _record(self.records, "on_train_epoch_start", self.trainer)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.log("doubled", loss * 2)
        _record(self.records, f"training_step {batch_idx}", self.trainer)
        return loss

    def on_after_backward(self):
        seen = _record(self.records, "on_after_backward", self.trainer)
        for p in self.parameters():
            if p.grad is not None:
                p.grad.mul_(1.0 + 0.01 * seen)

    def on_before_optimizer_step(self, optimizer, *args):  # 1.9.5 adds the optimizer's index
        _record(self.records, "on_before_optimizer_step", self.trainer)

    def on_validation_epoch_start(self):
        _record(self.records, "on_validation_epoch_start", self.trainer)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("val_loss", loss)
        self.log("val_index", float(batch_idx), on_step=True, on_epoch=True)
        _record(self.records, f"validation_step {batch_idx}", self.trainer)

    def on_validation_epoch_end(self):
        _record(self.records, "on_validation_epoch_end", self.trainer)

    def on_train_epoch_end(self):
        self.log("epoch_end", float(self.current_epoch))
        _record(self.records, "on_train_epoch_end", self.trainer)


class LiveMetricsCallback(pl.Callback):
    """Reads both dicts where the module cannot: between the hooks of the loops, into the module's records."""

    def on_sanity_check_end(self, trainer, pl_module):
        _record(pl_module.records, "cb on_sanity_check_end", trainer)

    def on_train_epoch_start(self, trainer, pl_module):
        _record(pl_module.records, "cb on_train_epoch_start", trainer)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        _record(pl_module.records, "cb on_train_batch_start", trainer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        _record(pl_module.records, "cb on_train_batch_end", trainer)

    def on_validation_start(self, trainer, pl_module):
        _record(pl_module.records, "cb on_validation_start", trainer)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        _record(pl_module.records, "cb on_validation_batch_end", trainer)

    def on_validation_end(self, trainer, pl_module):
        _record(pl_module.records, "cb on_validation_end", trainer)

    def on_train_end(self, trainer, pl_module):
        _record(pl_module.records, "cb on_train_end", trainer)
