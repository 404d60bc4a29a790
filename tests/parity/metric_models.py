"""Test-only modules that log torchmetrics objects, in the style of Lightning's docs and public classifiers.

`MetricClassifier` keeps an Accuracy for training and one for validation (module attributes, so they move to the
device with the model), logs them with self.log (on step and on epoch) and a MetricCollection with
self.log_dict; it records what Lightning's result collection published (trainer.callback_metrics at each epoch's
end: the last step values among them) and the metrics' own states at points where Lightning resets them (at each epoch's start), so that computing
or resetting them at other points than Lightning does is a difference.
"""

import torchmetrics
from torch.nn import functional as F

from tests.parity.models import MLP


class MetricClassifier(MLP):
    def __init__(self, hidden: int = 32, lr: float = 0.1, collection: bool = True, on_step: bool = True) -> None:
        super().__init__(hidden=hidden, lr=lr)
        self.train_acc = torchmetrics.Accuracy(task="multiclass", num_classes=3)
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=3)
        self.collection = collection
        self.on_step = on_step
        if collection:
            self.val_metrics = torchmetrics.MetricCollection(
                {"f1": torchmetrics.F1Score(task="multiclass", num_classes=3, average="macro"),
                 "prec": torchmetrics.Precision(task="multiclass", num_classes=3, average="macro")},
                prefix="val_",
            )  # fmt: skip

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.train_acc(logits, y)
        self.log("train_acc", self.train_acc, on_step=self.on_step, on_epoch=True)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.val_acc.update(logits, y)  # update, not forward: no step value
        self.log("val_acc", self.val_acc)
        if self.collection:
            self.val_metrics(logits, y)
            self.log_dict(self.val_metrics)
        self.log("val_loss", F.cross_entropy(logits, y))

    def on_train_epoch_start(self):
        self.events.append(("train_epoch_start", self.current_epoch, self.state_of(self.train_acc)))

    def on_validation_epoch_start(self):
        self.events.append(("val_epoch_start", self.current_epoch, self.state_of(self.val_acc)))

    def on_train_epoch_end(self):
        self.events.append(("train_epoch_end", self.current_epoch, self.published()))

    def on_validation_epoch_end(self):
        self.events.append(("val_epoch_end", self.current_epoch, self.published()))

    def published(self) -> dict:
        return {name: float(value) for name, value in sorted(self.trainer.callback_metrics.items())}

    @staticmethod
    def state_of(metric) -> list:
        return [float(value.sum()) for value in (metric.tp, metric.fp, metric.tn, metric.fn)]
