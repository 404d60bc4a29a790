"""Lightning's own examples and tutorials, and course notebooks: how a newcomer first writes a LightningModule.
Each class here is this suite's own code on synthetic data (see tests/corpus/__init__.py)."""

from __future__ import annotations

import math
import random
from collections import deque, namedtuple
from copy import deepcopy

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import BaseFinetuning
from pytorch_lightning.utilities import grad_norm
from torch import nn
from torch.optim.lr_scheduler import LambdaLR, OneCycleLR
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, random_split
from torchmetrics import Accuracy
from torchmetrics.functional import accuracy

from tests.corpus.cases import corpus_case


class ImagesData(pl.LightningDataModule):
    """Random 1x28x28 "images" with 10 classes, in place of a downloaded digit set."""

    def __init__(self, batch_size: int = 32, samples: int = 256):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(0)
        images = torch.rand(self.samples, 1, 28, 28, generator=generator)
        labels = torch.randint(0, 10, (self.samples,), generator=generator)
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(images[:cut], labels[:cut])
        self.val_set = TensorDataset(images[cut:], labels[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class LitAutoEncoder(pl.LightningModule):
    """The quick-start's autoencoder: two nn.Sequential attributes, the batch flattened in training_step, the
    reconstruction loss logged, Adam returned alone."""

    def __init__(self, hidden: int = 64, code: int = 3, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(28 * 28, hidden), nn.ReLU(), nn.Linear(hidden, code))
        self.decoder = nn.Sequential(nn.Linear(code, hidden), nn.ReLU(), nn.Linear(hidden, 28 * 28))

    def training_step(self, batch, batch_idx):
        x, _ = batch
        x = x.view(x.size(0), -1)
        x_hat = self.decoder(self.encoder(x))
        loss = nn.functional.mse_loss(x_hat, x)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        x = x.view(x.size(0), -1)
        self.log("val_loss", nn.functional.mse_loss(self.decoder(self.encoder(x)), x))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


# --------------------------------------------------------------------------------------------------------------------
# Helpers shared by the cases below: synthetic data sets and tiny networks.


def _images(samples: int, channels: int, size: int, classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(samples, channels, size, size, generator=generator) * 2 - 1
    labels = torch.randint(0, classes, (samples,), generator=generator)
    return images, labels


class ColorImagesData(pl.LightningDataModule):
    """Random CxSxS "images" with 10 classes (a downloaded CIFAR set's place), train/val/test splits."""

    def __init__(self, batch_size: int = 32, samples: int = 192, channels: int = 3, size: int = 16):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.channels = channels
        self.size = size

    def setup(self, stage: str) -> None:
        images, labels = _images(self.samples, self.channels, self.size, 10)
        cut = self.samples * 2 // 3
        self.train_set = TensorDataset(images[:cut], labels[:cut])
        self.val_set = TensorDataset(images[cut:], labels[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


def _small_convnet(channels: int, classes: int, width: int = 8) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(channels, width, 3, padding=1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(width, width, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, classes),
    )


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/generative_adversarial_net.py


class ManualGAN(pl.LightningModule):
    """The GAN domain template: manual optimization with two Adams returned as a tuple, `self.optimizers()` unpacked,
    `toggle_optimizer`/`untoggle_optimizer` around each player's `manual_backward` and `step`, noise drawn from the
    global RNG in `training_step(batch)` (no batch_idx), `log_dict`, a fixed `validation_z` and `example_input_array`
    set in `__init__`, and `on_train_epoch_end` writing to every logger of `self.loggers`."""

    def __init__(self, latent_dim: int = 8, hidden: int = 32, lr: float = 2e-4, b1: float = 0.5, b2: float = 0.999):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(
            nn.Linear(latent_dim, hidden),
            nn.BatchNorm1d(hidden, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(hidden, 28 * 28),
            nn.Tanh(),
        )
        self.discriminator = nn.Sequential(
            nn.Flatten(), nn.Linear(28 * 28, hidden), nn.LeakyReLU(0.2, inplace=True), nn.Linear(hidden, 1)
        )
        self.validation_z = torch.randn(4, latent_dim)
        self.example_input_array = torch.zeros(2, latent_dim)

    def forward(self, z):
        return self.generator(z).view(z.size(0), 1, 28, 28)

    def training_step(self, batch):
        imgs, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(imgs.shape[0], self.hparams.latent_dim).type_as(imgs)

        valid = torch.ones(imgs.size(0), 1).type_as(imgs)
        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(self(z)), valid)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        self.toggle_optimizer(opt_d)
        real_loss = F.binary_cross_entropy_with_logits(self.discriminator(imgs), valid)
        fake = torch.zeros(imgs.size(0), 1).type_as(imgs)
        fake_loss = F.binary_cross_entropy_with_logits(self.discriminator(self(z).detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.log_dict({"d_loss": d_loss, "g_loss": g_loss})

    def configure_optimizers(self):
        betas = (self.hparams.b1, self.hparams.b2)
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr, betas=betas)
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr, betas=betas)
        return opt_g, opt_d

    def on_train_epoch_end(self):
        z = self.validation_z.type_as(self.generator[0].weight)
        samples = self(z)
        for logger in self.loggers:
            logger.log_metrics({"sample_mean": samples.mean().item()}, step=self.current_epoch)


class GeneratorWarmup(ManualGAN):
    """A subclass of the manual GAN above that switches back to automatic optimization to pre-train the generator
    alone (its own `training_step` returning the loss, one optimizer): the base class's manual `training_step`,
    with its `manual_backward` calls, is overridden and never runs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.automatic_optimization = True

    def training_step(self, batch, batch_idx):
        imgs, _ = batch
        z = torch.randn(imgs.shape[0], self.hparams.latent_dim).type_as(imgs)
        loss = F.mse_loss(self(z), imgs)
        self.log("g_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/imagenet.py


class TopKClassifier(pl.LightningModule):
    """The ImageNet template: the module owns its data (`setup(stage)` builds the sets, `*_dataloader` methods),
    four torchmetrics `Accuracy(top_k=...)` objects updated by calling them and logged as objects, SGD with momentum
    and weight decay, and a `LambdaLR` (a lambda of the epoch) returned as `[optimizer], [scheduler]`."""

    def __init__(
        self, lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 1e-4, batch_size: int = 24, size: int = 12
    ):
        super().__init__()
        self.save_hyperparameters()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.size = size
        self.model = _small_convnet(3, 10)
        self.train_dataset = None
        self.eval_dataset = None
        self.train_acc1 = Accuracy(task="multiclass", num_classes=10, top_k=1)
        self.train_acc5 = Accuracy(task="multiclass", num_classes=10, top_k=5)
        self.eval_acc1 = Accuracy(task="multiclass", num_classes=10, top_k=1)
        self.eval_acc5 = Accuracy(task="multiclass", num_classes=10, top_k=5)

    def forward(self, x):
        return self.model(x)

    def training_step(self, batch, batch_idx):
        images, target = batch
        output = self.model(images)
        loss_train = F.cross_entropy(output, target)
        self.log("train_loss", loss_train)
        self.train_acc1(output, target)
        self.train_acc5(output, target)
        self.log("train_acc1", self.train_acc1, prog_bar=True)
        self.log("train_acc5", self.train_acc5, prog_bar=True)
        return loss_train

    def eval_step(self, batch, batch_idx, prefix: str):
        images, target = batch
        output = self.model(images)
        loss_val = F.cross_entropy(output, target)
        self.log(f"{prefix}_loss", loss_val)
        self.eval_acc1(output, target)
        self.eval_acc5(output, target)
        self.log(f"{prefix}_acc1", self.eval_acc1, prog_bar=True)
        self.log(f"{prefix}_acc5", self.eval_acc5, prog_bar=True)
        return loss_val

    def validation_step(self, batch, batch_idx):
        return self.eval_step(batch, batch_idx, "val")

    def test_step(self, batch, batch_idx):
        return self.eval_step(batch, batch_idx, "test")

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(
            self.parameters(), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay
        )
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.1 ** (epoch // 2))
        return [optimizer], [scheduler]

    def setup(self, stage: str):
        if stage == "fit":
            images, labels = _images(120, 3, self.size, 10, seed=1)
            self.train_dataset = TensorDataset(images, labels)
        images, labels = _images(48, 3, self.size, 10, seed=2)
        self.eval_dataset = TensorDataset(images, labels)

    def train_dataloader(self):
        return DataLoader(dataset=self.train_dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.eval_dataset, batch_size=self.batch_size)

    def test_dataloader(self):
        return self.val_dataloader()


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/cifar10-baseline/baseline.py


class OneCycleResNet(pl.LightningModule):
    """The CIFAR-10 baseline: log-softmax in `forward`, an `evaluate(batch, stage)` helper shared by validation and
    test logging `{stage}_loss`/`{stage}_acc` with `prog_bar=True` (torchmetrics' functional accuracy), SGD and a
    `OneCycleLR` whose length comes from `self.trainer.max_epochs` and the loader's length, returned as
    `{"optimizer", "lr_scheduler": {"scheduler", "interval": "step"}}`."""

    def __init__(self, lr: float = 0.05, batch_size: int = 32, train_samples: int = 128):
        super().__init__()
        self.save_hyperparameters()
        self.model = _small_convnet(3, 10)

    def forward(self, x):
        return F.log_softmax(self.model(x), dim=1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.nll_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def evaluate(self, batch, stage=None):
        x, y = batch
        logits = self(x)
        loss = F.nll_loss(logits, y)
        preds = torch.argmax(logits, dim=1)
        acc = accuracy(preds, y, task="multiclass", num_classes=10)
        if stage:
            self.log(f"{stage}_loss", loss, prog_bar=True)
            self.log(f"{stage}_acc", acc, prog_bar=True)

    def validation_step(self, batch, batch_idx):
        self.evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        self.evaluate(batch, "test")

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, weight_decay=5e-4)
        steps_per_epoch = self.hparams.train_samples // self.hparams.batch_size
        scheduler_dict = {
            "scheduler": OneCycleLR(optimizer, 0.1, epochs=self.trainer.max_epochs, steps_per_epoch=steps_per_epoch),
            "interval": "step",
        }
        return {"optimizer": optimizer, "lr_scheduler": scheduler_dict}


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/text-transformers/text-transformers.py


class TokenPairs(Dataset):
    """Dict samples, as a tokenizer's dataset gives them: input_ids, attention_mask, labels."""

    def __init__(self, samples: int, length: int, vocab: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(1, vocab, (samples, length), generator=generator)
        lengths = torch.randint(length // 2, length + 1, (samples,), generator=generator)
        self.attention_mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
        self.labels = (self.input_ids[:, 0] > vocab // 2).long()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict:
        return {
            "input_ids": self.input_ids[index],
            "attention_mask": self.attention_mask[index],
            "labels": self.labels[index],
        }


class GlueLikeData(pl.LightningDataModule):
    """A GLUE-like datamodule: `setup(stage)` builds the splits, loaders of dict batches."""

    def __init__(self, train_batch_size: int = 16, eval_batch_size: int = 32, length: int = 12, vocab: int = 40,
                 val_sets: int = 1):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str):
        self.train_set = TokenPairs(128, self.hparams.length, self.hparams.vocab, seed=3)
        self.eval_sets = [
            TokenPairs(48 - 8 * i, self.hparams.length, self.hparams.vocab, seed=4 + i)
            for i in range(self.hparams.val_sets)
        ]

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.hparams.train_batch_size, shuffle=True)

    def val_dataloader(self):
        if len(self.eval_sets) == 1:
            return DataLoader(self.eval_sets[0], batch_size=self.hparams.eval_batch_size)
        return [DataLoader(x, batch_size=self.hparams.eval_batch_size) for x in self.eval_sets]


class TinySequenceClassifier(nn.Module):
    """A Hugging Face-shaped classifier: `forward(input_ids, attention_mask, labels)` returns (loss, logits); its
    parameter names hold "bias" and "LayerNorm.weight", as the no-decay grouping expects."""

    def __init__(self, vocab: int, dim: int, num_labels: int):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim)
        self.dense = nn.Linear(dim, dim)
        self.LayerNorm = nn.LayerNorm(dim)
        self.classifier = nn.Linear(dim, num_labels)

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.embeddings(input_ids) * attention_mask[..., None]
        pooled = hidden.sum(1) / attention_mask.sum(1, keepdim=True)
        logits = self.classifier(self.LayerNorm(torch.tanh(self.dense(pooled))))
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return loss, logits


def linear_schedule_with_warmup(optimizer, num_warmup_steps: int, num_training_steps: int) -> LambdaLR:
    """A linear warm-up then a linear decay to 0 (the shape of transformers' get_linear_schedule_with_warmup)."""

    def lr_lambda(current_step: int) -> float:
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return LambdaLR(optimizer, lr_lambda)


class GlueTransformer(pl.LightningModule):
    """The GLUE fine-tuning tutorial: `self(**batch)` on dict batches, validation outputs gathered by hand in a list
    that `on_validation_epoch_end` concatenates (through numpy, as `evaluate`'s metrics take them), logs with
    `log_dict` and clears; AdamW over two parameter groups (no decay for biases and LayerNorm) and a linear warm-up
    whose length is `self.trainer.estimated_stepping_batches`, as `[optimizer], [{"scheduler", "interval": "step",
    "frequency": 1}]`."""

    def __init__(
        self,
        vocab: int = 40,
        dim: int = 16,
        num_labels: int = 2,
        learning_rate: float = 2e-3,
        adam_epsilon: float = 1e-8,
        warmup_steps: int = 3,
        weight_decay: float = 0.01,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.model = TinySequenceClassifier(vocab, dim, num_labels)
        self.outputs = []

    def forward(self, **inputs):
        return self.model(**inputs)

    def training_step(self, batch, batch_idx):
        outputs = self(**batch)
        loss = outputs[0]
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        outputs = self(**batch)
        val_loss, logits = outputs[:2]
        preds = torch.argmax(logits, axis=1)
        labels = batch["labels"]
        self.outputs.append({"loss": val_loss, "preds": preds, "labels": labels})

    def on_validation_epoch_end(self):
        preds = torch.cat([x["preds"] for x in self.outputs]).detach().cpu().numpy()
        labels = torch.cat([x["labels"] for x in self.outputs]).detach().cpu().numpy()
        loss = torch.stack([x["loss"] for x in self.outputs]).mean()
        self.log("val_loss", loss, prog_bar=True)
        self.log_dict({"accuracy": float((preds == labels).mean())}, prog_bar=True)
        self.outputs.clear()

    def configure_optimizers(self):
        model = self.model
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {
                "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
                "weight_decay": self.hparams.weight_decay,
            },
            {
                "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
                "weight_decay": 0.0,
            },
        ]
        optimizer = torch.optim.AdamW(
            optimizer_grouped_parameters, lr=self.hparams.learning_rate, eps=self.hparams.adam_epsilon
        )
        scheduler = linear_schedule_with_warmup(
            optimizer,
            num_warmup_steps=self.hparams.warmup_steps,
            num_training_steps=self.trainer.estimated_stepping_batches,
        )
        scheduler = {"scheduler": scheduler, "interval": "step", "frequency": 1}
        return [optimizer], [scheduler]


class GlueTransformerMNLI(GlueTransformer):
    """The same tutorial's MNLI branch: two validation loaders (matched, mismatched) as a list, `validation_step`
    with `dataloader_idx` keeping one list of outputs per loader, and `on_validation_epoch_end` logging each
    split's loss and metrics under its own names (plus `self.log`'s own `/dataloader_idx_N` suffix)."""

    def __init__(self, eval_splits: tuple = ("validation_matched", "validation_mismatched"), **kwargs):
        super().__init__(**kwargs)
        self.eval_splits = list(eval_splits)
        self.split_outputs = [[] for _ in self.eval_splits]

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        val_loss, logits = self(**batch)[:2]
        preds = torch.argmax(logits, axis=1)
        self.split_outputs[dataloader_idx].append({"loss": val_loss, "preds": preds, "labels": batch["labels"]})
        self.log("val_batch_loss", val_loss)

    def on_validation_epoch_end(self):
        for i, output in enumerate(self.split_outputs):
            split = self.eval_splits[i].split("_")[-1]
            preds = torch.cat([x["preds"] for x in output]).detach().cpu().numpy()
            labels = torch.cat([x["labels"] for x in output]).detach().cpu().numpy()
            loss = torch.stack([x["loss"] for x in output]).mean()
            self.log(f"val_loss_{split}", loss, prog_bar=True)
            self.log_dict({f"accuracy_{split}": float((preds == labels).mean())}, prog_bar=True)
            output.clear()


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/08-deep-autoencoders/Deep_Autoencoders.py


class ConvAutoencoder(pl.LightningModule):
    """The UvA deep-autoencoders notebook: encoder/decoder built from constructor arguments, `example_input_array`,
    a summed-then-averaged reconstruction loss, `ReduceLROnPlateau` returned as `{"optimizer", "lr_scheduler",
    "monitor": "val_loss"}` (the flat dict), and train/val/test losses logged."""

    def __init__(self, base_channel_size: int = 4, latent_dim: int = 8, num_input_channels: int = 3, size: int = 16):
        super().__init__()
        self.save_hyperparameters()
        c_hid = base_channel_size
        quarter = size // 4
        self.encoder = nn.Sequential(
            nn.Conv2d(num_input_channels, c_hid, kernel_size=3, padding=1, stride=2),
            nn.GELU(),
            nn.Conv2d(c_hid, 2 * c_hid, kernel_size=3, padding=1, stride=2),
            nn.GELU(),
            nn.Flatten(),
            nn.Linear(2 * c_hid * quarter * quarter, latent_dim),
        )
        self.decoder_linear = nn.Sequential(nn.Linear(latent_dim, 2 * c_hid * quarter * quarter), nn.GELU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(2 * c_hid, c_hid, kernel_size=3, output_padding=1, padding=1, stride=2),
            nn.GELU(),
            nn.ConvTranspose2d(c_hid, num_input_channels, kernel_size=3, output_padding=1, padding=1, stride=2),
            nn.Tanh(),
        )
        self.example_input_array = torch.zeros(2, num_input_channels, size, size)

    def forward(self, x):
        z = self.encoder(x)
        hidden = self.decoder_linear(z)
        quarter = self.hparams.size // 4
        return self.decoder(hidden.reshape(x.shape[0], -1, quarter, quarter))

    def _get_reconstruction_loss(self, batch):
        x, _ = batch
        x_hat = self.forward(x)
        loss = F.mse_loss(x, x_hat, reduction="none")
        return loss.sum(dim=[1, 2, 3]).mean(dim=[0])

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=0.2, patience=0, min_lr=5e-5
        )
        return {"optimizer": optimizer, "lr_scheduler": scheduler, "monitor": "val_loss"}

    def training_step(self, batch, batch_idx):
        loss = self._get_reconstruction_loss(batch)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._get_reconstruction_loss(batch))

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self._get_reconstruction_loss(batch))


class ReconstructionCallback(pl.Callback):
    """The notebook's GenerateCallback: every N epochs, at the training epoch's end, the module put in eval mode
    by hand, fixed inputs reconstructed under no_grad, the module put back in train mode, and the result written to
    `trainer.logger` at `trainer.global_step`."""

    def __init__(self, every_n_epochs: int = 1, count: int = 4, channels: int = 3, size: int = 16):
        super().__init__()
        self.input_imgs = torch.rand(count, channels, size, size, generator=torch.Generator().manual_seed(5))
        self.every_n_epochs = every_n_epochs

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch % self.every_n_epochs == 0:
            input_imgs = self.input_imgs.to(pl_module.device)
            with torch.no_grad():
                pl_module.eval()
                reconst_imgs = pl_module(input_imgs)
                pl_module.train()
            error = F.mse_loss(reconst_imgs, input_imgs).item()
            trainer.logger.log_metrics({"reconstruction_error": error}, step=trainer.global_step)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/05-transformers-and-MH-attention/Transformers_MHAttention.py


class CosineWarmupScheduler(torch.optim.lr_scheduler.LRScheduler):
    """The notebook's scheduler: a linear warm-up inside a half cosine, as a factor of each base rate."""

    def __init__(self, optimizer, warmup: int, max_iters: int):
        self.warmup = warmup
        self.max_num_iters = max_iters
        super().__init__(optimizer)

    def get_lr(self):
        lr_factor = self.get_lr_factor(epoch=self.last_epoch)
        return [base_lr * lr_factor for base_lr in self.base_lrs]

    def get_lr_factor(self, epoch):
        lr_factor = 0.5 * (1 + np.cos(np.pi * epoch / self.max_num_iters))
        if epoch <= self.warmup:
            lr_factor *= epoch * 1.0 / self.warmup
        return lr_factor


class ReverseData(pl.LightningDataModule):
    """The notebook's reverse task: random digit sequences, the label the sequence reversed."""

    def __init__(self, num_categories: int = 6, seq_len: int = 6, batch_size: int = 16):
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(6)
        data = torch.randint(self.hparams.num_categories, size=(160, self.hparams.seq_len), generator=generator)
        dataset = TensorDataset(data, torch.flip(data, dims=(1,)))
        self.train_set, self.val_set = torch.utils.data.Subset(dataset, range(128)), torch.utils.data.Subset(
            dataset, range(128, 160)
        )

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.hparams.batch_size)


class ReversePredictor(pl.LightningModule):
    """The UvA transformer notebook: a scheduler built in `configure_optimizers` but kept on the module instead of
    returned, stepped per iteration by an `optimizer_step(*args, **kwargs)` override that calls
    `super().optimizer_step` first; a positional-encoding buffer registered non-persistent; one-hot inputs; the
    loss and accuracy logged from a shared `_calculate_loss(batch, mode)`."""

    def __init__(
        self,
        num_classes: int = 6,
        model_dim: int = 16,
        num_heads: int = 2,
        lr: float = 1e-3,
        warmup: int = 4,
        max_iters: int = 40,
        dropout: float = 0.1,
        max_len: int = 16,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.input_net = nn.Sequential(nn.Dropout(dropout), nn.Linear(num_classes, model_dim))
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, model_dim, 2).float() * (-math.log(10000.0) / model_dim))
        pe = torch.zeros(max_len, model_dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)
        self.attention = nn.MultiheadAttention(model_dim, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(model_dim)
        self.linear_net = nn.Sequential(
            nn.Linear(model_dim, 2 * model_dim), nn.ReLU(), nn.Linear(2 * model_dim, model_dim)
        )
        self.norm2 = nn.LayerNorm(model_dim)
        self.output_net = nn.Linear(model_dim, num_classes)

    def forward(self, x, add_positional_encoding=True):
        x = self.input_net(x)
        if add_positional_encoding:
            x = x + self.pe[:, : x.size(1)]
        attn_out, _ = self.attention(x, x, x, need_weights=False)
        x = self.norm1(x + attn_out)
        x = self.norm2(x + self.linear_net(x))
        return self.output_net(x)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        self.lr_scheduler = CosineWarmupScheduler(
            optimizer, warmup=self.hparams.warmup, max_iters=self.hparams.max_iters
        )
        return optimizer

    def optimizer_step(self, *args, **kwargs):
        super().optimizer_step(*args, **kwargs)
        self.lr_scheduler.step()

    def _calculate_loss(self, batch, mode="train"):
        inp_data, labels = batch
        inp_data = F.one_hot(inp_data, num_classes=self.hparams.num_classes).float()
        preds = self.forward(inp_data, add_positional_encoding=True)
        loss = F.cross_entropy(preds.view(-1, preds.size(-1)), labels.view(-1))
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        self.log(f"{mode}_loss", loss)
        self.log(f"{mode}_acc", acc)
        return loss, acc

    def training_step(self, batch, batch_idx):
        loss, _ = self._calculate_loss(batch, mode="train")
        return loss

    def validation_step(self, batch, batch_idx):
        _ = self._calculate_loss(batch, mode="val")


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/04-inception-resnet-densenet/Inception_ResNet_DenseNet.py

ACT_FN_BY_NAME = {"tanh": nn.Tanh, "relu": nn.ReLU, "leakyrelu": nn.LeakyReLU, "gelu": nn.GELU}


class CIFARModule(pl.LightningModule):
    """The UvA Inception/ResNet/DenseNet notebook: a model and an optimizer chosen by name from hyperparameters
    (nested dicts `model_hparams` / `optimizer_hparams`), `example_input_array`, `MultiStepLR` returned as
    `[optimizer], [scheduler]`, the training accuracy logged `on_step=False, on_epoch=True`."""

    def __init__(
        self,
        model_name: str = "TinyNet",
        model_hparams: dict | None = None,
        optimizer_name: str = "SGD",
        optimizer_hparams: dict | None = None,
    ):
        super().__init__()
        self.save_hyperparameters()
        model_hparams = model_hparams or {"c_hidden": 8, "act_fn_name": "relu"}
        self.model = self.create_model(model_name, model_hparams)
        self.loss_module = nn.CrossEntropyLoss()
        self.example_input_array = torch.zeros((1, 3, 16, 16), dtype=torch.float32)

    @staticmethod
    def create_model(model_name: str, model_hparams: dict) -> nn.Module:
        assert model_name == "TinyNet", f'Unknown model name "{model_name}"'
        act_fn = ACT_FN_BY_NAME[model_hparams["act_fn_name"]]
        c_hidden = model_hparams["c_hidden"]
        return nn.Sequential(
            nn.Conv2d(3, c_hidden, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_hidden),
            act_fn(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(c_hidden, 10),
        )

    def forward(self, imgs):
        return self.model(imgs)

    def configure_optimizers(self):
        optimizer_hparams = self.hparams.optimizer_hparams or {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}
        if self.hparams.optimizer_name == "Adam":
            optimizer = torch.optim.AdamW(self.parameters(), **optimizer_hparams)
        elif self.hparams.optimizer_name == "SGD":
            optimizer = torch.optim.SGD(self.parameters(), **optimizer_hparams)
        else:
            raise AssertionError(f'Unknown optimizer: "{self.hparams.optimizer_name}"')
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        imgs, labels = batch
        preds = self.model(imgs)
        loss = self.loss_module(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        self.log("train_acc", acc, on_step=False, on_epoch=True)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        imgs, labels = batch
        preds = self.model(imgs).argmax(dim=-1)
        acc = (labels == preds).float().mean()
        self.log("val_acc", acc)

    def test_step(self, batch, batch_idx):
        imgs, labels = batch
        preds = self.model(imgs).argmax(dim=-1)
        self.log("test_acc", (labels == preds).float().mean())


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/13-contrastive-learning/SimCLR.py


class TwoViews(Dataset):
    """The notebook's ContrastiveTransformations: each sample comes as n random views (noise and a flip drawn from
    the global RNG in `__getitem__`, as torchvision's random transforms draw) and its label."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, n_views: int = 2):
        self.images = images
        self.labels = labels
        self.n_views = n_views

    def __len__(self) -> int:
        return len(self.labels)

    def view(self, image: torch.Tensor) -> torch.Tensor:
        if torch.rand(1) < 0.5:
            image = torch.flip(image, dims=(2,))
        return image + 0.1 * torch.randn_like(image)

    def __getitem__(self, index: int):
        image = self.images[index]
        return [self.view(image) for _ in range(self.n_views)], self.labels[index]


class ContrastiveData(pl.LightningDataModule):
    """Unlabelled images seen through two random views (an STL-10 unlabelled split's place)."""

    def __init__(self, batch_size: int = 16, size: int = 12):
        super().__init__()
        self.batch_size = batch_size
        self.size = size

    def setup(self, stage: str):
        images, labels = _images(96, 3, self.size, 10, seed=8)
        self.train_set = TwoViews(images[:64], labels[:64])
        self.val_set = TwoViews(images[64:], labels[64:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, shuffle=False, drop_last=False)


class SimCLR(pl.LightningModule):
    """The UvA SimCLR notebook: the views of a batch concatenated, an InfoNCE loss from a masked cosine-similarity
    matrix, ranking metrics logged with a mode prefix, AdamW and `CosineAnnealingLR(T_max=max_epochs)` from the
    hyperparameters returned as `[optimizer], [lr_scheduler]`."""

    def __init__(self, hidden_dim: int = 16, lr: float = 5e-4, temperature: float = 0.07, weight_decay: float = 1e-4,
                 max_epochs: int = 2):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        assert self.hparams.temperature > 0.0, "The temperature must be a positive float!"
        self.convnet = _small_convnet(3, 4 * hidden_dim)
        self.projection = nn.Sequential(nn.ReLU(inplace=True), nn.Dropout(0.1), nn.Linear(4 * hidden_dim, hidden_dim))

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, T_max=self.hparams.max_epochs, eta_min=self.hparams.lr / 50
        )
        return [optimizer], [lr_scheduler]

    def info_nce_loss(self, batch, mode="train"):
        imgs, _ = batch
        imgs = torch.cat(imgs, dim=0)
        feats = self.projection(self.convnet(imgs))
        cos_sim = F.cosine_similarity(feats[:, None, :], feats[None, :, :], dim=-1)
        self_mask = torch.eye(cos_sim.shape[0], dtype=torch.bool, device=cos_sim.device)
        cos_sim.masked_fill_(self_mask, -9e15)
        pos_mask = self_mask.roll(shifts=cos_sim.shape[0] // 2, dims=0)
        cos_sim = cos_sim / self.hparams.temperature
        nll = -cos_sim[pos_mask] + torch.logsumexp(cos_sim, dim=-1)
        nll = nll.mean()
        self.log(mode + "_loss", nll)
        comb_sim = torch.cat([cos_sim[pos_mask][:, None], cos_sim.masked_fill(pos_mask, -9e15)], dim=-1)
        sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
        self.log(mode + "_acc_top1", (sim_argsort == 0).float().mean())
        self.log(mode + "_acc_top5", (sim_argsort < 5).float().mean())
        self.log(mode + "_acc_mean_pos", 1 + sim_argsort.float().mean())
        return nll

    def training_step(self, batch, batch_idx):
        return self.info_nce_loss(batch, mode="train")

    def validation_step(self, batch, batch_idx):
        self.info_nce_loss(batch, mode="val")


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/mnist-hello-world/hello-world.py


class LitMNIST(pl.LightningModule):
    """The MNIST hello-world: the module owns its data (`prepare_data`, `setup(stage=None)` with an unseeded
    `random_split`, which draws from the global RNG, loaders without shuffle), dropout layers, log-softmax outputs,
    a torchmetrics `Accuracy` updated by hand and logged as an object with `prog_bar=True`, and a test loop."""

    def __init__(self, hidden_size: int = 32, learning_rate: float = 2e-3, batch_size: int = 32):
        super().__init__()
        self.hidden_size = hidden_size
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.num_classes = 10
        self.dims = (1, 28, 28)
        channels, width, height = self.dims
        self.model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * width * height, hidden_size),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(hidden_size, self.num_classes),
        )
        self.val_accuracy = Accuracy(task="multiclass", num_classes=10)
        self.test_accuracy = Accuracy(task="multiclass", num_classes=10)

    def forward(self, x):
        return F.log_softmax(self.model(x), dim=1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.nll_loss(self(x), y)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.nll_loss(logits, y)
        preds = torch.argmax(logits, dim=1)
        self.val_accuracy.update(preds, y)
        self.log("val_loss", loss, prog_bar=True)
        self.log("val_acc", self.val_accuracy, prog_bar=True)

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        preds = torch.argmax(logits, dim=1)
        self.test_accuracy.update(preds, y)
        self.log("test_loss", F.nll_loss(logits, y), prog_bar=True)
        self.log("test_acc", self.test_accuracy, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.learning_rate)

    def prepare_data(self):
        self.source = (200, 0)

    def setup(self, stage=None):
        if stage == "fit" or stage is None:
            images, labels = _images(200, 1, 28, 10, seed=9)
            mnist_full = TensorDataset(images, labels)
            self.mnist_train, self.mnist_val = random_split(mnist_full, [160, 40])
        if stage == "test" or stage is None:
            images, labels = _images(40, 1, 28, 10, seed=10)
            self.mnist_test = TensorDataset(images, labels)

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=self.batch_size)

    def test_dataloader(self):
        return DataLoader(self.mnist_test, batch_size=self.batch_size)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/reinforce-learning-DQN/dqn.py

Experience = namedtuple("Experience", field_names=["state", "action", "reward", "done", "new_state"])


class ReplayBuffer:
    """A deque of experiences sampled with numpy's global RNG."""

    def __init__(self, capacity: int):
        self.buffer = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self.buffer)

    def append(self, experience: Experience) -> None:
        self.buffer.append(experience)

    def sample(self, batch_size: int):
        indices = np.random.choice(len(self.buffer), batch_size, replace=False)
        states, actions, rewards, dones, next_states = zip(*(self.buffer[idx] for idx in indices))
        return (
            np.array(states),
            np.array(actions),
            np.array(rewards, dtype=np.float32),
            np.array(dones, dtype=bool),
            np.array(next_states),
        )


class RLDataset(IterableDataset):
    """An IterableDataset that samples the replay buffer afresh at each iteration (no length)."""

    def __init__(self, buffer: ReplayBuffer, sample_size: int = 64):
        self.buffer = buffer
        self.sample_size = sample_size

    def __iter__(self):
        states, actions, rewards, dones, new_states = self.buffer.sample(self.sample_size)
        for i in range(len(dones)):
            yield states[i], actions[i], rewards[i], dones[i], new_states[i]


class ToyEnv:
    """A small stand-in for CartPole: a 4-vector state drifting under two actions, numpy's global RNG for the noise
    and for random actions, done after `horizon` steps or when the state leaves the box."""

    n_actions = 2
    obs_size = 4

    def __init__(self, horizon: int = 12):
        self.horizon = horizon
        self.state = None
        self.t = 0

    def reset(self):
        self.t = 0
        self.state = np.random.uniform(-0.05, 0.05, size=self.obs_size).astype(np.float32)
        return self.state

    def sample_action(self) -> int:
        return int(np.random.randint(self.n_actions))

    def step(self, action: int):
        push = 0.1 if action == 1 else -0.1
        noise = np.random.normal(0, 0.01, size=self.obs_size)
        self.state = (self.state + push * np.array([1.0, 0.5, -0.5, 0.25]) + noise).astype(np.float32)
        self.t += 1
        done = bool(self.t >= self.horizon or np.abs(self.state).max() > 1.0)
        return self.state, 1.0, done


class Agent:
    """Plays the environment with an epsilon-greedy policy and stores what it sees in the replay buffer."""

    def __init__(self, env: ToyEnv, replay_buffer: ReplayBuffer):
        self.env = env
        self.replay_buffer = replay_buffer
        self.reset()

    def reset(self) -> None:
        self.state = self.env.reset()

    def get_action(self, net: nn.Module, epsilon: float, device: str) -> int:
        if np.random.random() < epsilon:
            return self.env.sample_action()
        state = torch.tensor(np.array([self.state]), device=device)
        q_values = net(state)
        _, action = torch.max(q_values, dim=1)
        return int(action.item())

    @torch.no_grad()
    def play_step(self, net: nn.Module, epsilon: float = 0.0, device: str = "cpu"):
        action = self.get_action(net, epsilon, device)
        new_state, reward, done = self.env.step(action)
        self.replay_buffer.append(Experience(self.state, action, reward, done, new_state))
        self.state = new_state
        if done:
            self.reset()
        return reward, done


class DQNLightning(pl.LightningModule):
    """The DQN tutorial: an agent playing inside `training_step`, an IterableDataset over a replay buffer filled in
    `__init__` (numpy's global RNG), a target network synced by `load_state_dict` every `sync_rate` steps of
    `self.global_step`, an epsilon schedule read from `self.global_step`, plain floats logged (and `global_step`
    with `logger=False, prog_bar=True`), and a name-mangled private `__dataloader` behind `train_dataloader`."""

    def __init__(
        self,
        batch_size: int = 16,
        lr: float = 1e-2,
        gamma: float = 0.99,
        sync_rate: int = 5,
        replay_size: int = 200,
        warm_start_steps: int = 100,
        eps_last_frame: int = 30,
        eps_start: float = 1.0,
        eps_end: float = 0.01,
        episode_length: int = 64,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.env = ToyEnv()
        self.net = nn.Sequential(nn.Linear(ToyEnv.obs_size, 16), nn.ReLU(), nn.Linear(16, ToyEnv.n_actions))
        self.target_net = nn.Sequential(nn.Linear(ToyEnv.obs_size, 16), nn.ReLU(), nn.Linear(16, ToyEnv.n_actions))
        self.buffer = ReplayBuffer(self.hparams.replay_size)
        self.agent = Agent(self.env, self.buffer)
        self.total_reward = 0
        self.episode_reward = 0
        self.populate(self.hparams.warm_start_steps)

    def populate(self, steps: int = 1000) -> None:
        for _ in range(steps):
            self.agent.play_step(self.net, epsilon=1.0)

    def forward(self, x):
        return self.net(x)

    def dqn_mse_loss(self, batch):
        states, actions, rewards, dones, next_states = batch
        state_action_values = self.net(states).gather(1, actions.long().unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            next_state_values = self.target_net(next_states).max(1)[0]
            next_state_values[dones] = 0.0
            next_state_values = next_state_values.detach()
        expected_state_action_values = next_state_values * self.hparams.gamma + rewards
        return F.mse_loss(state_action_values, expected_state_action_values)

    def get_epsilon(self, start: float, end: float, frames: int) -> float:
        if self.global_step > frames:
            return end
        return start - (self.global_step / frames) * (start - end)

    def training_step(self, batch, nb_batch):
        device = self.get_device(batch)
        epsilon = self.get_epsilon(self.hparams.eps_start, self.hparams.eps_end, self.hparams.eps_last_frame)
        self.log("epsilon", epsilon)
        reward, done = self.agent.play_step(self.net, epsilon, device)
        self.episode_reward += reward
        self.log("episode reward", self.episode_reward)
        loss = self.dqn_mse_loss(batch)
        if done:
            self.total_reward = self.episode_reward
            self.episode_reward = 0
        if self.global_step % self.hparams.sync_rate == 0:
            self.target_net.load_state_dict(self.net.state_dict())
        self.log_dict({"reward": reward, "train_loss": loss})
        self.log("total_reward", self.total_reward, prog_bar=True)
        self.log("steps", self.global_step, logger=False, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)

    def __dataloader(self) -> DataLoader:
        dataset = RLDataset(self.buffer, self.hparams.episode_length)
        return DataLoader(dataset=dataset, batch_size=self.hparams.batch_size)

    def train_dataloader(self) -> DataLoader:
        return self.__dataloader()

    def get_device(self, batch) -> str:
        return batch[0].device.type if isinstance(batch, list) else "cpu"


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/12-meta-learning/Meta_Learning.py


class FewShotBatchSampler:
    """The notebook's few-shot sampler: each batch holds `tasks` N-way K-shot tasks (support and query halves),
    the classes shuffled with Python's global `random` at each iteration."""

    def __init__(self, targets: torch.Tensor, n_way: int = 3, k_shot: int = 2, tasks: int = 2, batches: int = 6):
        self.targets = targets
        self.n_way = n_way
        self.k_shot = k_shot
        self.tasks = tasks
        self.batches = batches
        self.classes = sorted(set(targets.tolist()))
        self.indices = {c: torch.where(targets == c)[0].tolist() for c in self.classes}

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for _ in range(self.batches):
            batch = []
            for _ in range(self.tasks):
                classes = random.sample(self.classes, self.n_way)
                shots = {c: random.sample(self.indices[c], 2 * self.k_shot) for c in classes}
                batch += [i for c in classes for i in shots[c][: self.k_shot]]
                batch += [i for c in classes for i in shots[c][self.k_shot :]]
            yield batch


class TaskCollate:
    """Splits a collated batch into its tasks, each (support images, support labels, query images, query labels),
    the labels renumbered 0..N-1 within the task."""

    def __init__(self, tasks: int):
        self.tasks = tasks

    def __call__(self, samples):
        images = torch.stack([s[0] for s in samples])
        labels = torch.stack([s[1] for s in samples])
        result = []
        for task_images, task_labels in zip(images.chunk(self.tasks), labels.chunk(self.tasks)):
            _, task_labels = torch.unique(task_labels, return_inverse=True)
            half = len(task_labels) // 2
            result.append((task_images[:half], task_labels[:half], task_images[half:], task_labels[half:]))
        return result


class FewShotData(pl.LightningDataModule):
    """Feature vectors of 8 classes (an Omniglot/CIFAR-FS split's place), loaded through the task sampler."""

    def __init__(self, tasks: int = 2, n_way: int = 3, k_shot: int = 2, features: int = 12):
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(11)
        centres = torch.randn(8, self.hparams.features, generator=generator)
        labels = torch.arange(8).repeat_interleave(12)
        points = centres[labels] + 0.5 * torch.randn(len(labels), self.hparams.features, generator=generator)
        self.train_set = TensorDataset(points[labels < 6], labels[labels < 6])
        self.val_set = TensorDataset(points[labels >= 3], labels[labels >= 3])

    def _loader(self, dataset: TensorDataset, batches: int) -> DataLoader:
        h = self.hparams
        sampler = FewShotBatchSampler(dataset.tensors[1], h.n_way, h.k_shot, h.tasks, batches)
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=TaskCollate(h.tasks))

    def train_dataloader(self):
        return self._loader(self.train_set, 6)

    def val_dataloader(self):
        return self._loader(self.val_set, 2)


class MAML(pl.LightningModule):
    """The UvA meta-learning notebook's (first-order) ProtoMAML: manual optimization, the model deep-copied and
    adapted with a local SGD inside `training_step`, the copies' gradients added by hand onto the global
    parameters' `.grad`, `self.optimizers()` stepped once per batch, `training_step` returning None; a MultiStepLR
    returned by `configure_optimizers` but never stepped (manual optimization leaves it to the module); and
    `validation_step` switching gradients back on with `torch.set_grad_enabled(True)` to adapt."""

    def __init__(self, features: int = 12, proto_dim: int = 8, lr: float = 1e-3, lr_inner: float = 0.1,
                 lr_output: float = 0.1, num_inner_steps: int = 1):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.model = nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, proto_dim))

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)
        return [optimizer], [scheduler]

    def adapt_few_shot(self, support_imgs, support_targets):
        n_way = int(support_targets.max()) + 1
        support_feats = self.model(support_imgs)
        prototypes = torch.stack([support_feats[support_targets == c].mean(dim=0) for c in range(n_way)])
        support_labels = support_targets
        local_model = deepcopy(self.model)
        local_model.train()
        local_optim = torch.optim.SGD(local_model.parameters(), lr=self.hparams.lr_inner)
        local_optim.zero_grad()
        init_weight = 2 * prototypes
        init_bias = -torch.norm(prototypes, dim=1) ** 2
        output_weight = init_weight.detach().requires_grad_()
        output_bias = init_bias.detach().requires_grad_()
        for _ in range(self.hparams.num_inner_steps):
            feats = local_model(support_imgs)
            loss = F.cross_entropy(F.linear(feats, output_weight, output_bias), support_labels)
            loss.backward()
            local_optim.step()
            output_weight.data -= self.hparams.lr_output * output_weight.grad
            output_bias.data -= self.hparams.lr_output * output_bias.grad
            local_optim.zero_grad()
            output_weight.grad.fill_(0)
            output_bias.grad.fill_(0)
        output_weight = (output_weight - init_weight).detach() + init_weight
        output_bias = (output_bias - init_bias).detach() + init_bias
        return local_model, output_weight, output_bias

    def outer_loop(self, batch, mode="train"):
        accuracies, losses = [], []
        self.model.zero_grad()
        for support_imgs, support_targets, query_imgs, query_targets in batch:
            local_model, output_weight, output_bias = self.adapt_few_shot(support_imgs, support_targets)
            preds = F.linear(local_model(query_imgs), output_weight, output_bias)
            loss = F.cross_entropy(preds, query_targets)
            acc = (preds.argmax(dim=1) == query_targets).float().mean()
            if mode == "train":
                self.manual_backward(loss)
                for p_global, p_local in zip(self.model.parameters(), local_model.parameters()):
                    p_global.grad = p_local.grad.clone() if p_global.grad is None else p_global.grad + p_local.grad
            accuracies.append(acc.detach())
            losses.append(loss.detach())
        if mode == "train":
            opt = self.optimizers()
            opt.step()
            opt.zero_grad()
        self.log(f"{mode}_loss", sum(losses) / len(losses))
        self.log(f"{mode}_acc", sum(accuracies) / len(accuracies))

    def training_step(self, batch, batch_idx):
        self.outer_loop(batch, mode="train")

    def validation_step(self, batch, batch_idx):
        torch.set_grad_enabled(True)
        self.outer_loop(batch, mode="val")
        torch.set_grad_enabled(False)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/barlow-twins/barlow_twins.py


class ThreeViews(Dataset):
    """Two augmented views for the self-supervised loss and a third for the online linear probe, plus the label."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        self.images = images
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        image = self.images[index]
        views = tuple(image + 0.1 * torch.randn_like(image) for _ in range(3))
        return views, self.labels[index]


class ThreeViewsData(pl.LightningDataModule):
    """Random images seen through three views (a CIFAR-10 with Barlow Twins transforms' place)."""

    def __init__(self, batch_size: int = 16, size: int = 8):
        super().__init__()
        self.batch_size = batch_size
        self.size = size

    def setup(self, stage: str):
        images, labels = _images(96, 3, self.size, 10, seed=12)
        self.train_set = ThreeViews(images[:64], labels[:64])
        self.val_set = ThreeViews(images[64:], labels[64:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, shuffle=False)


class BarlowTwinsLoss(nn.Module):
    """The cross-correlation of the two views' normalised embeddings pushed towards the identity."""

    def __init__(self, batch_size: int, lambda_coeff: float = 5e-3, z_dim: int = 16):
        super().__init__()
        self.z_dim = z_dim
        self.batch_size = batch_size
        self.lambda_coeff = lambda_coeff

    def off_diagonal_ele(self, x):
        n, m = x.shape
        assert n == m
        return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

    def forward(self, z1, z2):
        z1_norm = (z1 - torch.mean(z1, dim=0)) / torch.std(z1, dim=0)
        z2_norm = (z2 - torch.mean(z2, dim=0)) / torch.std(z2, dim=0)
        cross_corr = torch.matmul(z1_norm.T, z2_norm) / self.batch_size
        on_diag = torch.diagonal(cross_corr).add_(-1).pow_(2).sum()
        off_diag = self.off_diagonal_ele(cross_corr).pow_(2).sum()
        return on_diag + self.lambda_coeff * off_diag


def fn(warmup_steps: int, max_steps: int):
    """The tutorial's warm-up then cosine factor, a closure over the two lengths."""

    def inner(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return 0.5 * (1.0 + math.cos(math.pi * (step - warmup_steps) / max(1, max_steps - warmup_steps)))

    return inner


class BarlowTwins(pl.LightningModule):
    """The Barlow Twins tutorial: an encoder and a projection head, a loss module, `forward` returning the
    encoder's features (the callback's probe reads them), Adam and a LambdaLR from a closure-returning function,
    `[optimizer], [{"scheduler", "interval": "step"}]`; the online linear probe lives in the callback below."""

    def __init__(self, encoder_out_dim: int = 16, z_dim: int = 16, batch_size: int = 16, learning_rate: float = 1e-3,
                 warmup_epochs: int = 1, max_epochs: int = 2, train_iters_per_epoch: int = 4):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder = _small_convnet(3, encoder_out_dim)
        self.projection_head = nn.Sequential(
            nn.Linear(encoder_out_dim, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, z_dim, bias=False)
        )
        self.loss_fn = BarlowTwinsLoss(batch_size=batch_size, z_dim=z_dim)
        self.warmup_epochs = warmup_epochs
        self.max_epochs = max_epochs
        self.train_iters_per_epoch = train_iters_per_epoch

    def forward(self, x):
        return self.encoder(x)

    def shared_step(self, batch):
        (x1, x2, _), _ = batch
        z1 = self.projection_head(self.encoder(x1))
        z2 = self.projection_head(self.encoder(x2))
        return self.loss_fn(z1, z2)

    def training_step(self, batch, batch_idx):
        loss = self.shared_step(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self.shared_step(batch)
        self.log("val_loss", loss, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        warmup_steps = self.train_iters_per_epoch * self.warmup_epochs
        scheduler = {
            "scheduler": torch.optim.lr_scheduler.LambdaLR(
                optimizer, lr_lambda=fn(warmup_steps, self.train_iters_per_epoch * self.max_epochs)
            ),
            "interval": "step",
            "frequency": 1,
        }
        return [optimizer], [scheduler]


class OnlineFineTuner(pl.Callback):
    """The tutorial's online linear evaluation: at `on_fit_start` a linear layer attached to the module as a new
    attribute (after `configure_optimizers`) with the callback's own Adam; at each training batch's end the probe
    trained on detached features and `pl_module.log` called from the callback (`on_step=True, on_epoch=False`); at
    each validation batch's end the probe's accuracy logged per epoch."""

    def __init__(self, encoder_output_dim: int = 16, num_classes: int = 10):
        super().__init__()
        self.optimizer = None
        self.encoder_output_dim = encoder_output_dim
        self.num_classes = num_classes

    def on_fit_start(self, trainer, pl_module):
        pl_module.online_finetuner = nn.Linear(self.encoder_output_dim, self.num_classes).to(pl_module.device)
        self.optimizer = torch.optim.Adam(pl_module.online_finetuner.parameters(), lr=1e-3)

    def extract_online_finetuning_view(self, batch, device):
        (_, _, finetune_view), y = batch
        return finetune_view.to(device), y.to(device)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        x, y = self.extract_online_finetuning_view(batch, pl_module.device)
        with torch.no_grad():
            feats = pl_module(x)
        feats = feats.detach()
        preds = pl_module.online_finetuner(feats)
        loss = F.cross_entropy(preds, y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        acc = accuracy(F.softmax(preds, dim=1), y, task="multiclass", num_classes=self.num_classes)
        pl_module.log("online_train_acc", acc, on_step=True, on_epoch=False)
        pl_module.log("online_train_loss", loss, on_step=True, on_epoch=False)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        x, y = self.extract_online_finetuning_view(batch, pl_module.device)
        with torch.no_grad():
            preds = pl_module.online_finetuner(pl_module(x))
        acc = accuracy(F.softmax(preds, dim=1), y, task="multiclass", num_classes=self.num_classes)
        pl_module.log("online_val_acc", acc, on_step=False, on_epoch=True, sync_dist=True)
        pl_module.log("online_val_loss", F.cross_entropy(preds, y), on_step=False, on_epoch=True, sync_dist=True)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: lightning_examples/augmentation_kornia/augmentation.py


class DataAugmentation(nn.Module):
    """Batch-level augmentation on the device, without gradients (kornia's random flip and jitter's place)."""

    def __init__(self, noise: float = 0.1):
        super().__init__()
        self.noise = noise

    @torch.no_grad()
    def forward(self, x):
        flip = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < 0.5
        x = torch.where(flip, torch.flip(x, dims=(3,)), x)
        return x + self.noise * torch.randn_like(x)


class Preprocess(nn.Module):
    """The per-sample preprocessing a dataset's transform applies (scaling to [-1, 1])."""

    @torch.no_grad()
    def forward(self, x):
        return x * 2 - 1


class TransformsDataset(Dataset):
    """A dataset with a `transform` module applied in `__getitem__`, as torchvision's datasets do."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, transform: nn.Module):
        self.images = images
        self.labels = labels
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.transform(self.images[index]), self.labels[index]


class KorniaClassifier(pl.LightningModule):
    """The kornia augmentation tutorial: an augmentation nn.Module applied in `on_after_batch_transfer` only while
    `self.trainer.training`, a preprocessing module used as the dataset's transform, torchmetrics Accuracy objects
    called and logged with `prog_bar=True`, Adam and `CosineAnnealingLR(optimizer, self.trainer.max_epochs, 0)`,
    and the loaders built by the module."""

    def __init__(self, batch_size: int = 16, size: int = 12):
        super().__init__()
        self.save_hyperparameters()
        self.preprocess = Preprocess()
        self.transform = DataAugmentation()
        self.model = _small_convnet(3, 10)
        self.train_accuracy = Accuracy(task="multiclass", num_classes=10)
        self.val_accuracy = Accuracy(task="multiclass", num_classes=10)

    def forward(self, x):
        return self.model(x)

    def compute_loss(self, y_hat, y):
        return F.cross_entropy(y_hat, y)

    def on_after_batch_transfer(self, batch, dataloader_idx):
        x, y = batch
        if self.trainer.training:
            x = self.transform(x)
        return x, y

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = self.compute_loss(y_hat, y)
        self.train_accuracy.update(y_hat, y)
        self.log("train_loss", loss, prog_bar=False)
        self.log("train_acc", self.train_accuracy, prog_bar=False)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = self.compute_loss(y_hat, y)
        self.val_accuracy.update(y_hat, y)
        self.log("valid_loss", loss, prog_bar=False)
        self.log("valid_acc", self.val_accuracy, prog_bar=True)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, self.trainer.max_epochs, 0)
        return [optimizer], [scheduler]

    def prepare_data(self):
        pass

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(13)
        images = torch.rand(96, 3, self.hparams.size, self.hparams.size, generator=generator)
        labels = torch.randint(0, 10, (96,), generator=generator)
        dataset = TransformsDataset(images, labels, self.preprocess)
        return DataLoader(dataset, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        generator = torch.Generator().manual_seed(14)
        images = torch.rand(32, 3, self.hparams.size, self.hparams.size, generator=generator)
        labels = torch.randint(0, 10, (32,), generator=generator)
        return DataLoader(TransformsDataset(images, labels, self.preprocess), batch_size=self.hparams.batch_size)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/computer_vision_fine_tuning.py


class MilestonesFinetuning(BaseFinetuning):
    """The fine-tuning template's callback: the feature extractor frozen before training, its last layers then the
    rest unfrozen into the optimizer as new groups at two milestone epochs."""

    def __init__(self, milestones: tuple = (1, 2), train_bn: bool = False):
        super().__init__()
        self.milestones = milestones
        self.train_bn = train_bn

    def freeze_before_training(self, pl_module):
        self.freeze(modules=pl_module.feature_extractor, train_bn=self.train_bn)

    def finetune_function(self, pl_module, epoch, optimizer):
        if epoch == self.milestones[0]:
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[-3:], optimizer=optimizer, train_bn=self.train_bn
            )
        elif epoch == self.milestones[1]:
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[:-3], optimizer=optimizer, train_bn=self.train_bn
            )


class BinaryImagesData(pl.LightningDataModule):
    """Random images with two classes (the cats-and-dogs set's place)."""

    def __init__(self, batch_size: int = 16, size: int = 12):
        super().__init__()
        self.batch_size = batch_size
        self.size = size

    def setup(self, stage: str):
        images, labels = _images(128, 3, self.size, 2, seed=15)
        self.train_set = TensorDataset(images[:96], labels[:96])
        self.val_set = TensorDataset(images[96:], labels[96:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class TransferLearningModel(pl.LightningModule):
    """The fine-tuning template's module: a `feature_extractor` the callback freezes, a head, a loss function kept
    as an attribute, binary torchmetrics Accuracy called on sigmoid scores and logged, Adam over only the
    parameters that require grad (`filter(lambda p: p.requires_grad, ...)`) and MultiStepLR on the milestones."""

    def __init__(self, milestones: tuple = (1, 2), lr: float = 1e-3, lr_scheduler_gamma: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.milestones = milestones
        self.lr = lr
        self.lr_scheduler_gamma = lr_scheduler_gamma
        self.feature_extractor = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.loss_func = F.binary_cross_entropy_with_logits
        self.train_acc = Accuracy(task="binary")
        self.valid_acc = Accuracy(task="binary")

    def forward(self, x):
        return self.fc(self.feature_extractor(x).flatten(1))

    def loss(self, logits, labels):
        return self.loss_func(input=logits, target=labels)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_logits = self.forward(x)
        y_scores = torch.sigmoid(y_logits)
        y_true = y.view((-1, 1)).type_as(x)
        train_loss = self.loss(y_logits, y_true)
        self.log("train_acc", self.train_acc(y_scores, y_true.int()), prog_bar=True)
        return train_loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_logits = self.forward(x)
        y_scores = torch.sigmoid(y_logits)
        y_true = y.view((-1, 1)).type_as(x)
        self.log("val_loss", self.loss(y_logits, y_true), prog_bar=True)
        self.log("val_acc", self.valid_acc(y_scores, y_true.int()), prog_bar=True)

    def configure_optimizers(self):
        parameters = list(self.parameters())
        trainable_parameters = list(filter(lambda p: p.requires_grad, parameters))
        optimizer = torch.optim.Adam(trainable_parameters, lr=self.lr)
        scheduler = torch.optim.lr_scheduler.MultiStepLR(
            optimizer, milestones=self.milestones, gamma=self.lr_scheduler_gamma
        )
        return [optimizer], [scheduler]


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: docs/source-pytorch/model/manual_optimization.rst


class RegressionData(pl.LightningDataModule):
    """A noisy linear regression: 16 features, one target."""

    def __init__(self, batch_size: int = 16, samples: int = 160):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(16)
        x = torch.randn(self.samples, 16, generator=generator)
        y = x @ torch.randn(16, 1, generator=generator) + 0.1 * torch.randn(self.samples, 1, generator=generator)
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(x[:cut], y[:cut])
        self.val_set = TensorDataset(x[cut:], y[cut:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class ManualSchedules(pl.LightningModule):
    """The manual-optimization guide's recipes together: two optimizers from `self.optimizers()`, gradients
    accumulated by hand over N batches, `self.clip_gradients` before stepping, two schedulers from
    `self.lr_schedulers()` (a ReduceLROnPlateau returned without a monitor, as manual optimization allows), one
    stepped every N epochs where `self.trainer.is_last_batch`, the plateau one stepped in `on_train_epoch_end` on
    `self.trainer.callback_metrics["train_loss"]`. `plateau_dict`: the plateau scheduler in a config dict with a
    "monitor" (which Lightning ignores under manual optimization)."""

    def __init__(self, accumulate: int = 2, every_n_epochs: int = 1, clip: float = 0.5, plateau_dict: bool = False):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.body = nn.Sequential(nn.Linear(16, 32), nn.Tanh())
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.body(x))

    def training_step(self, batch, batch_idx):
        opt_body, opt_head = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.manual_backward(loss / self.hparams.accumulate)
        if (batch_idx + 1) % self.hparams.accumulate == 0:
            self.clip_gradients(opt_body, gradient_clip_val=self.hparams.clip, gradient_clip_algorithm="norm")
            opt_body.step()
            opt_head.step()
            opt_body.zero_grad()
            opt_head.zero_grad()
        step_scheduler, _ = self.lr_schedulers()
        if self.trainer.is_last_batch and (self.trainer.current_epoch + 1) % self.hparams.every_n_epochs == 0:
            step_scheduler.step()
        self.log("train_loss", loss)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y))

    def on_train_epoch_end(self):
        _, sch = self.lr_schedulers()
        if isinstance(sch, torch.optim.lr_scheduler.ReduceLROnPlateau):
            sch.step(self.trainer.callback_metrics["train_loss"])

    def configure_optimizers(self):
        opt_body = torch.optim.SGD(self.body.parameters(), lr=0.05, momentum=0.9)
        opt_head = torch.optim.Adam(self.head.parameters(), lr=0.01)
        step = torch.optim.lr_scheduler.StepLR(opt_body, step_size=1, gamma=0.5)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt_head, mode="min", factor=0.5, patience=0)
        if self.hparams.plateau_dict:
            # Lightning warns that a manual-optimization config's "monitor" is ignored, and keeps the scheduler.
            return [opt_body, opt_head], [step, {"scheduler": plateau, "monitor": "train_loss"}]
        return [opt_body, opt_head], [step, plateau]


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: docs/source-pytorch/common/optimization.rst (and LightningModule's hook docs)


class OptimizationHooks(pl.LightningModule):
    """The optimization guide's automatic-optimization hooks: the full lr-scheduler config dict (ReduceLROnPlateau
    with monitor, interval, frequency, strict, name), a `configure_gradient_clipping` override that clips only after
    the first epoch, `on_before_optimizer_step` logging `grad_norm`, and `on_train_batch_start` returning -1 to cut
    an epoch short."""

    def __init__(self, lr: float = 0.05, batches_per_epoch: int = 6):
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.layer(x)

    def on_train_batch_start(self, batch, batch_idx):
        if batch_idx >= self.hparams.batches_per_epoch:
            return -1
        return None

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y), prog_bar=True)

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        if self.current_epoch > 0:
            self.clip_gradients(
                optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm
            )

    def on_before_optimizer_step(self, optimizer):
        self.log_dict(grad_norm(self.layer, norm_type=2))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {
                "scheduler": scheduler,
                "monitor": "val_loss",
                "interval": "epoch",
                "frequency": 1,
                "strict": True,
                "name": "plateau_lr",
            },
        }


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/tutorials: course_UvA-DL/07-deep-energy-based-generative-models/Deep_Energy_Models.py


class Sampler:
    """The notebook's replay buffer of MCMC samples: initial examples from the global torch RNG, old examples
    picked with Python's `random.choices`, the count of fresh ones with numpy's binomial, Langevin steps with
    gradients switched on by hand and the model's parameters frozen meanwhile."""

    def __init__(self, model: nn.Module, img_shape: tuple, sample_size: int, max_len: int = 256):
        self.model = model
        self.img_shape = tuple(img_shape)
        self.sample_size = sample_size
        self.max_len = max_len
        self.examples = [(torch.rand((1,) + self.img_shape) * 2 - 1) for _ in range(self.sample_size)]

    def sample_new_exmps(self, steps: int = 10, step_size: float = 10):
        n_new = np.random.binomial(self.sample_size, 0.05)
        rand_imgs = torch.rand((n_new,) + self.img_shape) * 2 - 1
        old_imgs = torch.cat(random.choices(self.examples, k=self.sample_size - n_new), dim=0)
        device = next(self.model.parameters()).device
        inp_imgs = torch.cat([rand_imgs, old_imgs], dim=0).detach().to(device)
        inp_imgs = Sampler.generate_samples(self.model, inp_imgs, steps=steps, step_size=step_size)
        self.examples = list(inp_imgs.to(torch.device("cpu")).chunk(self.sample_size, dim=0)) + self.examples
        self.examples = self.examples[: self.max_len]
        return inp_imgs

    @staticmethod
    def generate_samples(model: nn.Module, inp_imgs: torch.Tensor, steps: int = 10, step_size: float = 10):
        is_training = model.training
        model.eval()
        for p in model.parameters():
            p.requires_grad = False
        inp_imgs.requires_grad = True
        had_gradients_enabled = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        noise = torch.randn(inp_imgs.shape, device=inp_imgs.device)
        for _ in range(steps):
            noise.normal_(0, 0.005)
            inp_imgs.data.add_(noise.data)
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            out_imgs = -model(inp_imgs)
            out_imgs.sum().backward()
            inp_imgs.grad.data.clamp_(-0.03, 0.03)
            inp_imgs.data.add_(-step_size * inp_imgs.grad.data)
            inp_imgs.grad.detach_()
            inp_imgs.grad.zero_()
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
        for p in model.parameters():
            p.requires_grad = True
        model.train(is_training)
        torch.set_grad_enabled(had_gradients_enabled)
        return inp_imgs


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class DeepEnergyModel(pl.LightningModule):
    """The UvA energy-based-model notebook: contrastive divergence against samples drawn inside `training_step` by
    the sampler above (three RNGs, gradients on inside the step, the batch noised in place), four metrics logged,
    Adam with `betas=(beta1, 0.999)` and `StepLR(optimizer, 1, gamma=0.97)`, `example_input_array` from the image
    shape."""

    def __init__(self, img_shape: tuple = (1, 8, 8), batch_size: int = 16, alpha: float = 0.1, lr: float = 1e-4,
                 beta1: float = 0.0, hidden: int = 8, mcmc_steps: int = 8):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        channels, size, _ = img_shape
        self.cnn = nn.Sequential(
            nn.Conv2d(channels, hidden, 3, stride=2, padding=1),
            Swish(),
            nn.Conv2d(hidden, 2 * hidden, 3, stride=2, padding=1),
            Swish(),
            nn.Flatten(),
            nn.Linear(2 * hidden * (size // 4) ** 2, 1),
        )
        self.sampler = Sampler(self.cnn, img_shape=img_shape, sample_size=batch_size)
        self.example_input_array = torch.zeros(1, *img_shape)

    def forward(self, x):
        return self.cnn(x)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr, betas=(self.hparams.beta1, 0.999))
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.97)
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        real_imgs, _ = batch
        small_noise = torch.randn_like(real_imgs) * 0.005
        real_imgs.add_(small_noise).clamp_(min=-1.0, max=1.0)
        fake_imgs = self.sampler.sample_new_exmps(steps=self.hparams.mcmc_steps, step_size=10)
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = self.cnn(inp_imgs).chunk(2, dim=0)
        reg_loss = self.hparams.alpha * (real_out**2 + fake_out**2).mean()
        cdiv_loss = fake_out.mean() - real_out.mean()
        loss = reg_loss + cdiv_loss
        self.log("loss", loss)
        self.log("loss_regularization", reg_loss)
        self.log("loss_contrastive_divergence", cdiv_loss)
        self.log("metrics_avg_real", real_out.mean())
        self.log("metrics_avg_fake", fake_out.mean())
        return loss

    def validation_step(self, batch, batch_idx):
        real_imgs, _ = batch
        fake_imgs = torch.rand_like(real_imgs) * 2 - 1
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = self.cnn(inp_imgs).chunk(2, dim=0)
        cdiv = fake_out.mean() - real_out.mean()
        self.log("val_contrastive_divergence", cdiv)
        self.log("val_fake_out", fake_out.mean())
        self.log("val_real_out", real_out.mean())


class GenerateSamplesCallback(pl.Callback):
    """The notebook's GenerateCallback: every N epochs, at the training epoch's end, fresh samples generated from
    noise (the global RNG) with gradients switched on by hand, their mean energy written to `trainer.logger`."""

    def __init__(self, batch_size: int = 4, num_steps: int = 8, every_n_epochs: int = 1):
        super().__init__()
        self.batch_size = batch_size
        self.num_steps = num_steps
        self.every_n_epochs = every_n_epochs

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch % self.every_n_epochs == 0:
            pl_module.eval()
            start_imgs = torch.rand((self.batch_size,) + tuple(pl_module.hparams["img_shape"])).to(pl_module.device)
            start_imgs = start_imgs * 2 - 1
            imgs = Sampler.generate_samples(pl_module.cnn, start_imgs, steps=self.num_steps, step_size=10)
            pl_module.train()
            with torch.no_grad():
                energy = pl_module.cnn(imgs).mean().item()
            trainer.logger.log_metrics({"generated_energy": energy}, step=trainer.current_epoch)


class OutlierCallback(pl.Callback):
    """The notebook's OutlierCallback: the model's mean output on uniform noise, in eval mode under no_grad, at
    each training epoch's end."""

    def __init__(self, batch_size: int = 16):
        super().__init__()
        self.batch_size = batch_size

    def on_train_epoch_end(self, trainer, pl_module):
        with torch.no_grad():
            pl_module.eval()
            rand_imgs = torch.rand((self.batch_size,) + tuple(pl_module.hparams["img_shape"])).to(pl_module.device)
            rand_imgs = rand_imgs * 2 - 1.0
            rand_out = pl_module.cnn(rand_imgs).mean()
            pl_module.train()
        trainer.logger.log_metrics({"rand_out": rand_out.item()}, step=trainer.current_epoch)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: examples/pytorch/bug_report/bug_report_model.py (+ the checkpointing guides)


class RandomDataset(Dataset):
    """The bug-report template's dataset: `length` random vectors of `size` (seeded here)."""

    def __init__(self, size: int, length: int, seed: int = 17):
        self.len = length
        self.data = torch.randn(length, size, generator=torch.Generator().manual_seed(seed))

    def __getitem__(self, index):
        return self.data[index]

    def __len__(self):
        return self.len


class BoringModel(pl.LightningModule):
    """The bug-report template: one Linear layer, `*_dataloader` methods over a RandomDataset, the sum of the output
    as the loss, SGD; with the checkpointing guide's `on_save_checkpoint` / `on_load_checkpoint` hooks adding an
    entry of the module's own to each checkpoint."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)
        self.saves = 0

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        loss = self(batch).sum()
        self.log("train_loss", loss)
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        loss = self(batch).sum()
        self.log("valid_loss", loss)

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self(batch).sum())

    def configure_optimizers(self):
        return torch.optim.SGD(self.layer.parameters(), lr=0.1)

    def on_save_checkpoint(self, checkpoint):
        self.saves += 1
        checkpoint["saves_so_far"] = self.saves

    def on_load_checkpoint(self, checkpoint):
        self.saves = checkpoint["saves_so_far"]

    def train_dataloader(self):
        return DataLoader(RandomDataset(32, 64), batch_size=2)

    def val_dataloader(self):
        return DataLoader(RandomDataset(32, 64, seed=18), batch_size=2)

    def test_dataloader(self):
        return DataLoader(RandomDataset(32, 64, seed=19), batch_size=2)


# --------------------------------------------------------------------------------------------------------------------
# Lightning-AI/pytorch-lightning: docs/source-pytorch/common/lightning_module.rst


class EpochOutputsByHand(pl.LightningModule):
    """The LightningModule guide's 2.x epoch-end recipes: training losses appended to a list in `training_step`,
    their mean logged in `on_train_epoch_end` and the list cleared; validation errors gathered likewise, not logged
    during `self.trainer.sanity_checking`; `self.log` with `reduce_fx="max"` and an explicit `batch_size`;
    `self.trainer.num_training_batches` and `self.trainer.num_val_batches` read."""

    def __init__(self, lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
        self.training_step_outputs = []
        self.validation_step_outputs = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.training_step_outputs.append(loss.detach())
        self.log("max_batch_loss", loss, on_step=False, on_epoch=True, reduce_fx="max", batch_size=x.shape[0])
        return loss

    def on_train_epoch_end(self):
        epoch_mean = torch.stack(self.training_step_outputs).mean()
        self.log("training_epoch_mean", epoch_mean)
        self.log("batches_per_epoch", float(self.trainer.num_training_batches))
        self.training_step_outputs.clear()

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        self.validation_step_outputs.append((pred - y).abs())
        self.log("val_loss", F.mse_loss(pred, y))

    def on_validation_epoch_end(self):
        errors = torch.cat(self.validation_step_outputs)
        self.validation_step_outputs.clear()
        if self.trainer.sanity_checking:
            return
        self.log("val_max_error", errors.max())
        self.log("val_batches", float(sum(self.trainer.num_val_batches)))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


CSV = {"class_path": "CSVLogger", "init_args": {"save_dir": "."}}


def _callback(name: str, **init_args) -> dict:
    return {"class_path": name, "init_args": init_args}


CASES = [
    corpus_case(
        "quickstart_autoencoder",
        "tutorials",
        "LitAutoEncoder",
        data="ImagesData",
        pattern="two nn.Sequential, a flattened batch, self.log of the loss, Adam alone, a datamodule's setup",
        studied="Lightning-AI/pytorch-lightning: README.md (LitAutoEncoder)",
        max_epochs=2,
    ),
    corpus_case(
        "tut_gan_manual_optimization",
        "tutorials",
        "ManualGAN",
        data="ImagesData",
        data_init={"samples": 128},
        pattern="manual optimization, two optimizers as a tuple, toggle/untoggle_optimizer, self.loggers at epoch end",
        studied="Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/generative_adversarial_net.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "tut_imagenet_topk_lambdalr",
        "tutorials",
        "TopKClassifier",
        pattern="module-owned data in setup(stage), torchmetrics objects logged, LambdaLR, ModelCheckpoint on val_acc1",
        studied="Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/imagenet.py",
        max_epochs=3,
        enable_checkpointing=True,
        callbacks=[_callback("ModelCheckpoint", monitor="val_acc1", mode="max")],
    ),
    corpus_case(
        "tut_cifar10_onecycle_step",
        "tutorials",
        "OneCycleResNet",
        data="ColorImagesData",
        pattern="OneCycleLR from self.trainer.max_epochs as an interval-step dict, LearningRateMonitor per step",
        studied="Lightning-AI/tutorials: lightning_examples/cifar10-baseline/baseline.py",
        max_epochs=2,
        logger=CSV,
        callbacks=[_callback("LearningRateMonitor", logging_interval="step")],
    ),
    corpus_case(
        "tut_glue_outputs_by_hand",
        "tutorials",
        "GlueTransformer",
        data="GlueLikeData",
        pattern="dict batches, validation outputs gathered by hand, grouped AdamW, warm-up over "
        "estimated_stepping_batches with accumulation",
        studied="Lightning-AI/tutorials: lightning_examples/text-transformers/text-transformers.py",
        max_epochs=2,
        accumulate_grad_batches=2,
        logger=CSV,
    ),
    corpus_case(
        "tut_uva_autoencoder_plateau",
        "tutorials",
        "ConvAutoencoder",
        data="ColorImagesData",
        pattern="ReduceLROnPlateau in the flat dict with monitor, a callback toggling eval/train, "
        "save_weights_only checkpoints, LearningRateMonitor per epoch",
        studied="Lightning-AI/tutorials: course_UvA-DL/08-deep-autoencoders/Deep_Autoencoders.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            _callback("ModelCheckpoint", save_weights_only=True),
            _callback("tests.corpus.tutorials.ReconstructionCallback", every_n_epochs=1),
            _callback("LearningRateMonitor", logging_interval="epoch"),
        ],
    ),
    corpus_case(
        "tut_uva_transformer_optimizer_step",
        "tutorials",
        "ReversePredictor",
        data="ReverseData",
        pattern="a scheduler kept on the module and stepped in an optimizer_step override, gradient clipping",
        studied="Lightning-AI/tutorials: course_UvA-DL/05-transformers-and-MH-attention/Transformers_MHAttention.py",
        max_epochs=2,
        gradient_clip_val=5,
        enable_checkpointing=True,
        callbacks=[_callback("ModelCheckpoint", save_weights_only=True, mode="max", monitor="val_acc")],
    ),
    corpus_case(
        "tut_uva_inception_multisteplr",
        "tutorials",
        "CIFARModule",
        data="ColorImagesData",
        model_init={
            "model_name": "TinyNet",
            "model_hparams": {"c_hidden": 8, "act_fn_name": "gelu"},
            "optimizer_name": "SGD",
            "optimizer_hparams": {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4},
        },
        pattern="model and optimizer chosen by name from nested hparams, MultiStepLR, on_epoch train accuracy",
        studied="Lightning-AI/tutorials: course_UvA-DL/04-inception-resnet-densenet/Inception_ResNet_DenseNet.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            _callback("ModelCheckpoint", save_weights_only=True, mode="max", monitor="val_acc"),
            _callback("LearningRateMonitor", logging_interval="epoch"),
        ],
    ),
    corpus_case(
        "tut_uva_simclr_views",
        "tutorials",
        "SimCLR",
        data="ContrastiveData",
        pattern="random views drawn in __getitem__ from the global RNG, InfoNCE, CosineAnnealingLR(T_max=max_epochs)",
        studied="Lightning-AI/tutorials: course_UvA-DL/13-contrastive-learning/SimCLR.py",
        max_epochs=2,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            _callback("ModelCheckpoint", save_weights_only=True, mode="max", monitor="val_acc_top5"),
            _callback("LearningRateMonitor", logging_interval="epoch"),
        ],
    ),
    corpus_case(
        "tut_mnist_hello_world",
        "tutorials",
        "LitMNIST",
        pattern="module-owned data with prepare_data and an unseeded random_split in setup, torchmetrics Accuracy",
        studied="Lightning-AI/tutorials: lightning_examples/mnist-hello-world/hello-world.py",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "tut_dqn_iterable_replay",
        "tutorials",
        "DQNLightning",
        pattern="an IterableDataset over a replay buffer, an agent stepping in training_step, global_step reads",
        studied="Lightning-AI/tutorials: lightning_examples/reinforce-learning-DQN/dqn.py",
        max_epochs=3,
        val_check_interval=50,
        logger=CSV,
    ),
    corpus_case(
        "tut_uva_maml_manual",
        "tutorials",
        "MAML",
        data="FewShotData",
        pattern="manual optimization with a deep-copied inner loop, grads added by hand, an unstepped scheduler, "
        "a custom batch_sampler and collate_fn, set_grad_enabled(True) in validation_step",
        studied="Lightning-AI/tutorials: course_UvA-DL/12-meta-learning/Meta_Learning.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "tut_barlow_twins_online_probe",
        "tutorials",
        "BarlowTwins",
        data="ThreeViewsData",
        pattern="a callback adding a probe to the module at on_fit_start, training it with its own optimizer in "
        "on_train_batch_end, pl_module.log from callbacks; LambdaLR per step",
        studied="Lightning-AI/tutorials: lightning_examples/barlow-twins/barlow_twins.py",
        max_epochs=2,
        logger=CSV,
        callbacks=[_callback("tests.corpus.tutorials.OnlineFineTuner", encoder_output_dim=16, num_classes=10)],
    ),
    corpus_case(
        "tut_kornia_after_batch_transfer",
        "tutorials",
        "KorniaClassifier",
        pattern="augmentation in on_after_batch_transfer while self.trainer.training, CosineAnnealingLR from "
        "self.trainer.max_epochs, module-owned loaders",
        studied="Lightning-AI/tutorials: lightning_examples/augmentation_kornia/augmentation.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "tut_finetuning_milestones",
        "tutorials",
        "TransferLearningModel",
        data="BinaryImagesData",
        pattern="a BaseFinetuning subclass unfreezing at milestones, Adam over filter(requires_grad), MultiStepLR",
        studied="Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/computer_vision_fine_tuning.py",
        max_epochs=3,
        callbacks=[_callback("tests.corpus.tutorials.MilestonesFinetuning", milestones=[1, 2])],
    ),
    corpus_case(
        "tut_docs_manual_schedules_dict",
        "tutorials",
        "ManualSchedules",
        data="RegressionData",
        model_init={"plateau_dict": True},
        pattern="manual optimization: accumulation by hand, clip_gradients, lr_schedulers() stepped on is_last_batch "
        "and on callback_metrics, a ReduceLROnPlateau in a dict whose monitor is ignored",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/model/manual_optimization.rst",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "tut_docs_optimization_hooks",
        "tutorials",
        "OptimizationHooks",
        data="RegressionData",
        pattern="a full lr-scheduler config dict, configure_gradient_clipping and on_before_optimizer_step "
        "overrides, grad_norm logged, on_train_batch_start returning -1, EarlyStopping, accumulation",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/common/optimization.rst",
        max_epochs=4,
        accumulate_grad_batches=2,
        gradient_clip_val=0.5,
        val_check_interval=0.5,
        logger=CSV,
        callbacks=[
            _callback("LearningRateMonitor", logging_interval="epoch"),
            _callback("EarlyStopping", monitor="val_loss", patience=1, min_delta=0.01),
        ],
    ),
    corpus_case(
        "tut_uva_energy_model",
        "tutorials",
        "DeepEnergyModel",
        data="ImagesData",
        data_init={"samples": 64, "batch_size": 16},
        model_init={"img_shape": [1, 28, 28]},
        pattern="MCMC sampling inside training_step (torch, numpy and Python RNGs, grads switched on by hand, "
        "frozen params), callbacks sampling at epoch end, StepLR, gradient clipping",
        studied="Lightning-AI/tutorials: course_UvA-DL/07-deep-energy-based-generative-models/Deep_Energy_Models.py",
        max_epochs=2,
        gradient_clip_val=0.1,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            _callback("ModelCheckpoint", save_weights_only=True, mode="min", monitor="val_contrastive_divergence"),
            _callback("tests.corpus.tutorials.GenerateSamplesCallback", every_n_epochs=1),
            _callback("tests.corpus.tutorials.OutlierCallback"),
            _callback("LearningRateMonitor", logging_interval="epoch"),
        ],
    ),
    corpus_case(
        "tut_bug_report_checkpoints",
        "tutorials",
        "BoringModel",
        pattern="the bug-report BoringModel: limit_*_batches, no sanity check, a dict from training_step, "
        "on_save_checkpoint entries, top-k checkpoints with a filename template and save_last",
        studied="Lightning-AI/pytorch-lightning: examples/pytorch/bug_report/bug_report_model.py",
        max_epochs=3,
        limit_train_batches=5,
        limit_val_batches=3,
        num_sanity_val_steps=0,
        enable_checkpointing=True,
        callbacks=[
            _callback(
                "ModelCheckpoint",
                monitor="valid_loss",
                save_top_k=2,
                save_last=True,
                filename="sample-{epoch:02d}-{valid_loss:.2f}",
            )
        ],
    ),
    corpus_case(
        "tut_docs_epoch_outputs_by_hand",
        "tutorials",
        "EpochOutputsByHand",
        data="RegressionData",
        pattern="step outputs gathered by hand for on_*_epoch_end, trainer.sanity_checking, reduce_fx and batch_size "
        "in self.log, trainer.num_training_batches / num_val_batches",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/common/lightning_module.rst",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "tut_docs_manual_schedules",
        "tutorials",
        "ManualSchedules",
        data="RegressionData",
        pattern="manual optimization: accumulation by hand, clip_gradients, lr_schedulers() stepped on is_last_batch "
        "and on callback_metrics, a ReduceLROnPlateau without monitor",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/model/manual_optimization.rst",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "tut_gan_subclass_back_to_automatic",
        "tutorials",
        "GeneratorWarmup",
        data="ImagesData",
        data_init={"samples": 64},
        pattern="a subclass overriding a manual-optimization training_step with an automatic one",
        studied="Lightning-AI/pytorch-lightning: examples/pytorch/domain_templates/generative_adversarial_net.py",
        max_epochs=1,
    ),
    corpus_case(
        "tut_glue_mnli_two_val_loaders",
        "tutorials",
        "GlueTransformerMNLI",
        data="GlueLikeData",
        data_init={"val_sets": 2},
        pattern="a subclass of a module, two validation loaders as a list, dataloader_idx, outputs gathered per "
        "loader and logged per split",
        studied="Lightning-AI/tutorials: lightning_examples/text-transformers/text-transformers.py",
        max_epochs=2,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[_callback("ModelCheckpoint", monitor="val_loss_matched", save_top_k=1)],
    ),
]

FINDINGS = []
