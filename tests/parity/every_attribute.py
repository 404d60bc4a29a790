"""A callback that reads every public attribute of Lightning's Trainer by name, as generic monitoring callbacks do
(`getattr(trainer, name)` over a list: the render cannot list these reads, so the script's trainer serves them
all), at several hooks, and records what it sees into the model's `events`: plain values as they are, objects as
their class's name, and where reading raises an AttributeError, the error. Compared with Lightning's by
tests/parity/test_every_attribute.py."""

import os

import pytorch_lightning as pl
import torch

from loopgen.plan.common import TRAINER_ATTRIBUTES, UNSERVED_TRAINER_ATTRIBUTES
from tests.parity.models import LoggingModel

# every public attribute of Lightning 2.6.6's Trainer (tests/test_trainer_table.py holds the list to it)
NAMES = sorted({*TRAINER_ATTRIBUTES, *UNSERVED_TRAINER_ATTRIBUTES})


class EveryAttributeRecorder(pl.Callback):
    def setup(self, trainer, pl_module, stage):
        record("setup", trainer, pl_module)

    def on_fit_start(self, trainer, pl_module):
        record("fit_start", trainer, pl_module)

    def on_train_start(self, trainer, pl_module):
        record("train_start", trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        record(f"train_batch_end {batch_idx}", trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module):
        record("validation_epoch_end", trainer, pl_module)

    def on_train_end(self, trainer, pl_module):
        record("train_end", trainer, pl_module)


def record(hook, trainer, pl_module):
    values = {}
    for name in NAMES:
        try:
            value = getattr(trainer, name)
        except AttributeError as error:
            values[name] = ["raises", type(error).__name__, str(error)]
        else:
            values[name] = (
                describe(value)
                if name != "state"
                else [describe(value.fn), describe(value.status), describe(value.stage)]
            )
    pl_module.events.append((hook, values))


def describe(value):
    """A value as plain data: numbers, strings (a path relative to the run's directory, an enum's value), lists and
    dicts of them; a tensor as its numbers; any other object as its class's name."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        value = str.__str__(value)  # an enum's value
        return os.path.relpath(value) if os.path.isabs(value) else value
    if isinstance(value, torch.Tensor):
        return ["tensor", value.tolist()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, *map(describe, value)]
    if isinstance(value, dict):
        return {key: describe(item) for key, item in value.items()}
    return type(value).__name__


class DrawingModel(LoggingModel):
    """LoggingModel (logged values, a plateau scheduler: trainer.callback_metrics, lr_scheduler_configs, ...) that
    draws from the global random state at fit's start: where the training data loads (and its first iterator is
    made, drawing its seed) shows in the number drawn and in the weights."""

    def on_fit_start(self):
        self.events.append(("drawn at fit start", torch.rand(1).item()))


class WarmupModel(DrawingModel):
    """The usual warm-up schedule: configure_optimizers sizes it by trainer.estimated_stepping_batches, which makes
    Lightning load the training data there."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        total = self.trainer.estimated_stepping_batches
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / (total + 1))
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


class PassesTrainerOn(pl.Callback):
    """Hands the trainer to a helper of its own, as monitoring callbacks do: what the helper reads is not
    followed, so the script's trainer serves every attribute (and the module's own reads too)."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pl_module.events.append(("summary", summarize(trainer)))


def summarize(trainer):
    return {name: describe(getattr(trainer, name)) for name in ("global_step", "estimated_stepping_batches")}
