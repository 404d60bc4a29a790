"""A small LightningModule for the multi-process tests (Horovod, DDP): it imports with pytorch_lightning 1.9.5
and 2.x, and its data come from torch.Generator seeds, so every process builds the same dataset."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def _data(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    return TensorDataset(x, (x[:, :3].sum(dim=1) > 0).long() + (x[:, 3] > 0.5).long())


class Net(pl.LightningModule):
    """An MLP with SGD (momentum) and, optionally, dropout and shuffled data. Validation logs its loss with
    sync_dist=True: the mean over the processes."""

    def __init__(self, lr: float = 0.1, dropout: float = 0.0, shuffle: bool = False) -> None:
        super().__init__()
        self.lr, self.shuffle = lr, shuffle
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)

    def train_dataloader(self):
        return DataLoader(_data(64, 0), batch_size=8, shuffle=self.shuffle)

    def val_dataloader(self):
        return DataLoader(_data(32, 1), batch_size=8)


class NetStepLR(Net):
    """Net with a StepLR schedule (halved every epoch)."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


class NetStepwiseLR(Net):
    """Net with a StepLR stepped per optimizer step (interval "step"): halved every 2 steps."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


class NetLogged(NetStepLR):
    """NetStepLR that logs its training loss on each step and epoch (for the loggers and ModelCheckpoint)."""

    def __init__(self, lr: float = 0.1, dropout: float = 0.0, shuffle: bool = False) -> None:
        super().__init__(lr, dropout, shuffle)
        self.save_hyperparameters()

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        self.log("train_loss", loss, on_step=True, on_epoch=True, sync_dist=True)
        return loss
