"""Rules several parts read: the batch limits, the Lightning era a spec follows, what a module reads."""

from __future__ import annotations

from loopgen.errors import Problem
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import ClassRef, Spec

# What the script's `trainer` object can hold, in the order it declares them: Lightning's names and meanings.
TRAINER_ATTRIBUTES = (
    "current_epoch", "global_step", "max_epochs", "max_steps", "min_epochs", "min_steps", "num_training_batches",
    "num_val_batches", "num_test_batches", "num_predict_batches",
    # the loaders (Lightning's: each stage's as its *_dataloader() hook returned them), whether fit validates
    "train_dataloader", "val_dataloaders", "test_dataloaders", "enable_validation",
    "accumulate_grad_batches", "optimizers", "sanity_checking", "should_stop", "callback_metrics",
    "logged_metrics", "is_global_zero", "ckpt_path", "is_last_batch",
    # constant in a one-process run, or set once
    "world_size", "global_rank", "local_rank", "node_rank", "num_devices", "num_nodes", "lightning_module",
    "model", "datamodule", "precision", "default_root_dir", "estimated_stepping_batches",
    # Lightning's strategy, as far as the user's code calls it: its collectives (reduce, all_gather, broadcast,
    # barrier), the process's rank, the root device
    "strategy",
    # the run's stage (Lightning's trainer.state.stage), as flags
    "training", "validating", "testing", "predicting", "evaluating",
    # the loggers, and the run's state (fn, status, stage)
    "logger", "loggers", "log_dir", "state",
    # the values logged with prog_bar=True, computed when read; the LR schedulers' configs
    "progress_bar_metrics", "lr_scheduler_configs",
    # the callbacks Lightning finds among its own (the script's ModelCheckpoint, EarlyStopping and bar objects)
    "checkpoint_callback", "checkpoint_callbacks", "early_stopping_callback", "early_stopping_callbacks",
    "progress_bar_callback",
    # the sanity check's batches per loader; whether a signal (SIGTERM) or an interruption stopped the run
    "num_sanity_val_batches", "received_sigterm", "interrupted",
    # the devices and the processes: the local device indices, the samplers' sharding, float16's GradScaler
    "device_ids", "distributed_sampler_kwargs", "scaler",
    # the flags as Lightning's Trainer holds them (FLAG_ATTRIBUTES), and the batches between validations, set as
    # the training data loads
    "barebones", "check_val_every_n_epoch", "enable_autolog_hparams", "fast_dev_run", "gradient_clip_algorithm",
    "gradient_clip_val", "limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
    "log_every_n_steps", "num_sanity_val_steps", "overfit_batches", "reload_dataloaders_every_n_epochs",
    "val_check_interval", "val_check_batch",
    # Lightning's print: on each node's first process
    "print",
)  # fmt: skip


# The Trainer attributes that hold a flag's value as Lightning's Trainer resolves it at construction
# (loopgen.plan.state.flag_values): constants of the run.
FLAG_ATTRIBUTES = (
    "barebones", "check_val_every_n_epoch", "enable_autolog_hparams", "fast_dev_run", "gradient_clip_algorithm",
    "gradient_clip_val", "limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
    "log_every_n_steps", "num_sanity_val_steps", "overfit_batches", "reload_dataloaders_every_n_epochs",
    "val_check_interval",
)  # fmt: skip


_LOOP = (
    "one of Lightning's loop objects, which the script has none of (its loop is main()); read the trainer's"
    " counters: `current_epoch`, `global_step`, `num_training_batches`, `is_last_batch`"
)
_RUN = (
    "a Lightning method that starts another run, which the script's trainer cannot do; run the script again with"
    " its command (`python train.py validate`, `test`, `predict`)"
)

# The rest of Lightning's public Trainer attributes (properties, instance attributes, methods): what the script
# cannot serve in any spec, each with the reason and what to read instead. A read of one is refused at render
# time where the reads can be listed; where they cannot (the trainer passed on, read by a name computed at run
# time), reading one raises an AttributeError (the script's TrainerAttributeError) that says this.
# TRAINER_ATTRIBUTES and these are every public attribute of Lightning's Trainer (tests/test_trainer_table.py).
UNSERVED_TRAINER_ATTRIBUTES = {
    "accelerator": "a Lightning object the script has none of; read `pl_module.device`",
    "precision_plugin": "a Lightning object the script has none of; read `trainer.precision`",
    "predict_dataloaders": (
        "Lightning's are its own copies of the loaders (batch_size None, a batch sampler that records the"
        " indices); keep the loaders your predict_dataloader() returns"
    ),
    "callbacks": (
        "Lightning's list holds its own callback objects too (the progress bar, the model summary, ...), which the"
        " script does not have; read `trainer.checkpoint_callbacks`, `trainer.early_stopping_callbacks`, or keep"
        " your callbacks where you make them"
    ),
    "profiler": (
        "a Lightning object (its Profiler) the script has none of; the script profiles as the spec's `profiler`"
        " flag says"
    ),
    "fit_loop": _LOOP,
    "validate_loop": _LOOP,
    "test_loop": _LOOP,
    "predict_loop": _LOOP,
    "fit": _RUN,
    "validate": _RUN,
    "test": _RUN,
    "predict": _RUN,
    "save_checkpoint": (
        "a Lightning method that writes through its strategy, which the script has none of; the script writes"
        " checkpoints through the spec's ModelCheckpoint callbacks"
    ),
    "init_module": (
        "a Lightning context manager that builds the module on its strategy's device, which the script has none"
        " of; build layers in `configure_model`, which the script calls where Lightning does"
    ),
}


# The LightningModule methods and properties whose Lightning code reads the trainer, with what each reads: a
# module (or a callback's pl_module) that calls one reads these
MODULE_API_READS = {
    "all_gather": frozenset({"strategy"}),
    "print": frozenset({"is_global_zero", "progress_bar_callback"}),  # through the bar's print while one is shown
    "global_rank": frozenset({"global_rank"}),
    "local_rank": frozenset({"local_rank"}),
}


LOGGER_ATTRIBUTES = frozenset({"logger", "loggers", "log_dir"})


LOADER_ATTRIBUTES = frozenset({"train_dataloader", "val_dataloaders", "test_dataloaders"})


METRIC_ATTRIBUTES = frozenset({"callback_metrics", "logged_metrics", "progress_bar_metrics"})


def early_stopping_checks(ref: ClassRef, spec: Spec, validates: bool) -> bool:
    """Whether an EarlyStopping ever checks: at each training epoch's end, or after each validation (Lightning's
    never checks when neither happens)."""
    return early_stopping_on_epoch_end(ref, spec) or validates


def early_stopping_on_epoch_end(ref: ClassRef, spec: Spec) -> bool:
    """check_on_train_epoch_end, resolved as Lightning's EarlyStopping.setup does."""
    on_epoch_end = ref.init_args["check_on_train_epoch_end"]
    if on_epoch_end is None:
        on_epoch_end = early_stopping_default_on_epoch_end(spec)
    return bool(on_epoch_end)


def early_stopping_default_on_epoch_end(spec: Spec) -> bool:
    """Where an EarlyStopping given check_on_train_epoch_end=None checks (its setup's rule): at the training
    epoch's end when validation runs once an epoch, at its end."""
    t = spec.trainer
    return t.val_check_interval == 1.0 and t.check_val_every_n_epoch == 1


NUMBERED_LOGGERS = ("CSVLogger", "TensorBoardLogger")  # their runs are directories version_N


def flag_problem(spec: Spec, flag: str, message: str) -> Problem:
    return Problem(f"trainer.{flag}", message, spec.line(f"trainer.{flag}"))


def batch_limits(spec: Spec) -> tuple[int | float, int | float]:
    """limit_train_batches / limit_val_batches after overfit_batches and fast_dev_run (which set both)."""
    t = spec.trainer
    limit_train, limit_val = t.limit_train_batches, t.limit_val_batches
    if t.overfit_batches:
        limit_train = limit_val = t.overfit_batches
    if t.fast_dev_run:
        limit_train = limit_val = t.fast_dev_run
    return limit_train, limit_val


def limits_batches(limit: float) -> bool:
    """An epoch uses fewer batches than the loader has (an int 1 is one batch; the float 1.0 all of them)."""
    return not (isinstance(limit, float) and limit == 1.0)


def takes_dataloader_idx(params: tuple[str, ...]) -> bool:
    """An evaluation step that takes dataloader_idx: by name, *args, or a third positional parameter."""
    return "dataloader_idx" in params or "*args" in params or len(params) >= 3


def takes_two(params: tuple[str, ...]) -> bool:
    return len([p for p in params if not p.startswith("*")]) >= 2 or "*args" in params


def reads_trainer(facts: ClassFacts, *names: str) -> bool:
    return facts.trainer_reads is None or bool(facts.trainer_reads & set(names))


def follows_1_9_5(spec: Spec, model: ClassFacts) -> bool:
    """The spec uses something only Lightning 1.9.5 has: where 1.9.5 and 2.x differ, the script follows 1.9.5."""
    return bool(only_1_9_5(spec, model))


def only_1_9_5(spec: Spec, model: ClassFacts) -> tuple[str, ...]:
    """What the spec uses that only Lightning 1.9.5 has, each named for a message."""
    t = spec.trainer
    step_args = model.methods.get("training_step", ())
    uses = [
        ("training_step's `optimizer_idx` (several optimizers)", "optimizer_idx" in step_args),
        ("truncated_bptt_steps", bool(t.truncated_bptt_steps)),
        ("amp_backend: apex", t.amp_backend == "apex"),
        ("track_grad_norm", t.track_grad_norm != -1),
        ("terminate_on_nan", t.terminate_on_nan),
        *((f"a `{hook}` hook", model.defines(hook)) for hook in ("training_epoch_end", "validation_epoch_end",
                                                                  "training_step_end")),
    ]  # fmt: skip
    return tuple(what for what, used in uses if used)
