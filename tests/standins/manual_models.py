"""A LightningModule that optimizes manually and records its calls into the stand-ins' shared list."""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.standins.calls import CALLS


class ManualProbe(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = nn.Linear(2, 1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 2, generator=g), torch.randn(8, 1, generator=g)), batch_size=4)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def training_step(self, batch, batch_idx):
        CALLS.append(("training_step",))
        opt = self.optimizers()
        x, y = batch
        loss = nn.functional.mse_loss(self.layer(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0)
        opt.step()
        CALLS.append(("global_step", self.global_step))

    def on_before_optimizer_step(self, optimizer):
        CALLS.append(("on_before_optimizer_step",))
