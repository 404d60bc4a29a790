"""The example classifier as a real `LightningModule` subclass: loopgen runs it without Lightning's Trainer.

Importing this module needs `pytorch_lightning` installed; the generated script needs nothing else from it.
"""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from examples.data import make_classification


class LitClassifier(pl.LightningModule):
    def __init__(self, features: int = 16, hidden: int = 64, classes: int = 4, lr: float = 0.05, batch_size: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(dim=1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        return [optimizer], [scheduler]

    def train_dataloader(self) -> DataLoader:
        data = make_classification(512, self.hparams.features, self.hparams.classes, seed=0)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        data = make_classification(128, self.hparams.features, self.hparams.classes, seed=1)
        return DataLoader(data, batch_size=self.hparams.batch_size)
