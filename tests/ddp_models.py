"""Models for the DDP tests (tests/test_ddp.py): real LightningModules, trained by Lightning's DDPStrategy and by
loopgen's DDP scripts under torchrun.

`on_train_end` saves the weights to $DDP_SAVE/rank$RANK.pt when DDP_SAVE is set, so that a script run as it is (by
torchrun, without a test driver) leaves them too.
"""

from __future__ import annotations

import os
import time

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from tests.parity.data import CLASSES, FEATURES, make_classification


class DDPNet(pl.LightningModule):
    """An MLP classifier (dropout), SGD with momentum; 90 training and 30 validation samples in batches of 8
    (uneven shares over 2 processes). `plateau`: validation logs val_loss with sync_dist=True and a
    ReduceLROnPlateau reads it. `log_train`: training logs train_loss with sync_dist=True (step and epoch).
    `fail_at`: the process of rank 1 raises at that training batch. `late_start`: the process of rank 1 sleeps that
    many seconds in on_train_start (after the callbacks' on_train_start: its clock then lags rank 0's).
    """

    def __init__(self, dropout: float = 0.2, shuffle: bool = True, lr: float = 0.1, plateau: bool = False,
                 fail_at: int = -1, log_train: bool = False, late_start: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Dropout(dropout), nn.Linear(32, CLASSES))
        self.shuffle = shuffle
        self.lr = lr
        self.plateau = plateau
        self.fail_at = fail_at
        self.log_train = log_train
        self.late_start = late_start

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        if batch_idx == self.fail_at and os.environ.get("RANK") == "1":
            with open(os.environ["DDP_SAVE"] + "/failed_at", "w") as out:
                out.write(str(time.time()))
            raise RuntimeError("rank 1 fails on purpose")
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if self.log_train:
            self.log("train_loss", loss, sync_dist=True, prog_bar=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if self.plateau:
            self.log("val_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        if not self.plateau:
            return optimizer
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}

    def train_dataloader(self):
        return DataLoader(make_classification(90, seed=0), batch_size=8, shuffle=self.shuffle)

    def val_dataloader(self):
        return DataLoader(make_classification(30, seed=1), batch_size=8)

    def on_train_start(self):
        if self.late_start and os.environ.get("RANK") == "1":
            time.sleep(self.late_start)

    def on_train_end(self):
        if os.environ.get("DDP_SAVE"):
            torch.save(self.state_dict(), f"{os.environ['DDP_SAVE']}/rank{os.environ['RANK']}.pt")


class DDPLBFGSNet(DDPNet):
    """DDPNet stepped by LBFGS: the optimizer calls the closure (training_step and backward) several times a step."""

    def configure_optimizers(self):
        return torch.optim.LBFGS(self.parameters(), lr=self.lr, max_iter=5)
