"""Synthetic data that ships with the examples: generated from a fixed seed, nothing downloaded."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def make_classification(n: int, features: int, classes: int, seed: int) -> TensorDataset:
    """Gaussian blobs around fixed class centers; `seed` picks the samples. Uses its own generators,
    so the global random state is untouched."""
    centers = torch.randn(classes, features, generator=torch.Generator().manual_seed(1234)) * 1.5
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = centers[y] + torch.randn(n, features, generator=g)
    return TensorDataset(x, y)


def make_regression(n: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(features, 1, generator=g)
    x = torch.randn(n, features, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


class ClassificationData:
    """A data class in Lightning's shape: setup(stage), train_dataloader(), val_dataloader()."""

    def __init__(self, batch_size: int = 32, n_train: int = 512, n_val: int = 128, features: int = 16, classes: int = 4):
        self.batch_size = batch_size
        self.sizes = (n_train, n_val)
        self.features = features
        self.classes = classes

    def setup(self, stage: str) -> None:
        n_train, n_val = self.sizes
        self.train_set = make_classification(n_train, self.features, self.classes, seed=0)
        self.val_set = make_classification(n_val, self.features, self.classes, seed=1)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)
