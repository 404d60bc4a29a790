"""Loaders read by worker processes whose samples draw random augmentation, as image, audio and text pipelines do:
each sample adds noise from torch's, Python's and numpy's generators in the worker. Under LightningCLI's
`seed_everything(seed, workers=True)` Lightning gives each loader without a `worker_init_fn` its
`pl_worker_init_function`, which seeds every worker from the seed, its id and the global rank; a loader with a
`worker_init_fn` of its own keeps it. The weights and the validation losses show which seeds the workers had.

Imports under Lightning 2.x and 1.9.5 alike.
"""

import random

import numpy
import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler, get_worker_info


def _tensors(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=generator)
    return x, x.sum(dim=1, keepdim=True)


def _augmented(x: torch.Tensor) -> torch.Tensor:
    """Noise from the three generators a worker has."""
    return x + 0.1 * torch.randn_like(x) + 0.05 * random.random() + 0.05 * float(numpy.random.rand())


class AugmentedSet(Dataset):
    def __init__(self, n: int, seed: int) -> None:
        self.x, self.y = _tensors(n, seed)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index):
        return _augmented(self.x[index]), self.y[index]


class AugmentedStream(IterableDataset):
    """The samples split between the workers (each reads every `num_workers`-th), augmented as they are read."""

    def __init__(self, n: int, seed: int) -> None:
        self.x, self.y = _tensors(n, seed)

    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info is not None else (0, 1)
        for index in range(start, len(self.x), step):
            yield _augmented(self.x[index]), self.y[index]


def own_worker_init(worker_id: int) -> None:
    """A project's own worker seeding, which Lightning keeps."""
    torch.manual_seed(1000 + worker_id)
    random.seed(2000 + worker_id)
    numpy.random.seed(3000 + worker_id)


class WorkerRegression(pl.LightningModule):
    def __init__(self, num_workers: int = 2, persistent_workers: bool = False, own_init: bool = False,
                 stream: bool = False, pin_memory: bool = False, batch_size: int = 8) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        self.records = []

    def parity_records(self) -> dict:
        """What tests/parity/test_parity.py compares: the validation and test losses are the events."""
        empty = {"val_points": [], "val_batches": [], "lrs": [], "optimizer_steps": 0, "final": None, "loads": {}}
        return {**empty, "events": self.records}

    def forward(self, x):
        return self.net(x)

    def _loader(self, n: int, seed: int, shuffle: bool) -> DataLoader:
        h = self.hparams
        data = AugmentedStream(n, seed) if h.stream else AugmentedSet(n, seed)
        return DataLoader(
            data,
            batch_size=h.batch_size,
            shuffle=shuffle and not h.stream,
            num_workers=h.num_workers,
            persistent_workers=h.persistent_workers and h.num_workers > 0,
            worker_init_fn=own_worker_init if h.own_init else None,
            pin_memory=h.pin_memory,
        )

    def train_dataloader(self):
        self.train_loader = self._loader(40, 0, shuffle=True)
        return self.train_loader

    def val_dataloader(self):
        return self._loader(16, 1, shuffle=False)

    def test_dataloader(self):
        return self._loader(16, 2, shuffle=False)

    def on_train_start(self):
        fn = self.train_loader.worker_init_fn  # the loader train_dataloader() returned, as Lightning changed it
        self.records.append(("worker_init_fn", getattr(getattr(fn, "func", fn), "__name__", None)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.records.append(("val", self.current_epoch, batch_idx, round(float(loss), 6)))
        self.log("val_loss", loss)

    def test_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.records.append(("test", batch_idx, round(float(loss), 6)))
        self.log("test_loss", loss)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class EpochShuffle(Sampler):
    """A sampler of the project's own that shuffles by the epoch Lightning gives it (its set_epoch), as
    DistributedSampler does; the epochs it was given are recorded."""

    def __init__(self, size: int, seed: int, seen: list) -> None:
        self.size, self.seed, self.epoch, self.seen = size, seed, 0, seen

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.seen.append(("set_epoch", self.seed, epoch))

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.size, generator=generator).tolist())

    def __len__(self) -> int:
        return self.size


class EpochSampledRegression(WorkerRegression):
    """The training loader shuffled, and the validation loader reordered, by samplers with a set_epoch."""

    def _loader(self, n: int, seed: int, shuffle: bool) -> DataLoader:
        h = self.hparams
        data = AugmentedSet(n, seed)
        sampler = EpochShuffle(n, seed, self.records)
        return DataLoader(data, batch_size=h.batch_size, sampler=sampler, num_workers=h.num_workers)


class NoisySamples(Dataset):
    """A dataset's samples with noise from torch's generator, drawn in the worker that reads them."""

    def __init__(self, dataset) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index):
        x, y = self.dataset[index]
        return x + 0.1 * torch.randn_like(x), y


class WorkerEvalData(pl.LightningDataModule):
    """tests/parity/eval_models.py's EvalData read by two workers whose samples draw noise: every stage's loaders
    (fit's, the sanity check's, validate's, test's and predict's) get Lightning's worker seeding; persistent workers
    optionally."""

    def __init__(self, loaders: int = 1, n_eval: int = 40, drop_last: bool = False, named: bool = False,
                 persistent: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.loaders, self.n_eval, self.drop_last, self.persistent = loaders, n_eval, drop_last, persistent

    def setup(self, stage):
        from tests.parity.data import make_classification

        self.train_set = make_classification(96, seed=0)
        self.eval_sets = [make_classification(self.n_eval + 8 * i, seed=10 + i) for i in range(self.loaders)]

    def _loader(self, dataset, shuffle: bool = False) -> DataLoader:
        from tests.parity.data import BATCH_SIZE

        return DataLoader(NoisySamples(dataset), batch_size=BATCH_SIZE, shuffle=shuffle, num_workers=2,
                          persistent_workers=self.persistent, drop_last=self.drop_last and not shuffle)  # fmt: skip

    def train_dataloader(self):
        return self._loader(self.train_set, shuffle=True)

    def _loaders(self):
        loaders = [self._loader(s) for s in self.eval_sets]
        return loaders[0] if self.loaders == 1 else loaders

    def val_dataloader(self):
        return self._loaders()

    def test_dataloader(self):
        return self._loaders()

    def predict_dataloader(self):
        return self._loaders()
