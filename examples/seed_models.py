"""Examples of the seed loop's specialised branches, as LightningModule subclasses.

Two optimizers with frequencies (a small GAN), an RNN trained with truncated backpropagation through time,
and an LBFGS regression. Lightning 2.x's Trainer no longer runs them; loopgen's scripts do, without any
Trainer (importing this module needs pytorch_lightning, 1.9.5 or 2.x, installed).
"""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class GAN(pl.LightningModule):
    """Learns a 2-d Gaussian: the discriminator trains on 1 batch for every 2 the generator trains on."""

    def __init__(self, latent_dim: int = 4, hidden: int = 16, lr: float = 0.01, batch_size: int = 16):
        super().__init__()
        self.save_hyperparameters()
        self.generator = nn.Sequential(nn.Linear(latent_dim, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 2))
        self.discriminator = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx, optimizer_idx):
        (real,) = batch
        z = torch.randn(real.shape[0], self.hparams.latent_dim)
        fake = self.generator(z)
        ones, zeros = torch.ones(real.shape[0], 1), torch.zeros(real.shape[0], 1)
        if optimizer_idx == 0:  # generator: fool the discriminator
            return F.binary_cross_entropy_with_logits(self.discriminator(fake), ones)
        real_loss = F.binary_cross_entropy_with_logits(self.discriminator(real), ones)
        fake_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), zeros)
        return (real_loss + fake_loss) / 2

    def configure_optimizers(self):
        lr = self.hparams.lr
        generator = torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999))
        discriminator = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))
        return [{"optimizer": generator, "frequency": 2}, {"optimizer": discriminator, "frequency": 1}]

    def train_dataloader(self):
        real = torch.randn(200, 2, generator=_generator(0)) * 0.5 + torch.tensor([2.0, -1.0])
        return DataLoader(TensorDataset(real), batch_size=self.hparams.batch_size, shuffle=True)


class SequenceRNN(pl.LightningModule):
    """Predicts a noisy sine wave one step ahead; sequences of 24 steps are trained 8 steps at a time."""

    def __init__(self, hidden: int = 16, lr: float = 0.01, batch_size: int = 8):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.LSTM(1, hidden, batch_first=True)  # hiddens: the pair (h, c)
        self.head = nn.Linear(hidden, 1)

    def training_step(self, batch, batch_idx, hiddens):
        x, y = batch
        out, hiddens = self.rnn(x, hiddens)
        return {"loss": F.mse_loss(self.head(out), y), "hiddens": hiddens}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        g = _generator(0)
        phase = torch.rand(64, 1, generator=g) * 6.28
        t = torch.arange(25).float() * 0.3
        wave = torch.sin(t + phase) + 0.05 * torch.randn(64, 25, generator=g)
        x, y = wave[:, :-1, None], wave[:, 1:, None]
        return DataLoader(TensorDataset(x, y), batch_size=self.hparams.batch_size, shuffle=True)


class LBFGSRegression(pl.LightningModule):
    """Linear regression solved by LBFGS, a closure optimizer: each step re-evaluates the loss several times."""

    def __init__(self, features: int = 8, lr: float = 0.5, max_iter: int = 5):
        super().__init__()
        self.save_hyperparameters()
        self.linear = nn.Linear(features, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.linear(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.linear(x), y))

    def configure_optimizers(self):
        return torch.optim.LBFGS(self.parameters(), lr=self.hparams.lr, max_iter=self.hparams.max_iter)

    def _data(self, n: int, seed: int) -> TensorDataset:
        g = _generator(seed)
        w = torch.randn(self.hparams.features, 1, generator=_generator(99))
        x = torch.randn(n, self.hparams.features, generator=g)
        return TensorDataset(x, x @ w + 0.1 * torch.randn(n, 1, generator=g))

    def train_dataloader(self):
        return DataLoader(self._data(256, 0), batch_size=64)

    def val_dataloader(self):
        return DataLoader(self._data(64, 1), batch_size=64)
