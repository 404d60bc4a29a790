"""LightningModules for the FSDP script's stand-in runs (tests/test_fsdp.py): they record their hooks into the
stand-ins' shared list, so that the order of the strategy's calls around them can be checked."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import nn
from torch.distributed.fsdp.wrap import wrap
from torch.utils.data import DataLoader, TensorDataset

from tests.standins.calls import CALLS


class FSDPProbe(pl.LightningModule):
    """A two-layer MLP regressor, SGD with momentum (so that the optimizer has a state to save); 24 samples in
    batches of 4. `late`: the layers are built in configure_model, the first one wrapped there with torch's wrap()
    (FSDPStrategy's enable_wrap makes that a FullyShardedDataParallel)."""

    def __init__(self, late: bool = False) -> None:
        super().__init__()
        self.late = late
        self.net = None if late else self._layers()

    @staticmethod
    def _layers() -> nn.Sequential:
        return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))

    def configure_model(self):
        CALLS.append(("configure_model",))
        if self.net is None:
            self.net = self._layers()
            self.net[0] = wrap(self.net[0])

    def forward(self, x):
        return self.net(x)

    def _loader(self, seed: int):
        g = torch.Generator().manual_seed(seed)
        return DataLoader(TensorDataset(torch.randn(24, 3, generator=g), torch.randn(24, 1, generator=g)), batch_size=4)

    def train_dataloader(self):
        return self._loader(0)

    def val_dataloader(self):
        return self._loader(1)

    def configure_optimizers(self):
        CALLS.append(("configure_optimizers",))
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)

    def training_step(self, batch, batch_idx):
        CALLS.append(("training_step",))
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        CALLS.append(("validation_step",))
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))
