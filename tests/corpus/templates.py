"""Project templates and research code: a LightningModule inside a larger project's plumbing (configs, metrics,
callbacks, schedulers). Each class here is this suite's own code on synthetic data (see tests/corpus/__init__.py).

CASES train alike under Lightning and the rendered script. FINDINGS are cases loopgen gets wrong (a different
training or checkpoint, or a refusal for a wrong reason), each with a comment saying what differs; they stay out
of CASES so that the suite passes."""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.utilities import grad_norm
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split
from torchmetrics import MaxMetric, MeanMetric
from torchmetrics.classification import AUROC, Accuracy

from tests.corpus.cases import corpus_case

CSV_LOGGER = {"class_path": "CSVLogger", "init_args": {"save_dir": "."}}
# the project template's classifier (module, class) and its arguments, for the cases of callbacks around it
CLASSIFIER = ("templates", "TemplateClassifier")
CLASSIFIER_INIT = {"backbone": {"class_path": "tests.corpus.templates.Backbone"}, "learning_rate": 1e-3}


# ---------------------------------------------------------------------------------------------------------------
# Data shared by several cases: seeded random vectors with labels.


class VectorsData(pl.LightningDataModule):
    """Random `features`-dim vectors with `classes` labels, split train/val/test by random_split with its own
    seeded generator (a template's MNIST datamodule, without the download); the batch size divided by the world
    size in setup, as the Hydra template does."""

    def __init__(self, batch_size: int = 32, samples: int = 320, features: int = 64, classes: int = 10,
                 split: tuple = (224, 64, 32)):  # fmt: skip
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.data_train = None
        self.data_val = None
        self.data_test = None
        self.batch_size_per_device = batch_size

    @property
    def num_classes(self) -> int:
        return self.hparams.classes

    def prepare_data(self) -> None:
        pass  # a template downloads here

    def setup(self, stage: str | None = None) -> None:
        if self.trainer is not None:
            self.batch_size_per_device = self.hparams.batch_size // self.trainer.world_size
        if self.data_train is None:
            generator = torch.Generator().manual_seed(0)
            x = torch.randn(self.hparams.samples, self.hparams.features, generator=generator)
            y = torch.randint(0, self.hparams.classes, (self.hparams.samples,), generator=generator)
            x = x + 0.5 * F.one_hot(y, self.hparams.features).float()  # learnable
            self.data_train, self.data_val, self.data_test = random_split(
                TensorDataset(x, y), list(self.hparams.split), generator=torch.Generator().manual_seed(42)
            )

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.data_train, batch_size=self.batch_size_per_device, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.data_val, batch_size=self.batch_size_per_device)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.data_test, batch_size=self.batch_size_per_device, shuffle=True)


class DenseNet(nn.Module):
    """The Hydra template's SimpleDenseNet: a net built from its config and passed to the module."""

    def __init__(self, input_size: int = 64, lin1_size: int = 32, lin2_size: int = 32, output_size: int = 10):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(input_size, lin1_size),
            nn.BatchNorm1d(lin1_size),
            nn.ReLU(),
            nn.Linear(lin1_size, lin2_size),
            nn.BatchNorm1d(lin2_size),
            nn.ReLU(),
            nn.Linear(lin2_size, output_size),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x.view(x.size(0), -1))


# ---------------------------------------------------------------------------------------------------------------
# ashleve/lightning-hydra-template


class HydraMNISTModule(pl.LightningModule):
    """The Hydra template's MNISTLitModule: the net as an init argument, separate torchmetrics objects per stage
    (Accuracy, MeanMetric, MaxMetric) logged with self.log, metrics reset in on_train_start, the best validation
    accuracy so far in on_validation_epoch_end, the optimizer over `self.trainer.model.parameters()` and a
    ReduceLROnPlateau in a dict with monitor, interval and frequency."""

    def __init__(self, net: nn.Module, lr: float = 0.01, weight_decay: float = 0.0, patience: int = 0,
                 compile: bool = False):  # fmt: skip
        super().__init__()
        self.save_hyperparameters(logger=False, ignore=["net"])
        self.net = net
        self.criterion = nn.CrossEntropyLoss()
        self.train_acc = Accuracy(task="multiclass", num_classes=10)
        self.val_acc = Accuracy(task="multiclass", num_classes=10)
        self.test_acc = Accuracy(task="multiclass", num_classes=10)
        self.train_loss = MeanMetric()
        self.val_loss = MeanMetric()
        self.test_loss = MeanMetric()
        self.val_acc_best = MaxMetric()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def on_train_start(self) -> None:
        # the sanity check's validation must not count towards the best accuracy
        self.val_loss.reset()
        self.val_acc.reset()
        self.val_acc_best.reset()

    def model_step(self, batch):
        x, y = batch
        logits = self.forward(x)
        loss = self.criterion(logits, y)
        preds = torch.argmax(logits, dim=1)
        return loss, preds, y

    def training_step(self, batch, batch_idx):
        loss, preds, targets = self.model_step(batch)
        self.train_loss(loss)
        self.train_acc(preds, targets)
        self.log("train/loss", self.train_loss, on_step=False, on_epoch=True, prog_bar=True)
        self.log("train/acc", self.train_acc, on_step=False, on_epoch=True, prog_bar=True)
        return loss

    def on_train_epoch_end(self) -> None:
        pass

    def validation_step(self, batch, batch_idx):
        loss, preds, targets = self.model_step(batch)
        self.val_loss(loss)
        self.val_acc(preds, targets)
        self.log("val/loss", self.val_loss, on_step=False, on_epoch=True, prog_bar=True)
        self.log("val/acc", self.val_acc, on_step=False, on_epoch=True, prog_bar=True)

    def on_validation_epoch_end(self) -> None:
        acc = self.val_acc.compute()
        self.val_acc_best(acc)
        self.log("val/acc_best", self.val_acc_best.compute(), sync_dist=True, prog_bar=True)

    def test_step(self, batch, batch_idx):
        loss, preds, targets = self.model_step(batch)
        self.test_loss(loss)
        self.test_acc(preds, targets)
        self.log("test/loss", self.test_loss, on_step=False, on_epoch=True, prog_bar=True)
        self.log("test/acc", self.test_acc, on_step=False, on_epoch=True, prog_bar=True)

    def setup(self, stage: str) -> None:
        if self.hparams.compile and stage == "fit":
            self.net = torch.compile(self.net)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(
            params=self.trainer.model.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=0.5, patience=self.hparams.patience
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "monitor": "val/loss", "interval": "epoch", "frequency": 1},
        }


# ---------------------------------------------------------------------------------------------------------------
# Lightning-AI/deep-learning-project-template


class TemplateClassifier(pl.LightningModule):
    """The project template's LitClassifier: a backbone object given to the module, only the learning rate saved
    as a hyperparameter, the training loss logged on step and epoch, the validation loss on step, a test_step."""

    def __init__(self, backbone: nn.Module, learning_rate: float = 1e-3):
        super().__init__()
        self.save_hyperparameters("learning_rate")
        self.backbone = backbone

    def forward(self, x):
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.backbone(x), y)
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("valid_loss", F.cross_entropy(self.backbone(x), y), on_step=True)

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.cross_entropy(self.backbone(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)


class Backbone(nn.Module):
    """The project template's two-layer backbone."""

    def __init__(self, hidden_dim: int = 32):
        super().__init__()
        self.l1 = nn.Linear(64, hidden_dim)
        self.l2 = nn.Linear(hidden_dim, 10)

    def forward(self, x):
        return torch.relu(self.l2(torch.relu(self.l1(x.view(x.size(0), -1)))))


# ---------------------------------------------------------------------------------------------------------------
# Research code's ModelCheckpoint subclasses: milestones kept for good, and a "best" copy beside the top k.


class MilestoneCheckpoint(ModelCheckpoint):
    """Ranks files by a metric as its base does, but never removes one saved at a milestone step (the first at
    or after `first_milestone`, then one each `milestone_every` steps on), and keeps the milestones in its state;
    its own saves and removals reported when verbose (the base's own report silenced)."""

    def __init__(self, *args, first_milestone: int = 0, milestone_every: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.first_milestone = first_milestone
        self.milestone_every = milestone_every
        self.milestones: set[int] = set()
        self.last_milestone: int | None = None
        self.reports, self.verbose = self.verbose, False

    @staticmethod
    def step_in_name(filepath: str) -> int | None:
        found = re.search(r"step=(\d+)", Path(filepath).stem)
        return int(found.group(1)) if found else None

    def _save_checkpoint(self, trainer, filepath):
        step = self.step_in_name(filepath)
        due = self.last_milestone is None or step is not None and step >= self.last_milestone + self.milestone_every
        if self.milestone_every > 0 and step is not None and step >= self.first_milestone and due:
            self.last_milestone = step
            self.milestones.add(step)
        super()._save_checkpoint(trainer, filepath)
        if self.reports:
            print(f"saved {Path(filepath).name} (milestones {sorted(self.milestones)})")

    def _remove_checkpoint(self, trainer, filepath):
        if self.step_in_name(filepath) in self.milestones:
            return
        super()._remove_checkpoint(trainer, filepath)

    def state_dict(self):
        return {**super().state_dict(), "milestones": sorted(self.milestones), "last_milestone": self.last_milestone}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.milestones = set(state_dict.get("milestones", []))
        self.last_milestone = state_dict.get("last_milestone")


class CopiesBest(ModelCheckpoint):
    """Puts its files in the run's log directory (trainer.log_dir/checkpoints) and, each time the best file
    changes, copies it to `best.ckpt` beside it with the filesystem object its base holds (`self._fs`): the file
    just saved must be on disk then."""

    CHECKPOINT_NAME_BEST = "best"

    def setup(self, trainer, pl_module, stage):
        if trainer.log_dir:
            self.dirpath = os.path.join(trainer.log_dir, "checkpoints")
        super().setup(trainer, pl_module, stage)

    def _update_best_and_save(self, current, trainer, monitor_candidates):
        super()._update_best_and_save(current, trainer, monitor_candidates)
        best = self.format_checkpoint_name(monitor_candidates, self.CHECKPOINT_NAME_BEST)
        if trainer.is_global_zero and best != self.best_model_path:
            if self._fs.lexists(best):
                self._fs.rm_file(best)
            self._fs.cp_file(self.best_model_path, best)


# ---------------------------------------------------------------------------------------------------------------
# nocotan/pytorch-lightning-gans (WGAN-GP), in Lightning 2.x's manual optimization


class WGANGP(pl.LightningModule):
    """A WGAN-GP: two Adam optimizers in manual optimization, the critic every batch and the generator every
    `n_critic` batches, each inside toggle_optimizer/untoggle_optimizer, a gradient penalty through
    torch.autograd.grad(create_graph=True), losses logged to the bar, a fixed latent buffer sampled at each
    training epoch's end (the generator's BatchNorm in training mode)."""

    def __init__(self, latent_dim: int = 8, lr: float = 2e-4, b1: float = 0.5, b2: float = 0.999,
                 n_critic: int = 3, lambda_gp: float = 10.0):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(
            nn.Linear(latent_dim, 32), nn.BatchNorm1d(32, 0.8), nn.LeakyReLU(0.2), nn.Linear(32, 64), nn.Tanh()
        )
        self.discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
        self.register_buffer("validation_z", torch.randn(8, latent_dim, generator=torch.Generator().manual_seed(1)))

    def forward(self, z):
        return self.generator(z)

    def gradient_penalty(self, real, fake):
        alpha = torch.rand(real.size(0), 1, device=self.device)
        interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        validity = self.discriminator(interpolates)
        gradients = torch.autograd.grad(
            outputs=validity,
            inputs=interpolates,
            grad_outputs=torch.ones_like(validity),
            create_graph=True,
            retain_graph=True,
            only_inputs=True,
        )[0]
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()

    def training_step(self, batch, batch_idx):
        real, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), self.hparams.latent_dim).type_as(real)

        self.toggle_optimizer(opt_d)
        fake = self(z).detach()
        penalty = self.gradient_penalty(real, fake)
        d_loss = -self.discriminator(real).mean() + self.discriminator(fake).mean() + self.hparams.lambda_gp * penalty
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)
        self.log("d_loss", d_loss, prog_bar=True)

        if (batch_idx + 1) % self.hparams.n_critic == 0:
            self.toggle_optimizer(opt_g)
            g_loss = -self.discriminator(self(z)).mean()
            opt_g.zero_grad()
            self.manual_backward(g_loss)
            opt_g.step()
            self.untoggle_optimizer(opt_g)
            self.log("g_loss", g_loss, prog_bar=True)

    def on_train_epoch_end(self) -> None:
        samples = self(self.validation_z.type_as(self.generator[0].weight))
        self.log("sample_std", samples.std())

    def configure_optimizers(self):
        betas = (self.hparams.b1, self.hparams.b2)
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr, betas=betas)
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr, betas=betas)
        return [opt_g, opt_d], []


# ---------------------------------------------------------------------------------------------------------------
# AntixK/PyTorch-VAE


class VanillaVAE(nn.Module):
    """A small VAE with the PyTorch-VAE model interface: forward returns [recons, input, mu, log_var];
    loss_function takes a KL weight; sample and generate."""

    def __init__(self, in_features: int = 64, hidden: int = 32, latent_dim: int = 4):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = nn.Sequential(nn.Linear(in_features, hidden), nn.LeakyReLU())
        self.fc_mu = nn.Linear(hidden, latent_dim)
        self.fc_var = nn.Linear(hidden, latent_dim)
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.LeakyReLU(), nn.Linear(hidden, in_features))

    def forward(self, x):
        h = self.encoder(x)
        mu, log_var = self.fc_mu(h), self.fc_var(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * log_var)
        return [self.decoder(z), x, mu, log_var]

    def loss_function(self, recons, x, mu, log_var, kld_weight: float):
        recons_loss = F.mse_loss(recons, x)
        kld_loss = torch.mean(-0.5 * torch.sum(1 + log_var - mu**2 - log_var.exp(), dim=1), dim=0)
        loss = recons_loss + kld_weight * kld_loss
        return {"loss": loss, "Reconstruction_Loss": recons_loss.detach(), "KLD": -kld_loss.detach()}

    def sample(self, num_samples: int, device):
        return self.decoder(torch.randn(num_samples, self.latent_dim, device=device))

    def generate(self, x):
        return self.forward(x)[0]


class VAEXperiment(pl.LightningModule):
    """PyTorch-VAE's VAEXperiment: the VAE as an init argument, the loss dict's items logged with
    self.log_dict(..., sync_dist=True) as floats, the KL weight from `self.trainer.datamodule`'s sizes,
    images sampled in on_validation_end from the datamodule's test loader (random draws after each
    validation, the sanity check's too), `[optimizers], [schedulers]` lists with an ExponentialLR."""

    def __init__(self, vae_model: nn.Module, LR: float = 5e-3, weight_decay: float = 0.0,
                 scheduler_gamma: float = 0.9):  # fmt: skip
        super().__init__()
        self.save_hyperparameters(ignore=["vae_model"])
        self.model = vae_model
        self.curr_device = None
        self.last_sample_mean = 0.0

    def forward(self, x):
        return self.model(x)

    def kld_weight(self) -> float:
        datamodule = self.trainer.datamodule
        return datamodule.hparams.batch_size / len(datamodule.data_train)

    def training_step(self, batch, batch_idx):
        real, _ = batch
        self.curr_device = real.device
        results = self.forward(real)
        train_loss = self.model.loss_function(*results, kld_weight=self.kld_weight())
        self.log_dict({key: val.item() for key, val in train_loss.items()}, sync_dist=True)
        return train_loss["loss"]

    def validation_step(self, batch, batch_idx):
        real, _ = batch
        self.curr_device = real.device
        results = self.forward(real)
        val_loss = self.model.loss_function(*results, kld_weight=1.0)
        self.log_dict({f"val_{key}": val.item() for key, val in val_loss.items()}, sync_dist=True)

    def on_validation_end(self) -> None:
        self.sample_images()

    def sample_images(self):
        test_input, _ = next(iter(self.trainer.datamodule.test_dataloader()))
        test_input = test_input.to(self.curr_device)
        recons = self.model.generate(test_input)
        samples = self.model.sample(16, self.curr_device)
        self.last_sample_mean = float(recons.mean() + samples.mean())

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(
            self.model.parameters(), lr=self.hparams.LR, weight_decay=self.hparams.weight_decay
        )
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=self.hparams.scheduler_gamma)
        return [optimizer], [scheduler]


class VAEXperimentAppended(VAEXperiment):
    """VAEXperiment with configure_optimizers as PyTorch-VAE writes it: lists built by `append`, the second
    optimizer and the scheduler each under an `if`, `optims, scheds` returned (one optimizer here)."""

    def configure_optimizers(self):
        optims = []
        scheds = []
        optimizer = torch.optim.Adam(
            self.model.parameters(), lr=self.hparams.LR, weight_decay=self.hparams.weight_decay
        )
        optims.append(optimizer)
        if self.hparams.scheduler_gamma is not None:
            scheduler = torch.optim.lr_scheduler.ExponentialLR(optims[0], gamma=self.hparams.scheduler_gamma)
            scheds.append(scheduler)
            return optims, scheds
        return optims


# ---------------------------------------------------------------------------------------------------------------
# lucidrains/byol-pytorch (examples/lightning)


class MLP(nn.Sequential):
    """BYOL's projector / predictor MLP."""

    def __init__(self, dim: int, projection_size: int, hidden_size: int = 32):
        super().__init__(
            nn.Linear(dim, hidden_size), nn.BatchNorm1d(hidden_size), nn.ReLU(), nn.Linear(hidden_size, projection_size)
        )


class UnlabelledData(pl.LightningDataModule):
    """Random vectors only, a training loader alone (self-supervised pre-training)."""

    def __init__(self, batch_size: int = 32, samples: int = 256, features: int = 64):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.features = features

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(3)
        self.train_set = TensorDataset(torch.randn(self.samples, self.features, generator=generator))

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)


class BYOLLearner(pl.LightningModule):
    """BYOL's Lightning example: an online encoder, projector and predictor; a target encoder and projector
    deep-copied with requires_grad off (made by a forward pass in __init__, which draws random numbers and
    moves BatchNorm statistics), updated as a moving average in on_before_zero_grad; two random augmentations
    of each batch; Adam over all parameters (the target's have no gradient)."""

    def __init__(self, features: int = 64, hidden: int = 32, projection: int = 16, lr: float = 3e-4,
                 moving_average_decay: float = 0.99):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.online_encoder = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.online_projector = MLP(hidden, projection)
        self.online_predictor = MLP(projection, projection)
        self.target_encoder = copy.deepcopy(self.online_encoder).requires_grad_(False)
        self.target_projector = copy.deepcopy(self.online_projector).requires_grad_(False)
        self.forward(torch.randn(2, features))  # BYOL's warm-up pass

    def augment(self, x):
        return x * (1 + 0.2 * torch.randn_like(x)) + 0.1 * torch.randn_like(x)

    @staticmethod
    def loss_fn(x, y):
        x = F.normalize(x, dim=-1, p=2)
        y = F.normalize(y, dim=-1, p=2)
        return 2 - 2 * (x * y).sum(dim=-1)

    def forward(self, x):
        one, two = self.augment(x), self.augment(x)
        pred_one = self.online_predictor(self.online_projector(self.online_encoder(one)))
        pred_two = self.online_predictor(self.online_projector(self.online_encoder(two)))
        with torch.no_grad():
            target_one = self.target_projector(self.target_encoder(one)).detach()
            target_two = self.target_projector(self.target_encoder(two)).detach()
        loss = self.loss_fn(pred_one, target_two) + self.loss_fn(pred_two, target_one)
        return loss.mean()

    def training_step(self, batch, batch_idx):
        (x,) = batch
        loss = self.forward(x)
        self.log("loss", loss)
        return {"loss": loss}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def on_before_zero_grad(self, optimizer) -> None:
        beta = self.hparams.moving_average_decay
        pairs = [(self.target_encoder, self.online_encoder), (self.target_projector, self.online_projector)]
        for target, online in pairs:
            for target_p, online_p in zip(target.parameters(), online.parameters()):
                target_p.data = target_p.data * beta + (1 - beta) * online_p.data


# ---------------------------------------------------------------------------------------------------------------
# CompVis/latent-diffusion (ldm/models/diffusion/ddpm.py)


class EmaWeights(nn.Module):
    """An EMA of a module's trainable parameters kept as buffers (with its decay and update count), with
    store / copy_to / restore to swap it in for validation."""

    def __init__(self, model: nn.Module, decay: float = 0.99):
        super().__init__()
        self.names = {}
        self.register_buffer("decay", torch.tensor(decay, dtype=torch.float32))
        self.register_buffer("num_updates", torch.tensor(0, dtype=torch.int))
        for name, p in model.named_parameters():
            if p.requires_grad:
                self.names[name] = name.replace(".", "_")
                self.register_buffer(self.names[name], p.clone().detach())
        self.stored = []

    def forward(self, model: nn.Module) -> None:
        self.num_updates += 1
        decay = min(self.decay.item(), (1 + self.num_updates.item()) / (10 + self.num_updates.item()))
        shadows = dict(self.named_buffers())
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.requires_grad:
                    shadow = shadows[self.names[name]]
                    shadow.sub_((1.0 - decay) * (shadow - p))

    def store(self, parameters) -> None:
        self.stored = [p.clone() for p in parameters]

    def copy_to(self, model: nn.Module) -> None:
        shadows = dict(self.named_buffers())
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.data.copy_(shadows[self.names[name]].data)

    def restore(self, parameters) -> None:
        for stored, p in zip(self.stored, parameters):
            p.data.copy_(stored.data)


class Denoiser(nn.Module):
    """A tiny noise-prediction network: the noisy input and the timestep as a feature."""

    def __init__(self, features: int = 16, hidden: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features + 1, hidden), nn.SiLU(), nn.Linear(hidden, features))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None].float() / 100.0], dim=1))


class SignalsData(pl.LightningDataModule):
    """Random smooth 16-dim signals for the diffusion case; train and val loaders."""

    def __init__(self, batch_size: int = 16, samples: int = 192):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(5)
        phase = torch.rand(self.samples, 1, generator=generator) * 6.28
        signals = torch.sin(torch.linspace(0, 6.28, 16)[None, :] + phase)
        self.train_set = TensorDataset(signals[:160])
        self.val_set = TensorDataset(signals[160:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class DDPM(pl.LightningModule):
    """latent-diffusion's DDPM: the noise schedule as registered buffers, timesteps and noise drawn in the
    training step, an EMA of the model updated in on_train_batch_end and swapped in for a second validation
    pass (ema_scope), log_dict on step and epoch with prog_bar, the global step and the current learning rate
    (read from self.optimizers()) logged on step, AdamW with a warm-up LambdaLR in `[opt], [{"scheduler",
    "interval": "step", "frequency": 1}]`."""

    def __init__(self, timesteps: int = 100, features: int = 16, learning_rate: float = 2e-3,
                 warmup_steps: int = 10, use_ema: bool = True):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = Denoiser(features)
        self.use_ema = use_ema
        if self.use_ema:
            self.model_ema = EmaWeights(self.model)
        betas = torch.linspace(1e-4, 2e-2, timesteps, dtype=torch.float64)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("betas", betas.float())
        self.register_buffer("sqrt_alphas_cumprod", alphas_cumprod.sqrt().float())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", (1.0 - alphas_cumprod).sqrt().float())

    def ema_swap_in(self) -> None:
        self.model_ema.store(self.model.parameters())
        self.model_ema.copy_to(self.model)

    def shared_step(self, batch, prefix: str):
        (x,) = batch
        t = torch.randint(0, self.hparams.timesteps, (x.shape[0],), device=self.device).long()
        noise = torch.randn_like(x)
        x_noisy = self.sqrt_alphas_cumprod[t, None] * x + self.sqrt_one_minus_alphas_cumprod[t, None] * noise
        loss = F.mse_loss(self.model(x_noisy, t), noise)
        return loss, {f"{prefix}/loss_simple": loss, f"{prefix}/loss": loss}

    def training_step(self, batch, batch_idx):
        loss, loss_dict = self.shared_step(batch, "train")
        self.log_dict(loss_dict, prog_bar=True, logger=True, on_step=True, on_epoch=True)
        self.log("global_step", float(self.global_step), prog_bar=True, logger=True, on_step=True, on_epoch=False)
        lr = self.optimizers().param_groups[0]["lr"]
        self.log("lr_abs", lr, prog_bar=True, logger=True, on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        _, loss_dict_no_ema = self.shared_step(batch, "val")
        self.ema_swap_in()
        _, loss_dict_ema = self.shared_step(batch, "val")
        self.model_ema.restore(self.model.parameters())
        loss_dict_ema = {key + "_ema": value for key, value in loss_dict_ema.items()}
        self.log_dict(loss_dict_no_ema, prog_bar=False, logger=True, on_step=False, on_epoch=True)
        self.log_dict(loss_dict_ema, prog_bar=False, logger=True, on_step=False, on_epoch=True)

    def on_train_batch_end(self, *args, **kwargs):
        if self.use_ema:
            self.model_ema(self.model)

    def warmup(self, step: int) -> float:
        return min(1.0, (step + 1) / self.hparams.warmup_steps)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(list(self.model.parameters()), lr=self.hparams.learning_rate)
        scheduler = [
            {
                "scheduler": torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=self.warmup),
                "interval": "step",
                "frequency": 1,
            }
        ]
        return [opt], scheduler


class DDPMEmaValidation(DDPM):
    """The DDPM validating with the EMA weights only: swapped into the model in on_validation_start and the
    training weights restored in on_validation_end, as many diffusion repositories do it."""

    def on_validation_start(self) -> None:
        if self.use_ema:
            self.ema_swap_in()

    def on_validation_end(self) -> None:
        if self.use_ema:
            self.model_ema.restore(self.model.parameters())

    def validation_step(self, batch, batch_idx):
        _, loss_dict = self.shared_step(batch, "val")
        self.log_dict(loss_dict, prog_bar=False, logger=True, on_step=False, on_epoch=True)


# ---------------------------------------------------------------------------------------------------------------
# huggingface/transformers (examples/research_projects/seq2seq-distillation/lightning_base.py)


class ReverseData(pl.LightningDataModule):
    """Random token sequences and their reversal (a toy translation task); 0 is the start token."""

    def __init__(self, batch_size: int = 16, samples: int = 192, length: int = 6, vocab: int = 12):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.length = length
        self.vocab = vocab

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(11)
        src = torch.randint(1, self.vocab, (self.samples, self.length), generator=generator)
        tgt = src.flip(1)
        self.train_set = TensorDataset(src[:160], tgt[:160])
        self.val_set = TensorDataset(src[160:], tgt[160:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class LrGroupsLogger(pl.Callback):
    """lightning_base's LoggingCallback: each learning-rate group's value after every training batch, written
    straight to the logger from the trainer's scheduler config."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        scheduler = trainer.lr_scheduler_configs[0].scheduler
        lrs = {f"lr_group_{i}": lr for i, lr in enumerate(scheduler.get_last_lr())}
        pl_module.logger.log_metrics(lrs, step=trainer.global_step)


class Seq2SeqModule(pl.LightningModule):
    """A seq2seq fine-tuning module in the transformers examples' style: AdamW over two parameter groups
    (no weight decay for biases and norms), a linear warm-up/decay LambdaLR over
    `self.trainer.estimated_stepping_batches` stepped per optimizer step, teacher forcing, the loss and the
    learning rate logged in training_step, the validation loss on the bar."""

    def __init__(self, vocab: int = 12, hidden: int = 32, learning_rate: float = 3e-3, weight_decay: float = 0.01,
                 adam_epsilon: float = 1e-8, warmup_steps: int = 3):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        decoder_input = torch.cat([torch.zeros_like(tgt[:, :1]), tgt[:, :-1]], dim=1)
        _, state = self.encoder(self.embed(src))
        out, _ = self.decoder(self.embed(decoder_input), state)
        return self.lm_head(self.norm(out))

    def _step(self, batch):
        src, tgt = batch
        logits = self(src, tgt)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))

    def training_step(self, batch, batch_idx):
        loss = self._step(batch)
        self.log("loss", loss)
        self.log("lr", self.lr_schedulers().get_last_lr()[0])
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._step(batch), prog_bar=True)

    def total_steps(self) -> int:
        return self.trainer.estimated_stepping_batches

    def configure_optimizers(self):
        no_decay = ["bias", "norm.weight"]
        named = list(self.named_parameters())
        groups = [
            {
                "params": [p for n, p in named if not any(nd in n for nd in no_decay)],
                "weight_decay": self.hparams.weight_decay,
            },
            {"params": [p for n, p in named if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(groups, lr=self.hparams.learning_rate, eps=self.hparams.adam_epsilon)
        warmup, total = self.hparams.warmup_steps, self.total_steps()

        def lr_lambda(step: int) -> float:
            if step < warmup:
                return float(step) / float(max(1, warmup))
            return max(0.0, float(total - step) / float(max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
        return [optimizer], [{"scheduler": scheduler, "interval": "step", "frequency": 1}]


# ---------------------------------------------------------------------------------------------------------------
# Spijkervet/SimCLR (main_pl.py)


class TwoViews(Dataset):
    """A dataset whose __getitem__ draws two random augmentations of a sample (SimCLR's transform), from the
    global generator, in the loader's order."""

    def __init__(self, x: torch.Tensor):
        self.x = x

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index):
        x = self.x[index]
        return (x + 0.2 * torch.randn_like(x), x * (1 + 0.2 * torch.randn_like(x))), 0


class ViewsData(pl.LightningDataModule):
    """Two augmented views per sample, a training loader alone."""

    def __init__(self, batch_size: int = 32, samples: int = 192):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        self.train_set = TwoViews(torch.randn(self.samples, 64, generator=torch.Generator().manual_seed(9)))

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)


class ContrastiveLearning(pl.LightningModule):
    """SimCLR's Lightning module: an encoder and a projection head, the NT-Xent loss of two views, the optimizer
    chosen by the `optimizer` hyperparameter ("Adam", or "LARS" stood in for by SGD with a CosineAnnealingLR
    over `self.trainer.max_epochs`), returned as {"optimizer", "lr_scheduler": scheduler} or {"optimizer"}."""

    def __init__(self, projection_dim: int = 8, temperature: float = 0.5, optimizer: str = "Adam",
                 batch_size: int = 32, weight_decay: float = 1e-6):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 32))
        self.projector = nn.Sequential(
            nn.Linear(32, 32, bias=False), nn.ReLU(), nn.Linear(32, projection_dim, bias=False)
        )

    def nt_xent(self, z_i, z_j):
        n = z_i.size(0)
        z = F.normalize(torch.cat([z_i, z_j], dim=0), dim=1)
        sim = z @ z.t() / self.hparams.temperature
        sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
        return F.cross_entropy(sim, targets)

    def forward(self, x_i, x_j):
        return self.nt_xent(self.projector(self.encoder(x_i)), self.projector(self.encoder(x_j)))

    def training_step(self, batch, batch_idx):
        (x_i, x_j), _ = batch
        loss = self.forward(x_i, x_j)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        scheduler = None
        if self.hparams.optimizer == "Adam":
            optimizer = torch.optim.Adam(self.parameters(), lr=3e-4)
        elif self.hparams.optimizer == "LARS":
            learning_rate = 0.3 * self.hparams.batch_size / 256
            optimizer = torch.optim.SGD(
                self.parameters(), lr=learning_rate, momentum=0.9, weight_decay=self.hparams.weight_decay
            )
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
                optimizer, self.trainer.max_epochs, eta_min=0, last_epoch=-1
            )
        else:
            raise NotImplementedError
        if scheduler:
            return {"optimizer": optimizer, "lr_scheduler": scheduler}
        return {"optimizer": optimizer}


# ---------------------------------------------------------------------------------------------------------------
# Lightning-Universe/lightning-bolts (pl_bolts/models/self_supervised/moco/moco2_module.py)


class MocoV2(pl.LightningModule):
    """MoCo v2: a query encoder and a momentum key encoder (updated under no_grad in training_step), a queue of
    negatives as registered buffers changed in place with its pointer, InfoNCE over the queue, top-1/top-5
    accuracy logged with log_dict on training and validation, SGD with momentum and a CosineAnnealingLR over
    `self.trainer.max_epochs`."""

    def __init__(self, emb_dim: int = 16, num_negatives: int = 64, encoder_momentum: float = 0.99,
                 softmax_temperature: float = 0.2, learning_rate: float = 0.03, momentum: float = 0.9,
                 weight_decay: float = 1e-4):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder_q = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, emb_dim))
        self.encoder_k = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, emb_dim))
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(emb_dim, num_negatives), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))
        self.register_buffer("val_queue", F.normalize(torch.randn(emb_dim, num_negatives), dim=0))
        self.register_buffer("val_queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self) -> None:
        m = self.hparams.encoder_momentum
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * m + param_q.data * (1.0 - m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys, queue, queue_ptr) -> None:
        batch_size = keys.shape[0]
        ptr = int(queue_ptr)
        queue[:, ptr : ptr + batch_size] = keys.T
        queue_ptr[0] = (ptr + batch_size) % self.hparams.num_negatives

    def forward(self, img_q, img_k, queue):
        q = F.normalize(self.encoder_q(img_q), dim=1)
        with torch.no_grad():
            k = F.normalize(self.encoder_k(img_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.hparams.softmax_temperature
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        return logits, labels, k

    @staticmethod
    def precision_at_k(output, target, top_k=(1, 5)):
        with torch.no_grad():
            _, pred = output.topk(max(top_k), 1, True, True)
            correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
            return [correct[:k].reshape(-1).float().sum(0) * 100.0 / target.size(0) for k in top_k]

    def training_step(self, batch, batch_idx):
        (img_1, img_2), _ = batch
        self._momentum_update_key_encoder()
        output, target, keys = self(img_q=img_1, img_k=img_2, queue=self.queue)
        self._dequeue_and_enqueue(keys, queue=self.queue, queue_ptr=self.queue_ptr)
        loss = F.cross_entropy(output.float(), target.long())
        acc1, acc5 = self.precision_at_k(output, target, top_k=(1, 5))
        self.log_dict({"train_loss": loss, "train_acc1": acc1, "train_acc5": acc5})
        return loss

    def validation_step(self, batch, batch_idx):
        (img_1, img_2), _ = batch
        output, target, keys = self(img_q=img_1, img_k=img_2, queue=self.val_queue)
        self._dequeue_and_enqueue(keys, queue=self.val_queue, queue_ptr=self.val_queue_ptr)
        loss = F.cross_entropy(output, target.long())
        acc1, acc5 = self.precision_at_k(output, target, top_k=(1, 5))
        self.log_dict({"val_loss": loss, "val_acc1": acc1, "val_acc5": acc5}, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(
            self.parameters(),
            self.hparams.learning_rate,
            momentum=self.hparams.momentum,
            weight_decay=self.hparams.weight_decay,
        )
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, self.trainer.max_epochs)
        return [optimizer], [scheduler]


class MocoViewsData(ViewsData):
    """Two views per sample for training and validation (the validation set's own 64 samples)."""

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(13)
        x = torch.randn(self.samples + 64, 64, generator=generator)
        self.train_set = TwoViews(x[: self.samples])
        self.val_set = TwoViews(x[self.samples :])

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, drop_last=True)


# ---------------------------------------------------------------------------------------------------------------
# ewencedr/particle_fm (src/models/jetclass_classifiers.py, a research project on the Hydra template)


class JetTagger(pl.LightningModule):
    """A binary tagger on the Hydra template: torchmetrics Accuracy, AUROC and MeanMetric logged on step and on
    epoch (validation too), best-so-far MaxMetrics, per-epoch prediction lists opened in
    on_validation_epoch_start and concatenated in on_validation_epoch_end, layer gradient norms (Lightning's
    grad_norm) logged in on_before_optimizer_step, a ReduceLROnPlateau dict monitoring the MeanMetric's name."""

    def __init__(self, lr: float = 3e-3, hidden: int = 32, patience: int = 0):
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.mod = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.criterion = nn.CrossEntropyLoss()
        self.train_acc = Accuracy(task="binary")
        self.val_acc = Accuracy(task="binary")
        self.train_auc = AUROC(task="binary")
        self.val_auc = AUROC(task="binary")
        self.train_loss = MeanMetric()
        self.val_loss = MeanMetric()
        self.val_acc_best = MaxMetric()
        self.val_auc_best = MaxMetric()

    def forward(self, x):
        return self.mod(x)

    def on_before_optimizer_step(self, optimizer):
        norms = grad_norm(self.mod, norm_type=2)
        values = torch.tensor([value for key, value in norms.items() if key != "grad_2.0_norm_total"])
        self.log("grad_norm_max", values.max(), on_step=True, on_epoch=True)
        self.log("grad_norm_mean", values.mean(), on_step=True, on_epoch=True)

    def on_train_start(self) -> None:
        self.val_loss.reset()
        self.val_acc.reset()
        self.val_acc_best.reset()
        self.val_auc.reset()
        self.val_auc_best.reset()

    def model_step(self, batch):
        x, y = batch
        labels = (y % 2).long()
        logits = self.forward(x)
        return self.criterion(logits, labels), torch.softmax(logits, dim=1)[:, 1], labels

    def training_step(self, batch, batch_idx):
        loss, preds, targets = self.model_step(batch)
        self.train_loss(loss)
        self.train_acc(preds, targets)
        self.train_auc(preds, targets)
        self.log("train_loss", self.train_loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("train_acc", self.train_acc, on_step=True, on_epoch=True, prog_bar=True)
        self.log("train_auc", self.train_auc, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def on_validation_epoch_start(self) -> None:
        self.val_preds_list = []
        self.val_labels_list = []

    def validation_step(self, batch, batch_idx):
        loss, preds, targets = self.model_step(batch)
        self.val_preds_list.append(preds.detach().cpu().numpy())
        self.val_labels_list.append(targets.detach().cpu().numpy())
        self.val_loss(loss)
        self.val_acc(preds, targets)
        self.val_auc(preds, targets)
        self.log("val_loss", self.val_loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("val_acc", self.val_acc, on_step=True, on_epoch=True, prog_bar=True)
        self.log("val_auc", self.val_auc, on_step=True, on_epoch=True, prog_bar=True)

    def on_validation_epoch_end(self) -> None:
        self.val_acc_best(self.val_acc.compute())
        self.val_auc_best(self.val_auc.compute())
        self.log("val_acc_best", self.val_acc_best.compute(), sync_dist=True, prog_bar=True)
        self.log("val_auc_best", self.val_auc_best.compute(), sync_dist=True, prog_bar=True)
        self.val_preds = np.concatenate(self.val_preds_list)
        self.val_labels = np.concatenate(self.val_labels_list)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=self.hparams.patience)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss", "interval": "epoch", "frequency": 1},
        }


# ---------------------------------------------------------------------------------------------------------------
# CompVis/taming-transformers (taming/models/vqgan.py), in Lightning 2.x's manual optimization


class Quantizer(nn.Module):
    """A nearest-codebook vector quantizer with the straight-through estimator and the codebook losses."""

    def __init__(self, n_embed: int = 16, embed_dim: int = 4, beta: float = 0.25):
        super().__init__()
        self.beta = beta
        self.embedding = nn.Embedding(n_embed, embed_dim)
        self.embedding.weight.data.uniform_(-1.0 / n_embed, 1.0 / n_embed)

    def forward(self, z):
        indices = torch.cdist(z, self.embedding.weight).argmin(dim=1)
        z_q = self.embedding(indices)
        loss = self.beta * torch.mean((z_q.detach() - z) ** 2) + torch.mean((z_q - z.detach()) ** 2)
        return z + (z_q - z).detach(), loss, indices


class VQLossWithDiscriminator(nn.Module):
    """taming's VQLPIPSWithDiscriminator, small: the reconstruction and codebook losses, a discriminator that
    starts at `disc_start` (global steps), the generator's weight adapted from the last layer's gradients."""

    def __init__(self, disc_start: int = 6, codebook_weight: float = 1.0, disc_weight: float = 0.8):
        super().__init__()
        self.disc_start = disc_start
        self.codebook_weight = codebook_weight
        self.disc_weight = disc_weight
        self.discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def adaptive_weight(self, nll_loss, g_loss, last_layer):
        nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
        g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
        weight = torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4)
        return torch.clamp(weight, 0.0, 1e4).detach() * self.disc_weight

    def forward(self, codebook_loss, inputs, reconstructions, optimizer_idx, global_step, last_layer=None,
                split="train"):  # fmt: skip
        disc_factor = 1.0 if global_step >= self.disc_start else 0.0
        if optimizer_idx == 0:
            nll_loss = torch.abs(inputs - reconstructions).mean()
            g_loss = -self.discriminator(reconstructions).mean()
            d_weight = self.adaptive_weight(nll_loss, g_loss, last_layer) if self.training else torch.tensor(0.0)
            loss = nll_loss + d_weight * disc_factor * g_loss + self.codebook_weight * codebook_loss.mean()
            log = {f"{split}/total_loss": loss.detach(), f"{split}/nll_loss": nll_loss.detach(),
                   f"{split}/d_weight": d_weight.detach(), f"{split}/g_loss": g_loss.detach()}  # fmt: skip
            return loss, log
        logits_real = self.discriminator(inputs.detach())
        logits_fake = self.discriminator(reconstructions.detach())
        d_loss = disc_factor * 0.5 * (F.relu(1.0 - logits_real).mean() + F.relu(1.0 + logits_fake).mean())
        return d_loss, {f"{split}/disc_loss": d_loss.detach(), f"{split}/logits_real": logits_real.mean().detach()}


class VQModel(pl.LightningModule):
    """taming's VQModel: encoder, quantizer and decoder against a discriminator held by the loss module, two Adams
    over explicit parameter lists (betas 0.5, 0.9) returned as `[opt_ae, opt_disc], []`, the discriminator
    switched on by global_step (two optimizer steps a batch in manual optimization), log and log_dict on step and
    epoch with prog_bar, validation losses logged on step too."""

    def __init__(self, learning_rate: float = 1e-3, embed_dim: int = 4, n_embed: int = 16, disc_start: int = 6):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.learning_rate = learning_rate
        self.encoder = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, embed_dim))
        self.quantize = Quantizer(n_embed, embed_dim)
        self.decoder = nn.Sequential(nn.Linear(embed_dim, 32), nn.ReLU(), nn.Linear(32, 64))
        self.loss = VQLossWithDiscriminator(disc_start=disc_start)

    def forward(self, x):
        quant, diff, _ = self.quantize(self.encoder(x))
        return self.decoder(quant), diff

    def get_last_layer(self):
        return self.decoder[-1].weight

    def training_step(self, batch, batch_idx):
        x, _ = batch
        opt_ae, opt_disc = self.optimizers()
        xrec, qloss = self(x)

        aeloss, log_dict_ae = self.loss(qloss, x, xrec, 0, self.global_step, last_layer=self.get_last_layer())
        opt_ae.zero_grad()
        self.manual_backward(aeloss)
        opt_ae.step()
        self.log("train/aeloss", aeloss, prog_bar=True, logger=True, on_step=True, on_epoch=True)
        self.log_dict(log_dict_ae, prog_bar=False, logger=True, on_step=True, on_epoch=True)

        discloss, log_dict_disc = self.loss(qloss, x, xrec.detach(), 1, self.global_step)
        opt_disc.zero_grad()
        self.manual_backward(discloss)
        opt_disc.step()
        self.log("train/discloss", discloss, prog_bar=True, logger=True, on_step=True, on_epoch=True)
        self.log_dict(log_dict_disc, prog_bar=False, logger=True, on_step=True, on_epoch=True)

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        xrec, qloss = self(x)
        aeloss, log_dict_ae = self.loss(qloss, x, xrec, 0, self.global_step, split="val")
        _, log_dict_disc = self.loss(qloss, x, xrec, 1, self.global_step, split="val")
        rec_loss = log_dict_ae["val/nll_loss"]
        self.log("val/rec_loss", rec_loss, prog_bar=True, logger=True, on_step=True, on_epoch=True, sync_dist=True)
        self.log("val/aeloss", aeloss, prog_bar=True, logger=True, on_step=True, on_epoch=True, sync_dist=True)
        self.log_dict(log_dict_ae)
        self.log_dict(log_dict_disc)

    def configure_optimizers(self):
        lr = self.learning_rate
        opt_ae = torch.optim.Adam(
            list(self.encoder.parameters()) + list(self.decoder.parameters()) + list(self.quantize.parameters()),
            lr=lr,
            betas=(0.5, 0.9),
        )
        opt_disc = torch.optim.Adam(self.loss.discriminator.parameters(), lr=lr, betas=(0.5, 0.9))
        return [opt_ae, opt_disc], []


class VQModelScheduled(VQModel):
    """VQModel as Lightning 2.x ports of it write the steps: gradients clipped by self.clip_gradients before each
    step, a StepLR per optimizer returned as `[opt_ae, opt_disc], [sch_ae, sch_disc]`, stepped by the module from
    self.lr_schedulers() when trainer.is_last_batch, the learning rate logged at the epoch's end."""

    def training_step(self, batch, batch_idx):
        x, _ = batch
        opt_ae, opt_disc = self.optimizers()
        xrec, qloss = self(x)

        self.toggle_optimizer(opt_ae)
        aeloss, log_dict_ae = self.loss(qloss, x, xrec, 0, self.global_step, last_layer=self.get_last_layer())
        opt_ae.zero_grad(set_to_none=True)
        self.manual_backward(aeloss)
        self.clip_gradients(opt_ae, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt_ae.step()
        self.untoggle_optimizer(opt_ae)

        self.toggle_optimizer(opt_disc)
        discloss, log_dict_disc = self.loss(qloss, x, xrec.detach(), 1, self.global_step)
        opt_disc.zero_grad(set_to_none=True)
        self.manual_backward(discloss)
        self.clip_gradients(opt_disc, gradient_clip_val=0.5, gradient_clip_algorithm="value")
        opt_disc.step()
        self.untoggle_optimizer(opt_disc)
        self.log_dict({**log_dict_ae, **log_dict_disc}, prog_bar=True, batch_size=x.shape[0])

        if self.trainer.is_last_batch:
            sch_ae, sch_disc = self.lr_schedulers()
            sch_ae.step()
            sch_disc.step()

    def on_train_epoch_end(self) -> None:
        sch_ae, _ = self.lr_schedulers()
        self.log("lr/ae", sch_ae.get_last_lr()[0], on_epoch=True, prog_bar=True)

    def configure_optimizers(self):
        lr = self.learning_rate
        params = list(self.encoder.parameters()) + list(self.decoder.parameters()) + list(self.quantize.parameters())
        opt_ae = torch.optim.Adam(params, lr=lr, betas=(0.5, 0.9))
        opt_disc = torch.optim.Adam(self.loss.discriminator.parameters(), lr=lr, betas=(0.5, 0.9))
        sch_ae = torch.optim.lr_scheduler.StepLR(opt_ae, step_size=1, gamma=0.5)
        sch_disc = torch.optim.lr_scheduler.StepLR(opt_disc, step_size=1, gamma=0.5)
        return [opt_ae, opt_disc], [sch_ae, sch_disc]


# ---------------------------------------------------------------------------------------------------------------
# Lightning-Universe/lightning-bolts (src/pl_bolts/models/self_supervised/byol/byol_module.py and
# src/pl_bolts/callbacks/byol_updates.py)


class MAWeightUpdate(pl.Callback):
    """bolts' BYOLMAWeightUpdate: the target network moved towards the online one by tau, tau raised along a
    cosine from `len(trainer.train_dataloader) * trainer.max_epochs` and the module's global step."""

    def __init__(self, initial_tau: float = 0.99):
        super().__init__()
        self.initial_tau = initial_tau
        self.current_tau = initial_tau

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        for online_p, target_p in zip(pl_module.online_network.parameters(), pl_module.target_network.parameters()):
            target_p.data = self.current_tau * target_p.data + (1.0 - self.current_tau) * online_p.data
        max_steps = len(trainer.train_dataloader) * trainer.max_epochs
        progress = math.cos(math.pi * pl_module.global_step / max_steps) + 1
        self.current_tau = 1 - (1 - self.initial_tau) * progress / 2


class SiameseArm(nn.Module):
    """An encoder, projector and predictor; forward returns (representation, projection, prediction)."""

    def __init__(self, features: int = 64, hidden: int = 32, projection: int = 16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.projector = MLP(hidden, projection)
        self.predictor = MLP(projection, projection)

    def forward(self, x):
        y = self.encoder(x)
        z = self.projector(y)
        return y, z, self.predictor(z)


class BoltsBYOL(pl.LightningModule):
    """bolts' BYOL: online and target SiameseArms, the moving-average callback held by the module and called from
    its own on_train_batch_end with self.trainer, the symmetric cosine loss logged with log_dict, SGD with a
    SequentialLR (linear warm-up, then cosine) over epochs in `[optimizer], [scheduler]`."""

    def __init__(self, learning_rate: float = 0.05, weight_decay: float = 1.5e-6, warmup_epochs: int = 1,
                 initial_tau: float = 0.99):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.online_network = SiameseArm()
        self.target_network = copy.deepcopy(self.online_network)
        self.weight_callback = MAWeightUpdate(initial_tau=initial_tau)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.weight_callback.on_train_batch_end(self.trainer, self, outputs, batch, batch_idx)

    def cosine_loss(self, a, b):
        return -2 * F.cosine_similarity(a, b.detach(), dim=-1).mean()

    def training_step(self, batch, batch_idx):
        (img_1, img_2), _ = batch
        _, _, h1 = self.online_network(img_1)
        with torch.no_grad():
            _, z2, _ = self.target_network(img_2)
        loss_a = self.cosine_loss(h1, z2)
        _, _, h2 = self.online_network(img_2)
        with torch.no_grad():
            _, z1, _ = self.target_network(img_1)
        loss_b = self.cosine_loss(h2, z1)
        total_loss = loss_a + loss_b
        self.log_dict({"1_2_loss": loss_a, "2_1_loss": loss_b, "train_loss": total_loss})
        return total_loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(
            self.online_network.parameters(), lr=self.hparams.learning_rate, weight_decay=self.hparams.weight_decay
        )
        warmup = self.hparams.warmup_epochs
        scheduler = torch.optim.lr_scheduler.SequentialLR(
            optimizer,
            schedulers=[
                torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=warmup),
                torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.trainer.max_epochs - warmup),
            ],
            milestones=[warmup],
        )
        return [optimizer], [scheduler]


# ---------------------------------------------------------------------------------------------------------------
# huggingface/transformers lightning_base.py, with the loaders on the module


class Seq2SeqOwnLoaders(Seq2SeqModule):
    """lightning_base's BaseTransformer data plumbing: the loaders made in the module's setup and returned by its
    own train_dataloader / val_dataloader (no datamodule), the data set's size read in setup, total steps
    computed from hparams (batch size, accumulation, max_epochs) as a float."""

    def __init__(self, train_batch_size: int = 16, accumulate_grad_batches: int = 2, max_epochs: int = 2,
                 **kwargs):  # fmt: skip
        super().__init__(**kwargs)
        self.train_batch_size = train_batch_size
        self.accumulate_grad_batches = accumulate_grad_batches
        self.max_epochs = max_epochs

    def get_dataloader(self, split: str, batch_size: int, shuffle: bool = False) -> DataLoader:
        data = ReverseData(batch_size=batch_size)
        data.setup("fit")
        dataset = data.train_set if split == "train" else data.val_set
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle)

    def setup(self, stage: str) -> None:
        if stage == "fit":
            self.train_loader = self.get_dataloader("train", self.train_batch_size, shuffle=True)
            self.dataset_size = len(self.train_dataloader().dataset)

    def train_dataloader(self) -> DataLoader:
        return self.train_loader

    def val_dataloader(self) -> DataLoader:
        return self.get_dataloader("val", self.train_batch_size)

    def total_steps(self) -> float:
        effective_batch_size = self.train_batch_size * self.accumulate_grad_batches
        return (self.dataset_size / effective_batch_size) * self.max_epochs


HYDRA_MODEL = {"net": {"class_path": "tests.corpus.templates.DenseNet", "init_args": {"lin1_size": 32}}, "lr": 0.01}
HYDRA_FLAGS = {
    "max_epochs": 3,
    "logger": CSV_LOGGER,
    "enable_checkpointing": True,
    "callbacks": [
        {
            "class_path": "ModelCheckpoint",
            "init_args": {
                "dirpath": "checkpoints",
                "filename": "epoch_{epoch:03d}",
                "monitor": "val/acc",
                "mode": "max",
                "save_last": True,
                "auto_insert_metric_name": False,
            },
        },
        {"class_path": "EarlyStopping", "init_args": {"monitor": "val/acc", "patience": 100, "mode": "max"}},
    ],
}

DDPM_FLAGS = {
    "max_epochs": 2,
    "precision": "bf16-mixed",
    "logger": CSV_LOGGER,
    "log_every_n_steps": 3,
    "enable_checkpointing": True,
}
# the two best checkpoints by the EMA weights' validation loss, and last.ckpt
EMA_BEST_2 = {
    "class_path": "ModelCheckpoint",
    "init_args": {"dirpath": "checkpoints", "monitor": "val/loss_ema", "save_top_k": 2, "save_last": True},
}

CASES = [
    corpus_case(
        "tpl_hydra_mnist",
        "templates",
        "HydraMNISTModule",
        data="VectorsData",
        model_init=HYDRA_MODEL,
        data_init={"batch_size": 32},
        pattern="net object as init arg, torchmetrics Accuracy/MeanMetric/MaxMetric attributes logged with "
        "self.log, on_train_start reset, best-so-far in on_validation_epoch_end, ReduceLROnPlateau dict "
        "(monitor, interval, frequency), trainer.model.parameters(), trainer.world_size in the datamodule's "
        "setup, ModelCheckpoint (monitor, mode max, save_last) + EarlyStopping, CSVLogger",
        studied="ashleve/lightning-hydra-template: src/models/mnist_module.py",
        **HYDRA_FLAGS,
    ),
    corpus_case(
        "tpl_hydra_mnist_bf16_true",
        "templates",
        "HydraMNISTModule",
        data="VectorsData",
        model_init=HYDRA_MODEL,
        data_init={"batch_size": 32},
        pattern="the Hydra template's module under the template's `trainer.precision` set to bf16-true: "
        "torchmetrics attributes in a half-precision module, RichModelSummary(max_depth=-1) as the template's "
        "default callbacks give it",
        studied="ashleve/lightning-hydra-template: src/models/mnist_module.py",
        **{
            **HYDRA_FLAGS,
            "precision": "bf16-true",
            "enable_model_summary": True,
            "callbacks": [
                *HYDRA_FLAGS["callbacks"],
                {"class_path": "RichModelSummary", "init_args": {"max_depth": -1}},
            ],
        },
    ),
    corpus_case(
        "tpl_project_template_classifier",
        "templates",
        "TemplateClassifier",
        data="VectorsData",
        model_init={"backbone": {"class_path": "tests.corpus.templates.Backbone"}, "learning_rate": 1e-3},
        pattern="backbone object as init arg, save_hyperparameters('learning_rate'), on_step/on_epoch logging "
        "in training and validation, half-epoch validation",
        studied="Lightning-AI/deep-learning-project-template: project/lit_image_classifier.py",
        max_epochs=2,
        val_check_interval=0.5,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_checkpoint_subclass_milestones",
        *CLASSIFIER,
        data="VectorsData",
        model_init=CLASSIFIER_INIT,
        pattern="a ModelCheckpoint subclass overriding _save_checkpoint and _remove_checkpoint (milestone files "
        "never removed), its own state_dict/load_state_dict keys, the base's verbose taken over, every n steps "
        "by a validation metric (saves deferred to the validation), save_last",
        studied="public research code: a DsModelCheckpoint (permanent checkpoints every interval of steps)",
        max_epochs=3,
        val_check_interval=0.5,
        enable_checkpointing=True,
        callbacks=[
            {
                "class_path": "tests.corpus.templates.MilestoneCheckpoint",
                "init_args": {
                    "dirpath": "ck",
                    "filename": "{epoch}-{step}",
                    "monitor": "valid_loss",
                    "every_n_train_steps": 3,
                    "save_last": True,
                    "verbose": True,
                    "first_milestone": 5,
                    "milestone_every": 6,
                },
            }
        ],
    ),
    corpus_case(
        "tpl_checkpoint_subclass_copies_best",
        *CLASSIFIER,
        data="VectorsData",
        model_init=CLASSIFIER_INIT,
        pattern="a ModelCheckpoint subclass setting its dirpath from trainer.log_dir in setup, extending "
        "_update_best_and_save to copy the best file with the base's fsspec filesystem (self._fs) right after "
        "the save, top 2 by an epoch metric, CSVLogger",
        studied="public research code, in many repositories: ModelCheckpointWithLinkBest (a best link or copy)",
        max_epochs=4,
        logger=CSV_LOGGER,
        enable_checkpointing=True,
        callbacks=[
            {
                "class_path": "tests.corpus.templates.CopiesBest",
                "init_args": {"monitor": "train_loss_epoch", "save_top_k": 2},
            }
        ],
    ),
    corpus_case(
        "tpl_wgan_gp_manual",
        "templates",
        "WGANGP",
        data="VectorsData",
        pattern="manual optimization with two Adams, n_critic, toggle/untoggle_optimizer, autograd.grad "
        "gradient penalty with create_graph, prog_bar logs, a latent buffer sampled at the epoch's end",
        studied="nocotan/pytorch-lightning-gans: models/wgan_gp.py",
        max_epochs=2,
        logger=CSV_LOGGER,
        log_every_n_steps=1,
    ),
    corpus_case(
        "tpl_vae_experiment",
        "templates",
        "VAEXperiment",
        data="VectorsData",
        model_init={"vae_model": {"class_path": "tests.corpus.templates.VanillaVAE", "init_args": {"latent_dim": 4}}},
        pattern="VAE object as init arg, log_dict of .item() floats with sync_dist, trainer.datamodule read in "
        "training_step and on_validation_end (a shuffled test loader drawn there), [optims], [ExponentialLR], "
        "TensorBoardLogger, LearningRateMonitor, ModelCheckpoint(save_top_k=2, save_last)",
        studied="AntixK/PyTorch-VAE: experiment.py",
        max_epochs=3,
        logger={"class_path": "TensorBoardLogger", "init_args": {"save_dir": ".", "name": "VanillaVAE"}},
        enable_checkpointing=True,
        callbacks=[
            {"class_path": "LearningRateMonitor"},
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"save_top_k": 2, "dirpath": "checkpoints", "monitor": "val_loss", "save_last": True},
            },
        ],
    ),
    corpus_case(
        "tpl_byol_moving_average",
        "templates",
        "BYOLLearner",
        data="UnlabelledData",
        pattern="target networks deep-copied with requires_grad off, a warm-up forward in __init__, moving "
        "average in on_before_zero_grad, random augmentations in forward, dict return, accumulation, no "
        "validation loader",
        studied="lucidrains/byol-pytorch: examples/lightning/train.py",
        max_epochs=2,
        accumulate_grad_batches=2,
    ),
    corpus_case(
        "tpl_ddpm_ema_warmup",
        "templates",
        "DDPM",
        data="SignalsData",
        pattern="EMA buffers updated in on_train_batch_end and swapped in during validation, schedule buffers, "
        "randint/randn in the step, log_dict on step+epoch with prog_bar, global_step and optimizer lr logged, "
        "[opt], [{scheduler LambdaLR, interval step, frequency 1}], bf16-mixed, LearningRateMonitor(step), "
        "ModelCheckpoint on the EMA's validation loss",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        callbacks=[
            {"class_path": "LearningRateMonitor", "init_args": {"logging_interval": "step"}},
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": "checkpoints", "monitor": "val/loss_ema", "save_top_k": 2, "save_last": True},
            },
        ],
    ),
    corpus_case(
        "tpl_seq2seq_linear_warmup",
        "templates",
        "Seq2SeqModule",
        data="ReverseData",
        pattern="AdamW parameter groups (no decay for bias/norm), linear warm-up LambdaLR over "
        "trainer.estimated_stepping_batches in a step-interval dict, lr_schedulers().get_last_lr() logged, "
        "a callback reading trainer.lr_scheduler_configs and writing logger.log_metrics, gradient clipping, "
        "accumulation, ModelCheckpoint on val_loss",
        studied="huggingface/transformers: examples/research_projects/seq2seq-distillation/lightning_base.py",
        max_epochs=2,
        gradient_clip_val=1.0,
        accumulate_grad_batches=2,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
        enable_checkpointing=True,
        callbacks=[
            {"class_path": "tests.corpus.templates.LrGroupsLogger"},
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": "checkpoints", "monitor": "val_loss", "mode": "min", "save_top_k": 1},
            },
        ],
    ),
    corpus_case(
        "tpl_simclr_cosine",
        "templates",
        "ContrastiveLearning",
        data="ViewsData",
        model_init={"optimizer": "LARS", "batch_size": 32},
        pattern="optimizer chosen by an init argument, {'optimizer', 'lr_scheduler': CosineAnnealingLR over "
        "trainer.max_epochs}, NT-Xent of two views drawn in the dataset's __getitem__, train loader only",
        studied="Spijkervet/SimCLR: main_pl.py",
        max_epochs=3,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_moco_queue",
        "templates",
        "MocoV2",
        data="MocoViewsData",
        pattern="momentum key encoder updated in training_step, a queue of negatives in buffers changed in "
        "place, log_dict of top-k accuracies, SGD momentum + CosineAnnealingLR over trainer.max_epochs",
        studied="Lightning-Universe/lightning-bolts: pl_bolts/models/self_supervised/moco/moco2_module.py",
        max_epochs=2,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_jet_tagger_metrics",
        "templates",
        "JetTagger",
        data="VectorsData",
        pattern="torchmetrics Accuracy/AUROC/MeanMetric logged on step and epoch in training and validation, "
        "MaxMetric best-so-far, numpy prediction lists per validation epoch, grad_norm logged in "
        "on_before_optimizer_step, ReduceLROnPlateau dict monitoring a MeanMetric, EarlyStopping",
        studied="ewencedr/particle_fm: src/models/jetclass_classifiers.py",
        max_epochs=3,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
        callbacks=[{"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 1}}],
    ),
    corpus_case(
        "tpl_vqgan_manual",
        "templates",
        "VQModel",
        data="VectorsData",
        pattern="manual optimization with an autoencoder and a discriminator held by the loss module, adaptive "
        "weight by autograd.grad on the last layer, discriminator switched on by global_step, log/log_dict on "
        "step and epoch, validation logged on step, [opt_ae, opt_disc], []",
        studied="CompVis/taming-transformers: taming/models/vqgan.py",
        max_epochs=2,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_bolts_byol_callback",
        "templates",
        "BoltsBYOL",
        data="ViewsData",
        pattern="a callback object held by the module and called from its on_train_batch_end with self.trainer "
        "(reading len(trainer.train_dataloader), max_epochs, global_step), target network moving average, "
        "log_dict, SGD + SequentialLR(LinearLR, CosineAnnealingLR over trainer.max_epochs)",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/self_supervised/byol/byol_module.py",
        max_epochs=3,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_seq2seq_module_loaders",
        "templates",
        "Seq2SeqOwnLoaders",
        model_init={"train_batch_size": 16, "accumulate_grad_batches": 2, "max_epochs": 2},
        pattern="loaders made in the module's setup and returned by its own *_dataloader methods, the data "
        "size read there, total steps from hparams as a float for a step-interval warm-up LambdaLR, AdamW "
        "groups, clipping and accumulation",
        studied="huggingface/transformers: examples/research_projects/seq2seq-distillation/lightning_base.py",
        max_epochs=2,
        gradient_clip_val=1.0,
        accumulate_grad_batches=2,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
    ),
    corpus_case(
        "tpl_vqgan_manual_scheduled",
        "templates",
        "VQModelScheduled",
        data="VectorsData",
        pattern="manual optimization with toggle_optimizer, self.clip_gradients (norm and value) per optimizer, "
        "two StepLRs stepped by the module from self.lr_schedulers() on trainer.is_last_batch, lr logged in "
        "on_train_epoch_end, LearningRateMonitor",
        studied="CompVis/taming-transformers: taming/models/vqgan.py",
        max_epochs=3,
        logger=CSV_LOGGER,
        log_every_n_steps=2,
        callbacks=[{"class_path": "LearningRateMonitor"}],
    ),
    corpus_case(
        "tpl_ddpm_mid_epoch_validation",
        "templates",
        "DDPM",
        data="SignalsData",
        data_init={"batch_size": 20},
        pattern="the DDPM with validation twice an epoch (EMA swapped in mid-epoch), accumulation over 2 "
        "batches (each validation at a window's end) with the step-interval warm-up, ModelCheckpoint on the EMA's validation loss",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        val_check_interval=0.5,
        accumulate_grad_batches=2,
        callbacks=[EMA_BEST_2],
    ),
    corpus_case(
        "tpl_ddpm_ema_validation_hooks",
        "templates",
        "DDPMEmaValidation",
        data="SignalsData",
        pattern="EMA weights swapped in at on_validation_start and restored at on_validation_end, "
        "ModelCheckpoint saving at each validation's end",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        callbacks=[
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": "checkpoints", "monitor": "val/loss", "save_top_k": 2, "save_last": True},
            },
        ],
    ),
    corpus_case(
        "tpl_vae_appended_lists",
        "templates",
        "VAEXperimentAppended",
        data="VectorsData",
        model_init={"vae_model": {"class_path": "tests.corpus.templates.VanillaVAE", "init_args": {"latent_dim": 4}}},
        pattern="configure_optimizers building `optims`/`scheds` lists with append, returned as a pair",
        studied="AntixK/PyTorch-VAE: experiment.py",
        max_epochs=2,
    ),
    corpus_case(
        "tpl_ddpm_ema_step_checkpoints",
        "templates",
        "DDPM",
        data="SignalsData",
        pattern="EMA updated in on_train_batch_end, ModelCheckpoint(every_n_train_steps) saving mid-epoch",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        callbacks=[
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": "checkpoints", "every_n_train_steps": 7, "save_top_k": -1, "save_last": True},
            },
        ],
    ),
    corpus_case(
        "tpl_ddpm_ema_checkpoint_at_validation_end",
        "templates",
        "DDPMEmaValidation",
        data="SignalsData",
        pattern="EMA weights swapped in at on_validation_start and restored at on_validation_end, "
        "ModelCheckpoint(save_on_train_epoch_end=False) saving in its on_validation_end",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        callbacks=[
            {
                "class_path": "ModelCheckpoint",
                "init_args": {
                    "dirpath": "checkpoints",
                    "monitor": "val/loss",
                    "save_top_k": 2,
                    "save_last": True,
                    "save_on_train_epoch_end": False,
                },
            },
        ],
    ),
    corpus_case(
        "tpl_ddpm_validation_inside_window",
        "templates",
        "DDPM",
        data="SignalsData",
        pattern="the DDPM with validation twice an epoch (EMA swapped in mid-epoch), accumulation over 2 "
        "batches (the mid-epoch validation inside a window) with the step-interval warm-up, ModelCheckpoint on the EMA's validation loss",
        studied="CompVis/latent-diffusion: ldm/models/diffusion/ddpm.py",
        **DDPM_FLAGS,
        val_check_interval=0.5,
        accumulate_grad_batches=2,
        callbacks=[EMA_BEST_2],
    ),
]

# Trained differently, or refused for a wrong reason: loopgen bugs, kept out of CASES (see the comment above each).
FINDINGS = []
