"""Example models: plain `torch.nn.Module`s with Lightning's hook names (no Lightning needed)."""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from examples.data import make_classification


class Classifier(nn.Module):
    """An MLP classifier that brings its own synthetic data (train_dataloader / val_dataloader)."""

    def __init__(self, features: int = 16, hidden: int = 64, classes: int = 4, lr: float = 0.05, batch_size: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, classes))
        self.lr = lr
        self.batch_size = batch_size
        self.features, self.classes = features, classes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)

    def train_dataloader(self) -> DataLoader:
        data = make_classification(512, self.features, self.classes, seed=0)
        return DataLoader(data, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        data = make_classification(128, self.features, self.classes, seed=1)
        return DataLoader(data, batch_size=self.batch_size)


class MLP(nn.Module):
    """A model that takes its data from a separate data class (examples.data.ClassificationData)."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4, lr: float = 1e-3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, classes))
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        return {"loss": F.cross_entropy(self.net(x), y)}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)
