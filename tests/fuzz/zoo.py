"""The fuzzer's model zoo: LightningModules and a DataModule written the way public projects write them.

None of them knows it is being tested: they log with `self.log` / `self.log_dict`, keep their hyperparameters
with `save_hyperparameters()`, read `self.hparams`, build their data in `setup` or in the loader hooks, and return
what `configure_optimizers` returns in the forms people use (an optimizer, `[opt], [sched]`, a dict with an
`lr_scheduler` dict, a return decided by an `if` on a hyperparameter, a OneCycleLR sized by
`self.trainer.estimated_stepping_batches`). What the loop did is recorded from outside, by the `Probe` callback
(when a drawn spec has one), which both Lightning and a generated script call with Lightning's signatures.

The data is made from fixed generators (never the global RNG), so both sides see the same samples; shuffling and
dropout draw from the global RNG, which `seed_everything` seeds on both sides.

Every module here imports under Lightning 2.x and 1.9.5: the seed-era models (`TwoOptimizerGAN`,
`TruncatedRegressor`) train with 1.9.5 only.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import (
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    RichProgressBar,
    TQDMProgressBar,
)
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

# every Probe made in this process, in order (a job runs in its own process: the runner reads the last one)
PROBES: list = []


def regression_data(n: int, features: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    w = torch.linspace(-1.0, 1.0, features)
    y = x @ w + 0.1 * torch.randn(n, generator=generator)
    return TensorDataset(x, y)


class Augmented(torch.utils.data.Dataset):
    """A dataset whose samples get noise from torch's generator as they are read (in the loader's workers, which
    Lightning seeds under LightningCLI's seed_everything(workers=True))."""

    def __init__(self, data: TensorDataset) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index):
        x, y = self.data[index]
        return x + 0.05 * torch.randn_like(x), y


def sequence_data(n: int, length: int, features: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, length, features, generator=generator)
    y = x.cumsum(dim=1)[:, :, 0] * 0.5
    return TensorDataset(x, y)


# --- regression: the Lightning docs' style -------------------------------------------------------------------


class LitRegression(pl.LightningModule):
    """An MLP regressor with its own loaders and an SGD optimizer."""

    def __init__(self, features: int = 8, hidden: int = 16, lr: float = 0.05, n_train: int = 96, n_val: int = 40,
                 batch_size: int = 16, shuffle: bool = True, num_workers: int = 0, augment: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.model(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)

    def train_dataloader(self):
        data = regression_data(self.hparams.n_train, self.hparams.features, seed=0)
        data = Augmented(data) if self.hparams.augment else data
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=self.hparams.shuffle,
                          num_workers=self.hparams.num_workers)  # fmt: skip

    def val_dataloader(self):
        data = regression_data(self.hparams.n_val, self.hparams.features, seed=1)
        data = Augmented(data) if self.hparams.augment else data
        return DataLoader(data, batch_size=self.hparams.batch_size, num_workers=self.hparams.num_workers)


class RegressionData(pl.LightningDataModule):
    """LitRegression's data as a data module (its loaders then replace the module's): the sets made in `setup`."""

    def __init__(self, batch_size: int = 16, features: int = 8, n_train: int = 96, n_val: int = 40) -> None:
        super().__init__()
        self.batch_size, self.features, self.n_train, self.n_val = batch_size, features, n_train, n_val

    def setup(self, stage=None):
        self.train_set = regression_data(self.n_train, self.features, seed=0)
        self.val_set = regression_data(self.n_val, self.features, seed=1)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class StepIntervalRegression(LitRegression):
    """An ExponentialLR stepped every `frequency` optimizer steps (interval "step")."""

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step", "frequency": 2}}


class EpochEndRegression(LitRegression):
    """Validation outputs gathered in the step and reduced at the epoch's end, as many 2.x projects do."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.validation_outputs = []

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.validation_outputs.append(loss)
        return loss

    def on_validation_epoch_end(self):
        self.log("val_loss", torch.stack(self.validation_outputs).mean())
        self.validation_outputs.clear()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)]


# --- classification with dropout and a shuffled DataModule ---------------------------------------------------


class ClassificationData(pl.LightningDataModule):
    """Random blobs split into train and validation sets in `setup`, the train loader shuffled."""

    def __init__(self, batch_size: int = 16, n_samples: int = 160, features: int = 10, classes: int = 3) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.n_samples = n_samples
        self.features = features
        self.classes = classes

    def setup(self, stage=None):
        generator = torch.Generator().manual_seed(3)
        centers = torch.randn(self.classes, self.features, generator=generator) * 2
        y = torch.randint(0, self.classes, (self.n_samples,), generator=generator)
        x = centers[y] + torch.randn(self.n_samples, self.features, generator=generator)
        n_val = self.n_samples // 5
        split = random_split(TensorDataset(x, y), [self.n_samples - n_val, n_val], generator=generator)
        self.train_set, self.val_set = split

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class DropoutClassifier(pl.LightningModule):
    """An MLP with dropout (and BatchNorm, by a hyperparameter); the optimizer and scheduler chosen by a
    hyperparameter at run time."""

    def __init__(self, features: int = 10, classes: int = 3, hidden: int = 24, dropout: float = 0.25,
                 lr: float = 0.1, scheduler: str = "none", batch_norm: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        norm = [nn.BatchNorm1d(hidden)] if batch_norm else []
        self.net = nn.Sequential(
            nn.Linear(features, hidden), *norm, nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, classes)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=-1) == y).float().mean()
        self.log_dict({"val_loss": loss, "val_acc": acc}, prog_bar=True)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        if self.hparams.scheduler == "step":
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]
        if self.hparams.scheduler == "plateau":
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}
        return optimizer


class PlateauClassifier(DropoutClassifier):
    """ReduceLROnPlateau on the validation loss, written out."""

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr / 10)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}


class OneCycleClassifier(DropoutClassifier):
    """OneCycleLR over the run's optimizer steps, stepped every step: the fine-tuning recipe."""

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr / 10, weight_decay=0.01)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=self.hparams.lr, total_steps=self.trainer.estimated_stepping_batches
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


# --- a sequence model ------------------------------------------------------------------------------------------


class SequenceRegressor(pl.LightningModule):
    """A GRU over short sequences, predicting the running sum of the first feature."""

    def __init__(self, features: int = 4, hidden: int = 12, length: int = 6, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        return DataLoader(sequence_data(80, self.hparams.length, self.hparams.features, seed=5), batch_size=16)

    def val_dataloader(self):
        return DataLoader(sequence_data(32, self.hparams.length, self.hparams.features, seed=6), batch_size=16)


# --- manual optimization -------------------------------------------------------------------------------------


class ManualGAN(pl.LightningModule):
    """Two optimizers stepped by hand, each network's optimizer toggled, as Lightning's GAN example does."""

    def __init__(self, latent: int = 4, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 2))
        self.discriminator = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), self.hparams.latent)

        self.toggle_optimizer(opt_d)
        fake = self.generator(z).detach()
        d_real = F.binary_cross_entropy_with_logits(self.discriminator(real), torch.ones(real.size(0), 1))
        d_fake = F.binary_cross_entropy_with_logits(self.discriminator(fake), torch.zeros(real.size(0), 1))
        d_loss = (d_real + d_fake) / 2
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(self.generator(z)), torch.ones(real.size(0), 1))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)
        self.log_dict({"g_loss": g_loss, "d_loss": d_loss}, prog_bar=True)

    def validation_step(self, batch, batch_idx):
        (real,) = batch
        self.log("val_loss", self.discriminator(real).mean())

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr, betas=(0.5, 0.999))
        return [opt_g, opt_d], []

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(7)
        return DataLoader(TensorDataset(torch.randn(96, 2, generator=generator) + 1), batch_size=16, shuffle=True)

    def val_dataloader(self):
        generator = torch.Generator().manual_seed(8)
        return DataLoader(TensorDataset(torch.randn(32, 2, generator=generator) + 1), batch_size=16)


class ManualAccumulation(LitRegression):
    """One optimizer stepped by hand every `accumulate` batches, its gradients clipped, its StepLR stepped at
    the epoch's end."""

    def __init__(self, accumulate: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.accumulate = accumulate
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self(x), y) / self.accumulate
        self.manual_backward(loss)
        if (batch_idx + 1) % self.accumulate == 0:
            self.clip_gradients(optimizer, gradient_clip_val=0.5, gradient_clip_algorithm="norm")
            optimizer.step()
            optimizer.zero_grad()
        self.log("train_loss", loss, prog_bar=True)

    def on_train_epoch_end(self):
        self.lr_schedulers().step()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.8)]


# --- the seed's flags: Lightning 1.9.5 only -------------------------------------------------------------------


class TwoOptimizerGAN(pl.LightningModule):
    """Automatic optimization with two optimizers and `optimizer_idx` (Lightning 1.x), optionally frequencies."""

    def __init__(self, latent: int = 4, lr: float = 0.02) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.generator = nn.Sequential(nn.Linear(latent, 12), nn.ReLU(), nn.Linear(12, 2))
        self.discriminator = nn.Sequential(nn.Linear(2, 12), nn.ReLU(), nn.Linear(12, 1))

    def training_step(self, batch, batch_idx, optimizer_idx):
        (real,) = batch
        z = torch.randn(real.size(0), self.hparams.latent)
        if optimizer_idx == 0:
            loss = F.binary_cross_entropy_with_logits(
                self.discriminator(self.generator(z)), torch.ones(real.size(0), 1)
            )
            self.log("g_loss", loss)
            return loss
        fake = self.generator(z).detach()
        d_real = F.binary_cross_entropy_with_logits(self.discriminator(real), torch.ones(real.size(0), 1))
        d_fake = F.binary_cross_entropy_with_logits(self.discriminator(fake), torch.zeros(real.size(0), 1))
        loss = (d_real + d_fake) / 2
        self.log("d_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        (real,) = batch
        self.log("val_loss", self.discriminator(real).mean())

    def configure_optimizers(self):
        opt_g = torch.optim.SGD(self.generator.parameters(), lr=self.hparams.lr)
        opt_d = torch.optim.SGD(self.discriminator.parameters(), lr=self.hparams.lr)
        return [opt_g, opt_d], [torch.optim.lr_scheduler.StepLR(opt_d, step_size=1, gamma=0.5)]

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(9)
        return DataLoader(TensorDataset(torch.randn(80, 2, generator=generator) - 1), batch_size=16, shuffle=True)

    def val_dataloader(self):
        generator = torch.Generator().manual_seed(10)
        return DataLoader(TensorDataset(torch.randn(32, 2, generator=generator) - 1), batch_size=16)


class FrequencyGAN(TwoOptimizerGAN):
    """Two optimizers with frequencies (generator once, discriminator twice), as 1.x dicts."""

    def configure_optimizers(self):
        opt_g = torch.optim.SGD(self.generator.parameters(), lr=self.hparams.lr)
        opt_d = torch.optim.SGD(self.discriminator.parameters(), lr=self.hparams.lr)
        return [{"optimizer": opt_g, "frequency": 1}, {"optimizer": opt_d, "frequency": 2}]


class TruncatedRegressor(pl.LightningModule):
    """Truncated backpropagation through time (1.x): the hidden state carried between splits of a batch."""

    def __init__(self, features: int = 3, hidden: int = 8, length: int = 8, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def training_step(self, batch, batch_idx, hiddens):
        x, y = batch
        out, hiddens = self.rnn(x, hiddens)
        loss = F.mse_loss(self.head(out).squeeze(-1), y)
        self.log("train_loss", loss)
        return {"loss": loss, "hiddens": hiddens}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        out, _ = self.rnn(x)
        self.log("val_loss", F.mse_loss(self.head(out).squeeze(-1), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        data = sequence_data(64, self.hparams.length, self.hparams.features, seed=11)
        return DataLoader(data, batch_size=16, shuffle=True)

    def val_dataloader(self):
        return DataLoader(sequence_data(32, self.hparams.length, self.hparams.features, seed=12), batch_size=16)


# --- what the loop did, recorded from outside --------------------------------------------------------------------


class Probe(pl.Callback):
    """Records the validation points and their batch counts, every optimizer's learning rates at each training
    batch's start and at the end, the optimizer steps, and the final step and epoch."""

    def __init__(self) -> None:
        self.val_points = []
        self.val_batches = []
        self.lrs = []
        self.optimizer_steps = 0
        self.final = None
        PROBES.append(self)

    def on_validation_start(self, trainer, pl_module):
        self.val_points.append((trainer.current_epoch, trainer.global_step, bool(trainer.sanity_checking)))
        self.val_batches.append(0)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.val_batches[-1] += 1

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.lrs.append([group["lr"] for optimizer in trainer.optimizers for group in optimizer.param_groups])

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.optimizer_steps += 1

    def on_train_end(self, trainer, pl_module):
        self.lrs.append([group["lr"] for optimizer in trainer.optimizers for group in optimizer.param_groups])
        self.final = {"global_step": trainer.global_step, "current_epoch": trainer.current_epoch}

    def records(self) -> dict:
        return {
            "val_points": list(self.val_points),
            "val_batches": list(self.val_batches),
            "lrs": list(self.lrs),
            "optimizer_steps": self.optimizer_steps,
            "final": self.final,
        }


class WarmupStopping(EarlyStopping):
    """Early stopping as research code subclasses it: no check in the first `warmup` epochs, whichever hook the
    base checks at; the warmup kept in the callback's state beside the base's."""

    def __init__(self, warmup: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.warmup = warmup

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch >= self.warmup:
            super().on_train_epoch_end(trainer, pl_module)

    def on_validation_end(self, trainer, pl_module):
        if trainer.current_epoch >= self.warmup:
            super().on_validation_end(trainer, pl_module)

    def state_dict(self):
        return {**super().state_dict(), "warmup": self.warmup}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.warmup = state_dict.get("warmup", self.warmup)


class CompactBar(TQDMProgressBar):
    """Lightning's bar without the logger's version, as projects commonly trim it."""

    def get_metrics(self, trainer, pl_module):
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        return items


class CompactRichBar(RichProgressBar):
    """Lightning's rich bar without the logger's version, and the epoch's description of its own."""

    def get_metrics(self, trainer, pl_module):
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        return items

    def _get_train_description(self, current_epoch):
        return f"epoch {current_epoch + 1}"


class PrefixedRates(LearningRateMonitor):
    """Lightning's LearningRateMonitor, its values under a prefix of their own, as projects group them."""

    def _extract_stats(self, trainer, interval):
        return {f"optim/{name}": value for name, value in super()._extract_stats(trainer, interval).items()}


class LateModelCheckpoint(ModelCheckpoint):
    """Lightning's ModelCheckpoint that saves nothing in the first epoch (a warm-up whose scores mean little), and
    keeps the steps it saved at in its state, as projects extend it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.saved_at = []

    def _should_skip_saving_checkpoint(self, trainer):
        return trainer.current_epoch < 1 or super()._should_skip_saving_checkpoint(trainer)

    def _save_checkpoint(self, trainer, filepath):
        super()._save_checkpoint(trainer, filepath)
        self.saved_at.append(trainer.global_step)

    def state_dict(self):
        return {**super().state_dict(), "saved_at": list(self.saved_at)}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.saved_at = list(state_dict.get("saved_at", []))


class Probe195(Probe):
    """The probe for Lightning 1.9.5, whose on_before_optimizer_step also gets the optimizer's index."""

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, opt_idx):
        self.optimizer_steps += 1
