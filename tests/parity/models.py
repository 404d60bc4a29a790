"""Test-only LightningModules for the parity cases.

Every model records, identically under Lightning's Trainer and under a generated script (which runs these
classes without Lightning's Trainer), what the loop did:

- `val_points`: (current_epoch, global_step, sanity_checking) at every on_validation_start;
- `val_batches`: how many validation batches each of those validation runs had (on_validation_batch_end calls);
- `lrs`: the learning rate of optimizer 0 at every on_train_batch_start, and once more at on_train_end;
- `optimizer_steps`: how many times on_before_optimizer_step was called;
- `final`: global_step and current_epoch at on_train_end;
- `loads`: how many times the model's own train/val dataloader hooks were called;
- `events`: appended to by the model's extra hooks and by tests.parity.callbacks.

The records are plain Python lists / ints / floats on the instance (not buffers), so state_dict() stays the
weights.
"""

import os
import random
import time

import numpy
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from tests.ddp_models import StepProbe, collectives_loss
from tests.parity.callbacks import StopRequest
from tests.parity.data import BATCH_SIZE, CLASSES, FEATURES, N_TRAIN, N_VAL, make_classification


class Recorder(pl.LightningModule):
    """The recording hooks. Subclasses that override one of them call super() first."""

    def __init__(self) -> None:
        super().__init__()
        self.val_points = []
        self.val_batches = []
        self.lrs = []
        self.optimizer_steps = 0
        self.final = None
        self.loads = {"train": 0, "val": 0}
        self.events = []
        self.recorded_optimizer = None

    def remember(self, optimizer):
        """Called by configure_optimizers: the optimizer whose learning rate is recorded."""
        self.recorded_optimizer = optimizer
        return optimizer

    def on_validation_start(self):
        self.val_points.append((self.current_epoch, self.global_step, bool(self.trainer.sanity_checking)))
        self.val_batches.append(0)

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        self.val_batches[-1] += 1

    def on_train_batch_start(self, batch, batch_idx):
        self.lrs.append(self.recorded_optimizer.param_groups[0]["lr"])

    def on_before_optimizer_step(self, optimizer):
        self.optimizer_steps += 1

    def on_train_end(self):
        self.lrs.append(self.recorded_optimizer.param_groups[0]["lr"])
        self.final = {"global_step": self.global_step, "current_epoch": self.current_epoch}

    def parity_records(self) -> dict:
        return {
            "val_points": list(self.val_points),
            "val_batches": list(self.val_batches),
            "lrs": list(self.lrs),
            "optimizer_steps": self.optimizer_steps,
            "final": self.final,
            "loads": dict(self.loads),
            "events": list(self.events),
        }


class Classifier(Recorder):
    """An MLP classifier with dropout and SGD with momentum. It brings no data: use it with a data class."""

    def __init__(self, hidden: int = 32, lr: float = 0.1, dropout: float = 0.2) -> None:
        super().__init__()
        self.lr = lr
        self.net = self.make_net(hidden, dropout)

    def make_net(self, hidden: int, dropout: float) -> nn.Module:
        return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, CLASSES))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        return optimizer


class MLP(Classifier):
    """The classifier with its own train_dataloader (shuffled by default) and val_dataloader."""

    def __init__(self, hidden: int = 32, lr: float = 0.1, dropout: float = 0.2, shuffle: bool = True,
                 batch_size: int = BATCH_SIZE, n_train: int = N_TRAIN, n_val: int = N_VAL) -> None:  # fmt: skip
        super().__init__(hidden=hidden, lr=lr, dropout=dropout)
        self.shuffle = shuffle
        self.batch_size = batch_size
        self.n_train = n_train
        self.n_val = n_val

    def train_dataloader(self):
        self.loads["train"] += 1
        return DataLoader(make_classification(self.n_train, seed=0), batch_size=self.batch_size, shuffle=self.shuffle)

    def val_dataloader(self):
        self.loads["val"] += 1
        return DataLoader(make_classification(self.n_val, seed=1), batch_size=self.batch_size)


class AnomalyMLP(MLP):
    """Whether autograd's anomaly mode is on at each stage (Lightning's detect_anomaly turns it on around the fit
    loop, after the sanity check), and what a backward that makes nan raises where it is."""

    def _record(self, stage: str) -> None:
        self.events.append((stage, torch.is_anomaly_enabled()))

    def validation_step(self, batch, batch_idx):
        self._record("sanity_check" if self.trainer.sanity_checking else "validation")
        return super().validation_step(batch, batch_idx)

    def training_step(self, batch, batch_idx):
        if batch_idx == 1:
            x = torch.zeros(1, requires_grad=True)
            try:
                torch.autograd.grad(torch.sqrt(x) * 0, x)  # 0 * inf: nan in backward
                self.events.append(("nan backward", None))
            except RuntimeError as error:
                self.events.append(("nan backward", str(error).split(" returned")[0]))
        return super().training_step(batch, batch_idx)

    def on_train_start(self):
        self._record("on_train_start")

    def on_train_end(self):
        super().on_train_end()
        self._record("on_train_end")

    def on_fit_end(self):
        self._record("on_fit_end")


class CollectivesMLP(MLP):
    """MLP whose loss goes through one device's strategy as modules call it, with a child LightningModule
    (tests/ddp_models.py: collectives_loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.probe = StepProbe()

    def training_step(self, batch, batch_idx):
        return collectives_loss(self, batch, batch_idx)


class DropoutInValidation(MLP):
    """Overrides on_validation_model_eval alone, keeping its dropout on in validation (Monte Carlo dropout): Lightning
    notes each submodule's mode before the hook and puts them back after validation (once an error at render time:
    the script restored modes it had not noted)."""

    def on_validation_model_eval(self):
        self.eval()
        self.net[2].train()


class ListedValidationModel(MLP):
    """val_dataloader returns its one loader in a list (Lightning validates it as that loader, no
    dataloader_idx), and validation_step reads trainer.val_dataloaders, which keeps the list."""

    def val_dataloader(self):
        return [super().val_dataloader()]

    def validation_step(self, batch, batch_idx):
        assert isinstance(self.trainer.val_dataloaders, list) and len(self.trainer.val_dataloaders) == 1
        return super().validation_step(batch, batch_idx)


class TwoValidationLoadersModel(MLP):
    """Two val loaders as a dict (the second a smaller set in smaller batches): validation_step gets
    dataloader_idx and logs val_loss (Lightning suffixes the loader's index) and each loader's accuracy under
    a name of its own (add_dataloader_idx=False); the batch hooks see the index; trainer.num_val_batches keeps
    each loader's count."""

    def val_dataloader(self):
        return {
            "full": super().val_dataloader(),
            "half": DataLoader(make_classification(self.n_val // 2, seed=2), batch_size=self.batch_size // 2),
        }

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("val_loss", loss)
        self.log(f"val_acc_{dataloader_idx}", (logits.argmax(dim=1) == y).float().mean(), add_dataloader_idx=False)
        return loss

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        super().on_validation_batch_end(outputs, batch, batch_idx, dataloader_idx)
        self.val_points.append(("batch", dataloader_idx, batch_idx, list(self.trainer.num_val_batches)))


class TwoValidationLoadersNoIndexModel(TwoValidationLoadersModel):
    """Two val loaders, and a validation_step without dataloader_idx: Lightning refuses to validate."""

    def validation_step(self, batch, batch_idx):
        return super().validation_step(batch, batch_idx)


class BackboneModel(MLP):
    """A backbone (with BatchNorm) and a head. configure_optimizers gives SGD only the parameters that require
    gradients (the head's while a BaseFinetuning callback keeps the backbone frozen), with a StepLR."""

    def make_net(self, hidden: int, dropout: float) -> nn.Module:
        self.backbone = nn.Sequential(nn.Linear(FEATURES, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, CLASSES))
        return nn.Sequential(self.backbone, self.head)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


class HeadOptimizedBackboneModel(BackboneModel):
    """As Lightning's BackboneFinetuning example writes it: configure_optimizers gives Adam the head's parameters
    only; the backbone joins the optimizer when the callback unfreezes it (its BatchNorm only with train_bn)."""

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.head.parameters(), lr=self.lr / 10)
        self.remember(optimizer)
        return optimizer


class ClockModel(MLP):
    """Time that is the work done: the clock Lightning's Timer reads (`time.monotonic`) becomes one that each
    training step moves by a second and each validation step by a quarter, on both sides, so that a Timer stops
    at the same batch and the times in its checkpoint state are the same numbers."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock = 0.0
        time.monotonic = self.read_clock

    def read_clock(self) -> float:
        return self.clock

    def training_step(self, batch, batch_idx):
        self.clock += 1.0
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch, batch_idx):
        self.clock += 0.25
        return super().validation_step(batch, batch_idx)


class BatchNormNet(MLP):
    """BatchNorm between the layers: running statistics (buffers) must update in training only."""

    def make_net(self, hidden: int, dropout: float) -> nn.Module:
        return nn.Sequential(nn.Linear(FEATURES, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


class AdamModel(MLP):
    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.lr)
        self.remember(optimizer)
        return optimizer


class EpochScheduleModel(MLP):
    """([optimizer], [StepLR]): stepped at the end of every epoch."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


class StepScheduleModel(MLP):
    """A step-interval scheduler with frequency 2 (by default): stepped after every second batch of the epoch."""

    def __init__(self, frequency: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.frequency = frequency

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step", "frequency": self.frequency},
        }


class PlateauModel(MLP):
    """ReduceLROnPlateau on the validation loss that validation_step logs with self.log."""

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("val_loss", loss)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}


class StepEvery3Model(MLP):
    """A step-interval scheduler whose frequency is written in configure_optimizers (the script steps it in place)."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.2, total_iters=5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": warmup, "interval": "step", "frequency": 3}}


class ReboundSchedulerModel(MLP):
    """The scheduler's name rebound to its config dict around its own value (Hugging Face-style modules):
    `scheduler = {"scheduler": scheduler, "interval": "step"}`, in Lightning's lists form."""

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.lr)
        self.remember(optimizer)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.9**step)
        scheduler = {"scheduler": scheduler, "interval": "step", "frequency": 1}
        return [optimizer], [scheduler]


class HelperOptimizerModel(MLP):
    """configure_optimizers returns what a helper returns: its source does not show the shape."""

    def configure_optimizers(self):
        return self.remember(torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9))


class LenientPlateauModel(PlateauModel):
    """A step-interval ReduceLROnPlateau with strict=False: until the first validation logs val_loss, Lightning
    warns and skips it."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
        config = {"scheduler": plateau, "monitor": "val_loss", "interval": "step", "strict": False}
        return {"optimizer": optimizer, "lr_scheduler": config}


class LoggingModel(MLP):
    """self.log in training and validation (on_step/on_epoch, prog_bar, batch_size=...); a plateau scheduler
    monitors one of the logged metrics (`monitor`). Records the callback metrics at every epoch start and at
    the end of training."""

    def __init__(self, monitor: str = "val_loss", **kwargs) -> None:
        super().__init__(**kwargs)
        self.monitor = monitor

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=x.size(0))
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), batch_size=x.size(0))
        self.log("val_acc", (logits.argmax(dim=1) == y).float().mean(), prog_bar=True)
        self.log("val_batch_loss", F.cross_entropy(logits, y), on_step=True, on_epoch=False)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": self.monitor}}

    def on_train_epoch_start(self):
        self.events.append(("metrics", self.current_epoch, _metrics(self.trainer.callback_metrics)))
        self.events.append(("logged", self.current_epoch, _metrics(self.trainer.logged_metrics)))

    def on_train_end(self):
        super().on_train_end()
        self.events.append(("metrics", "end", _metrics(self.trainer.callback_metrics)))


class SchedulerChoiceModel(MLP):
    """configure_optimizers returns the scheduler a helper chooses by an init argument: a ReduceLROnPlateau on
    val_loss, or a StepLR. Its source does not show which: the script decides when it runs whether what the
    module logs (train_loss, val_loss; nothing else reads them) is collected."""

    def __init__(self, plateau: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plateau = plateau

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        optimizer = self.remember(torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9))
        return {"optimizer": optimizer, "lr_scheduler": self.scheduler_for(optimizer)}

    def scheduler_for(self, optimizer):
        if self.plateau:
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
            return {"scheduler": plateau, "monitor": "val_loss"}
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)


class OptimizerChoiceModel(MLP):
    """configure_optimizers chooses by init arguments, as config-driven projects do: the optimizer by name (an
    elif chain ending in a raise), the scheduler by a saved hyperparameter (none, a StepLR, or a
    ReduceLROnPlateau on val_loss), its interval by a conditional expression. The spec's values select one
    branch, which loopgen reads; nothing is decided when the script runs."""

    def __init__(self, optimizer: str = "Adam", scheduler: str | None = "step", per_step: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.save_hyperparameters(ignore=["per_step"])
        self.optimizer_name = optimizer
        self.per_step = per_step

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        name = self.optimizer_name.lower()
        if name == "adam":
            optimizer = torch.optim.Adam(self.parameters(), lr=self.lr / 10)
        elif name in ("sgd", "momentum"):
            optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        else:
            raise ValueError(f"unknown optimizer {self.optimizer_name}")
        self.remember(optimizer)
        if not self.hparams.scheduler:
            return optimizer
        if self.hparams["scheduler"] == "plateau":
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
            return {"optimizer": optimizer, "lr_scheduler": scheduler, "monitor": "val_loss"}
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3 if self.per_step else 1, gamma=0.5)
        interval = "step" if self.per_step else "epoch"
        return [optimizer], [{"scheduler": scheduler, "interval": interval}]


class ConfiguredCallbacksModel(LoggingModel):
    """configure_callbacks (Lightning's documented pattern): a ModelCheckpoint, an EarlyStopping whose patience
    is an init argument, and a user callback, each replacing the Trainer's callbacks of its class."""

    def __init__(self, patience: int = 2, stop_at_step: int = -1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.save_hyperparameters()

    def configure_callbacks(self):
        """The checkpoint first: Lightning still runs it after the others."""
        checkpoint = ModelCheckpoint(dirpath="configured", monitor="val_acc", mode="max", save_top_k=2)
        early_stop = EarlyStopping(monitor="val_loss", patience=self.hparams.patience, min_delta=0.01)
        return [checkpoint, early_stop, StopRequest(at_step=self.hparams["stop_at_step"])]


class ParamGroupsModel(LoggingModel):
    """AdamW over two parameter groups (the head's named), with two schedulers on it: a named step-interval
    warm-up and an unnamed epoch-interval decay. What LearningRateMonitor names and logs."""

    def configure_optimizers(self):
        body, head = self.net[0], self.net[3]
        optimizer = torch.optim.AdamW(
            [{"params": body.parameters()}, {"params": head.parameters(), "name": "head", "weight_decay": 0.1}],
            lr=self.lr,
            weight_decay=0.01,
        )
        self.remember(optimizer)
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5, total_iters=4)
        decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
        return [optimizer], [
            {"scheduler": warmup, "interval": "step", "name": "warmup"},
            {"scheduler": decay, "interval": "epoch"},
        ]


class HelperSchedulersModel(LoggingModel):
    """configure_optimizers returns what a helper builds (the script unpacks it at run time): SGD without
    momentum and a step-interval StepLR."""

    def configure_optimizers(self):
        return self.build_optimizers()

    def build_optimizers(self):
        optimizer = self.remember(torch.optim.SGD(self.parameters(), lr=self.lr))
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class HparamsModel(LoggingModel):
    """LoggingModel whose init arguments (of every YAML kind: numbers, a string that YAML must quote, a boolean,
    None, a list, a tuple, a nested dict) are saved with save_hyperparameters: the loggers write them."""

    def __init__(self, hidden: int = 16, lr: float = 0.1, weight_decay: float = 1e-05, run_name: str = "run: 1",
                 pretrained: bool = False, checkpoint: str | None = None, sizes: list | None = None,
                 betas: tuple = (0.9, 0.99), schedule: dict | None = None) -> None:  # fmt: skip
        super().__init__(hidden=hidden, lr=lr)
        self.save_hyperparameters()


class GraphModel(HparamsModel):
    """HparamsModel with an example input (a class attribute): TensorBoardLogger(log_graph=True) traces it."""

    example_input_array = torch.zeros(2, FEATURES)


def _metrics(metrics) -> dict:
    return {name: float(value) for name, value in sorted(metrics.items())}


class NoneStepModel(MLP):
    """training_step returns None (skip the step) on every batch whose index is `skip` mod 4."""

    def __init__(self, skip: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.skip = skip

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if batch_idx % 4 == self.skip:
            return None
        return loss


class DictOutputModel(MLP):
    """training_step returns {"loss": ..., "other": ...}; on_train_batch_end records what it receives."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        return {"loss": F.cross_entropy(logits, y), "other": logits.detach().argmax(dim=1)}

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.events.append(("batch_end", batch_idx, sorted(outputs), float(outputs["loss"]), outputs["other"].tolist()))


class SkipRestOfEpochModel(MLP):
    """on_train_batch_start returns -1 at batch `at_batch` of epoch `at_epoch`: the rest of that epoch is skipped.
    Has a step-interval and an epoch-interval scheduler, to show which of them step on the cut-off batch."""

    def __init__(self, at_epoch: int = 1, at_batch: int = 4, **kwargs) -> None:
        super().__init__(**kwargs)
        self.at_epoch = at_epoch
        self.at_batch = at_batch

    def on_train_batch_start(self, batch, batch_idx):
        super().on_train_batch_start(batch, batch_idx)
        if self.current_epoch == self.at_epoch and batch_idx == self.at_batch:
            return -1
        return None

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        per_step = {"scheduler": torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.97), "interval": "step"}
        per_epoch = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return [optimizer], [per_step, per_epoch]


class NoisyDataset(torch.utils.data.Dataset):
    """Augments each sample with noise drawn in the worker: the worker seeds come from each iterator's base
    seed, which is drawn from the global generator when the iterator is made."""

    def __init__(self, data: torch.utils.data.Dataset) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        x, y = self.data[index]
        return x + 0.1 * torch.randn(x.shape), y


class NoisyStepModel(MLP):
    """Adds noise to its inputs in training_step and validation_step: the noise is made in the default dtype,
    which under precision 64, bf16-true and 16-true is the model's inside the steps (else the sum is float32)."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        return super().training_step((x + 0.05 * torch.randn(x.shape), y), batch_idx)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return super().validation_step((x + 0.05 * torch.randn(x.shape), y), batch_idx)


class SpikingModel(MLP):
    """Its loss jumps tenfold at one training step (global step `spike_at`), as a corrupted batch would make it."""

    def __init__(self, spike_at: int = 7, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spike_at = spike_at

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        return loss * 10 if self.global_step == self.spike_at else loss


class RandomHooksModel(MLP):
    """Draws from the global generator in on_train_start and on_train_epoch_start, and augments in a loader
    worker: the training data then depends on whether each epoch's iterator is made before or after those
    hooks (Lightning: epoch 0's before on_train_start, later epochs' after on_train_epoch_start)."""

    def train_dataloader(self):
        self.loads["train"] += 1
        data = NoisyDataset(make_classification(self.n_train, seed=0))
        return DataLoader(data, batch_size=self.batch_size, shuffle=True, num_workers=1)

    def _draw(self, hook: str) -> None:
        """Python's and numpy's generators are seeded and isolated around the sanity check too."""
        self.events.append((hook, random.random(), float(numpy.random.rand())))

    def on_validation_start(self) -> None:
        super().on_validation_start()
        self._draw("on_validation_start")

    def on_validation_epoch_start(self) -> None:
        self.events.append(("on_validation_epoch_start",))

    def on_validation_epoch_end(self) -> None:
        self.events.append(("on_validation_epoch_end",))

    def on_validation_end(self) -> None:
        self.events.append(("on_validation_end",))

    def on_train_start(self) -> None:
        self.noise = torch.rand(1)

    def on_train_epoch_start(self) -> None:
        self.noise = torch.rand(1)
        self._draw("on_train_epoch_start")


class SkipRestOfEpochPlateauModel(PlateauModel, SkipRestOfEpochModel):
    """The epoch cut short by -1 still steps the epoch-interval ReduceLROnPlateau (on the last val_loss)."""


class GrowingDataModel(MLP):
    """Each reload of the training data brings 16 more samples: the batch count and the validation cadence
    (val_check_interval as a fraction) must be recomputed after a reload."""

    def train_dataloader(self):
        self.loads["train"] += 1
        data = make_classification(self.n_train + 16 * self.loads["train"], seed=0)
        return DataLoader(data, batch_size=self.batch_size, shuffle=self.shuffle)


class ShuffledValidationModel(PlateauModel):
    """Its val_dataloader shuffles. Under overfit_batches Lightning reads the validation loader in order too (it
    replaces the RandomSampler of both loaders with a SequentialSampler). Records the labels of each validation
    run's first batch; the validation loss drives the ReduceLROnPlateau."""

    def val_dataloader(self):
        self.loads["val"] += 1
        return DataLoader(make_classification(self.n_val, seed=1), batch_size=self.batch_size, shuffle=True)

    def validation_step(self, batch, batch_idx):
        if batch_idx == 0:
            self.events.append(("first_val_batch", self.current_epoch, batch[1].tolist()))
        return super().validation_step(batch, batch_idx)


class CheckpointModel(MLP):
    """Logs what ModelCheckpoint and EarlyStopping monitor: val_loss and val_acc (per validation run) and
    train_loss (per training epoch). Saves its init arguments (save_hyperparameters): its checkpoints hold
    hyper_parameters, and load_from_checkpoint rebuilds it with them.

    With the default lr (0.02) and seed 42 the validation loss falls by less and less, then stalls: 0.683, 0.382,
    0.180, 0.144, 0.139, 0.142, 0.119, 0.126 after epochs 0-7; the training loss 0.828, 0.368, 0.209, 0.106,
    0.080, 0.072, 0.089.
    """

    def __init__(self, hidden: int = 32, lr: float = 0.02, dropout: float = 0.2) -> None:
        super().__init__(hidden=hidden, lr=lr, dropout=dropout)
        self.save_hyperparameters()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(dim=1) == y).float().mean())


class RaisingModel(CheckpointModel):
    """CheckpointModel, raising in training_step at the `raise_at`-th batch of the run (0-based, counted across epochs)."""

    def __init__(self, raise_at: int = 13, **kwargs) -> None:
        super().__init__(**kwargs)
        self.raise_at = raise_at
        self.seen = 0

    def training_step(self, batch, batch_idx):
        if self.seen == self.raise_at:
            raise RuntimeError(f"batch {self.seen} of the run")
        self.seen += 1
        return super().training_step(batch, batch_idx)


class DivergingCheckpointModel(CheckpointModel):
    """CheckpointModel with a learning rate that makes the validation loss blow up: 0.70, 3.80, 15.5 after
    epochs 0-2 (seed 42)."""

    def __init__(self, hidden: int = 32, lr: float = 0.5, dropout: float = 0.2) -> None:
        super().__init__(hidden=hidden, lr=lr, dropout=dropout)


class ResumeModel(Classifier):
    """For the fault and resume tests (tests/test_resume.py): dropout, a shuffled training set of 64 samples in
    batches of 8 (8 steps an epoch) read by 2 worker processes that add noise (NoisyDataset: the workers' seeds
    come from the global generator), and 32 validation samples (train_loss and val_loss logged). Saves its init
    arguments.

    It talks to the test through its output and its environment:
    - prints `step N` after every training batch, and `teardown STAGE` at teardown with the trainer's
      received_sigterm and interrupted;
    - $RESUME_PAUSE = "HOOK N": the first time HOOK (training_step, on_validation_start or on_train_epoch_end) runs
      at global_step N, prints `paused` and waits until a file named `release` appears in the working directory
      (a test kills or signals it meanwhile);
    - $RESUME_WEIGHTS: where on_train_end saves the final state_dict.
    """

    PAUSE_TIMEOUT = 120  # seconds

    def __init__(self, hidden: int = 16, lr: float = 0.05, dropout: float = 0.3) -> None:
        super().__init__(hidden=hidden, lr=lr, dropout=dropout)
        self.save_hyperparameters()
        self.paused = False

    def train_dataloader(self):
        data = NoisyDataset(make_classification(64, seed=0))
        return DataLoader(data, batch_size=8, shuffle=True, num_workers=2)

    def val_dataloader(self):
        return DataLoader(make_classification(32, seed=1), batch_size=8)

    def training_step(self, batch, batch_idx):
        self._pause_at("training_step")
        loss = super().training_step(batch, batch_idx)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def on_train_batch_end(self, outputs, batch, batch_idx):
        print(f"step {self.global_step}", flush=True)

    def on_validation_start(self):
        super().on_validation_start()
        self._pause_at("on_validation_start")

    def on_train_epoch_end(self):
        self._pause_at("on_train_epoch_end")

    def on_train_end(self):
        super().on_train_end()
        if os.environ.get("RESUME_WEIGHTS"):
            torch.save(self.state_dict(), os.environ["RESUME_WEIGHTS"])

    def teardown(self, stage):
        trainer = self.trainer
        print(f"teardown {stage} sigterm={trainer.received_sigterm} interrupted={trainer.interrupted}", flush=True)

    def _pause_at(self, hook: str) -> None:
        if self.paused or os.environ.get("RESUME_PAUSE") != f"{hook} {self.global_step}":
            return
        self.paused = True
        print("paused", flush=True)
        deadline = time.monotonic() + self.PAUSE_TIMEOUT
        while not os.path.exists("release"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"paused in {hook} for {self.PAUSE_TIMEOUT} s and never released")
            time.sleep(0.02)


class LateBuilt(MLP):
    """The MLP whose layers are built in configure_model (Lightning calls it after the setup hooks, on the device,
    in a true precision's dtype): a wider head than __init__'s, and optionally torch's activation checkpointing
    over its Linear layers (their activations recomputed in the backward pass, dropout's random state replayed)
    or the network compiled (torch.compile with the `compile` backend)."""

    def __init__(self, checkpointing: bool = False, compile: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.checkpointing = checkpointing
        self.compile_backend = compile

    def configure_model(self):
        if getattr(self, "built", False):  # Lightning's advice: make it idempotent
            return
        self.built = True
        self.net = nn.Sequential(
            nn.Linear(FEATURES, 48), nn.ReLU(), nn.Dropout(0.1), nn.Linear(48, 24), nn.ReLU(), nn.Linear(24, CLASSES)
        )
        if self.checkpointing:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

            apply_activation_checkpointing(self.net, check_fn=lambda module: isinstance(module, nn.Linear))
        if self.compile_backend:
            self.net = torch.compile(self.net, backend=self.compile_backend)
