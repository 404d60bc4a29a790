"""Parity cases' classes whose Lightning bases come through the project's compat module (tests/parity/compat.py,
Lightning imported under `try:` / `except ImportError:`). A reader that does not follow it takes the module for a
plain nn.Module (the script then sets its read-only current_epoch), the data module for one without setup, the
stopper for a plain callback that never stops training, the writer for a callback whose write_on_* are never
called."""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from tests.parity import compat
from tests.parity.compat import pl
from tests.parity.data import BATCH_SIZE, CLASSES, FEATURES, N_TRAIN, N_VAL, make_classification
from tests.parity.eval_models import CALLS


class CompatModule(compat.pl.LightningModule):
    """A classifier with its own loaders that logs its losses and records (epoch, step) at each epoch's end."""

    def __init__(self, hidden: int = 32, lr: float = 0.1) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Dropout(0.2), nn.Linear(hidden, CLASSES))
        self.events = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def on_train_epoch_end(self):
        self.events.append((self.current_epoch, self.global_step))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]

    def train_dataloader(self):
        return DataLoader(make_classification(N_TRAIN, seed=0), batch_size=BATCH_SIZE, shuffle=True)

    def val_dataloader(self):
        return DataLoader(make_classification(N_VAL, seed=1), batch_size=BATCH_SIZE)

    def parity_records(self) -> dict:
        empty = {"val_points": [], "val_batches": [], "lrs": [], "optimizer_steps": 0, "final": None, "loads": {}}
        return {**empty, "events": list(self.events)}


class CompatData(compat.data.ShuffledData):
    """tests/parity/data.py's ShuffledData, its module reached as the compat module's `data`: the base's setup and
    validation loader, and a training loader of its own, in batches half the size."""

    def train_dataloader(self):
        loader = super().train_dataloader()
        return DataLoader(loader.dataset, batch_size=self.batch_size // 2, shuffle=True)


class CompatStopsBelow(pl.callbacks.EarlyStopping):
    """EarlyStopping's rules, and a stop once the metric falls below `bound`; records each check in the model's
    `events` (as tests/parity/callbacks.py's StopsBelow, whose base is imported directly)."""

    def __init__(self, bound: float, monitor: str = "val_loss", **kwargs) -> None:
        super().__init__(monitor=monitor, **kwargs)
        self.bound = bound

    def _evaluate_stopping_criteria(self, current):
        should_stop, reason = super()._evaluate_stopping_criteria(current)
        if not should_stop and current < self.bound:
            should_stop, reason = True, f"{self.monitor} fell below {self.bound}"
            self.stopping_reason_message = reason
        return should_stop, reason

    def on_validation_end(self, trainer, pl_module):
        super().on_validation_end(trainer, pl_module)
        if not trainer.sanity_checking:
            pl_module.events.append(("stopping", trainer.current_epoch, self.wait_count, trainer.should_stop))


class CompatWriter(compat.pl.callbacks.BasePredictionWriter):
    """A prediction writer recording what it is given (tests/parity/eval_models.py's CALLS), as RecordingWriter."""

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx):
        CALLS.append(["compat_writer.batch", plain(prediction), list(batch_indices), batch_idx, dataloader_idx])

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        CALLS.append(["compat_writer.epoch", plain(predictions), plain(batch_indices)])


def plain(value):
    """Tensors as nested lists of numbers, compared with == across the two sides."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
