"""LightningModules for the TPU tests that write files (checkpoints, logs): the same module trains under
pytorch_lightning.Trainer on the CPU and, rendered with `accelerator: tpu`, against the torch_xla stand-in; its
hook calls go into the stand-ins' shared list."""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.standins.calls import CALLS


class XlaProbe(pl.LightningModule):
    """A linear layer, 16 samples in batches of 4, SGD with momentum (an optimizer state to checkpoint); the
    training and validation losses are logged, the validation loss with sync_dist=True."""

    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(2, 1)

    def _loader(self):
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(16, 2, generator=g), torch.randn(16, 1, generator=g))
        return DataLoader(data, batch_size=4)

    def train_dataloader(self):
        return self._loader()

    def val_dataloader(self):
        return self._loader()

    def configure_optimizers(self):
        CALLS.append(("configure_optimizers",))
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)

    def training_step(self, batch, batch_idx):
        CALLS.append(("training_step",))
        x, y = batch
        loss = nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        CALLS.append(("validation_step",))
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.layer(x), y), sync_dist=True)
