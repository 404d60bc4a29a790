"""A user callback that records trainer.progress_bar_metrics and trainer.lr_scheduler_configs at every hook it
can see, into the model's `events` (compared with Lightning's by tests/parity/test_metric_attributes.py)."""

import pytorch_lightning as pl

from tests.parity.models import LoggingModel


class MetricAttributesRecorder(pl.Callback):
    def setup(self, trainer, pl_module, stage):
        self._record("setup", trainer, pl_module)

    def teardown(self, trainer, pl_module, stage):
        self._record("teardown", trainer, pl_module)

    def on_fit_start(self, trainer, pl_module):
        self._record("on_fit_start", trainer, pl_module)

    def on_sanity_check_start(self, trainer, pl_module):
        self._record("on_sanity_check_start", trainer, pl_module)

    def on_sanity_check_end(self, trainer, pl_module):
        self._record("on_sanity_check_end", trainer, pl_module)

    def on_train_start(self, trainer, pl_module):
        self._record("on_train_start", trainer, pl_module)

    def on_train_epoch_start(self, trainer, pl_module):
        self._record("on_train_epoch_start", trainer, pl_module)

    def on_validation_start(self, trainer, pl_module):
        self._record("on_validation_start", trainer, pl_module)

    def on_validation_epoch_start(self, trainer, pl_module):
        self._record("on_validation_epoch_start", trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module):
        self._record("on_validation_epoch_end", trainer, pl_module)

    def on_validation_end(self, trainer, pl_module):
        self._record("on_validation_end", trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module):
        self._record("on_train_epoch_end", trainer, pl_module)

    def on_train_end(self, trainer, pl_module):
        self._record("on_train_end", trainer, pl_module)

    def on_fit_end(self, trainer, pl_module):
        self._record("on_fit_end", trainer, pl_module)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._record(f"on_train_batch_start {batch_idx}", trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._record(f"on_train_batch_end {batch_idx}", trainer, pl_module)

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._record(f"on_validation_batch_start {batch_idx}", trainer, pl_module)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self._record(f"on_validation_batch_end {batch_idx}", trainer, pl_module)

    @staticmethod
    def _record(hook, trainer, pl_module):
        bar = trainer.progress_bar_metrics
        assert all(isinstance(value, (int, float)) for value in bar.values()), bar
        configs = [
            [
                type(c.scheduler).__name__,
                c.scheduler.last_epoch,
                c.name,
                c.interval,
                c.frequency,
                c.reduce_on_plateau,
                c.monitor,
                c.strict,
                c.scheduler.optimizer in trainer.optimizers,
            ]
            for c in trainer.lr_scheduler_configs
        ]
        pl_module.events.append((hook, "progress_bar_metrics", sorted(bar.items())))
        pl_module.events.append((hook, "lr_scheduler_configs", configs))


class SpecOptimizerModel(LoggingModel):
    """LoggingModel trained with the spec's optimizer and lr_scheduler (LightningCLI replaces configure_optimizers):
    its learning rates are not recorded by the module (it never sees the optimizer); the recorder's configs show
    the scheduler's steps."""

    def on_train_batch_start(self, batch, batch_idx):
        pass

    def on_train_end(self):
        self.final = {"global_step": self.global_step, "current_epoch": self.current_epoch}
