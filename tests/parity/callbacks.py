"""User Callbacks for the parity cases: StopRequest records the hooks it sees and requests a stop,
TrainerStateRecorder records what the trainer reports to a callback, FreezeUnfreeze fine-tunes a backbone, the
EarlyStopping subclasses change when and why it stops, EpochBar records what its bar and the trainer tell it, the
ModelCheckpoint subclasses change when it saves and what its state holds."""

import os

import pytorch_lightning as pl
from pytorch_lightning.callbacks import (
    BaseFinetuning,
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    RichProgressBar,
    TQDMProgressBar,
)
from pytorch_lightning.callbacks.progress.rich_progress import RichProgressBarTheme
from rich.progress import TextColumn


class StopRequest(pl.Callback):
    """Sets trainer.should_stop = True at on_train_batch_end of batch `at_batch` of epoch `at_epoch`, or once
    global_step reaches `at_step`. Appends every hook it sees to the model's `events` record."""

    def __init__(self, at_epoch: int = -1, at_batch: int = -1, at_step: int = -1) -> None:
        self.at_epoch = at_epoch
        self.at_batch = at_batch
        self.at_step = at_step

    def setup(self, trainer, pl_module, stage):
        pl_module.events.append(("setup", stage))

    def on_train_start(self, trainer, pl_module):
        pl_module.events.append(("train_start", trainer.current_epoch, trainer.global_step))

    def on_train_epoch_start(self, trainer, pl_module):
        pl_module.events.append(("train_epoch_start", trainer.current_epoch, trainer.global_step))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pl_module.events.append(("train_batch_end", trainer.current_epoch, trainer.global_step, batch_idx))
        at_batch = trainer.current_epoch == self.at_epoch and batch_idx == self.at_batch
        at_step = self.at_step >= 0 and trainer.global_step >= self.at_step
        if (at_batch or at_step) and not trainer.should_stop:
            pl_module.events.append(("stop_requested", trainer.current_epoch, trainer.global_step))
            trainer.should_stop = True

    def on_validation_end(self, trainer, pl_module):
        pl_module.events.append(("validation_end", trainer.current_epoch, trainer.global_step, trainer.sanity_checking))

    def on_train_epoch_end(self, trainer, pl_module):
        pl_module.events.append(("train_epoch_end", trainer.current_epoch, trainer.global_step))

    def on_train_end(self, trainer, pl_module):
        pl_module.events.append(("train_end", trainer.current_epoch, trainer.global_step))


class TrainerStateRecorder(pl.Callback):
    """Appends what it reads from the trainer at setup, on_train_start, on_train_epoch_start, on_train_batch_end,
    on_validation_end and on_train_end to the model's `events` record, as (hook, {attribute: value})."""

    def setup(self, trainer, pl_module, stage):
        self._record("setup", trainer, pl_module)

    def on_train_start(self, trainer, pl_module):
        self._record("train_start", trainer, pl_module)

    def on_train_epoch_start(self, trainer, pl_module):
        self._record("train_epoch_start", trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._record(f"train_batch_end {batch_idx}", trainer, pl_module)

    def on_validation_end(self, trainer, pl_module):
        self._record("validation_end", trainer, pl_module)

    def on_train_end(self, trainer, pl_module):
        self._record("train_end", trainer, pl_module)

    @staticmethod
    def _record(hook, trainer, pl_module):
        state = {
            "current_epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
            "max_epochs": trainer.max_epochs,
            "max_steps": trainer.max_steps,
            "num_training_batches": trainer.num_training_batches,
            "num_val_batches": trainer.num_val_batches,
            "accumulate_grad_batches": trainer.accumulate_grad_batches,
            "sanity_checking": trainer.sanity_checking,
            "is_global_zero": trainer.is_global_zero,
            "should_stop": trainer.should_stop,
        }
        pl_module.events.append((hook, {name: _plain(value) for name, value in state.items()}))


def _plain(value):
    """A plain Python copy: lists item by item, tensors and numpy numbers as Python numbers."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value.item() if hasattr(value, "item") else value


class FreezeUnfreeze(BaseFinetuning):
    """Lightning's fine-tuning pattern: the module's backbone frozen before training (its BatchNorm too, unless
    `train_bn`); at epoch `unfreeze_at_epoch` the backbone joins the optimizer as a new group, at a tenth of the
    learning rate. Records the groups' learning rates at each epoch's start in the model's `events`."""

    def __init__(self, unfreeze_at_epoch: int = 1, train_bn: bool = False) -> None:
        super().__init__()
        self.unfreeze_at_epoch = unfreeze_at_epoch
        self.train_bn = train_bn

    def freeze_before_training(self, pl_module):
        self.freeze(pl_module.backbone, train_bn=self.train_bn)

    def finetune_function(self, pl_module, current_epoch, optimizer):
        if current_epoch == self.unfreeze_at_epoch:
            self.unfreeze_and_add_param_group(modules=pl_module.backbone, optimizer=optimizer, train_bn=True)
        pl_module.events.append(("finetune", current_epoch, [group["lr"] for group in optimizer.param_groups]))


class SavesItsCount(pl.Callback):
    """Counts the training batches and writes the count into each checkpoint it is asked to (on_save_checkpoint,
    which Lightning calls for full checkpoints only)."""

    def __init__(self) -> None:
        self.count = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.count += 1

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        checkpoint["batches_counted"] = self.count


class WarmupEarlyStopping(EarlyStopping):
    """Early stopping that starts counting after `warmup` epochs (a pattern of research code): the check itself
        is skipped before, wherever the base runs it. The warmup is kept in the callback's state beside the base's. Records
    each check's count and best score in the model's `events`."""

    def __init__(self, warmup: int = 2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.warmup = warmup

    def _run_early_stopping_check(self, trainer):
        if trainer.current_epoch >= self.warmup:
            super()._run_early_stopping_check(trainer)
            events = trainer.lightning_module.events
            events.append(("stopping", trainer.current_epoch, self.wait_count, self.best_score.item()))

    def state_dict(self):
        return {**super().state_dict(), "warmup": self.warmup}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.warmup = state_dict["warmup"]


class StopsBelow(EarlyStopping):
    """The base's rules, and a stop once the metric falls below `bound` (its own reason, set on the base's
    attribute). Records each check's outcome in the model's `events`."""

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


class EpochBar(TQDMProgressBar):
    """A bar that shows each epoch's count out of max_epochs; records, at each epoch's end, the totals the base
    class computes from the trainer and what it would show, in the model's `events`."""

    def init_train_tqdm(self):
        bar = super().init_train_tqdm()
        bar.set_description(f"0/{self.trainer.max_epochs}")
        return bar

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        shown = {key: round(float(value), 6) for key, value in self.get_metrics(trainer, pl_module).items()}
        totals = (self.total_train_batches, self.total_val_batches, self.is_enabled, self.refresh_rate)
        pl_module.events.append(("bar", trainer.current_epoch, *totals, shown))


class RichEpochBar(RichProgressBar):
    """A rich bar with a column of its own, no v_num and metrics to 2 places; records, at each epoch's end, the
    totals the base class computes, the epoch task's count and description, and what it would show."""

    def __init__(self, leave: bool = False) -> None:
        super().__init__(leave=leave, theme=RichProgressBarTheme(metrics_format=".2f"))

    def configure_columns(self, trainer):
        return [*super().configure_columns(trainer), TextColumn(f"of {trainer.max_epochs}")]

    def get_metrics(self, trainer, pl_module):
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        return items

    def on_train_epoch_end(self, trainer, pl_module):
        super().on_train_epoch_end(trainer, pl_module)
        shown = {key: round(float(value), 6) for key, value in self.get_metrics(trainer, pl_module).items()}
        task = self.train_progress_bar
        totals = (self.total_train_batches, self.total_val_batches, self.is_enabled, self.refresh_rate)
        pl_module.events.append(("bar", trainer.current_epoch, *totals, task.completed, task.description, shown))


class GroupRates(LearningRateMonitor):
    """Logs each learning rate under a prefix of its own and as a ratio to the first one it logged; records, at
    each epoch's end, the history the base class keeps (lrs, last_momentum_values) in the model's `events`."""

    def _extract_stats(self, trainer, interval):
        stats = super()._extract_stats(trainer, interval)
        ratios = {f"ratio/{name}": value / self.lrs[name][0] for name, value in stats.items() if name in self.lrs}
        return {**{f"opt/{name}": value for name, value in stats.items()}, **ratios}

    def on_train_epoch_end(self, trainer, pl_module):
        history = {name: [round(lr, 8) for lr in lrs] for name, lrs in self.lrs.items()}
        pl_module.events.append(("rates", trainer.current_epoch, history, dict(self.last_momentum_values)))


class WarmCheckpoint(ModelCheckpoint):
    """Saves nothing before `start_epoch` (a warm-up whose scores mean little), names its last file after the epoch,
    and keeps the steps it saved at in its state (restored on resume)."""

    CHECKPOINT_NAME_LAST = "{epoch}-last"

    def __init__(self, start_epoch: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_epoch = start_epoch
        self.saved_at: list[int] = []

    def _should_skip_saving_checkpoint(self, trainer):
        return trainer.current_epoch < self.start_epoch or super()._should_skip_saving_checkpoint(trainer)

    def _save_checkpoint(self, trainer, filepath):
        super()._save_checkpoint(trainer, filepath)
        self.saved_at.append(trainer.global_step)

    def state_dict(self):
        return {**super().state_dict(), "saved_at": list(self.saved_at)}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.saved_at = list(state_dict.get("saved_at", []))


class RecordsBest(ModelCheckpoint):
    """Records, after each validation, what the base decided (its best path's name and score, the files it
    keeps) in the module's `events`."""

    def on_validation_end(self, trainer, pl_module):
        super().on_validation_end(trainer, pl_module)
        if trainer.sanity_checking:
            return
        kept = sorted(os.path.basename(path) for path in self.best_k_models)
        score = None if self.best_model_score is None else round(float(self.best_model_score), 6)
        pl_module.events.append(("best", trainer.global_step, os.path.basename(self.best_model_path), score, kept))
