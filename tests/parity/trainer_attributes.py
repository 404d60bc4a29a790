"""A user callback that reads the trainer attributes modules and callbacks read in practice, at several hooks,
and records them into the model's `events` (compared with Lightning's by tests/parity/test_manual.py)."""

import os

import pytorch_lightning as pl


class TrainerAttributesRecorder(pl.Callback):
    def setup(self, trainer, pl_module, stage):
        self._record("setup", trainer, pl_module)

    def on_sanity_check_start(self, trainer, pl_module):
        self._record("sanity_check_start", trainer, pl_module)

    def on_validation_start(self, trainer, pl_module):
        self._record("validation_start", trainer, pl_module)

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
        datamodule = trainer.datamodule
        state = {
            "current_epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
            "max_epochs": trainer.max_epochs,
            "max_steps": trainer.max_steps,
            "min_epochs": trainer.min_epochs,
            "min_steps": trainer.min_steps,
            "num_training_batches": trainer.num_training_batches,
            "num_val_batches": list(trainer.num_val_batches),
            "train_dataloader": describe_loaders(trainer.train_dataloader),
            "val_dataloaders": describe_loaders(trainer.val_dataloaders),
            "enable_validation": trainer.enable_validation,
            "sanity_checking": trainer.sanity_checking,
            "should_stop": trainer.should_stop,
            "is_last_batch": trainer.is_last_batch,
            "is_global_zero": trainer.is_global_zero,
            "world_size": trainer.world_size,
            "global_rank": trainer.global_rank,
            "local_rank": trainer.local_rank,
            "node_rank": trainer.node_rank,
            "num_devices": trainer.num_devices,
            "num_nodes": trainer.num_nodes,
            "lightning_module": trainer.lightning_module is pl_module,
            "model": trainer.model is pl_module,  # on one device, the module itself (no wrapper)
            "datamodule": None if datamodule is None else type(datamodule).__name__,
            "precision": trainer.precision,
            "default_root_dir": trainer.default_root_dir == os.getcwd(),
            "training": trainer.training,
            "stage": [trainer.validating, trainer.testing, trainer.predicting, trainer.evaluating],
            # the loggers (the module's own self.logger and self.loggers are the trainer's), the state
            "logger": _logger(trainer.logger),
            "loggers": [_logger(logger) for logger in trainer.loggers],
            "module_logger": pl_module.logger is trainer.logger,
            "module_loggers": list(pl_module.loggers) == list(trainer.loggers),
            "log_dir": os.path.relpath(trainer.log_dir, os.getcwd()),
            "state": [trainer.state.fn == "fit", trainer.state.status == "running", trainer.state.stage],
            # the callbacks Lightning finds among its own, and what they hold at this hook
            "checkpoint_callback": _checkpoint(trainer.checkpoint_callback, hook),
            "checkpoint_callbacks": [_checkpoint(c, hook) for c in trainer.checkpoint_callbacks],
            "early_stopping_callback": _stopping(trainer.early_stopping_callback),
            "early_stopping_callbacks": [_stopping(c) for c in trainer.early_stopping_callbacks],
            "progress_bar_callback": trainer.progress_bar_callback is not None,
            "num_sanity_val_batches": list(trainer.num_sanity_val_batches),
            "signals": [trainer.received_sigterm, trainer.interrupted],
            "device_ids": trainer.device_ids,
            "distributed_sampler_kwargs": trainer.distributed_sampler_kwargs,
            "scaler": None if trainer.scaler is None else type(trainer.scaler).__name__,
        }
        state["state"][2] = None if state["state"][2] is None else str.__str__(state["state"][2])
        pl_module.events.append((hook, state))


def _checkpoint(callback, hook):
    """A ModelCheckpoint's class, monitor and files, relative to the run's directory (its directory from its own
    setup on, where Lightning resolves it)."""
    if callback is None:
        return None
    here = os.getcwd()
    files = [callback.best_model_path, callback.last_model_path, callback.kth_best_model_path]
    described = [type(callback).__name__, callback.monitor, *(f and os.path.relpath(f, here) for f in files)]
    score = callback.best_model_score
    described.append(None if score is None else float(score))
    if hook != "setup":
        described.append(os.path.relpath(callback.dirpath, here))
    return described


def _stopping(callback):
    """An EarlyStopping's class, monitor and state."""
    if callback is None:
        return None
    best = float(callback.best_score)
    return [type(callback).__name__, callback.monitor, callback.wait_count, callback.stopped_epoch, best]


def _logger(logger):
    """A logger's class and directories, relative to the run's directory."""
    if logger is None:
        return None
    here = os.getcwd()
    directories = [os.path.relpath(logger.save_dir, here), os.path.relpath(logger.log_dir, here)]
    return [type(logger).__name__, logger.name, logger.version, *directories]


def describe_loaders(loaders):
    """Loaders as comparable values: for each, its class, length, batch size and sampler's class, in the structure
    given (a loader, a list, tuple or dict of them)."""
    if loaders is None:
        return None
    if isinstance(loaders, dict):
        return {key: describe_loaders(value) for key, value in loaders.items()}
    if isinstance(loaders, (list, tuple)):
        return [type(loaders).__name__, *(describe_loaders(loader) for loader in loaders)]
    try:
        length = len(loaders)
    except TypeError:  # a loader of an iterable dataset without a length
        length = None
    sampler = getattr(loaders, "sampler", None)
    return [type(loaders).__name__, length, getattr(loaders, "batch_size", None), type(sampler).__name__]
