"""The benchmark's models: LightningModules that the Trainer, the loopgen script and the hand-written loop
(benchmarks/hand_loops.py) all train.

Each model's data is made from its own generator (it draws nothing from the global random state), so the
only random draws during a run are the weights' initialisation and the training loader's shuffling, in the
same order on every side. `compute_loss` notes the time (and the process's CPU time) each training step
starts, whoever calls it: that is how every side is timed per step, by the same lines.

The `...Compiled` classes log nothing in their steps (the "compiled" configuration). The `...Val` classes add
validation (a loss over 128 samples every epoch) and a StepLR scheduler stepped each
epoch: the "validation + accumulation + clipping + scheduler" configuration.
"""

import time

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_data(kind: str, samples: int, seed: int) -> TensorDataset:
    """`samples` synthetic examples for `kind` ("mlp", "cnn", "lstm"), from a private generator."""
    generator = torch.Generator().manual_seed(seed)
    if kind == "mlp":
        x = torch.randn(samples, 32, generator=generator)
        return TensorDataset(x, x[:, :4].sum(dim=1, keepdim=True).sin())
    if kind == "cnn":
        x = torch.randn(samples, 1, 16, 16, generator=generator)
        return TensorDataset(x, torch.randint(0, 10, (samples,), generator=generator))
    x = torch.randn(samples, 16, 8, generator=generator)
    return TensorDataset(x, x[:, :, 0].cumsum(dim=1)[:, -1:].tanh())


class BenchModule(pl.LightningModule):
    """What the three models share: data, SGD, the step timer."""

    kind = "mlp"

    def __init__(self, lr: float = 0.05, batch_size: int = 32, train_samples: int = 512):
        super().__init__()
        self.save_hyperparameters()
        self.step_times = []  # perf_counter() at each training step's start
        self.step_cpu_times = []  # process_time() there

    def loss_fn(self, output, target):
        return F.mse_loss(output, target)

    def compute_loss(self, batch):
        self.step_times.append(time.perf_counter())
        self.step_cpu_times.append(time.process_time())
        x, y = batch
        return self.loss_fn(self(x), y)

    def training_step(self, batch, batch_idx):
        loss = self.compute_loss(batch)
        self.log("train_loss", loss)
        return loss

    def validation_loss(self, batch):
        x, y = batch
        return self.loss_fn(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        data = make_data(self.kind, self.hparams.train_samples, seed=0)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True)

    def val_loader(self):
        return DataLoader(make_data(self.kind, 128, seed=1), batch_size=self.hparams.batch_size)


class TinyMLP(BenchModule):
    """Linear 32 -> 64 -> 1: the loop's own cost dominates each step."""

    kind = "mlp"

    def __init__(self, lr: float = 0.05, batch_size: int = 32, train_samples: int = 1024):
        super().__init__(lr, batch_size, train_samples)
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


class SmallCNN(BenchModule):
    """Two 3x3 convolutions with pooling over 16x16 images, 10 classes."""

    kind = "cnn"

    def __init__(self, lr: float = 0.05, batch_size: int = 32, train_samples: int = 512):
        super().__init__(lr, batch_size, train_samples)
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 4 * 4, 10),
        )

    def loss_fn(self, output, target):
        return F.cross_entropy(output, target)

    def forward(self, x):
        return self.net(x)


class SmallLSTM(BenchModule):
    """A one-layer LSTM (8 -> 32) over 16 steps, a linear head on the last output."""

    kind = "lstm"

    def __init__(self, lr: float = 0.05, batch_size: int = 32, train_samples: int = 512):
        super().__init__(lr, batch_size, train_samples)
        self.lstm = nn.LSTM(8, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.head(output[:, -1])


# configure_optimizers is written out in each class, as users write it: loopgen reads its source to see
# which schedulers it returns (here: no ReduceLROnPlateau, so nothing reads what self.log records).
class TinyMLPVal(TinyMLP):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.validation_loss(batch))

    def val_dataloader(self):
        return self.val_loader()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.9)}


class SmallCNNVal(SmallCNN):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.validation_loss(batch))

    def val_dataloader(self):
        return self.val_loader()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.9)}


class SmallLSTMVal(SmallLSTM):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.validation_loss(batch))

    def val_dataloader(self):
        return self.val_loader()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.9)}


# The "compiled" configuration: torch.compile on every side. Lightning's compile fails in self.log inside a
# compiled step (torch 2.13), so these steps log nothing (loopgen refuses loop.compile for a step that logs).
class Unlogged:
    def training_step(self, batch, batch_idx):
        return self.compute_loss(batch)


class TinyMLPCompiled(Unlogged, TinyMLP):
    pass


class SmallCNNCompiled(Unlogged, SmallCNN):
    pass


class SmallLSTMCompiled(Unlogged, SmallLSTM):
    pass
