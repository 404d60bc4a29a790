"""A user Callback for the parity cases: records the hooks it sees and requests a stop."""

import pytorch_lightning as pl


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
