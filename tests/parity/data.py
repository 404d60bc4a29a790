"""Synthetic data for the parity cases: generated from torch.Generator seeds, nothing downloaded.

Sizes are chosen so that batch counts do not divide evenly: 150 training samples in batches of 16 are
10 batches (the last one of 6), 70 validation samples are 5 batches (the last one of 6).
"""

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 8
CLASSES = 3
N_TRAIN = 150
N_VAL = 70
BATCH_SIZE = 16


def make_classification(n: int, seed: int, features: int = FEATURES, classes: int = CLASSES) -> TensorDataset:
    """Gaussian blobs around fixed class centres. Uses its own generators: the global random state is untouched."""
    centres = torch.randn(classes, features, generator=torch.Generator().manual_seed(1234)) * 1.5
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = centres[y] + torch.randn(n, features, generator=g)
    return TensorDataset(x, y)


class ShuffledData(pl.LightningDataModule):
    """A data module whose training loader shuffles (drawing from the global RNG when iterated).

    Every call of train_dataloader() returns a fresh loader over a freshly jittered copy of the training set
    (the jitter is seeded by how many times the loader was requested), so reloading the loader at a
    different epoch than Lightning does changes the training, and so does iterating it at a different time.
    """

    def __init__(self, batch_size: int = BATCH_SIZE, n_train: int = N_TRAIN, n_val: int = N_VAL, jitter: float = 0.2):
        super().__init__()
        self.batch_size = batch_size
        self.n_train = n_train
        self.n_val = n_val
        self.jitter = jitter
        self.train_loads = 0

    def setup(self, stage: str) -> None:
        self.train_set = make_classification(self.n_train, seed=0)
        self.val_set = make_classification(self.n_val, seed=1)

    def train_dataloader(self) -> DataLoader:
        self.train_loads += 1
        x, y = self.train_set.tensors
        g = torch.Generator().manual_seed(100 + self.train_loads)
        x = x + self.jitter * torch.randn(x.shape, generator=g)
        return DataLoader(TensorDataset(x, y), batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class HparamsData(ShuffledData):
    """ShuffledData that saves its init arguments: the loggers write them beside the model's."""

    def __init__(self, batch_size: int = BATCH_SIZE, n_train: int = N_TRAIN, n_val: int = N_VAL, jitter: float = 0.2):
        super().__init__(batch_size=batch_size, n_train=n_train, n_val=n_val, jitter=jitter)
        self.save_hyperparameters()


class TransferData(HparamsData):
    """HparamsData whose on_after_batch_transfer, which Lightning calls instead of the module's, jitters the training
    batches with the global generator (augmentation on the device, branching on self.trainer.training) and keeps the
    first row of a tensor (the model's example input, which TensorBoard's graph and the summary pass through it)."""

    def on_after_batch_transfer(self, batch, dataloader_idx):
        if isinstance(batch, torch.Tensor):
            return batch[:1]
        x, y = batch
        if self.trainer.training:
            x = x + 0.1 * torch.randn_like(x)
        return x, y
