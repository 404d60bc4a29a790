"""Test-only modules reading loaders without a length (IterableDataset): Lightning makes num_training_batches
infinite, ends an epoch when the iterator does and reads one batch ahead to know the last one.

The stream adds noise from the global random generator to every sample, as the model's dropout draws from it too:
reading one batch ahead (or not) changes which numbers each draws, so the weights show the fetcher's order.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, IterableDataset

from tests.parity.data import make_classification
from tests.parity.models import Classifier


class Stream(IterableDataset):
    """The samples of a fixed data set with a little global-RNG noise; `passes` times over it (None: endless)."""

    def __init__(self, n: int, seed: int, passes: int | None = 1) -> None:
        self.data = make_classification(n, seed=seed)
        self.passes = passes

    def __iter__(self):
        done = 0
        while self.passes is None or done < self.passes:
            for x, y in self.data:
                yield x + 0.01 * torch.randn(x.shape), y
            done += 1


class StreamClassifier(Classifier):
    """The classifier on a streamed training set (`passes` None: endless) and a streamed validation set; its hooks
    record what the loop tells them (num_training_batches, batch indices, the epoch's end)."""

    def __init__(self, passes: int | None = 1, n_train: int = 40, n_val: int = 24, batch_size: int = 8) -> None:
        super().__init__()
        self.passes, self.n_train, self.n_val, self.batch_size = passes, n_train, n_val, batch_size

    def train_dataloader(self):
        self.loads["train"] += 1
        return DataLoader(Stream(self.n_train, seed=0, passes=self.passes), batch_size=self.batch_size)

    def val_dataloader(self):
        self.loads["val"] += 1
        return DataLoader(Stream(self.n_val, seed=1), batch_size=self.batch_size)

    def on_train_epoch_start(self):
        self.events.append(("epoch_start", self.current_epoch, float(self.trainer.num_training_batches)))

    def on_train_batch_start(self, batch, batch_idx):
        self.events.append(("batch", batch_idx))

    def on_train_epoch_end(self):
        self.events.append(("epoch_end", self.current_epoch, self.global_step))
