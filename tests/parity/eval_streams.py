"""A LightningDataModule whose evaluation loaders read an IterableDataset (no length), for the evaluation parity
cases (tests/parity/test_evaluation.py): Lightning runs such a loader until it ends (or `limit_*_batches`, an
int), reading one batch ahead, and gives a prediction writer no batch indices."""

import torch
from torch.utils.data import DataLoader, IterableDataset

from tests.parity.data import BATCH_SIZE
from tests.parity.eval_models import EvalData


class Samples(IterableDataset):
    """The samples of a data set, one after the other, each with a little noise from the global random generator
    (the order in which the loop reads them, one batch ahead or not, shows in the numbers)."""

    def __init__(self, data):
        self.data = data

    def __iter__(self):
        for x, y in self.data:
            yield x + 0.01 * torch.randn(x.shape), y


class StreamEvalData(EvalData):
    """EvalData with its validation, test and predict loaders over IterableDatasets."""

    def _loaders(self):
        loaders = [DataLoader(Samples(s), batch_size=BATCH_SIZE) for s in self.eval_sets]
        return loaders[0] if self.loaders == 1 else loaders
