"""An example of a user callback: Lightning's hook signatures, run by loopgen's script without Lightning."""

import pytorch_lightning as pl


class StopWhenAccurate(pl.Callback):
    """Asks training to stop once the validation accuracy reaches `target` (min_epochs can hold it back)."""

    def __init__(self, target: float = 0.9):
        self.target = target
        self.stopped_at = None

    def on_validation_end(self, trainer, pl_module):
        accuracy = trainer.callback_metrics.get("val_acc")
        if not trainer.sanity_checking and accuracy is not None and accuracy >= self.target:
            trainer.should_stop = True
            self.stopped_at = trainer.global_step

    def on_train_end(self, trainer, pl_module):
        print(f"stopped at step {self.stopped_at}, epoch {trainer.current_epoch}")
