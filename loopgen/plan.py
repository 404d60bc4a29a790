"""Stage 3: Spec + ClassFacts -> Plan, every decision the script depends on.

The Plan is frozen data made of small per-feature parts (header, build, state, data, bounds, validation,
precision, optimizers, schedulers, optimization, metrics, hooks, imports). Each part is computed by one
`resolve_*` function below, in the order of `make_plan`; a part may read the parts resolved before it. Those
functions are the only place where flags interact (Lightning's rules for max_epochs and max_steps, what
fast_dev_run and overfit_batches do to the limits, native AMP with LBFGS refused, ...): every condition that
combines flags is one named field here. Templates test the fields and print code; nothing in the Plan is
Python source, only values, names of script variables and of the user's classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from loopgen import __version__
from loopgen.cache import templates_sha256
from loopgen.errors import LoopgenError, Problem
from loopgen.flags import PROGRESS_BARS, refusal, same
from loopgen.inspect import ClassFacts, OptimizersFacts, SchedulerFacts
from loopgen.spec import ClassRef, ObjectSpec, Spec

# Hooks of the model a generated script may call (Lightning's names).
MODEL_HOOKS = (
    "prepare_data", "setup", "configure_optimizers", "on_fit_start", "on_train_start", "on_train_epoch_start",
    "on_train_batch_start", "training_step", "training_step_end", "on_before_zero_grad", "backward",
    "optimizer_zero_grad", "on_before_backward", "on_after_backward", "on_before_optimizer_step",
    "on_train_batch_end", "training_epoch_end", "on_train_epoch_end", "on_validation_model_eval",
    "on_validation_model_train", "on_validation_start", "on_validation_epoch_start", "on_validation_batch_start",
    "validation_step", "on_validation_batch_end", "validation_epoch_end", "on_validation_epoch_end",
    "on_validation_end", "lr_scheduler_step", "on_train_end", "on_fit_end", "teardown", "on_before_batch_transfer",
    "transfer_batch_to_device", "on_after_batch_transfer", "optimizer_step", "tbptt_split_batch",
    "on_save_checkpoint", "on_load_checkpoint",
)  # fmt: skip

# LightningModule hooks Lightning's fit calls that the script does not (a module overriding one is refused)
UNSERVED_FIT_HOOKS = ("configure_model", "configure_sharded_model", "configure_callbacks")

# Callback hooks (Lightning's `Callback` API) the script calls when a user callback defines them.
CALLBACK_HOOKS = (
    "setup", "on_fit_start", "on_sanity_check_start", "on_sanity_check_end", "on_train_start",
    "on_train_epoch_start", "on_train_batch_start", "on_before_zero_grad", "on_before_backward", "on_after_backward",
    "on_before_optimizer_step", "on_train_batch_end", "on_train_epoch_end", "on_validation_start",
    "on_validation_epoch_start", "on_validation_batch_start", "on_validation_batch_end", "on_validation_epoch_end",
    "on_validation_end", "on_train_end", "on_fit_end", "teardown",
)  # fmt: skip

# What a callback may define for checkpoints (called by the script's checkpoint code, not in the loop).
CALLBACK_CHECKPOINT_METHODS = ("state_dict", "load_state_dict", "on_save_checkpoint", "on_load_checkpoint")

VALIDATION_CALLBACK_HOOKS = (
    "on_validation_start", "on_validation_epoch_start", "on_validation_batch_start", "on_validation_batch_end",
    "on_validation_epoch_end", "on_validation_end",
)  # fmt: skip

# What the script's `trainer` object can hold, in the order it declares them: Lightning's names and meanings.
TRAINER_ATTRIBUTES = (
    "current_epoch", "global_step", "max_epochs", "max_steps", "num_training_batches", "num_val_batches",
    "accumulate_grad_batches", "optimizers", "sanity_checking", "should_stop", "callback_metrics",
    "logged_metrics", "is_global_zero", "ckpt_path",
    # constant in a one-process run, or set once
    "world_size", "global_rank", "local_rank", "node_rank", "num_devices", "num_nodes", "lightning_module",
    "datamodule", "precision", "default_root_dir", "estimated_stepping_batches", "training",
    # the loggers, and the run's state (fn, status, stage)
    "logger", "loggers", "log_dir", "state",
    # the values logged with prog_bar=True, computed when read; the LR schedulers' configs
    "progress_bar_metrics", "lr_scheduler_configs",
)  # fmt: skip
LOGGER_ATTRIBUTES = frozenset({"logger", "loggers", "log_dir"})
METRIC_ATTRIBUTES = frozenset({"callback_metrics", "logged_metrics", "progress_bar_metrics"})


# ---------------------------------------------------------------------------
# the parts of the plan


@dataclass(frozen=True)
class Construct:
    """A class to import and instantiate: `ref(**args)`."""

    module: str
    cls: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def from_torch(self) -> bool:
        return self.module == "torch" or self.module.startswith("torch.")

    @property
    def ref(self) -> str:
        """How the script names the class: torch's by their full dotted path, the user's by their own name."""
        return f"{self.module}.{self.cls}" if self.from_torch else self.cls


@dataclass(frozen=True)
class Name:
    """An argument value that is a script variable (an object the script built before, see `Built`)."""

    name: str


@dataclass(frozen=True)
class Built:
    """An object argument the script builds before the object that takes it: `var = value`, where `value` is a
    Construct or a list / mapping holding Constructs (each nested object inline, its own arguments first)."""

    var: str
    value: Any


@dataclass(frozen=True)
class Import:
    """`from module import names` of the user's classes."""

    module: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Callback:
    construct: Construct
    var: str  # the script variable holding the instance
    hooks: frozenset[str]
    # "user" | "checkpoint" (ModelCheckpoint) | "early_stopping" | "lr_monitor" (LearningRateMonitor) | "summary"
    # (ModelSummary) | "progress" (the progress bar): the script implements Lightning's callbacks itself
    kind: str = "user"
    monitoring: bool = (
        False  # Lightning runs its on_train_epoch_end after the module's (ModelCheckpoint, EarlyStopping)
    )
    dirpath: str | None = None  # a ModelCheckpoint's directory from the spec (None: the default directory)
    state_key: str | None = None  # the key of its state in a checkpoint; None: its `state_key` attribute


SCRIPT_SHA256_PLACEHOLDER = "-" * 64  # the script's own sha256 is of its text with this in its place


@dataclass(frozen=True)
class Header:
    version: str
    spec_name: str
    spec_sha256: str
    script_name: str
    model_module: str
    model_package: str
    choices: tuple[str, ...]  # what the script was specialised for
    launch: str  # the command that runs it
    notes: tuple[str, ...]  # where the script is general, and why
    templates_sha256: str = ""  # of loopgen's templates (`loopgen check` tells a change of loopgen by it)
    script_sha256: str = SCRIPT_SHA256_PLACEHOLDER  # of the script itself: filled in once formatted


@dataclass(frozen=True)
class Build:
    """What main() constructs: the user's model, data and callbacks."""

    model: Construct
    data: Construct | None
    callbacks: tuple[Callback, ...]
    imports: tuple[Import, ...]
    seed: int | None  # seed_everything as an int
    seed_at_run_time: bool  # seed_everything: true
    seeds: bool  # one of the two
    deterministic: bool
    benchmark: bool | None
    sets_benchmark: bool
    # the object arguments (nested class_path entries) built before each owner, by the owner's script variable
    # ("model", "data", a callback's var), in LightningCLI's order; the owner's Construct names them (`Name`)
    objects: Mapping[str, tuple[Built, ...]] = field(default_factory=dict)

    def objects_of(self, var: str) -> tuple[Built, ...]:
        return self.objects.get(var, ())


@dataclass(frozen=True)
class SchedulerConfig:
    """One of trainer.lr_scheduler_configs: Lightning's LRSchedulerConfig of the scheduler `var`, as Lightning
    builds it from configure_optimizers' return (its _configure_schedulers_automatic_opt / _manual_opt)."""

    var: str
    name: str | None
    interval: str
    frequency: int
    reduce_on_plateau: bool
    monitor: str | None
    strict: bool


@dataclass(frozen=True)
class State:
    """The object hooks and callbacks receive as `trainer`: only the attributes something reads."""

    exists: bool
    attributes: frozenset[str]
    counters: bool  # current_epoch and global_step live on it (else they are local variables of main)
    attach_private: bool  # a LightningModule reads it through self.trainer: model._trainer = trainer
    attach_public: bool  # a plain module reads self.trainer: model.trainer = trainer
    mirror_epoch: bool  # a plain module reads self.current_epoch: the loop keeps model.current_epoch current
    mirror_step: bool
    # trainer.estimated_stepping_batches is read: the training data is loaded before configure_optimizers (where
    # Lightning loads it when the estimate is asked for), and the estimate made from it
    estimates: bool = False
    estimate_epochs: int = -1  # max(max_epochs, 1); -1: no epoch limit (the estimate is max_steps, or inf)
    estimate_accumulate: int = 1
    # trainer.log_dir: "root" (default_root_dir) | "logger" (the first logger's log_dir: CSV, TensorBoard) |
    # "logger_save_dir" (another first logger's save_dir)
    log_dir: str = "root"
    # trainer.lr_scheduler_configs: one per scheduler the script holds by name (see with_scheduler_configs);
    # None: the general helper's configs, made at run time
    scheduler_configs: tuple[SchedulerConfig, ...] | None = ()

    def has(self, name: str) -> bool:
        return name in self.attributes


@dataclass(frozen=True)
class Device:
    name: str  # cpu | cuda | auto
    moves: bool  # batches and the model go to a device that is not the CPU
    auto: bool  # chosen when the script starts


@dataclass(frozen=True)
class Data:
    train_owner: str  # "data" | "model": the script variable whose train_dataloader() is called
    val_owner: str | None
    limit_train: int | float
    limit_val: int | float
    counts_train: bool  # num_training_batches differs from len(loader): the num_batches helper
    counts_val: bool
    counts: bool  # either
    sequential: bool  # overfit_batches: random samplers are replaced by sequential ones
    reload_every: int
    reloads: bool
    unsized: bool = False  # a loader may have no length (IterableDataset): decided when the script runs
    checks_fraction: bool = False  # ... and val_check_interval is a float other than 1.0: Lightning's error then


@dataclass(frozen=True)
class Bounds:
    max_epochs: int  # -1: no limit
    max_steps: int  # -1: no limit
    min_epochs: int
    min_steps: int
    loop_until: str  # "epochs_and_steps" | "epochs" | "steps" | "forever"
    step_limit: bool
    stop_requests: bool  # something can set trainer.should_stop
    holds_stop: bool  # a stop request can be held back by min_epochs / min_steps
    holds_for_epochs: bool
    holds_for_steps: bool
    holds_for_both: bool
    message_min_epochs: str  # the values Lightning's message shows
    message_min_steps: str


@dataclass(frozen=True)
class Validation:
    enabled: bool
    owner: str | None
    sanity: bool
    sanity_all: bool
    sanity_steps: int
    at_epoch_end: bool  # once an epoch, at its last batch (val_check_interval 1.0)
    interval_batches: int | None  # an int val_check_interval
    interval_fraction: float | None  # a float val_check_interval other than 1.0
    computes_check_batch: bool  # val_check_batch from the fraction and the batch count
    across_epochs: bool  # check_val_every_n_epoch null: the interval counts batches across epochs
    checks_interval: bool  # an int interval must not exceed the epoch's batches
    checks_interval_seed: bool  # ... and the error is worded as Lightning 1.9.5's
    every_n_epochs: int | None
    skips_epochs: bool  # check_val_every_n_epoch > 1
    load_at_start: bool  # no sanity check, epoch 0 validates: loaded before on_train_start (Lightning)
    load_at_first_use: bool  # no sanity check, epoch 0 does not validate: loaded at the first validation
    first_use_check: bool  # ... and never reloaded: `if val_loader is None` at each validation
    loads_before_training: bool  # something about the val loader happens right before on_train_start
    reloads: bool  # reload_dataloaders_every_n_epochs: reloaded at a validation when enough epochs passed
    reload_from_epoch_0: bool  # the first load counts as epoch 0's (else the first validation reloads)
    on_stop_request: bool  # a stop request that can be honoured triggers a validation
    step_takes_batch_idx: bool
    output_used: bool  # validation_step's output is passed on
    collects_outputs: bool  # validation_epoch_end gets them
    clears_grads: bool  # Lightning 1.9.5's evaluation loop: model.zero_grad() after eval mode, every validation


@dataclass(frozen=True)
class Precision:
    name: str  # "32" | "64" | "bf16-mixed" | "16-mixed" | "bf16-true" | "16-true"
    autocast: bool
    autocast_device: str  # "cpu" | "cuda" | "auto"
    autocast_dtype: str  # "bfloat16" | "float16" | "auto" (float16 on CUDA, bfloat16 on CPU)
    autocast_cache: bool  # torch's cached casts (1.9.5); Lightning 2.x autocasts with cache_enabled=False
    scaler: bool  # float16 AMP scales the loss
    scaler_auto: bool  # the scaler is enabled only when the script runs on CUDA
    double: bool  # precision 64 (Lightning's DoublePrecision: model.double())
    half: bool  # bf16-true / 16-true (Lightning's HalfPrecision: model.to(dtype=...)); no autocast, no scaler
    casts: bool  # 64 or half: the batches' floating tensors take `cast_dtype`, and so do new tensors in the steps
    cast_dtype: str  # "float64" | "bfloat16" | "float16" ("" when nothing is cast)
    context: bool  # the steps run inside a precision context (autocast or the cast default dtype)
    apex: bool
    amp_level: str | None
    lightning_name: str = ""  # trainer.precision: "32-true", "16-mixed", "bf16-mixed", "64-true"


@dataclass(frozen=True)
class Scheduler:
    """One LR scheduler, stepped where Lightning steps it."""

    var: str
    cls: Construct | None  # built by the script (the spec's lr_scheduler); None: from configure_optimizers
    in_dict: bool  # configure_optimizers gives it inside an lr_scheduler dict
    interval: str  # "step" | "epoch"
    frequency: int
    every_time: bool  # frequency 1
    plateau: bool
    monitor: str | None
    strict: bool
    optimizer_idx: int
    name: str | None = None  # its dict's "name" (LearningRateMonitor's name for it)


@dataclass(frozen=True)
class Optimizers:
    """Where the optimizers and LR schedulers come from, and how the script unpacks them."""

    from_spec: Construct | None  # the spec's `optimizer:` (LightningCLI replaces configure_optimizers)
    form: str | None  # the shape configure_optimizers returns (OptimizersFacts.form); None: unknown
    general: bool  # unknown shape: the script unpacks any of Lightning's forms at run time
    general_reason: str  # why (for the script's header)
    count: int  # optimizers the shape holds (general: 1, or 2+ with optimizer_idx)
    several: bool  # training_step takes optimizer_idx: one optimizer step per optimizer
    list_var: bool  # the script holds them in a list `optimizers`
    schedulers: tuple[Scheduler, ...]  # known schedulers, in the order configure_optimizers gives them
    general_schedulers: bool  # schedulers come as configs from the general helper
    any_schedulers: bool
    after_step: tuple[Scheduler, ...]  # interval "step", not plateau: after each optimizer step
    at_epoch_end: tuple[Scheduler, ...]  # interval "epoch", not plateau: at the epoch's last batch
    plateau_after_validation: tuple[Scheduler, ...]  # plateau, interval "step": after validation, per step
    plateau_at_epoch_end: tuple[Scheduler, ...]  # plateau, interval "epoch": after the epoch's validation
    plateau: bool  # some scheduler reads a monitored metric
    strict_plateau: bool  # a known plateau scheduler whose metric must exist (Lightning's `strict`)
    lenient_plateau: bool  # a known plateau scheduler that skips its step, with a warning, when the metric is missing
    completes_epoch: bool  # some scheduler steps only after an epoch that ran to its end (plateau, "epoch")
    scheduler_hook: bool  # the model overrides lr_scheduler_step
    scheduler_hook_seed: bool  # ... with the seed's signature (optimizer_idx)
    check_frequencies: tuple[int, ...] | None  # general helper: the frequencies it must find
    closure_check: bool  # general helper, no closure: refuse an LBFGS at run time
    lbfgs: bool
    manual: bool = False  # manual optimization: any number of optimizers, schedulers the module steps


@dataclass(frozen=True)
class Optimization:
    accumulate: int
    schedule: Mapping[int, int] | None
    accumulates: bool
    scheduled: bool  # accumulation factor per epoch
    window_end: bool  # is_last_batch is needed (accumulation, schedulers, validation at the epoch's end)
    clip: bool
    clip_val: float | None
    clip_by_value: bool
    closure: bool  # optimizer.step(closure): LBFGS or an optimizer_step override
    step_override: bool
    step_override_seed: bool  # the override takes the seed's arguments (optimizer_idx, on_tpu, using_lbfgs)
    zero_grad_override: bool
    zero_grad_override_seed: bool
    step_args_batch_idx: bool  # training_step takes batch_idx
    frequencies: tuple[int, ...] | None  # one optimizer per batch, each in turn (1.9.5)
    loops_optimizers: bool  # several optimizers, all on every batch
    tbptt_steps: int | None
    tbptt: bool
    tbptt_split_hook: bool
    track_grad_norm: float | None
    track_grad_norm_inf: bool
    grad_norm_first_only: bool  # several optimizers: norms of optimizer 0's steps only (1.9.5)
    terminate_on_nan: bool
    step_end: bool  # training_step_end
    outputs_used: bool  # training_step outputs go to on_train_batch_end / training_epoch_end
    nested_outputs: bool  # ... nested per time split and optimizer (1.9.5)
    batch_outputs_for_hook: bool  # on_train_batch_end gets the nested outputs
    epoch_outputs: bool  # training_epoch_end
    nested_epoch_outputs: bool  # ... with 1.9.5's nesting
    skip_hiddens_key: bool  # the outputs leave out "hiddens"
    total_batch_idx: bool  # the loop counts batches across epochs
    schedulers_follow_active: bool  # with frequencies, only the active optimizer's schedulers step (1.9.5)
    notes_epoch_end: bool  # an epoch can end before its last batch, and a scheduler must know (epoch_complete)
    last_batch_block: bool  # something happens at the epoch's last batch (known schedulers, epoch_complete)
    schedulers_after_batch: bool  # a scheduler may step (or epoch_complete be noted) after a batch
    # configure_gradient_clipping override: called at each optimizer step with the Trainer's clipping flags
    clip_hook: bool = False
    clip_hook_algorithm: str | None = None  # the gradient_clip_algorithm it gets (None: no gradient_clip_val)
    clips_at_step: bool = False  # clipping or the hook happen before each optimizer step
    # code runs between the backward and the optimizer step (on_before_optimizer_step, gradient norms, clipping)
    before_step: bool = False
    gates_before_step: bool = False  # ... which a closure runs only when the accumulation window ends (should_step)


@dataclass(frozen=True)
class Metrics:
    """The collector behind self.log, present only when something reads what is logged."""

    collect: bool
    model_logs: bool  # the model (or a callback through pl_module) calls self.log / self.log_dict
    discards: bool  # ... but nothing reads the values: log is a no-op
    log_dicts: bool  # the seed's {"log": ..., "progress_bar": ...} returns are logged
    epoch_end_returns: bool  # with log_dicts: training_epoch_end's return is logged
    # Lightning 1.9.5, at an epoch's first batch: a hook that logs after another hook logged starts its values
    # over; with several optimizers and gradient norms, training_step's values of optimizer 0 are dropped
    first_batch_resets: bool
    # torchmetrics Metric objects may be logged (the module's source imports torchmetrics): computed at epoch end
    # and reset where Lightning resets them (see with_torchmetrics)
    torchmetrics: bool = False
    # the prog_bar=True values are kept: the progress bar shows them, or trainer.progress_bar_metrics is read
    progress_bar: bool = False
    # the batch's values are published before the on_train_batch_end hooks run: Lightning's callback_metrics are
    # computed when read, so those hooks (a step-triggered ModelCheckpoint, a user's callback) see this batch's
    publishes_before_batch_end: bool = False


@dataclass(frozen=True)
class Hooks:
    model: frozenset[str]
    data: frozenset[str]
    callbacks: tuple[Callback, ...]
    validation_callbacks: tuple[Callback, ...]  # callbacks validate() must be given
    # on_before_optimizer_step also gets the optimizer's index (Lightning 1.9.5's signature, for callbacks and model)
    step_hook_index: bool = False

    @property
    def validation_trainer(self) -> bool:
        """validate() passes `trainer` to a callback (the progress bar takes none)."""
        return any(c.kind != "progress" for c in self.validation_callbacks)

    def model_has(self, name: str) -> bool:
        return name in self.model

    def data_has(self, name: str) -> bool:
        return name in self.data

    def callbacks_with(self, name: str) -> tuple[Callback, ...]:
        return tuple(c for c in self.callbacks if name in c.hooks)

    def user_code(self, name: str) -> bool:
        """The user's code runs at hook `name` (and may log there)."""
        return self.model_has(name) or any(c.kind == "user" for c in self.callbacks_with(name))

    def callbacks_before_model(self, name: str) -> tuple[Callback, ...]:
        """on_train_epoch_end: Lightning calls the monitoring callbacks after the module, the others before."""
        return tuple(c for c in self.callbacks_with(name) if not c.monitoring)

    def callbacks_after_model(self, name: str) -> tuple[Callback, ...]:
        return tuple(c for c in self.callbacks_with(name) if c.monitoring)


@dataclass(frozen=True)
class Imports:
    """The standard-library and torch imports the script needs."""

    argparse: bool
    copy: bool
    cprofile: bool
    csv: bool
    enum: bool
    glob: bool
    json: bool
    io: bool
    math: bool
    pickle: bool  # pickle.UnpicklingError: a checkpoint weights_only loading refuses
    pstats: bool
    re: bool
    signal: bool
    subprocess: bool
    shutil: bool
    time: bool
    timedelta: bool
    os: bool
    random: bool
    sys: bool
    warnings: bool
    sequence: bool
    contextmanager: bool
    dataclass: bool
    field: bool
    simple_namespace: bool
    accumulate: bool
    samplers: bool
    apex: bool
    mutable_mapping: bool
    dataclass_functions: bool  # asdict, is_dataclass
    tensorboard: bool
    hparams_summaries: bool  # torch.utils.tensorboard.summary.hparams
    mlflow: bool
    mlflow_params: bool
    wandb: bool
    tqdm: bool
    rich: bool
    torchmetrics: bool = False
    nullcontext: bool = False  # DDP's all-reduce only on the batch that steps (`with nullcontext() if should_step`)


@dataclass(frozen=True)
class Checkpointing:
    """Checkpoints (Lightning's ModelCheckpoint, EarlyStopping, the file format) and resuming."""

    saves: bool  # the script writes checkpoints
    resumes: bool  # --ckpt-path
    # torch.load(weights_only=...) of the checkpoint resumed from: True (the spec's null or true, Lightning's
    # default): tensors and plain data only, the file's pickle cannot run code; False: any pickle, the file trusted
    weights_only: bool
    resumes_validation: bool  # ... of a run with validation: the val loader is loaded before training
    checkpoints: tuple[Callback, ...]  # the ModelCheckpoint callbacks (the default one when the spec has none)
    early_stopping: tuple[Callback, ...]
    default_dir: bool  # a ModelCheckpoint writes into the default directory
    versioned: bool  # ... which is in the first logger's directory (save_dir/name/version_N/checkpoints)
    # ... known once the first logger's run exists (MLflow's and W&B's run ids): set after the loggers open
    default_dir_in_run: bool
    default_dir_at_build: bool  # ... else known when the loggers are built
    default_root_dir: str | None  # None: the working directory
    default_ckpt_path: str | None  # the spec's ckpt_path
    lightning_version: str  # the Lightning release whose checkpoint format the files follow
    stateful_callbacks: tuple[Callback, ...]  # callbacks whose state a checkpoint holds
    save_hook_callbacks: tuple[Callback, ...]  # user callbacks with on_save_checkpoint
    load_hook_callbacks: tuple[Callback, ...]  # user callbacks with on_load_checkpoint
    hyperparameters: bool  # the model calls save_hyperparameters
    data_hyperparameters: bool  # ... the datamodule
    resume_variables: tuple[str, ...]  # main()'s loop variables a checkpoint records
    monitors: bool  # some ModelCheckpoint ranks by a metric
    unmonitored: bool  # some ModelCheckpoint keeps the newest
    verbose: bool  # some ModelCheckpoint says what it saves
    stopping: Mapping[str, bool]  # EarlyStopping's features in use (thresholds, divergence, check_finite, ...)
    step_triggered: bool  # ... saves every n steps or after a time interval
    time_triggered: bool
    defers: bool  # ... waits for the validation after an epoch's last batch to rank by a fresh metric
    saves_last: bool
    links: bool  # save_last="link"
    reads_metrics: bool  # file names or rankings read the logged metrics
    searches_versions: bool  # `--ckpt-path last` looks into every version_N/checkpoints of the first logger
    epoch_start_block: bool  # an epoch's start has code a run resumed in the middle of it must skip
    stops_on_signals: bool  # SIGTERM / SIGINT write a resumable checkpoint before the script exits
    requeues: bool  # under SLURM, SIGUSR1 saves an hpc checkpoint and requeues the job

    def early_stopping_checks_at(self, hook: str) -> bool:
        """Some EarlyStopping checks its metric at `hook` (on_train_epoch_end or on_validation_end)."""
        return any(hook in callback.hooks for callback in self.early_stopping)


@dataclass(frozen=True)
class LoggerPlan:
    """One of the run's loggers, as the script builds it: the script's class of that name, and its arguments."""

    kind: str  # "csv", "tensorboard", "mlflow" or "wandb"
    cls: str  # the script's class (Lightning's name)
    save_dir: str | None  # csv, tensorboard: the directory of the logs (None: default_root_dir); else None
    args: Mapping[str, Any]  # its other arguments, those not at the script's class's defaults
    numbered: bool  # its runs are directories version_N, the next free N (csv, tensorboard without a version)

    @property
    def in_root_dir(self) -> bool:
        """Its logs go to default_root_dir (a CSV or TensorBoard logger without a save_dir)."""
        return self.kind in ("csv", "tensorboard") and self.save_dir is None


@dataclass(frozen=True)
class LrMonitor:
    """Lightning's LearningRateMonitor: which learning rates it logs at which hook (interval "step", "epoch" or
    "any": the schedulers of that interval, or all; always every optimizer without a scheduler)."""

    callback: Callback
    at_batch_start: str | None  # on_train_batch_start, when the loggers are due (None: never)
    at_epoch_start: str | None  # on_train_epoch_start
    momentum: bool
    weight_decay: bool
    schedulers: tuple[Scheduler, ...]  # the known schedulers, in configure_optimizers' order


@dataclass(frozen=True)
class Logging:
    """The loggers, and what Lightning's logger connector writes to them, when."""

    loggers: tuple[LoggerPlan, ...]
    default: bool  # `logger: true`: Lightning's default logger (a CSVLogger in default_root_dir)
    steps: bool  # the step values are written every LOG_EVERY_N_STEPS batches (log_every_n_steps > 0)
    every_n_steps: int
    values: bool  # the model logs values (self.log) that reach the loggers
    val_steps: bool  # ... in validation, whose step values go to the loggers (validation's own step count)
    hparams_model: bool  # the model's save_hyperparameters go to the loggers
    hparams_data: bool  # ... the datamodule's
    kinds: frozenset[str]  # the kinds of logger the script defines
    prefixed: bool  # some logger puts a prefix before the names
    lr_monitor: LrMonitor | None  # the spec's LearningRateMonitor
    counts_steps: bool  # the script keeps the loggers' step (log_step): values or learning rates are logged
    every_n_steps_used: bool  # ... and something reads LOG_EVERY_N_STEPS
    hp_metric: bool  # a TensorBoardLogger logs hp_metric -1 with the hyperparameters (default_hp_metric)
    graphs: bool  # a TensorBoardLogger adds the model's graph (log_graph)
    traces_lightning_module: bool  # ... of a LightningModule (traced with its trainer checks off, as Lightning does)
    finishes: bool  # some logger has a run to end (TensorBoard's writer, MLflow's run, W&B's run)

    @property
    def enabled(self) -> bool:
        return bool(self.loggers)

    @property
    def hparams(self) -> bool:
        return self.hparams_model or self.hparams_data

    @property
    def starts(self) -> bool:
        """The loggers get the hyperparameters, or the model's graph, when the run starts."""
        return self.hparams or self.graphs

    @property
    def flattens(self) -> bool:
        """The hyperparameters go to a logger that takes them flattened ("a/b" keys: TensorBoard's hparams,
        MLflow's params)."""
        return self.hp_metric or (self.hparams and "mlflow" in self.kinds)

    @property
    def warns(self) -> bool:
        """Some logger may warn as Lightning's does: CSV (a used directory), MLflow (a renamed metric), W&B (a run
        in progress), TensorBoard's graph (no example input to trace)."""
        return bool(self.kinds & {"csv", "mlflow", "wandb"}) or self.graphs

    @property
    def versions(self) -> bool:
        """A logger writes into save_dir/name/version_N (CSV, TensorBoard)."""
        return bool(self.kinds & {"csv", "tensorboard"})

    @property
    def writes_yaml(self) -> bool:
        """A logger writes the hyperparameters into hparams.yaml (CSV, TensorBoard)."""
        return self.hparams and self.versions

    @property
    def auto_version(self) -> bool:
        """The first logger numbers its directory (version_N): earlier runs' directories sit beside it."""
        return bool(self.loggers) and self.loggers[0].numbered


@dataclass(frozen=True)
class Progress:
    """The progress bar: Lightning's default TQDMProgressBar, drawn by the script itself ("own"), or the spec's
    TQDMProgressBar / RichProgressBar, drawn by tqdm / rich."""

    kind: str | None  # None: no bar | "own" | "tqdm" | "rich"
    refresh_rate: int  # own, tqdm: redraw every n batches; rich: n times a second
    line_every: int  # own, when the output is not a terminal: a plain line every n batches
    leave: bool  # tqdm, rich: each epoch's bar stays (a line per epoch)
    process_position: int  # tqdm: the bars start this many lines down
    version: bool  # v_num: the loggers' version, which Lightning shows when there is a logger
    joined_version: bool  # ... of several loggers, joined with "_"
    text_version: bool  # ... a string (the last 4 characters; none when empty)
    metrics: bool  # the values logged with prog_bar=True (and the seed's "progress_bar" dicts)
    steps_total: bool  # max_epochs -1 with max_steps: an epoch's total is at most the steps left (Lightning)
    validation: bool  # a validation bar
    sanity: bool  # a sanity check bar
    last_epoch: int  # rich: "Epoch N/last" (max_epochs - 1, as Lightning writes it)

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def own(self) -> bool:
        return self.kind == "own"

    @property
    def postfix(self) -> bool:
        """Something is shown after the timings (Lightning's get_metrics)."""
        return self.version or self.metrics


@dataclass(frozen=True)
class Constants:
    """The configuration constants the script declares, beside those a single flag decides."""

    seed: bool
    max_epochs: bool
    max_steps: bool
    num_sanity_val_steps: bool
    root_dir: bool  # the script needs default_root_dir (checkpoints, or a logger's directory)
    default_root_dir: str | None  # ... and the spec names it (DEFAULT_ROOT_DIR)


@dataclass(frozen=True)
class Summary:
    """Lightning's ModelSummary table, printed at on_fit_start by each ModelSummary: the default one
    (enable_model_summary) or the spec's entries. The hooks hold them (kind "summary"), in Lightning's order."""

    enabled: bool  # some ModelSummary prints (max_depth 0 prints nothing)
    children: bool  # some lists the top-level submodules only (max_depth 1)
    children_only: bool  # ... and none goes deeper
    takes_depth: bool  # the summary function needs max_depth (to list deeper, or to count FLOPs)
    example_input: bool  # the model's source mentions example_input_array: a forward pass gives sizes and FLOPs
    takes_device: bool  # ... which reads `device` (the batch's transfer, or autocast's device type)
    precision_bits: int  # the bits per parameter of the size estimate (Lightning's table: 32 for mixed precision)
    unsupported_precision: str | None  # ... which Lightning warns about, naming the trainer's precision


@dataclass(frozen=True)
class Profiling:
    """`profiler`: Lightning's SimpleProfiler, AdvancedProfiler or PyTorchProfiler over the script's sections."""

    kind: str | None  # "simple" | "advanced" | "pytorch"; None: no profiler, no timing code
    model_class: str
    data_class: str | None
    # where files go: "spec" (its dirpath) | "logger" (the first logger's log_dir) | "logger_save_dir" (its
    # save_dir: MLflow, W&B) | "root"
    directory: str | None
    dirpath: str | None  # the spec's dirpath
    report_file: str | None  # the report's file name there (fit-FILENAME.txt); None: printed
    extended: bool  # simple: the calls and share columns
    line_count_restriction: int | float  # advanced: the functions listed per action
    dump_stats: bool  # advanced: each action's stats in a .prof file
    trace: bool  # pytorch: a trace for Chrome's trace viewer / TensorBoard
    # ... its worker name (Lightning's file name for the training step's trace); with `ranked`, this and the
    # other file names are f-strings' texts (braces doubled), a NUL where the process's local rank goes
    trace_name: str
    stats_prefix: str  # advanced, dump_stats: what each action's .prof file name starts with
    row_limit: int
    sort_by_key: str | None  # None: cuda_time_total when CUDA is available, else cpu_time_total
    group_by_input_shapes: bool
    record_module_names: bool
    profile_args: Mapping[str, Any]  # torch.profiler.profile's arguments that differ from its defaults

    # strategy ddp: Lightning's strategy class in the actions' names; each process reports, its local rank in
    # the files' names (fit-FILENAME-RANK...) and the report's headers; printed by local rank 0 alone
    strategy_class: str = "SingleDeviceStrategy"
    ranked: bool = False

    # the actions of the loop's own parts, under Lightning's names for the same code
    @property
    def training_step(self) -> str:
        return f"[Strategy]{self.strategy_class}.training_step"

    @property
    def validation_step(self) -> str:
        return f"[Strategy]{self.strategy_class}.validation_step"

    @property
    def backward(self) -> str:
        return f"[Strategy]{self.strategy_class}.backward"

    @property
    def batch_to_device(self) -> str:
        return f"[Strategy]{self.strategy_class}.batch_to_device"

    train_next: ClassVar[str] = "[_TrainingEpochLoop].train_dataloader_next"
    val_next: ClassVar[str] = "[_EvaluationLoop].val_next"
    save_checkpoint: ClassVar[str] = "save_checkpoint"
    # ... and under loopgen's (Lightning makes its iterators inside actions of its own loops)
    train_iter: ClassVar[str] = "train_dataloader_iter"
    val_iter: ClassVar[str] = "val_dataloader_iter"

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def writes_files(self) -> bool:
        """Something goes into the directory (the report, the trace, the raw stats)."""
        return self.report_file is not None or self.trace or self.dump_stats

    def model_action(self, hook: str) -> str:
        """Lightning's name of a LightningModule hook's action."""
        return f"[LightningModule]{self.model_class}.{hook}"

    def data_action(self, hook: str) -> str:
        return f"[LightningDataModule]{self.data_class}.{hook}"

    def callback_action(self, callback: Callback, hook: str) -> str:
        return f"[Callback]{callback.construct.cls}.{hook}"

    def loader_action(self, owner: str, hook: str) -> str:
        return self.data_action(hook) if owner == "data" else self.model_action(hook)


@dataclass(frozen=True)
class Helpers:
    """Helper functions more than one feature needs."""

    map_tensors: bool


@dataclass(frozen=True)
class Manual:
    """Manual optimization (`self.automatic_optimization = False`, Lightning 2.x): training_step makes the optimizer
    steps itself, through what the script gives the module in place of Lightning's Trainer."""

    enabled: bool
    optimizers: bool = False  # the module calls self.optimizers()
    wraps: bool = False  # ... in manual optimization: the wrapped optimizers, whose steps the loop counts
    lr_schedulers: bool = False  # ... self.lr_schedulers()
    backward: bool = False  # ... self.manual_backward(loss)
    clip_gradients: bool = False  # ... self.clip_gradients(optimizer, ...)
    outputs_used: bool = False  # on_train_batch_end receives training_step's output
    # strategy ddp: training_step runs through DistributedDataParallel's forward, which prepares no all-reduce
    # when it returns; manual_backward prepares the all-reduce of each backward (Lightning's DDPStrategy)
    ddp: bool = False
    ddp_finds_unused: bool = False  # ... and finds the parameters the loss does not depend on (find_unused_parameters)


# the LightningModule methods a manually optimizing module calls that the script binds to the model
MANUAL_METHODS = ("optimizers", "lr_schedulers", "manual_backward", "clip_gradients")


@dataclass(frozen=True)
class Distributed:
    """Several processes (or devices) training one model: what the launcher, the process group, the model wrapper
    and the samplers are. `kind` None: one process on one device, and the script has no code for any of this.

    Written for every engine the contract names: "ddp" (torchrun; implemented), with room for "dp", "horovod"
    and "xla". The templates gate rank-0-only actions (printing the summary, writing files) on the script's
    `is_global_zero` boolean whenever `rank_zero_gates`, and replace the samplers when `replaces_samplers`,
    whatever the engine."""

    kind: str | None = None  # None | "ddp" | "dp" | "horovod" | "xla"
    devices: int = 1  # processes (devices) per node
    num_nodes: int = 1
    world_size: int = 1  # devices * num_nodes
    # where the ranks come from: "torchrun" (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK in the environment)
    ranks_from: str | None = None
    backend: str | None = None  # "gloo" | "nccl"; None: decided at run time by the device (nccl on CUDA)
    timeout: float | None = None  # the process group's timeout in seconds; None: torch's default (Lightning's)
    # DistributedDataParallel's arguments, as Lightning passes them
    find_unused_parameters: bool = False
    static_graph: bool = False
    gradient_as_bucket_view: bool = False
    rank_zero_gates: bool = False  # several processes: rank-0-only actions are gated on `is_global_zero`
    replaces_samplers: bool = False  # Lightning's use_distributed_sampler: train and val samplers shard the data
    no_sync: bool = False  # accumulation: the gradient all-reduce only on the batch that steps
    syncs_metrics: bool = False  # self.log(..., sync_dist=True) reduces across the processes
    reduces_decisions: bool = False  # EarlyStopping: one process that stops stops all
    reseeds: bool = False  # Lightning seeds again (seed_everything's seed) once the processes are set up
    local_rank: bool = False  # the script reads the rank on this node (the CUDA device, trainer.local_rank)
    node_rank: bool = False  # ... the node's rank (trainer.node_rank)
    # rank 0's value on every process: the loggers' versions, the checkpoint files that exist (Lightning's broadcast)
    broadcasts: bool = False
    saves_on_rank_zero: bool = False  # checkpoints: every process decides, rank 0 writes, then all wait (barrier)
    logs_on_rank_zero: bool = False  # the loggers write on rank 0 only (Lightning's rank_zero_only)
    silent_bar: bool = False  # the progress bar draws on rank 0 only (Lightning disables it elsewhere)
    launch: str = ""  # the single-node command
    launch_nodes: str = ""  # the multi-node command (one per node)
    # Lightning 1.9.5's sampler replacement: every sampler (RandomSampler too) sharded over its own order
    wraps_samplers: bool = False
    # horovod: the accumulation factor the DistributedOptimizer counts backward passes by
    backward_passes_per_step: int = 1
    # dp: batches go to the GPUs through DataParallel's scatter, not to the device first
    scatters: bool = False
    # dp: the per-GPU outputs of training_step reduced to their mean (no training_step_end of the model's)
    reduces_step_output: bool = False
    # horovod with accumulation: optimizer.step() on every batch, counted at a window's end (Lightning 1.9.5)
    steps_every_batch: bool = False

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def engine(self) -> str:
        """The template file of the engine's code: templates/engines/<engine>.j2."""
        return self.kind or "single"

    @property
    def ddp(self) -> bool:
        return self.kind == "ddp"

    @property
    def horovod(self) -> bool:
        return self.kind == "horovod"

    @property
    def dp(self) -> bool:
        return self.kind == "dp"

    @property
    def xla(self) -> bool:
        return self.kind == "xla"


@dataclass(frozen=True)
class CommandLine:
    """The script's own options (argparse), each defaulting to the spec's value: only those whose override the
    script's shape serves. The loop tests MAX_EPOCHS / MAX_STEPS only when the spec bounds the run by them, so
    --max-epochs / --max-steps are offered only then (and not under fast_dev_run, which sets both), and take an
    integer >= 0 (-1, no limit, would need another loop); --seed only where the script seeds."""

    ckpt_path: bool  # --ckpt-path: the script resumes
    weights_only: bool  # --weights-only replaces WEIGHTS_ONLY (how that checkpoint is loaded)
    max_epochs: bool  # --max-epochs replaces MAX_EPOCHS
    max_steps: bool  # --max-steps replaces MAX_STEPS
    seed: bool  # --seed replaces SEED, or the seed chosen at run time (seed_everything: true)

    @property
    def enabled(self) -> bool:
        return self.ckpt_path or self.weights_only or self.max_epochs or self.max_steps or self.seed

    seed_at_run_time: bool  # ... the seed chosen at run time unless --seed: no SEED constant

    @property
    def overrides(self) -> tuple[str, ...]:
        """The module constants main() replaces with the parsed values."""
        offered = {"WEIGHTS_ONLY": self.weights_only, "MAX_EPOCHS": self.max_epochs, "MAX_STEPS": self.max_steps}
        offered["SEED"] = self.seed and not self.seed_at_run_time
        return tuple(name for name, on in offered.items() if on)


@dataclass(frozen=True)
class Plan:
    header: Header
    build: Build
    state: State
    device: Device
    data: Data
    bounds: Bounds
    validation: Validation
    precision: Precision
    optimizers: Optimizers
    optimization: Optimization
    metrics: Metrics
    hooks: Hooks
    checkpointing: Checkpointing
    logging: Logging
    summary: Summary
    profiling: Profiling
    progress: Progress
    constants: Constants
    helpers: Helpers
    imports: Imports
    command_line: CommandLine
    notices: tuple[str, ...] = ()  # decisions the user should hear about
    manual: Manual = Manual(enabled=False)
    distributed: Distributed = Distributed()


# ---------------------------------------------------------------------------
# the plan stage


def make_plan(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    script_name: str = "train.py",
    objects: Mapping[str, ClassFacts | None] | None = None,
) -> Plan:
    """Every decision, from the spec and what the user's source says; all problems are reported together.

    `callbacks` holds the facts of each of the spec's callbacks, None for Lightning's own (ModelCheckpoint,
    EarlyStopping, LearningRateMonitor), which the script implements itself. `objects` holds the facts of the
    classes of the objects given as init args (None for a class outside the project), by class path."""
    problems: list[Problem] = []
    notices: list[str] = []
    check_model(spec, model, problems)
    user_callbacks = tuple(facts for facts in callbacks if facts is not None)
    hooks = resolve_hooks(spec, model, data, callbacks)
    device = resolve_device(spec)
    precision = resolve_precision(spec, model, device, problems, notices)
    optimizers = resolve_optimizers(spec, model, precision, problems)
    data_plan = with_unsized_loaders(resolve_data(spec, model, data, problems), spec, model, data, problems)
    bounds = resolve_bounds(spec, model, user_callbacks, data_plan)
    validation = resolve_validation(spec, model, hooks, data_plan, bounds, problems)
    optimization = resolve_optimization(spec, model, hooks, optimizers, bounds, validation, problems)
    manual = clip_gradients_bound(model, resolve_manual(spec, model, hooks, problems))
    if manual.enabled:
        optimization = manual_optimization(optimization, optimizers, validation, spec, problems)
    checkpointing = resolve_checkpointing(spec, model, data, hooks, validation, optimization, bounds, problems)
    logging = resolve_logging(
        spec, model, data, user_callbacks, validation, optimizers, optimization, problems, notices
    )
    summary, summaries = resolve_summary(spec, model, hooks, device, precision)
    profiling = resolve_profiling(spec, logging, problems, notices)
    progress = resolve_progress(spec, model, user_callbacks, bounds, validation, logging, problems, notices)
    if strategy_args(spec.trainer.strategy)[0] == "dp":
        distributed = resolve_dp(spec, model, precision, optimizers, optimization, checkpointing, logging, profiling,
                                 progress, problems)  # fmt: skip
    else:
        distributed = resolve_distributed(
            spec, script_name, precision, optimizers, optimization, data_plan, checkpointing, logging, profiling,
            progress, problems,
        )  # fmt: skip
    if distributed.steps_every_batch:  # no step forced at the epoch's last batch
        last_batch = steps_at_last_batch(optimizers, optimization.notes_epoch_end)
        optimization = replace(optimization, window_end=last_batch or validation.at_epoch_end)
    if manual.enabled and distributed.enabled:
        manual = manual_under_strategy(spec, manual, distributed, problems)
    if problems:
        raise LoopgenError(problems)
    hooks = with_lightning_callbacks(spec, hooks, checkpointing, logging, summaries, progress)
    metrics = resolve_metrics(model, user_callbacks, hooks, optimizers, optimization, checkpointing, logging, progress)
    metrics = with_torchmetrics(metrics, spec, model, user_callbacks, problems)
    metrics = with_progress_bar_metrics(metrics, model, user_callbacks, progress)
    if problems:
        raise LoopgenError(problems)
    state = resolve_state(spec, model, user_callbacks, metrics, checkpointing)
    if state.has("log_dir") and logging.loggers:
        # Lightning's trainer.log_dir: a CSV or TensorBoard logger's log_dir, another logger's save_dir
        first = logging.loggers[0].kind
        state = replace(state, log_dir="logger" if first in ("csv", "tensorboard") else "logger_save_dir")
    if state.has("estimated_stepping_batches"):
        state = with_estimate(spec, state, bounds, optimization)
    if state.has("lr_scheduler_configs"):
        state = with_scheduler_configs(spec, model, user_callbacks, state, optimizers)
    check_logger_experiments(model, user_callbacks, logging)
    epoch_start = (
        state.mirror_epoch
        or bool(hooks.callbacks_with("on_train_epoch_start"))
        or hooks.model_has("on_train_epoch_start")
        or optimization.scheduled
        or optimization.epoch_outputs
        or optimization.notes_epoch_end
    )
    checkpointing = replace(
        checkpointing,
        epoch_start_block=checkpointing.resumes and epoch_start,
        resume_variables=checkpointing.resume_variables + (("log_step",) if logging.counts_steps else ()),
    )
    if distributed.enabled:
        # torchrun signals every process when one fails: no checkpoint is written on a signal
        checkpointing = replace(checkpointing, stops_on_signals=False, requeues=False)
    build = with_objects(resolve_build(spec, hooks.callbacks), spec, model, data, callbacks, objects or {})
    distributed = replace(
        distributed,
        # Lightning 1.9.5's self.log(sync_dist=True) reduces only under torch.distributed: not under Horovod
        syncs_metrics=distributed.enabled and metrics.collect and not distributed.horovod,
        local_rank=distributed.enabled and (device.moves or state.has("local_rank") or profiling.ranked),
        node_rank=distributed.enabled and state.has("node_rank"),
    )
    header = resolve_header(spec, optimizers, script_name, device, precision, bounds, optimization, validation)
    if distributed.xla:
        # one device: SingleDeviceXLAStrategy, whose reduce is the value itself
        distributed = replace(distributed, syncs_metrics=distributed.syncs_metrics and distributed.devices > 1)
        header = xla_header(header, distributed)
    elif distributed.horovod:
        header = horovod_header(header, distributed)
    elif distributed.enabled:
        header = distributed_header(header, distributed)
    imports = resolve_imports(
        build,
        state,
        data_plan,
        bounds,
        validation,
        precision,
        optimizers,
        optimization,
        metrics,
        checkpointing,
        logging,
        summary,
        profiling,
        progress,
    )
    imports = replace(imports, torchmetrics=metrics.torchmetrics)
    if distributed.ranks_from == "torchrun":  # the ranks from the environment; sys.exit(2) without them
        imports = replace(imports, os=True, sys=True, timedelta=imports.timedelta or distributed.timeout is not None)
    if distributed.horovod and distributed.devices > 1:  # sys.exit(2) when not launched by horovodrun
        imports = replace(imports, sys=True)
    if distributed.xla and distributed.broadcasts:  # XLAStrategy.broadcast pickles through a buffer
        imports = replace(imports, io=True)
    if distributed.no_sync and not optimization.closure:  # (a closure's batches that do not step call no_sync())
        imports = replace(imports, nullcontext=True)
    command_line = resolve_command_line(spec, build, bounds, checkpointing)
    return Plan(
        header=header,
        build=build,
        state=state,
        device=device,
        data=data_plan,
        bounds=bounds,
        validation=validation,
        precision=precision,
        optimizers=optimizers,
        optimization=optimization,
        metrics=metrics,
        hooks=hooks,
        checkpointing=checkpointing,
        logging=logging,
        summary=summary,
        profiling=profiling,
        progress=progress,
        constants=resolve_constants(build, state, bounds, validation, checkpointing, logging, profiling),
        helpers=Helpers(
            map_tensors=precision.casts
            or optimization.tbptt
            or (device.moves and not hooks.model_has("transfer_batch_to_device") and not distributed.scatters)
        ),
        command_line=command_line,
        imports=imports,
        notices=tuple(notices),
        manual=manual,
        distributed=distributed,
    )


def check_model(spec: Spec, model: ClassFacts, problems: list[Problem]) -> None:
    """What the model must define, and the hooks the script cannot serve."""
    where, line = "model.class_path", spec.model.line
    if not model.defines("training_step"):
        problems.append(Problem(where, f"{spec.model.class_path} does not define training_step", line))
    if spec.optimizer is None and not model.defines("configure_optimizers"):
        message = f"{spec.model.class_path} defines no configure_optimizers and the spec has no `optimizer:`"
        problems.append(Problem(where, message, line))
    unserved = [*UNSERVED_FIT_HOOKS, *([] if model.manual_optimization else ["on_validation_model_zero_grad"])]
    for hook in unserved:
        if model.defines(hook):
            message = (
                f"{spec.model.class_path} overrides {hook}, which Lightning calls in fit and the script does not;"
                " move its work to a hook loopgen calls (see docs/spec.md, hooks) or remove it"
            )
            problems.append(Problem(model.defined_at.get(hook, where), message))


def resolve_hooks(
    spec: Spec, model: ClassFacts, data: ClassFacts | None, callbacks: tuple[ClassFacts | None, ...]
) -> Hooks:
    """The hooks of the model, the data class and the user's callbacks (Lightning's are added by
    `with_lightning_callbacks`, once their plan is known)."""
    refs = spec.trainer.callbacks
    plans = tuple(
        Callback(
            construct=_construct(ref),
            var=f"callback_{i}" if len(refs) > 1 else "callback",
            hooks=frozenset(h for h in (*CALLBACK_HOOKS, *CALLBACK_CHECKPOINT_METHODS) if facts.defines(h)),
            state_key=None if facts.defines("state_key") or facts.is_lightning_callback else ref.name,
        )
        for i, (ref, facts) in enumerate(zip(refs, callbacks))
        if facts is not None
    )
    _check_unique_names([spec.model] + ([spec.data] if spec.data else []) + [r for r, f in zip(refs, callbacks) if f])
    return Hooks(
        model=frozenset(h for h in MODEL_HOOKS if model.defines(h)),
        data=frozenset(h for h in ("prepare_data", "setup", "teardown") if data is not None and data.defines(h)),
        callbacks=plans,
        validation_callbacks=tuple(c for c in plans if c.hooks & set(VALIDATION_CALLBACK_HOOKS)),
        step_hook_index=_follows_1_9_5(spec, model),
    )


def with_lightning_callbacks(
    spec: Spec,
    hooks: Hooks,
    checkpointing: Checkpointing,
    logging: Logging,
    summaries: tuple[Callback, ...],
    progress: Progress,
) -> Hooks:
    """All the callbacks in the order Lightning calls them: the spec's order, then the default progress bar (a
    TQDMProgressBar or RichProgressBar the spec names stays where it is) and the default ModelSummary, with every
    ModelCheckpoint (the default one included) moved to the end."""
    user = iter(hooks.callbacks)
    stoppers = {cb.var: cb for cb in checkpointing.early_stopping}  # by name: one that does nothing is left out
    count = sum(_is_lightning(ref, "EarlyStopping") for ref in spec.trainer.callbacks)
    stopper_names = iter([_numbered("early_stopping", i, count) for i in range(count)])
    summary = iter(summaries)
    bar = _progress_callback(progress)
    ordered: list[Callback | None] = []
    for ref in spec.trainer.callbacks:
        if _is_lightning(ref, "EarlyStopping"):
            ordered.append(stoppers.get(next(stopper_names)))  # none under fast_dev_run
        elif _is_lightning(ref, "LearningRateMonitor"):
            if logging.lr_monitor is not None and logging.lr_monitor.callback not in ordered:
                ordered.append(logging.lr_monitor.callback)
        elif _is_lightning(ref, "ModelSummary"):
            ordered.append(next(summary))
        elif _is_progress_bar(ref):
            ordered.append(bar)
            bar = None
        elif not _is_lightning(ref, "ModelCheckpoint"):
            ordered.append(next(user))
    ordered += [bar, *summary, *checkpointing.checkpoints]
    callbacks = tuple(cb for cb in ordered if cb is not None)
    return Hooks(
        model=hooks.model,
        data=hooks.data,
        callbacks=callbacks,
        validation_callbacks=tuple(c for c in callbacks if c.hooks & set(VALIDATION_CALLBACK_HOOKS)),
        step_hook_index=hooks.step_hook_index,
    )


def resolve_device(spec: Spec) -> Device:
    name = spec.trainer.accelerator
    return Device(name=name, moves=name != "cpu", auto=name == "auto")


# bf16-true and 16-true are Lightning 2.x's HalfPrecision: the strategies and loops only 1.9.5 has cannot take them
HALF_NOT_IN_1_9_5 = "Lightning 1.9.5 has no true half precision: its values are 16, bf16, 32 and 64"


def resolve_precision(
    spec: Spec, model: ClassFacts, device: Device, problems: list[Problem], notices: list[str]
) -> Precision:
    t = spec.trainer
    apex = t.amp_backend == "apex"
    name = t.precision
    if name == "16-mixed" and device.name == "cpu" and not apex:
        name = "bf16-mixed"
        notices.append(
            "trainer.precision: 16-mixed: float16 AMP is not supported on CPU; using bf16-mixed instead, as Lightning does"
        )
    if t.amp_level is not None and not apex:  # Lightning 1.9.5's AcceleratorConnector
        problems.append(_flag_problem(spec, "amp_level", "is only used with `amp_backend: apex`"))
    if apex and t.precision != "16-mixed":
        problems.append(_flag_problem(spec, "amp_backend", f"apex needs `precision: 16-mixed`, not {t.precision}"))
    if apex and device.name == "cpu":
        message = refusal(
            "apex AMP on CPU",
            "apex's AMP runs on CUDA only",
            "use `amp_backend: native` (16-mixed then runs as bf16-mixed on CPU)",
        )
        problems.append(_flag_problem(spec, "amp_backend", message))
    half = name in ("bf16-true", "16-true")
    if half and not apex and _follows_1_9_5(spec, model):
        message = (
            f"{name} with {_only_1_9_5(spec, model)[0]}, which only Lightning 1.9.5 has, is not supported"
            f" ({HALF_NOT_IN_1_9_5}): use {name[:-5]}-mixed, or drop it"
        )
        problems.append(_flag_problem(spec, "precision", message))
    autocast = name in ("16-mixed", "bf16-mixed") and not apex
    if name == "bf16-mixed":
        dtype = "bfloat16"
    else:
        dtype = "auto" if device.auto else "float16"
    scaler = name == "16-mixed" and not apex
    cast_dtype = {"64": "float64", "bf16-true": "bfloat16", "16-true": "float16"}.get(name, "")
    return Precision(
        name=name,
        autocast=autocast,
        autocast_device=device.name,
        autocast_dtype=dtype,
        autocast_cache=_follows_1_9_5(spec, model),
        scaler=scaler,
        scaler_auto=scaler and device.auto,
        double=name == "64",
        half=half,
        casts=bool(cast_dtype),
        cast_dtype=cast_dtype,
        context=autocast or bool(cast_dtype),
        apex=apex,
        amp_level=(t.amp_level or "O2") if apex else None,
        lightning_name={"32": "32-true", "64": "64-true"}.get(name, name),
    )


def resolve_optimizers(spec: Spec, model: ClassFacts, precision: Precision, problems: list[Problem]) -> Optimizers:
    """The spec's optimizer, or configure_optimizers' shape read from its source (else the general helper)."""
    several = "optimizer_idx" in model.methods.get("training_step", ())
    manual = bool(model.manual_optimization)
    where, line = "model.class_path", spec.model.line
    facts = model.optimizers
    schedulers: list[Scheduler] = []
    reason = model.optimizers_unknown
    if spec.optimizer is not None:
        form, general, count = None, False, 1
        if spec.lr_scheduler is not None:
            schedulers.append(_spec_scheduler(spec.lr_scheduler, problems))
        lbfgs = spec.optimizer.name == "LBFGS"
    elif facts is not None:
        form, general, count = facts.form, False, len(facts.optimizers)
        lbfgs = "LBFGS" in facts.optimizers
        if several and count < 2:
            problems.append(Problem(where, f"training_step takes `optimizer_idx`, but {_returns(facts)}", line))
        elif not several and count != 1 and not manual:
            problems.append(
                Problem(
                    where,
                    f"{_returns(facts)}; training with several optimizers is only supported with manual"
                    " optimization (Lightning 2.x): set `self.automatic_optimization = False` in __init__ and make"
                    " the steps in training_step with `opt1, opt2 = self.optimizers()`",
                    line,
                )
            )
        for index, scheduler in enumerate(facts.schedulers):
            planned = _source_scheduler(scheduler, index, len(facts.schedulers), facts, count, problems, line)
            if planned is None:  # which optimizer it steps is known at run time only
                general, schedulers = True, []
                reason = f"configure_optimizers returns a {scheduler.cls} whose optimizer its source does not show"
                break
            schedulers.append(planned)
    else:
        form, general, count = None, True, 2 if several else 1
        lbfgs = model.mentions_lbfgs
    general_schedulers = general and _returns_schedulers(spec, model)
    if lbfgs and precision.scaler:
        message = "native 16-bit AMP and the LBFGS optimizer are not compatible"
        problems.append(_flag_problem(spec, "precision", message))
    if lbfgs and precision.apex:
        problems.append(_flag_problem(spec, "amp_backend", "apex AMP and the LBFGS optimizer are not compatible"))
    if model.defines("optimizer_step") and (precision.scaler or precision.apex):
        message = refusal(
            "an optimizer_step override together with 16-bit AMP",
            "under Lightning, the optimizer the override steps runs the GradScaler (or apex) inside its step();"
            " the script hands the override the plain optimizer",
            "use precision bf16-mixed or 32 with the override, or do its work in on_before_optimizer_step",
        )
        problems.append(Problem(where, message, line))
    frequencies = spec.loop.optimizer_frequencies
    if manual:  # Lightning steps no scheduler and calls no lr_scheduler_step: training_step does it all
        schedulers = [replace(s, interval="manual", plateau=False, strict=False) for s in schedulers]
    return Optimizers(
        from_spec=_construct(spec.optimizer) if spec.optimizer else None,
        form=form,
        general=general,
        general_reason=reason if general else "",
        count=count,
        several=several,
        list_var=several or (manual and (count > 1 or general)),
        schedulers=tuple(schedulers),
        general_schedulers=general_schedulers,
        any_schedulers=general_schedulers or bool(schedulers),
        after_step=tuple(s for s in schedulers if s.interval == "step" and not s.plateau),
        at_epoch_end=tuple(s for s in schedulers if s.interval == "epoch" and not s.plateau),
        plateau_after_validation=tuple(s for s in schedulers if s.interval == "step" and s.plateau),
        plateau_at_epoch_end=tuple(s for s in schedulers if s.interval == "epoch" and s.plateau),
        plateau=not manual and (general_schedulers or any(s.plateau for s in schedulers)),
        strict_plateau=any(s.plateau and s.strict for s in schedulers),
        lenient_plateau=any(s.plateau and not s.strict for s in schedulers),
        completes_epoch=not manual
        and (general_schedulers or any(s.interval == "epoch" and s.plateau for s in schedulers)),
        scheduler_hook=model.defines("lr_scheduler_step") and not manual,
        scheduler_hook_seed="optimizer_idx" in model.methods.get("lr_scheduler_step", ()),
        check_frequencies=tuple(frequencies or ()) if general and several else None,
        closure_check=general and not several and not manual and not lbfgs and not model.defines("optimizer_step"),
        lbfgs=lbfgs and not manual,
        manual=manual,
    )


def resolve_data(spec: Spec, model: ClassFacts, data: ClassFacts | None, problems: list[Problem]) -> Data:
    t = spec.trainer

    def owner(hook: str) -> str | None:
        # With a data class, Lightning reads the loaders from it only (the model's are ignored).
        if data is not None:
            return "data" if data.defines(hook) else None
        return "model" if model.defines(hook) else None

    train_owner = owner("train_dataloader")
    if train_owner is None:
        where = f"{spec.data.class_path} or {spec.model.class_path}" if spec.data else spec.model.class_path
        problems.append(Problem("data" if spec.data else "model", f"no train_dataloader() defined on {where}"))
    limit_train, limit_val = _limits(spec)
    val_owner = owner("val_dataloader")
    validation = val_owner is not None and model.defines("validation_step") and limit_val != 0
    counts_train = _limits_batches(limit_train)
    counts_val = validation and _limits_batches(limit_val)
    return Data(
        train_owner=train_owner or "model",
        val_owner=val_owner if validation else None,
        limit_train=limit_train,
        limit_val=limit_val,
        counts_train=counts_train,
        counts_val=counts_val,
        counts=counts_train or counts_val,
        sequential=bool(t.overfit_batches),
        reload_every=t.reload_dataloaders_every_n_epochs,
        reloads=t.reload_dataloaders_every_n_epochs > 0,
    )


def resolve_bounds(spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], data: Data) -> Bounds:
    """Lightning's resolution of max_epochs / max_steps / min_* (fast_dev_run included)."""
    t = spec.trainer
    max_steps, max_epochs = t.max_steps, t.max_epochs
    if t.fast_dev_run:
        max_steps, max_epochs = t.fast_dev_run, 1
    if max_epochs is None:
        max_epochs = 1000 if max_steps == -1 else -1
    min_epochs = t.min_epochs
    if min_epochs is None:  # Lightning's _parse_loop_limits
        min_epochs = 1 if t.min_steps is not None else 0
    min_steps = t.min_steps or 0
    stop_requests = any(_reads_trainer(facts, "should_stop") for facts in (model, *callbacks))
    validates = data.val_owner is not None
    stops_early = (
        any(_early_stopping_checks(ref, spec, validates) for ref in t.callbacks if _is_lightning(ref, "EarlyStopping"))
        and not t.fast_dev_run
    )
    stop_requests = stop_requests or stops_early
    if max_epochs != -1 and max_steps != -1:
        loop_until = "epochs_and_steps"
    elif max_epochs != -1:
        loop_until = "epochs"
    else:
        loop_until = "steps" if max_steps != -1 else "forever"
    holds = stop_requests and bool(min_epochs or min_steps)
    return Bounds(
        max_epochs=max_epochs,
        max_steps=max_steps,
        min_epochs=min_epochs,
        min_steps=min_steps,
        loop_until=loop_until,
        step_limit=max_steps != -1,
        stop_requests=stop_requests,
        holds_stop=holds,
        holds_for_epochs=holds and bool(min_epochs),
        holds_for_steps=holds and bool(min_steps),
        holds_for_both=holds and bool(min_epochs) and bool(min_steps),
        message_min_epochs=str(min_epochs) if min_epochs else "0",
        message_min_steps=str(min_steps) if min_steps else "None",
    )


def resolve_validation(
    spec: Spec, model: ClassFacts, hooks: Hooks, data: Data, bounds: Bounds, problems: list[Problem]
) -> Validation:
    t = spec.trainer
    given_fraction = "val_check_interval" in spec.trainer_given and isinstance(t.val_check_interval, float)
    if t.check_val_every_n_epoch is None and given_fraction:  # Lightning's _DataConnector
        message = "must be an integer (a number of batches) when check_val_every_n_epoch is null"
        problems.append(_flag_problem(spec, "val_check_interval", message))
    enabled = data.val_owner is not None
    interval, every = t.val_check_interval, t.check_val_every_n_epoch
    sanity_steps = t.num_sanity_val_steps
    if t.fast_dev_run:
        interval, every, sanity_steps = 1.0, 1, 0
    sanity = enabled and sanity_steps != 0
    batches = interval if isinstance(interval, int) else None
    fraction = float(interval) if batches is None else None
    validates_epoch_0 = every in (None, 1)
    output_used = (
        bool(hooks.callbacks_with("on_validation_batch_end"))
        or hooks.model_has("on_validation_batch_end")
        or hooks.model_has("validation_epoch_end")
        or model.returns_log_dicts
    )
    load_at_first_use = enabled and not sanity and not validates_epoch_0
    return Validation(
        enabled=enabled,
        owner=data.val_owner,
        sanity=sanity,
        sanity_all=sanity_steps == -1,
        sanity_steps=sanity_steps if sanity else 0,
        at_epoch_end=enabled and fraction == 1.0,
        interval_batches=batches if enabled else None,
        interval_fraction=fraction if enabled and fraction != 1.0 else None,
        computes_check_batch=enabled and fraction is not None and fraction != 1.0,
        across_epochs=enabled and every is None,
        checks_interval=enabled and batches is not None and every is not None,
        checks_interval_seed=_follows_1_9_5(spec, model),
        every_n_epochs=every if enabled else None,
        skips_epochs=enabled and every not in (None, 1),
        load_at_start=enabled and not sanity and validates_epoch_0,
        load_at_first_use=load_at_first_use,
        first_use_check=load_at_first_use and not data.reloads,
        loads_before_training=enabled and not sanity,
        reloads=enabled and data.reloads,
        reload_from_epoch_0=enabled and data.reloads and validates_epoch_0,
        on_stop_request=enabled and bounds.stop_requests,
        step_takes_batch_idx=_takes_two(model.methods.get("validation_step", ())),
        output_used=enabled and output_used,
        collects_outputs=enabled and hooks.model_has("validation_epoch_end"),
        # as measured against 1.9.5 by the fuzzer: with accumulation, one optimizer's gradients survived a
        # validation (tests/fuzz/finds/seed_accumulation_keeps_gradients_at_validation) while several optimizers'
        # did not; why is not settled
        clears_grads=enabled
        and _follows_1_9_5(spec, model)
        and (t.accumulate_grad_batches == 1 or "optimizer_idx" in model.methods.get("training_step", ())),
    )


def steps_at_last_batch(optimizers: Optimizers, notes_epoch_end: bool) -> bool:
    """Schedulers are stepped at the epoch's last batch (is_last_batch): the general helper's epoch-interval ones,
    the known epoch-interval ones, or the note that the epoch ran to its end."""
    return optimizers.general_schedulers or bool(optimizers.at_epoch_end) or notes_epoch_end


def resolve_optimization(
    spec: Spec,
    model: ClassFacts,
    hooks: Hooks,
    optimizers: Optimizers,
    bounds: Bounds,
    validation: Validation,
    problems: list[Problem],
) -> Optimization:
    t = spec.trainer
    step_params = model.methods.get("training_step", ())
    frequencies = _frequencies(spec, model, optimizers, problems)
    tbptt = t.truncated_bptt_steps
    if tbptt and "hiddens" not in step_params and "*args" not in step_params:
        message = f"truncated_bptt_steps is set, but {spec.model.name}.training_step has no `hiddens` parameter"
        problems.append(Problem("model.class_path", message, spec.model.line))
    schedule = t.accumulate_grad_batches if isinstance(t.accumulate_grad_batches, Mapping) else None
    accumulate = 1 if schedule is not None else t.accumulate_grad_batches
    accumulates = schedule is not None or accumulate > 1
    step_style = model.methods.get("optimizer_step")
    zero_grad_style = model.methods.get("optimizer_zero_grad")
    outputs_used = bool(hooks.callbacks_with("on_train_batch_end")) or hooks.model_has("on_train_batch_end")
    outputs_used = outputs_used or hooks.model_has("training_epoch_end")
    nested = (optimizers.several or bool(tbptt)) and outputs_used
    ends_early = bounds.stop_requests or bounds.step_limit or hooks.model_has("on_train_batch_start")
    notes_epoch_end = optimizers.completes_epoch and ends_early
    track = t.track_grad_norm if t.track_grad_norm != -1 else None
    clip_hook = model.defines("configure_gradient_clipping")
    if clip_hook and _follows_1_9_5(spec, model):
        message = "configure_gradient_clipping is supported with Lightning 2.x's loop only (no optimizer_idx)"
        problems.append(Problem("model.class_path", message, spec.model.line))
    before_hook = bool(hooks.callbacks_with("on_before_optimizer_step")) or hooks.model_has("on_before_optimizer_step")
    before_step = before_hook or track is not None or t.gradient_clip_val is not None or clip_hook
    return Optimization(
        accumulate=accumulate,
        schedule=schedule,
        accumulates=accumulates,
        scheduled=schedule is not None,
        window_end=accumulates or steps_at_last_batch(optimizers, notes_epoch_end) or validation.at_epoch_end,
        clip=t.gradient_clip_val is not None,
        clip_val=t.gradient_clip_val,
        clip_by_value=t.gradient_clip_algorithm == "value",
        closure=optimizers.lbfgs or step_style is not None,
        step_override=step_style is not None,
        step_override_seed=step_style is not None and "optimizer_idx" in step_style,
        zero_grad_override=zero_grad_style is not None,
        zero_grad_override_seed=zero_grad_style is not None and "optimizer_idx" in zero_grad_style,
        step_args_batch_idx=_takes_two(step_params),
        frequencies=frequencies,
        loops_optimizers=optimizers.several and frequencies is None,
        tbptt_steps=tbptt or None,
        tbptt=bool(tbptt),
        tbptt_split_hook=bool(tbptt) and model.defines("tbptt_split_batch"),
        track_grad_norm=track,
        track_grad_norm_inf=track == float("inf"),
        grad_norm_first_only=track is not None and optimizers.several,
        terminate_on_nan=t.terminate_on_nan,
        step_end=model.defines("training_step_end"),
        outputs_used=outputs_used,
        nested_outputs=nested,
        batch_outputs_for_hook=nested and outputs_used and not _only_epoch_end(hooks),
        epoch_outputs=model.defines("training_epoch_end"),
        nested_epoch_outputs=nested and model.defines("training_epoch_end"),
        skip_hiddens_key=bool(tbptt),
        total_batch_idx=validation.across_epochs or (frequencies is not None and optimizers.any_schedulers),
        schedulers_follow_active=frequencies is not None and optimizers.any_schedulers,
        notes_epoch_end=notes_epoch_end,
        last_batch_block=bool(optimizers.at_epoch_end) or notes_epoch_end,
        schedulers_after_batch=optimizers.general_schedulers
        or bool(optimizers.after_step)
        or bool(optimizers.at_epoch_end)
        or notes_epoch_end,
        clip_hook=clip_hook,
        clip_hook_algorithm=t.gradient_clip_algorithm if t.gradient_clip_val is not None else None,
        clips_at_step=t.gradient_clip_val is not None or clip_hook,
        before_step=before_step,
        gates_before_step=before_step and accumulates,
    )


def resolve_manual(spec: Spec, model: ClassFacts, hooks: Hooks, problems: list[Problem]) -> Manual:
    """Manual optimization: what the module calls, and the flags Lightning refuses with it (its reasons)."""
    where, line = "model.class_path", spec.model.line
    if model.manual_optimization is None:
        message = (
            f"{spec.model.class_path} sets automatic_optimization to a value loopgen cannot read from its source;"
            " assign a literal True or False"
        )
        problems.append(Problem(where, message, line))
        return Manual(enabled=False)
    reads = model.attributes_read
    if not model.manual_optimization:
        if "manual_backward" in reads and model.is_lightning_module:
            message = (
                f"{spec.model.class_path} calls self.manual_backward, which needs manual optimization: set"
                " `self.automatic_optimization = False` in __init__"
            )
            problems.append(Problem(where, message, line))
        # self.optimizers() / self.lr_schedulers() read in the automatic loop (e.g. a learning rate)
        return Manual(
            enabled=False,
            optimizers=model.is_lightning_module and "optimizers" in reads,
            lr_schedulers=model.is_lightning_module and "lr_schedulers" in reads,
        )
    t = spec.trainer
    if not model.is_lightning_module:
        message = f"{spec.model.class_path} turns automatic_optimization off but is not a LightningModule subclass"
        problems.append(Problem(where, message, line))
    if t.gradient_clip_val is not None and t.gradient_clip_val > 0:
        message = (
            "Automatic gradient clipping is not supported for manual optimization. Remove"
            f" `gradient_clip_val: {t.gradient_clip_val}` or switch to automatic optimization (clip in training_step"
            " with self.clip_gradients)"
        )
        problems.append(_flag_problem(spec, "gradient_clip_val", message))
    if t.accumulate_grad_batches != 1:
        message = (
            "Automatic gradient accumulation is not supported for manual optimization. Remove"
            f" `accumulate_grad_batches: {t.accumulate_grad_batches}` or switch to automatic optimization"
            " (accumulate in training_step)"
        )
        problems.append(_flag_problem(spec, "accumulate_grad_batches", message))
    if "optimizer_idx" in model.methods.get("training_step", ()):
        message = (
            "Training with multiple optimizers is only supported with manual optimization. Remove the"
            " `optimizer_idx` argument from `training_step` and access your optimizers in `training_step` with"
            " `opt1, opt2, ... = self.optimizers()`"
        )
        problems.append(Problem(where, message, line))
    if _follows_1_9_5(spec, model):
        message = (
            "manual optimization follows Lightning 2.x; this spec uses Lightning 1.9.5's automatic loop"
            " (truncated_bptt_steps, track_grad_norm, terminate_on_nan, amp_backend: apex or a *_epoch_end /"
            " training_step_end hook): remove those"
        )
        problems.append(Problem(where, message, line))
    if spec.loop.optimizer_frequencies is not None:
        problems.append(Problem("loop.optimizer_frequencies", "is not used with manual optimization: remove it"))
    outputs_used = bool(hooks.callbacks_with("on_train_batch_end")) or hooks.model_has("on_train_batch_end")
    return Manual(
        enabled=True,
        optimizers="optimizers" in reads,
        wraps="optimizers" in reads,
        lr_schedulers="lr_schedulers" in reads,
        backward="manual_backward" in reads,
        clip_gradients="clip_gradients" in reads,
        outputs_used=outputs_used,
    )


def with_estimate(spec: Spec, state: State, bounds: Bounds, optimization: Optimization) -> State:
    """trainer.estimated_stepping_batches, as Lightning estimates it: ceil(batches / accumulate) * max_epochs,
    at most max_steps (max_steps, or inf, without an epoch limit)."""
    if optimization.scheduled:
        message = refusal(
            "trainer.estimated_stepping_batches with an accumulation schedule",
            "Lightning 1.9.5 refuses it too: the number of steps per epoch changes with the schedule",
            "use a constant accumulate_grad_batches, or count the steps in configure_optimizers yourself",
        )
        raise LoopgenError(_flag_problem(spec, "accumulate_grad_batches", message))
    return replace(
        state,
        estimates=True,
        estimate_epochs=max(bounds.max_epochs, 1) if bounds.max_epochs != -1 else -1,
        estimate_accumulate=optimization.accumulate,
    )


def manual_under_strategy(spec: Spec, manual: Manual, distributed: Distributed, problems: list[Problem]) -> Manual:
    """Manual optimization under a strategy: DDP as Lightning's DDPStrategy runs it (the step through the wrapper,
    manual_backward preparing the all-reduce); the other strategies are refused."""
    where, line = "trainer.strategy", spec.line("trainer.strategy")
    if not distributed.ddp:
        message = refusal(
            f"manual optimization (self.automatic_optimization = False) with strategy {distributed.kind}",
            f"the {distributed.kind} script steps the optimizer itself after training_step; manual_backward and the"
            " steps inside training_step are not wired to it",
            "train it on one CPU or GPU, with strategy ddp, or with automatic optimization",
        )
        problems.append(Problem(where, message, line))
        return manual
    if distributed.static_graph:
        message = refusal(
            "DDPStrategy(static_graph=True) with manual optimization (self.automatic_optimization = False)",
            "Lightning then delays the first backward's all-reduce by hand, and the script does not",
            "remove static_graph",
        )
        problems.append(Problem(where, message, line))
    return replace(manual, ddp=True, ddp_finds_unused=distributed.find_unused_parameters)


def check_logger_experiments(model: ClassFacts, callbacks: tuple[ClassFacts, ...], logging: Logging) -> None:
    """A logger's `experiment` (read as `logger.experiment` / `loggers[i].experiment`): TensorBoard's SummaryWriter
    and MLflow's MlflowClient are the script's loggers' own; a CSVLogger's and a WandbLogger's are refused."""
    readers = [facts for facts in (model, *callbacks) if facts.experiment_read_at]
    unserved = {
        "csv": "CSVLogger, whose experiment (Lightning's _ExperimentWriter) the script does not provide",
        "wandb": "WandbLogger, whose experiment (the W&B run, which Lightning starts when first read) the script"
        " does not provide",
    }
    kinds = [kind for kind in ("csv", "wandb") if kind in logging.kinds]
    if readers and kinds:
        message = (
            f"reads a logger's `experiment`, but the spec has a {unserved[kinds[0]]}: log with self.log, or use"
            " TensorBoardLogger or MLFlowLogger"
        )
        raise LoopgenError([Problem(facts.experiment_read_at, message) for facts in readers])


def with_progress_bar_metrics(
    metrics: Metrics, model: ClassFacts, callbacks: tuple[ClassFacts, ...], progress: Progress
) -> Metrics:
    """The prog_bar=True values are kept where the bar shows them or trainer.progress_bar_metrics is read."""
    reads = any(_reads_trainer(facts, "progress_bar_metrics") for facts in (model, *callbacks))
    return replace(metrics, progress_bar=progress.metrics or (metrics.collect and reads))


def with_scheduler_configs(
    spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], state: State, optimizers: Optimizers
) -> State:
    """trainer.lr_scheduler_configs: Lightning's LRSchedulerConfig of each scheduler, from what configure_optimizers'
    source (or the spec's lr_scheduler, as LightningCLI returns it) shows; the general helper's at run time.

    Refused where the script cannot know a config as Lightning holds it (a trainer passed on without reading
    the attribute by name just does not get it)."""
    named = any(facts.trainer_reads is not None and "lr_scheduler_configs" in facts.trainer_reads
                for facts in (model, *callbacks))  # fmt: skip
    reason = ""
    if optimizers.several:
        reason = "with optimizer_idx (Lightning 1.9.5), whose configs hold opt_idx"
    elif optimizers.general:
        return replace(state, scheduler_configs=None)
    facts = model.optimizers
    named_in_source = facts is None or all(s.name_known for s in facts.schedulers)
    if not reason and spec.optimizer is None and not named_in_source:
        reason = 'configure_optimizers gives a scheduler a "name" its source does not show'
    if reason:
        if not named:
            return replace(state, attributes=state.attributes - {"lr_scheduler_configs"})
        at = {name: where for facts in (model, *callbacks) for name, where in facts.trainer_read_at.items()}
        message = f"reads trainer.lr_scheduler_configs, which the script cannot serve {reason}"
        raise LoopgenError([Problem(at.get("lr_scheduler_configs", ""), message)])
    manual = optimizers.manual
    configs = []
    for index, planned in enumerate(optimizers.schedulers):
        if spec.optimizer is not None:  # LightningCLI: {"scheduler": s, "monitor": m} for ReduceLROnPlateau
            entry = {"monitor": planned.monitor} if planned.plateau else None
            plateau, outer_monitor = planned.plateau, None
        else:
            source = facts.schedulers[index]
            entry = None if source.config is None else dict(source.config)
            if entry is not None and source.name is not None:
                entry["name"] = source.name
            plateau = source.cls == "ReduceLROnPlateau"
            outer_monitor = facts.monitor if facts.form == "dict" else None
        configs.append(_lightning_scheduler_config(planned.var, entry, plateau, outer_monitor, manual))
    return replace(state, scheduler_configs=tuple(configs))


def _lightning_scheduler_config(
    var: str, entry: Mapping[str, Any] | None, plateau: bool, outer_monitor: str | None, manual: bool
) -> SchedulerConfig:
    """Lightning's LRSchedulerConfig of a scheduler given bare (`entry` None) or in a dict (its other keys)."""
    given = dict(entry or {})
    if manual:  # Lightning ignores these keys in manual optimization
        given = {key: value for key, value in given.items() if key not in ("reduce_on_plateau", "monitor", "strict")}
    elif entry is not None:
        given.setdefault("reduce_on_plateau", plateau)
    elif plateau:
        given = {"reduce_on_plateau": True, "monitor": outer_monitor}
    return SchedulerConfig(
        var=var,
        name=given.get("name"),
        interval=given.get("interval", "epoch"),
        frequency=given.get("frequency", 1),
        reduce_on_plateau=bool(given.get("reduce_on_plateau", False)),
        monitor=given.get("monitor"),
        strict=given.get("strict", True),
    )


def clip_gradients_bound(model: ClassFacts, manual: Manual) -> Manual:
    """A configure_gradient_clipping override that calls self.clip_gradients gets the script's."""
    if model.defines("configure_gradient_clipping") and "clip_gradients" in model.attributes_read:
        return replace(manual, clip_gradients=True)
    return manual


def manual_optimization(
    optimization: Optimization, optimizers: Optimizers, validation: Validation, spec: Spec, problems: list[Problem]
) -> Optimization:
    """The automatic loop's optimization, switched off: no closure, no overrides, no scheduler steps."""
    if optimizers.general_schedulers:
        message = (
            "with manual optimization, configure_optimizers must return its schedulers in a form its source shows"
            " (e.g. `return [opt1, opt2], [sched1, sched2]`)"
        )
        problems.append(Problem("model.class_path", message, spec.model.line))
    return replace(
        optimization,
        window_end=validation.at_epoch_end,
        closure=False,
        step_override=False,
        step_override_seed=False,
        zero_grad_override=False,
        zero_grad_override_seed=False,
        outputs_used=False,
        notes_epoch_end=False,
        last_batch_block=False,
        schedulers_after_batch=False,
        clip_hook=False,  # Lightning clips nothing for a module that steps itself
        clips_at_step=False,
    )


LIGHTNING_VERSION = "2.6.6"  # the Lightning 2.x release the scripts' behaviour and checkpoint format follow
CHECKPOINT_DEFAULTS = {  # the arguments of the script's ModelCheckpoint, and their defaults
    "filename": None, "monitor": None, "mode": "min", "save_top_k": 1, "save_last": None,
    "save_weights_only": False, "every_n_epochs": 1, "every_n_train_steps": 0, "train_time_interval": None,
    "save_on_train_epoch_end": True, "auto_insert_metric_name": True, "enable_version_counter": True,
    "verbose": False,
}  # fmt: skip
EARLY_STOPPING_DEFAULTS = {
    "min_delta": 0.0, "patience": 3, "verbose": False, "mode": "min", "strict": True, "check_finite": True,
    "stopping_threshold": None, "divergence_threshold": None,
}  # fmt: skip


def resolve_checkpointing(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    hooks: Hooks,
    validation: Validation,
    optimization: Optimization,
    bounds: Bounds,
    problems: list[Problem],
) -> Checkpointing:
    """ModelCheckpoint (the default one when the spec has none and checkpointing is on), EarlyStopping, and
    what a checkpoint must hold to resume this script's loop exactly."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if _is_lightning(ref, "ModelCheckpoint")]
    if not t.enable_checkpointing and given:
        message = "is false, but the callbacks have a ModelCheckpoint (Lightning refuses this too)"
        problems.append(_flag_problem(spec, "enable_checkpointing", message))
    saves = bool(t.enable_checkpointing) and not t.fast_dev_run  # fast_dev_run saves nothing (Lightning)
    if saves and not given:
        given = [ClassRef("pytorch_lightning.callbacks.ModelCheckpoint", _callback_defaults("ModelCheckpoint"))]
    checkpoints = tuple(
        _model_checkpoint(ref, _numbered("model_checkpoint", i, len(given)), spec, validation, problems)
        for i, ref in enumerate(given if saves else [])
    )
    stoppers = [ref for ref in t.callbacks if _is_lightning(ref, "EarlyStopping")]
    early_stopping = tuple(
        _early_stopping(ref, _numbered("early_stopping", i, len(stoppers)), spec, validation, problems)
        for i, ref in enumerate(stoppers)
        if not t.fast_dev_run  # fast_dev_run never stops early (Lightning)
    )
    _check_unique_state_keys("ModelCheckpoint", given if saves else [], checkpoints, CHECKPOINT_DEFAULTS, problems)
    _check_unique_state_keys("EarlyStopping", stoppers, early_stopping, EARLY_STOPPING_DEFAULTS, problems)
    if not saves:  # one that never checks (no validation to follow) and is in no checkpoint does nothing at all
        early_stopping = tuple(cb for cb in early_stopping if cb.hooks)

    def every(key: str) -> list[Any]:
        return [cb.construct.args.get(key, CHECKPOINT_DEFAULTS[key]) for cb in checkpoints]

    step_triggered = any(n > 0 for n in every("every_n_train_steps"))
    time_triggered = any(interval is not None for interval in every("train_time_interval"))
    saves_last = any(every("save_last"))
    hooks_of_checkpoints = {"setup", "on_train_epoch_end"}
    for hook, used in (
        ("on_validation_end", validation.enabled),
        ("on_train_end", saves_last),
        ("on_train_start", time_triggered),
        ("on_train_batch_end", step_triggered or time_triggered),
    ):
        if used:
            hooks_of_checkpoints.add(hook)
    checkpoints = tuple(replace(cb, hooks=frozenset(hooks_of_checkpoints)) for cb in checkpoints)
    resumes = saves or spec.ckpt_path is not None
    resume_variables = [
        name
        for name, used in (
            ("total_batch_idx", optimization.total_batch_idx),
            ("train_loaded_epoch", spec.trainer.reload_dataloaders_every_n_epochs > 0),
            ("val_loaded_epoch", validation.reloads),
            ("accumulate", optimization.scheduled),
            ("epoch_outputs", optimization.epoch_outputs),
            ("epoch_complete", optimization.notes_epoch_end),
        )
        if used
    ]
    user = [cb for cb in hooks.callbacks if cb.kind == "user"]
    # with a logger, the default directory is the first logger's: save_dir/name/version/checkpoints, where the
    # version is version_N (CSV, TensorBoard) or the id of the run (MLflow, W&B)
    versioned = t.logger is not False and not t.fast_dev_run
    first = None if t.logger is True or not versioned else t.logger[0]
    numbered = versioned and (first is None or (first.name in NUMBERED_LOGGERS and first.init_args["version"] is None))
    in_run = first is not None and first.name not in NUMBERED_LOGGERS
    monitors = any(m is not None for m in every("monitor"))
    placeholders = any(_placeholders(f) - {"epoch", "step"} for f in every("filename"))
    return Checkpointing(
        saves=saves,
        resumes=resumes,
        weights_only=spec.weights_only is not False,
        resumes_validation=resumes and validation.enabled,
        checkpoints=checkpoints,
        early_stopping=early_stopping,
        default_dir=any(cb.dirpath is None for cb in checkpoints),
        versioned=versioned,
        default_dir_in_run=in_run and any(cb.dirpath is None for cb in checkpoints),
        default_dir_at_build=not in_run and any(cb.dirpath is None for cb in checkpoints),
        default_root_dir=t.default_root_dir,
        default_ckpt_path=spec.ckpt_path,
        lightning_version=LIGHTNING_VERSION,
        stateful_callbacks=(*early_stopping, *checkpoints, *(cb for cb in user if "state_dict" in cb.hooks)),
        save_hook_callbacks=tuple(cb for cb in user if "on_save_checkpoint" in cb.hooks),
        load_hook_callbacks=tuple(cb for cb in user if "on_load_checkpoint" in cb.hooks),
        hyperparameters=model.is_lightning_module and model.saves_hyperparameters,
        data_hyperparameters=data is not None and data.saves_hyperparameters,
        resume_variables=tuple(resume_variables),
        monitors=monitors,
        unmonitored=any(m is None for m in every("monitor")),
        verbose=any(every("verbose")),
        stopping={
            feature: any(predicate(cb.construct.args) for cb in early_stopping)
            for feature, predicate in (
                ("thresholds", lambda a: a.get("stopping_threshold") is not None),
                ("divergence", lambda a: a.get("divergence_threshold") is not None),
                ("check_finite", lambda a: a.get("check_finite", True)),
                ("lenient", lambda a: not a.get("strict", True)),
                ("verbose", lambda a: a.get("verbose", False)),
            )
        },
        step_triggered=step_triggered or time_triggered,
        time_triggered=time_triggered,
        defers=monitors and step_triggered and validation.enabled and not all(every("save_on_train_epoch_end")),
        saves_last=saves_last,
        links="link" in every("save_last"),
        reads_metrics=monitors or placeholders or bool(early_stopping),
        searches_versions=saves and numbered and any(cb.dirpath is None for cb in checkpoints),
        epoch_start_block=False,  # known once the state is (make_plan)
        stops_on_signals=saves,
        requeues=saves,
    )


def _model_checkpoint(ref: ClassRef, var: str, spec: Spec, validation: Validation, problems: list[Problem]) -> Callback:
    """Lightning's ModelCheckpoint.__init__ rules, its triggers resolved, and where it saves (_should_save_on_
    train_epoch_end, decided here from the flags)."""
    args = dict(ref.init_args)
    where, line = "trainer.callbacks (ModelCheckpoint)", ref.line
    steps, epochs, interval = args["every_n_train_steps"], args["every_n_epochs"], args["train_time_interval"]
    if steps is None and epochs is None and interval is None:
        steps, epochs = 0, 1
    else:
        steps, epochs = steps or 0, epochs or 0
    if (steps >= 1) + (epochs >= 1) + (interval is not None) > 1:
        message = "every_n_train_steps, every_n_epochs and train_time_interval are mutually exclusive"
        problems.append(Problem(where, message, line))
    if args["monitor"] is None and args["save_top_k"] not in (-1, 0, 1):
        message = f"save_top_k={args['save_top_k']} needs a monitor (no quantity to rank the checkpoints by)"
        problems.append(Problem(where, message, line))
    if args["filename"] is not None and not _valid_filename(args["filename"]):
        problems.append(Problem(where, f"filename {args['filename']!r} is not a valid name template", line))
    on_epoch_end = args["save_on_train_epoch_end"]
    if on_epoch_end is None:
        t = spec.trainer
        if t.check_val_every_n_epoch != 1:
            on_epoch_end = False
        elif not validation.enabled:
            on_epoch_end = True
        else:
            on_epoch_end = t.val_check_interval == 1.0
    resolved = {**args, "every_n_train_steps": steps, "every_n_epochs": epochs, "save_on_train_epoch_end": on_epoch_end}
    kwargs = {k: v for k, v in resolved.items() if k in CHECKPOINT_DEFAULTS and v != CHECKPOINT_DEFAULTS[k]}
    return Callback(
        construct=Construct("", "ModelCheckpoint", kwargs),
        var=var,
        hooks=frozenset(),  # set once every ModelCheckpoint is known: they share one class
        kind="checkpoint",
        monitoring=True,
        dirpath=args["dirpath"],
    )


# what Lightning's state_key of each stateful callback is made of (Callback._generate_state_key)
STATE_KEY_ARGS = {
    "ModelCheckpoint": ("monitor", "mode", "every_n_train_steps", "every_n_epochs", "train_time_interval"),
    "EarlyStopping": ("monitor", "mode"),
}


def _check_unique_state_keys(
    name: str, refs: list[ClassRef], built: tuple[Callback, ...], defaults: dict[str, Any], problems: list[Problem]
) -> None:
    """Two callbacks of one kind with the same state key: Lightning's Trainer refuses them before it trains
    (`_validate_callbacks_list`), with this message."""
    seen: set[tuple[str, ...]] = set()
    for ref, callback in zip(refs, built):
        key = tuple(repr(callback.construct.args.get(arg, defaults.get(arg))) for arg in STATE_KEY_ARGS[name])
        if key in seen:
            message = (
                f"Found more than one stateful callback of type `{name}`. In the current configuration, this callback"
                " does not support being saved alongside other instances of the same type. Please consult the"
                f" documentation of `{name}` regarding valid settings for the callback state to be checkpointable."
                " HINT: The `callback.state_key` must be unique among all callbacks in the Trainer."
            )
            problems.append(Problem(f"trainer.callbacks ({name})", message, ref.line))
            return
        seen.add(key)


def _early_stopping_checks(ref: ClassRef, spec: Spec, validates: bool) -> bool:
    """Whether an EarlyStopping ever checks: at each training epoch's end, or after each validation (Lightning's
    never checks when neither happens)."""
    return _early_stopping_on_epoch_end(ref, spec) or validates


def _early_stopping_on_epoch_end(ref: ClassRef, spec: Spec) -> bool:
    """check_on_train_epoch_end, resolved as Lightning's EarlyStopping.setup does."""
    on_epoch_end = ref.init_args["check_on_train_epoch_end"]
    if on_epoch_end is None:
        t = spec.trainer
        on_epoch_end = t.val_check_interval == 1.0 and t.check_val_every_n_epoch == 1
    return bool(on_epoch_end)


def _early_stopping(ref: ClassRef, var: str, spec: Spec, validation: Validation, problems: list[Problem]) -> Callback:
    args = dict(ref.init_args)
    if args["monitor"] is None:
        problems.append(Problem("trainer.callbacks (EarlyStopping)", "EarlyStopping needs `monitor`", ref.line))
    args.pop("check_on_train_epoch_end")
    on_epoch_end = _early_stopping_on_epoch_end(ref, spec)
    # the one hook where it checks: without validation and not at the epoch's end, Lightning's never checks
    hooks = {"on_train_epoch_end"} if on_epoch_end else {"on_validation_end"} if validation.enabled else set()
    monitor = args.pop("monitor")
    kwargs = {k: v for k, v in args.items() if k in EARLY_STOPPING_DEFAULTS and v != EARLY_STOPPING_DEFAULTS[k]}
    return Callback(
        construct=Construct("", "EarlyStopping", {"monitor": monitor, **kwargs}),
        var=var,
        hooks=frozenset(hooks),
        kind="early_stopping",
        monitoring=True,
    )


def _is_lightning(ref: ClassRef, name: str) -> bool:
    return ref.name == name and ref.module.startswith("pytorch_lightning")


def _numbered(name: str, index: int, count: int) -> str:
    return f"{name}_{index}" if count > 1 else name


def _callback_defaults(name: str) -> dict[str, Any]:
    from loopgen.flags import CALLBACK_ARGS

    return {arg.name: arg.default for arg in CALLBACK_ARGS[name]}


def _placeholders(filename: str | None) -> set[str]:
    """The names in a ModelCheckpoint filename template ("{epoch}-{val_loss:.2f}": epoch, val_loss)."""
    import re

    return {group[1:] for group in re.findall(r"(\{.*?)[:\}]", filename or "")}


def _valid_filename(filename: str) -> bool:
    """Whether ModelCheckpoint can format the template (Lightning's _format_checkpoint_name, with zeros: the
    epoch and step are integers there, the metrics floats)."""
    name = filename
    for group in sorted(_placeholders(filename), key=len, reverse=True):
        name = name.replace("{" + group, "{0[" + group + "]")
    try:
        name.format({key: 0 if key in ("epoch", "step") else 0.0 for key in _placeholders(filename)})
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    return True


NUMBERED_LOGGERS = ("CSVLogger", "TensorBoardLogger")  # their runs are directories version_N
LOGGER_KINDS = {"CSVLogger": "csv", "TensorBoardLogger": "tensorboard", "MLFlowLogger": "mlflow",
                "WandbLogger": "wandb"}  # fmt: skip
# The arguments of the script's logger classes, and their defaults (the spec's other arguments are refused
# unless at Lightning's default: loopgen/flags.py, LOGGER_ARGS)
SCRIPT_LOGGER_ARGS = {
    "CSVLogger": {"name": "lightning_logs", "version": None, "prefix": ""},
    "TensorBoardLogger": {"name": "lightning_logs", "version": None, "prefix": "", "default_hp_metric": True,
                          "log_graph": False},
    "MLFlowLogger": {"experiment_name": "lightning_logs", "run_name": None, "tracking_uri": None, "tags": None,
                     "save_dir": "./mlruns", "prefix": ""},
    "WandbLogger": {"name": None, "save_dir": ".", "offline": False, "project": None, "prefix": ""},
}  # fmt: skip


def resolve_logging(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts, ...],
    validation: Validation,
    optimizers: Optimizers,
    optimization: Optimization,
    problems: list[Problem],
    notices: list[str],
) -> Logging:
    """`logger`: Lightning's default (a CSVLogger in default_root_dir, where Lightning would pick TensorBoard when
    it is installed: the script must not depend on what is installed), none, or the spec's loggers. fast_dev_run
    logs nothing (Lightning swaps the loggers for a dummy)."""
    t = spec.trainer
    default = t.logger is True
    if t.fast_dev_run or t.logger is False:
        refs: tuple[ClassRef, ...] = ()
    elif default:
        refs = (ClassRef("pytorch_lightning.loggers.CSVLogger", {"save_dir": None, "name": "lightning_logs",
                                                                 "version": None, "prefix": ""}),)  # fmt: skip
        notices.append(
            "logger: Lightning's default logger is TensorBoard when it is installed, else CSV; the script logs to"
            " CSV (lightning_logs/version_N/metrics.csv). For TensorBoard, name it: `logger: {class_path:"
            " TensorBoardLogger, init_args: {save_dir: .}}`"
        )
    else:
        refs = t.logger
    loggers = tuple(_logger_plan(ref) for ref in refs)
    model_logs = model.uses_log or any(facts.module_reads & {"log", "log_dict"} for facts in callbacks)
    values = bool(loggers) and (model_logs or model.returns_log_dicts or optimization.track_grad_norm is not None)
    hparams_model = bool(loggers) and model.is_lightning_module and model.saves_hyperparameters
    hparams_data = bool(loggers) and data is not None and data.saves_hyperparameters
    for facts, used, where in ((model, hparams_model, "model"), (data, hparams_data, "data")):
        if used and facts is not None and facts.hyperparameters_to_loggers is None:
            problems.append(
                Problem(
                    f"{where}.class_path",
                    f"{facts.class_path} calls save_hyperparameters(logger=...) with a value loopgen cannot read:"
                    " write logger=True or logger=False",
                    spec.model.line if where == "model" else spec.data.line if spec.data else None,
                )
            )
    lr_monitor = _lr_monitor(spec, model, optimizers, bool(loggers), problems)
    hparams_model = hparams_model and model.hyperparameters_to_loggers is not False
    hparams_data = hparams_data and data is not None and data.hyperparameters_to_loggers is not False
    graphs = any(ref.init_args.get("log_graph") for ref in refs)
    if graphs and "example_input_array" not in model.attributes_read | model.class_attributes | set(model.methods):
        problems.append(
            Problem(
                "model.class_path",
                f"TensorBoardLogger(log_graph=True) traces the model's example_input_array, which"
                f" {spec.model.class_path} never sets (Lightning would log no graph, with a warning): set"
                " self.example_input_array, or log_graph: false",
                spec.model.line,
            )
        )
    hp_metric = (hparams_model or hparams_data) and any(ref.init_args.get("default_hp_metric") for ref in refs)
    if not hp_metric:  # the argument makes no difference then: the script's class does without it
        loggers = tuple(replace(p, args={k: v for k, v in p.args.items() if k != "default_hp_metric"}) for p in loggers)
    return Logging(
        loggers=loggers,
        default=default and bool(loggers),
        steps=values and t.log_every_n_steps > 0,
        every_n_steps=t.log_every_n_steps,
        values=values,
        val_steps=values and validation.enabled,
        hparams_model=hparams_model,
        hparams_data=hparams_data,
        kinds=frozenset(logger.kind for logger in loggers),
        prefixed=any(logger.args.get("prefix") for logger in loggers),
        hp_metric=hp_metric,
        graphs=graphs,
        traces_lightning_module=graphs and model.is_lightning_module,
        finishes=any(logger.kind != "csv" for logger in loggers),
        lr_monitor=lr_monitor,
        counts_steps=values or lr_monitor is not None,
        every_n_steps_used=(values or lr_monitor is not None and lr_monitor.at_batch_start is not None)
        and t.log_every_n_steps > 0,
    )


def _lr_monitor(
    spec: Spec, model: ClassFacts, optimizers: Optimizers, logs: bool, problems: list[Problem]
) -> LrMonitor | None:
    """The spec's LearningRateMonitor (one at most), at the hooks where Lightning's logs: on_train_batch_start
    when the loggers are due (never with log_every_n_steps 0), on_train_epoch_start."""
    refs = [ref for ref in spec.trainer.callbacks if _is_lightning(ref, "LearningRateMonitor")]
    if not refs:
        return None
    where = "trainer.callbacks (LearningRateMonitor)"
    if len(refs) > 1:
        message = refusal(
            "more than one LearningRateMonitor callback",
            "the script logs one set of learning rates at each logging point",
            "keep one",
        )
        problems.append(Problem(where, message, refs[1].line))
    if not logs and not spec.trainer.fast_dev_run:
        message = "Cannot use `LearningRateMonitor` callback with `Trainer` that has no logger (Lightning)"
        problems.append(Problem(where, message, refs[0].line))
    source = model.optimizers if model.optimizers is not None and spec.optimizer is None else None
    if source is not None and not all(facts.name_known for facts in source.schedulers):
        message = 'configure_optimizers gives an lr_scheduler a "name" loopgen cannot read: write it as a string'
        problems.append(Problem(where, message, refs[0].line))
    args = refs[0].init_args
    interval = args["logging_interval"]
    hooks = {"on_train_start"} if args["log_momentum"] else set()
    # logging_interval null: each scheduler at its own interval; "step" / "epoch": all of them, at that one only
    at_batch = "step" if interval is None else "any" if interval == "step" else None
    at_epoch = "epoch" if interval is None else "any" if interval == "epoch" else None
    if spec.trainer.log_every_n_steps == 0:
        at_batch = None
    hooks |= {"on_train_batch_start"} if at_batch else set()
    hooks |= {"on_train_epoch_start"} if at_epoch else set()
    callback = Callback(
        construct=Construct("", "LearningRateMonitor", {}), var="lr_monitor", hooks=frozenset(hooks), kind="lr_monitor"
    )
    return LrMonitor(
        callback=callback,
        at_batch_start=at_batch,
        at_epoch_start=at_epoch,
        momentum=args["log_momentum"],
        weight_decay=args["log_weight_decay"],
        schedulers=optimizers.schedulers,
    )


def _logger_plan(ref: ClassRef) -> LoggerPlan:
    """A logger entry as the script's class takes it: the arguments the script's class has, where not at its
    defaults (the others are at Lightning's defaults: the spec stage refuses anything else)."""
    args = ref.init_args
    kind = LOGGER_KINDS[ref.name]
    defaults = SCRIPT_LOGGER_ARGS[ref.name]
    given = {name: args[name] for name in defaults if not same(args[name], defaults[name])}
    if "name" in given and kind in ("csv", "tensorboard"):
        given["name"] = args["name"] or ""  # null or empty: no experiment directory
    return LoggerPlan(
        kind=kind,
        cls=ref.name,
        save_dir=args["save_dir"] if kind in ("csv", "tensorboard") else None,
        args=given,
        numbered=ref.name in NUMBERED_LOGGERS and args["version"] is None,
    )


# Lightning's ModelSummary: the bits per parameter of its size estimate, by the trainer's precision
SUMMARY_PRECISION_BITS = {"32": 32, "64": 64, "bf16-true": 16, "16-true": 16}


def resolve_summary(
    spec: Spec, model: ClassFacts, hooks: Hooks, device: Device, precision: Precision
) -> tuple[Summary, tuple[Callback, ...]]:
    """The ModelSummary callbacks: the spec's entries, else the default one when enable_model_summary is true
    (Lightning's callback connector; Lightning picks RichModelSummary when rich is installed, the script the
    plain table: it does not depend on what is installed)."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if _is_lightning(ref, "ModelSummary")]
    depths = [ref.init_args["max_depth"] for ref in given] or ([1] if t.enable_model_summary else [])
    summaries = tuple(
        Callback(
            construct=Construct("", "ModelSummary", {"max_depth": depth}),
            var=_numbered("model_summary", i, len(depths)),
            hooks=frozenset({"on_fit_start"}) if depth else frozenset(),  # max_depth 0 prints nothing
            kind="summary",
        )
        for i, depth in enumerate(depths)
    )
    bits = SUMMARY_PRECISION_BITS.get(precision.name)
    printing = [depth for depth in depths if depth]
    example_input = bool(printing) and (
        "example_input_array" in model.attributes_read or model.defines("example_input_array")
    )
    # the example's forward pass moves the batch as a training batch moves (data.j2's transfer: the model's
    # transfer_batch_to_device, else to the device unless DataParallel scatters it), and autocasts to the type of
    # the device chosen when the script starts
    scatters = strategy_args(spec.trainer.strategy)[0] == "dp"
    moves_batch = hooks.model_has("transfer_batch_to_device") or (device.moves and not scatters)
    summary = Summary(
        enabled=bool(printing),
        children=1 in printing,
        children_only=bool(printing) and set(printing) == {1},
        takes_depth=set(printing) != {1} or example_input,
        example_input=example_input,
        takes_device=example_input and (moves_batch or (precision.autocast and device.auto)),
        precision_bits=bits or 32,
        unsupported_precision=None if bits else precision.name,
    )
    return summary, summaries


def _profiler_file_name(
    filename: str | None, action: str | None = None, extension: str = ".txt", ranked: bool = False
) -> str:
    """Lightning's Profiler._prepare_filename for the fit stage on one device; `ranked` (several processes): with
    the local rank after the filename: the text of an f-string, its braces doubled, NUL where the rank goes."""
    import re

    base = "-".join(part for part in ("fit", filename, "\0" if ranked else None, action) if part)
    base = re.sub(r"_+", "_", re.sub(r"[\\/:*?\"<>|\n\r\t]", "_", base)).strip()
    if ranked:
        return base.replace("{", "{{").replace("}", "}}") + extension
    return (base or "profile") + extension


def _ranked_prefix(filename: str | None) -> str:
    """The start of an AdvancedProfiler's .prof file names with several processes, as an f-string's text."""
    escaped = (filename or "").replace("{", "{{").replace("}", "}}")
    return f"fit-{escaped}-\0-" if filename else "fit-\0-"


def resolve_profiling(spec: Spec, logging: Logging, problems: list[Problem], notices: list[str]) -> Profiling:
    """`profiler`: which profiler, and where its report (and the PyTorch profiler's trace) go: its dirpath, else
    Lightning's trainer.log_dir (the first logger's directory, else default_root_dir; none under fast_dev_run
    with a logger, whose dummy logger has no directory)."""
    t = spec.trainer
    ref: ClassRef | None = t.profiler
    args = dict(ref.init_args) if ref is not None else {}
    kind = {"SimpleProfiler": "simple", "AdvancedProfiler": "advanced", "PyTorchProfiler": "pytorch"}.get(
        ref.name if ref is not None else ""
    )
    dirpath, filename = args.get("dirpath") or None, args.get("filename") or None
    if dirpath is not None:
        directory: str | None = "spec"
    elif t.fast_dev_run and t.logger is not False:
        directory = None
    else:
        # Lightning's trainer.log_dir: a CSV or TensorBoard logger's log_dir, another logger's save_dir
        first = logging.loggers[0].kind if logging.loggers else None
        directory = "root" if first is None else "logger" if first in ("csv", "tensorboard") else "logger_save_dir"
    ddp = strategy_args(t.strategy)[0] == "ddp" and t.accelerator != "tpu" and kind is not None
    strategy_class = "DDPStrategy" if ddp else "SingleDeviceStrategy"
    trace = kind == "pytorch" and args["export_to_chrome"]
    if trace and directory is None:
        trace = False
        notices.append(
            "trainer.profiler: under fast_dev_run Lightning's dummy logger has no directory, so the PyTorch"
            " profiler writes no trace (set its dirpath for one)"
        )
    if kind == "advanced" and args["dump_stats"] and directory is None:
        problems.append(_flag_problem(spec, "profiler", "dump_stats needs a dirpath under fast_dev_run with a logger"))
    defaults = {"record_shapes": False, "profile_memory": False, "with_stack": False, "with_flops": False,
                "with_modules": False}  # fmt: skip
    return Profiling(
        kind=kind,
        model_class=spec.model.name,
        data_class=spec.data.name if spec.data else None,
        directory=directory if kind is not None else None,
        dirpath=dirpath,
        report_file=_profiler_file_name(filename, ranked=ddp) if filename and directory is not None else None,
        extended=args.get("extended", True),
        line_count_restriction=args.get("line_count_restriction", 1.0),
        dump_stats=args.get("dump_stats", False),
        trace=trace,
        trace_name=_profiler_file_name(filename, f"[Strategy]{strategy_class}.training_step", "", ddp),
        stats_prefix=(f"fit-{filename}-" if filename else "fit-") if not ddp else _ranked_prefix(filename),
        row_limit=args.get("row_limit", 20),
        sort_by_key=args.get("sort_by_key"),
        group_by_input_shapes=args.get("group_by_input_shapes", False) and args.get("record_shapes", False),
        record_module_names=args.get("record_module_names", True),
        profile_args={key: args[key] for key in defaults if key in args and args[key] != defaults[key]},
        strategy_class=strategy_class,
        ranked=ddp,
    )


PLAIN_LINE_EVERY = 50  # the script's own bar, when the output is not a terminal: a line every n batches


def resolve_progress(
    spec: Spec,
    model: ClassFacts,
    callbacks: tuple[ClassFacts, ...],
    bounds: Bounds,
    validation: Validation,
    logging: Logging,
    problems: list[Problem],
    notices: list[str],
) -> Progress:
    """The progress bar, by Lightning's _configure_progress_bar rules: the spec's TQDMProgressBar or
    RichProgressBar (one at most, refused with `enable_progress_bar: false`), else with enable_progress_bar
    Lightning's default TQDMProgressBar, which the script draws itself. A refresh rate of 0 shows nothing."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if _is_progress_bar(ref)]
    if len(given) > 1:
        message = f"{given[1].name}: a second progress bar (Lightning supports one)"
        problems.append(Problem("trainer.callbacks", message, given[1].line))
    if given and not t.enable_progress_bar:
        message = f"is false, but the callbacks have a {given[0].name} (Lightning refuses this too)"
        problems.append(_flag_problem(spec, "enable_progress_bar", message))
    if given and spec.progress_bar_refresh_rate is not None:
        message = f"and a {given[0].name} in the callbacks: give the refresh rate to the {given[0].name}"
        problems.append(_flag_problem(spec, "progress_bar_refresh_rate", message))
    if given:
        args = given[0].init_args
        kind: str | None = "tqdm" if given[0].name == "TQDMProgressBar" else "rich"
        rate, leave, position = args["refresh_rate"], args["leave"], args.get("process_position", 0)
    else:
        kind = "own" if t.enable_progress_bar else None
        rate, leave, position = spec.progress_bar_refresh_rate or 1, False, 0
    if rate == 0:
        kind = None
    if kind == "own":
        notices.append(
            "enable_progress_bar: Lightning's default bar is RichProgressBar when rich is installed, else"
            " TQDMProgressBar; the script draws TQDMProgressBar's, without tqdm. For rich's, name it:"
            " `callbacks: [RichProgressBar]`"
        )
    loggers = logging.loggers
    version = kind is not None and bool(loggers)
    return Progress(
        kind=kind,
        refresh_rate=rate,
        line_every=spec.progress_bar_refresh_rate or PLAIN_LINE_EVERY,
        leave=leave,
        process_position=position,
        version=version,
        joined_version=version and len(loggers) > 1,
        # Lightning shows a version that is a string (a name, a run id) by its last 4 characters
        text_version=version
        and (
            len(loggers) > 1
            or loggers[0].kind in ("mlflow", "wandb")
            or isinstance(loggers[0].args.get("version"), str)
        ),
        metrics=kind is not None and any(facts.logs_to_progress_bar for facts in (model, *callbacks)),
        steps_total=kind is not None and bounds.max_epochs == -1 and bounds.max_steps > 0,
        validation=kind is not None and validation.enabled,
        sanity=kind is not None and validation.sanity,
        last_epoch=bounds.max_epochs - 1,
    )


def _progress_callback(progress: Progress) -> Callback | None:
    """The progress bar as a callback of the script (called among the callbacks, where Lightning calls it)."""
    if progress.kind is None:
        return None
    hooks = {"on_train_start", "on_train_epoch_start", "on_train_batch_end"}
    hooks.add("teardown" if progress.kind == "rich" else "on_train_end")  # rich's display stops at teardown
    if progress.own or progress.postfix or (progress.kind == "tqdm" and progress.leave):
        hooks.add("on_train_epoch_end")
    if progress.sanity:
        hooks |= {"on_sanity_check_start", "on_sanity_check_end"}
    if progress.validation:
        hooks |= {"on_validation_start", "on_validation_batch_end", "on_validation_end"}
    cls = {"own": "ProgressBar", "tqdm": "TQDMProgressBar", "rich": "RichProgressBar"}[progress.kind]
    return Callback(construct=Construct("", cls), var="progress_bar", hooks=frozenset(hooks), kind="progress")


def _is_progress_bar(ref: ClassRef) -> bool:
    return any(_is_lightning(ref, name) for name in PROGRESS_BARS)


def resolve_metrics(
    model: ClassFacts,
    callbacks: tuple[ClassFacts, ...],
    hooks: Hooks,
    optimizers: Optimizers,
    optimization: Optimization,
    checkpointing: Checkpointing,
    logging: Logging,
    progress: Progress,
) -> Metrics:
    """self.log needs a collector only when something reads what is logged (a plateau scheduler, EarlyStopping,
    a ModelCheckpoint ranking or naming files by a metric, the model or a callback through
    trainer.callback_metrics / logged_metrics, the progress bar showing prog_bar values); the gradient norms of
    track_grad_norm and the seed's dict returns are logged values too."""
    readers = any(_reads_trainer(facts, *METRIC_ATTRIBUTES) for facts in (model, *callbacks))
    collect = (
        readers
        or optimizers.plateau
        or optimization.track_grad_norm is not None
        or checkpointing.reads_metrics
        or logging.values
        or progress.metrics
    )
    model_logs = model.uses_log or any(facts.module_reads & {"log", "log_dict"} for facts in callbacks)
    log_dicts = collect and model.returns_log_dicts
    return Metrics(
        collect=collect,
        model_logs=model_logs,
        discards=model_logs and not collect,
        log_dicts=log_dicts,
        epoch_end_returns=log_dicts and optimization.epoch_outputs and not optimization.nested_outputs,
        first_batch_resets=collect
        and (model_logs or log_dicts)
        and optimization.loops_optimizers
        and optimization.grad_norm_first_only,
        publishes_before_batch_end=collect
        and (bool(hooks.callbacks_with("on_train_batch_end")) or hooks.model_has("on_train_batch_end")),
    )


def resolve_state(
    spec: Spec,
    model: ClassFacts,
    callbacks: tuple[ClassFacts, ...],
    metrics: Metrics,
    checkpointing: Checkpointing,
) -> State:
    """The `trainer` object: the attributes the model and the callbacks read, each one true."""
    reads: set[str] = set()
    if checkpointing.checkpoints:  # what the script's ModelCheckpoint reads
        reads |= {"current_epoch", "global_step", "sanity_checking", "ckpt_path"}
        reads |= {"num_training_batches"} if checkpointing.defers else set()
        reads |= {"callback_metrics"} if checkpointing.reads_metrics else set()
    if checkpointing.early_stopping:  # ... and its EarlyStopping
        reads |= {"current_epoch", "sanity_checking", "should_stop", "callback_metrics"}
    if model.manual_optimization:  # the wrapped optimizers count global_step; toggle_optimizer reads optimizers
        reads |= {"global_step", "current_epoch"}  # the loop's counters live on the trainer then
        reads |= {"optimizers"} if model.attributes_read & {"toggle_optimizer", "untoggle_optimizer"} else set()
    everything = False
    for facts in (model, *callbacks):
        if facts.trainer_reads is None:
            everything = True
        else:
            reads |= facts.trainer_reads
    counters = {"current_epoch", "global_step"}
    module_counters = model.attributes_read | {r for facts in callbacks for r in facts.module_reads}
    module_loggers = module_counters & {"logger", "loggers"}
    # Lightning's toggle_optimizer reads self.trainer.optimizers
    toggles = model.manual_optimization and bool(model.attributes_read & {"toggle_optimizer", "untoggle_optimizer"})
    if model.is_lightning_module:
        reads |= module_counters & counters  # a LightningModule's counters are read through its trainer
        reads |= module_loggers  # ... and its self.logger, self.loggers
    unknown = sorted(reads - set(TRAINER_ATTRIBUTES) - {"_trainer"})
    if unknown:
        supported = ", ".join(TRAINER_ATTRIBUTES)
        where = {name: at for facts in (model, *callbacks) for name, at in facts.trainer_read_at.items()}
        raise LoopgenError(
            [
                Problem(
                    where.get(name, ""),
                    f"reads trainer.{name}, which the script's trainer does not provide: compute it in your code"
                    f" or remove the read (the script's trainer provides {supported})",
                )
                for name in unknown
            ]
        )
    dummy_logger = bool(spec.trainer.fast_dev_run) and spec.trainer.logger is not False
    if dummy_logger and reads & LOGGER_ATTRIBUTES:
        where = {name: at for facts in (model, *callbacks) for name, at in facts.trainer_read_at.items()}
        raise LoopgenError(
            [
                Problem(
                    where.get(name, ""),
                    f"reads trainer.{name}: under fast_dev_run Lightning's loggers are a DummyLogger, which the"
                    " script does not provide: set logger: false, or remove fast_dev_run",
                )
                for name in sorted(reads & LOGGER_ATTRIBUTES)
            ]
        )
    # a trainer passed on gets everything but the estimate (which would move the training data's loading)
    attributes = frozenset(TRAINER_ATTRIBUTES) - {"estimated_stepping_batches"} if everything else frozenset(reads)
    if dummy_logger:
        attributes -= LOGGER_ATTRIBUTES
    if not metrics.collect:
        attributes -= METRIC_ATTRIBUTES
    if attributes & counters:  # the loop counts on the trainer: both counters live there
        attributes |= counters
    exists = bool(attributes) or bool(callbacks) or bool(checkpointing.checkpoints)  # the user's callbacks get it
    module_reads_trainer = (model.trainer_reads or set()) != set() or model.trainer_reads is None
    plain_counters = set() if model.is_lightning_module else module_counters & counters
    return State(
        exists=exists,
        attributes=attributes,
        counters=bool(attributes & counters),
        attach_private=model.is_lightning_module
        and (module_reads_trainer or bool(module_counters & counters) or bool(module_loggers) or toggles),
        attach_public=not model.is_lightning_module and module_reads_trainer,
        mirror_epoch="current_epoch" in plain_counters,
        mirror_step="global_step" in plain_counters,
    )


def resolve_build(spec: Spec, callbacks: tuple[Callback, ...]) -> Build:
    model = _construct(spec.model)
    data = _construct(spec.data) if spec.data else None
    by_module: dict[str, list[str]] = {}
    for c in (model, data, *(cb.construct for cb in callbacks if cb.kind != "summary")):
        if c is None or c.from_torch or not c.module:  # torch's, or the script's own class
            continue
        if c.cls not in by_module.setdefault(c.module, []):
            by_module[c.module].append(c.cls)
    seed = spec.seed_everything if not isinstance(spec.seed_everything, bool) else None
    t = spec.trainer
    return Build(
        model=model,
        data=data,
        callbacks=tuple(cb for cb in callbacks if cb.kind != "summary"),  # the script's function prints a summary
        imports=tuple(Import(module, tuple(sorted(names))) for module, names in sorted(by_module.items())),
        seed=seed,
        seed_at_run_time=spec.seed_everything is True,
        seeds=seed is not None or spec.seed_everything is True,
        deterministic=t.deterministic is True,
        benchmark=t.benchmark,
        sets_benchmark=t.benchmark is not None,
    )


def resolve_distributed(
    spec: Spec,
    script_name: str,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    data: Data,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    problems: list[Problem],
) -> Distributed:
    """strategy, devices, num_nodes: DDP under torchrun (Lightning's DDPStrategy), or one process on one device.

    What DDP cannot serve yet is refused here, each with its reason."""
    t = spec.trainer
    strategy, args = strategy_args(t.strategy)
    devices, num_nodes = t.devices, t.num_nodes
    if spec.trainer.accelerator == "tpu":
        return resolve_xla(spec, script_name, precision, optimizers, optimization, data, checkpointing, logging,
                           profiling, progress, problems)  # fmt: skip
    if strategy == "horovod":
        return resolve_horovod(spec, script_name, precision, optimizers, optimization, data, checkpointing, logging,
                               profiling, progress, problems)  # fmt: skip
    if strategy != "ddp":
        for flag, value in (("devices", devices), ("num_nodes", num_nodes)):
            if value != 1:
                message = f"{flag}: {value} needs `strategy: ddp` (one process per device, launched with torchrun)"
                problems.append(_flag_problem(spec, flag, message))
        return Distributed()

    refuse = _refuser(spec, problems, "with strategy ddp")
    if precision.name not in ("32", "bf16-mixed", "bf16-true", "16-true"):
        why = DDP_PRECISIONS_NOT_WRITTEN.get(
            precision.name, "the DDP script is written for 32, bf16-mixed, bf16-true and 16-true only"
        )
        refuse(
            "precision",
            f"precision {precision.name}",
            why,
            f"use bf16-mixed, bf16-true or 32 with ddp, or {precision.name} on one device (strategy auto)",
        )
    if spec.seed_everything is True:
        message = "seed_everything: true with strategy ddp: each process would choose its own seed; give a number"
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    elif spec.seed_everything is False:
        message = refusal(
            "seed_everything: false with strategy ddp",
            "the DDP script seeds its processes again where DDPStrategy does, from the spec's seed; Lightning's"
            " unseeded processes are not reproduced",
            "give a number",
        )
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    if optimizers.several:
        refuse(
            "strategy",
            "several optimizers (training_step with optimizer_idx, Lightning 1.9)",
            "Lightning 1.9 steps each optimizer with the others' parameters frozen, which DistributedDataParallel's"
            " gradient reduction does not expect; the script writes that loop for one CPU or GPU only",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    backend = args.get("process_group_backend")
    if backend is None and spec.trainer.accelerator != "auto":
        backend = "nccl" if spec.trainer.accelerator == "cuda" else "gloo"
    if backend == "nccl" and spec.trainer.accelerator == "cpu":
        problems.append(_flag_problem(spec, "strategy", "process_group_backend: nccl needs CUDA (accelerator: cpu)"))
    world_size = devices * num_nodes
    nodes, per_node = (num_nodes, devices) if num_nodes > 1 else (world_size, 1)
    launch = f"torchrun --nproc_per_node={devices} {script_name}"
    launch_nodes = (
        f"torchrun --nnodes={nodes} --nproc_per_node={per_node} --node_rank=NODE_RANK"
        f" --master_addr=NODE0_ADDRESS --master_port=29500 {script_name}"
    )
    return Distributed(
        kind="ddp",
        devices=devices,
        num_nodes=num_nodes,
        world_size=world_size,
        ranks_from="torchrun",
        backend=backend,
        timeout=args.get("timeout"),
        find_unused_parameters=bool(args.get("find_unused_parameters", False)),
        static_graph=bool(args.get("static_graph", False)),
        gradient_as_bucket_view=bool(args.get("gradient_as_bucket_view", False)),
        rank_zero_gates=True,
        replaces_samplers=True,
        no_sync=optimization.accumulates,
        reduces_decisions=bool(checkpointing.early_stopping),
        broadcasts=checkpointing.saves or logging.versions,
        saves_on_rank_zero=checkpointing.saves,
        logs_on_rank_zero=logging.enabled,
        silent_bar=progress.enabled,
        reseeds=isinstance(spec.seed_everything, int) and not isinstance(spec.seed_everything, bool),
        launch=launch if num_nodes == 1 else launch_nodes,
        launch_nodes=launch_nodes,
    )


def _refuser(spec: Spec, problems: list[Problem], under: str) -> Callable[[str, str, str, str], None]:
    """An engine's `refuse(flag, what, why, instead)`: the problem "<what> <under> is not supported by loopgen
    (<why>); <instead>" at the flag's key."""

    def refuse(flag: str, what: str, why: str, instead: str) -> None:
        problems.append(_flag_problem(spec, flag, refusal(f"{what} {under}", why, instead)))

    return refuse


# What the DDP script does not write for a precision, by its name.
DDP_PRECISIONS_NOT_WRITTEN = {
    "16-mixed": "the DDP script has no GradScaler step: scaling the loss, unscaling before clipping, skipping the"
    " steps whose gradients overflow",
    "64": "the DDP script does not make the model and its batches float64 before DistributedDataParallel wraps it,"
    " as Lightning's DoublePrecision does",
}
SEVERAL_OPTIMIZERS_INSTEAD = (
    "use manual optimization (self.automatic_optimization = False) with ddp, or train on one CPU or GPU"
)

# What the engines (ddp, horovod, dp, tpu) refuse alike: the flag, what, why, and what to do instead. "One CPU
# or GPU" is the script without an engine: accelerator cpu or cuda, strategy auto.
ONE_DEVICE_TBPTT = (
    "truncated_bptt_steps",
    "truncated_bptt_steps",
    (
        "the script writes Lightning 1.9's truncated BPTT, each batch split into chunks stepped one by one with"
        " their hiddens, for one CPU or GPU only"
    ),
    "train it on one CPU or GPU",
)
ONE_DEVICE_OVERFIT = (
    "overfit_batches",
    "overfit_batches",
    (
        "the script's sequential sampler for the overfitted batches is written for one CPU or GPU only, not"
        " sharded over processes or devices"
    ),
    "overfit on one CPU or GPU",
)
ONE_DEVICE_GRAD_NORM = (
    "track_grad_norm",
    "track_grad_norm",
    "the script writes Lightning 1.9's gradient-norm logging for one CPU or GPU only",
    "track it on one CPU or GPU, or compute the norm in on_before_optimizer_step and log it yourself",
)
CLOSURE_STEP = "an optimizer step through a closure (LBFGS or an optimizer_step override)"
CLOSURE_INSTEAD = "use ddp, which steps through closures, or one CPU or GPU"
TIMED_CHECKPOINT = "ModelCheckpoint(train_time_interval=...)"
TIMED_CHECKPOINT_INSTEAD = "save every_n_train_steps or every_n_epochs"


def resolve_horovod(
    spec: Spec,
    script_name: str,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    data: Data,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    problems: list[Problem],
) -> Distributed:
    """strategy: horovod, as Lightning 1.9.5's HorovodStrategy: processes started by horovodrun (`devices` of them
    on this host, the count the header's command gives), hvd.DistributedOptimizer, the learning rates scaled by
    the number of processes, parameters and optimizer state broadcast from process 0, every sampler sharded.

    What it cannot serve is refused here, each with its reason: what the DDP part refuses (the rank-0 handling
    of loggers, checkpoints and the bar is not there yet), and what Lightning 1.9.5 refuses or does differently."""
    t = spec.trainer

    refuse = _refuser(spec, problems, "with strategy horovod")
    if t.num_nodes != 1:
        refuse(
            "num_nodes",
            "num_nodes > 1",
            "Lightning 1.9.5 refuses it: horovodrun's -H places the processes",
            "keep num_nodes: 1 and list the hosts in horovodrun's -H (the header's command for several hosts)",
        )
    if precision.apex:
        refuse("amp_backend", "apex", "Lightning 1.9.5's Horovod has no apex path", "use precision 32")
    elif precision.half:
        refuse("precision", f"precision {precision.name}", HALF_NOT_IN_1_9_5, "use precision 32 with horovod")
    elif precision.name != "32":
        refuse(
            "precision",
            f"precision {precision.name}",
            "the Horovod script steps hvd.DistributedOptimizer in float32 only: no autocast, GradScaler or float64"
            " path is written for it",
            "use precision 32 with horovod, or ddp for bf16-mixed",
        )
    if spec.seed_everything is True:
        problems.append(
            Problem(
                "seed_everything",
                "seed_everything: true with strategy horovod: each process would choose its own seed; give a number",
                spec.line("seed_everything"),
            )
        )
    if optimization.schedule is not None:
        refuse(
            "accumulate_grad_batches",
            "an accumulation schedule",
            "Lightning 1.9.5 refuses it with Horovod",
            "use a constant accumulate_grad_batches",
        )
    if optimizers.general_schedulers:
        refuse(
            "strategy",
            "LR schedulers from a configure_optimizers whose returned form its source does not show",
            "Lightning 1.9.5 scales each scheduler's base learning rates by the number of processes, and the script"
            " does so for the schedulers it finds in configure_optimizers' source",
            "return them in a form the source shows (`return [optimizer], [scheduler]`), or give them in the"
            " spec's optimizer: and lr_scheduler:",
        )
    if optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "hvd.DistributedOptimizer synchronises the gradients after backward and steps under"
            " skip_synchronize; a step that runs the closure itself is not written for it",
            CLOSURE_INSTEAD,
        )
    if optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "Lightning 1.9's loop over several optimizers is not written for hvd.DistributedOptimizer",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if checkpointing.time_triggered:
        refuse(
            "callbacks",
            TIMED_CHECKPOINT,
            "each process's clock would decide on its own, where Lightning broadcasts rank 0's decision",
            f"{TIMED_CHECKPOINT_INSTEAD}, or use ddp, which follows rank 0's clock",
        )
    for kind in sorted(logging.kinds - {"csv"}):
        refuse(
            "logger",
            f"a {kind} logger",
            "the Horovod script's rank-0 logging is written and checked against Lightning 1.9.5 for CSVLogger  only",
            "use CSVLogger with horovod, or ddp, which serves every logger",
        )
    if profiling.enabled:
        refuse(
            "profiler",
            "a profiler",
            "the Horovod script has no profiler code; the DDP script's writes one report per process",
            "profile with ddp or on one CPU or GPU",
        )
    if optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    devices = t.devices
    return Distributed(
        kind="horovod",
        devices=devices,
        world_size=devices,
        ranks_from="horovod",
        rank_zero_gates=True,
        replaces_samplers=True,
        wraps_samplers=True,
        backward_passes_per_step=optimization.accumulate if optimization.accumulates else 1,
        # Lightning 1.9.5's Horovod "handles accumulation": its loop calls optimizer.step() on every batch
        steps_every_batch=optimization.accumulates,
        # rank 0 writes the checkpoints and the logs; rank 0's directories and versions hold on every process
        broadcasts=checkpointing.saves or logging.versions,
        saves_on_rank_zero=checkpointing.saves,
        logs_on_rank_zero=logging.enabled,
        silent_bar=progress.enabled,
        # EarlyStopping: one process that stops stops all (1.9.5's reduce_boolean_decision, an hvd.allreduce)
        reduces_decisions=bool(checkpointing.early_stopping),
        launch=f"horovodrun -np {devices} -H localhost:{devices} python {script_name}",
        launch_nodes=f"horovodrun -np N -H HOST1:SLOTS1,HOST2:SLOTS2 python {script_name}",
    )


def resolve_dp(
    spec: Spec,
    model: ClassFacts,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    problems: list[Problem],
) -> Distributed:
    """strategy: dp, as Lightning 1.9.5's DataParallelStrategy: one process, the model on cuda:0 wrapped in
    torch.nn.DataParallel over `devices` GPUs, the steps run through it on each GPU's slice of the batch, and
    training_step's gathered outputs reduced to their mean unless the model defines training_step_end.

    What it cannot serve is refused here, each with its reason."""
    t = spec.trainer

    refuse = _refuser(spec, problems, "with strategy dp")
    if t.accelerator != "cuda":
        refuse(
            "accelerator",
            f"accelerator {t.accelerator}",
            "DataParallel runs its replicas on GPUs",
            "set `accelerator: cuda`, or use ddp on CPU",
        )
    if t.num_nodes != 1:
        refuse("num_nodes", "num_nodes > 1", "DataParallel is one process on one machine", "use ddp on several nodes")
    for hook in ("transfer_batch_to_device", "on_after_batch_transfer"):
        if model.defines(hook):
            refuse(
                "strategy",
                f"overriding `{hook}`",
                "Lightning 1.9.5 refuses it in DP mode: DataParallel scatters the batch over the GPUs itself",
                "do that work in training_step, or use ddp",
            )
    if precision.half:
        refuse("precision", f"precision {precision.name}", HALF_NOT_IN_1_9_5, "use precision 32 with dp")
    elif precision.name != "32" or precision.apex:
        refuse(
            "precision",
            f"precision {precision.name}",
            "the DP script runs the replicas in float32 only: no autocast inside each replica's forward is written",
            "use precision 32 with dp, or ddp for bf16-mixed",
        )
    if model.uses_log:
        refuse(
            "strategy",
            "self.log in the module",
            "DataParallel's replicas would each log into the one collection",
            "use ddp, which serves self.log, or one CPU or GPU",
        )
    if optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "DataParallel's replicas run each forward; a step that runs the closure itself is not written for  them",
            CLOSURE_INSTEAD,
        )
    if optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "Lightning 1.9's loop over several optimizers is not written for  DataParallel",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if checkpointing.time_triggered:
        refuse(
            "callbacks",
            TIMED_CHECKPOINT,
            "the DP script's checkpoints are not checked against Lightning 1.9.5 with a time-triggered save",
            TIMED_CHECKPOINT_INSTEAD,
        )
    for kind in sorted(logging.kinds - {"csv", "tensorboard"}):
        refuse(
            "logger",
            f"a {kind} logger",
            "the DP script's logging is written for CSVLogger and  TensorBoardLogger only",
            "use CSVLogger or TensorBoardLogger with dp, or ddp, which serves every  logger",
        )
    if profiling.enabled:
        refuse("profiler", "a profiler", "the DP script has no profiler code", "profile with ddp or on one CPU or GPU")
    if optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    return Distributed(
        kind="dp",
        devices=t.devices,
        scatters=True,
        reduces_step_output=not optimization.step_end,
        launch="",
    )


def resolve_xla(
    spec: Spec,
    script_name: str,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    data: Data,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    problems: list[Problem],
) -> Distributed:
    """accelerator: tpu, as Lightning 2.6.6 with torch_xla: one device is SingleDeviceXLAStrategy (the model and
    the batches on xm.xla_device(), no processes), several are XLAStrategy (xmp.spawn starts one process per
    device, the loaders become MpDeviceLoaders over DistributedSamplers on XLA's ordinal and world size,
    sync_dist reduces with xm.mesh_reduce). Both step through XLAPrecision.optimizer_step: the gradients
    all-reduced (xm.reduce_gradients) after the backward, the step, then xm.mark_step().

    What it cannot serve is refused here, each with its reason."""
    t = spec.trainer
    strategy, _ = strategy_args(t.strategy)

    refuse = _refuser(spec, problems, "with accelerator tpu")
    if strategy != "auto":
        refuse(
            "strategy",
            f"strategy {strategy}",
            "the TPU strategies come from `devices`: SingleDeviceXLAStrategy for one, XLAStrategy for several",
            "set `strategy: auto`",
        )
    if t.num_nodes != 1:
        refuse(
            "num_nodes",
            "num_nodes > 1",
            "one TPU VM host: xmp.spawn starts the processes of this host",
            "keep num_nodes: 1",
        )
    if precision.apex:
        refuse(
            "amp_backend", "apex", "apex is CUDA's, and Lightning's XLAPrecision has no apex path", "use precision 32"
        )
    elif precision.name == "16-mixed":
        refuse(
            "precision",
            "precision 16-mixed",
            "the float16 GradScaler is CUDA's; XLAPrecision takes 32-true, 16-true and bf16-true",
            "use precision 32",
        )
    elif precision.half:
        switch = "XLA_USE_BF16" if precision.name == "bf16-true" else "XLA_USE_F16"
        refuse(
            "precision",
            f"precision {precision.name}",
            f"XLAPrecision sets torch_xla's {switch}, which neither the torch_xla stand-in nor a TPU here can check",
            "use precision 32 on TPU (loopgen implements XLAPrecision's 32-true)",
        )
    elif precision.name != "32":
        refuse(
            "precision",
            f"precision {precision.name}",
            "loopgen implements XLAPrecision's 32-true only",
            "use precision 32",
        )
    if spec.seed_everything is True:
        message = "seed_everything: true with accelerator tpu: each process would choose its own seed; give a number"
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    if optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "the TPU script reduces the gradients after the backward it runs itself; a step that runs the"
            " closure would need the reduction inside it, as XLAPrecision wraps it",
            CLOSURE_INSTEAD,
        )
    if optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "several optimizers under automatic optimization are Lightning 1.9's, and the TPU script follows"
            " Lightning 2.6.6's XLA strategies",
            "train them on one CPU or GPU",
        )
    if profiling.enabled:
        refuse(
            "profiler",
            "a profiler",
            "the TPU script has no profiler code",
            "set `profiler: null`, and profile the same module on a CPU or GPU",
        )
    if optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    # checkpoints, the CSV and TensorBoard loggers and the bar: rank 0's on several devices
    devices = t.devices
    several = devices > 1
    if several:
        for kind in sorted(logging.kinds - {"csv", "tensorboard"}):
            refuse(
                "logger",
                f"a {kind} logger on several devices",
                "on several devices the script writes the CSVLogger's and TensorBoardLogger's files on process 0;"
                " the other loggers' handling is not written",
                "use CSVLogger or TensorBoardLogger, or one  device",
            )
        if checkpointing.time_triggered:
            refuse(
                "callbacks",
                f"{TIMED_CHECKPOINT} on several devices",
                "each process's clock would decide on its own, where Lightning broadcasts process 0's decision",
                TIMED_CHECKPOINT_INSTEAD,
            )
    launch = f"PJRT_DEVICE=TPU python {script_name}"
    return Distributed(
        kind="xla",
        devices=devices,
        world_size=devices,
        ranks_from="xla" if several else None,
        rank_zero_gates=several,
        replaces_samplers=several,
        # several devices: XLAStrategy's rank-0 files (XLACheckpointIO), broadcasts (xm.collective_broadcast),
        # barriers (xm.rendezvous) and decisions (xm.mesh_reduce); one device needs none of them
        reduces_decisions=several and bool(checkpointing.early_stopping),
        broadcasts=several and (checkpointing.saves or logging.versions),
        saves_on_rank_zero=several and checkpointing.saves,
        logs_on_rank_zero=several and logging.enabled,
        silent_bar=several and progress.enabled,
        launch=launch,
        launch_nodes=launch,
    )


def xla_header(header: Header, distributed: Distributed) -> Header:
    """The header of a TPU script: how it is launched on a TPU VM."""
    if distributed.devices > 1:
        choices = (*header.choices, f"XLAStrategy over {distributed.devices} devices (xmp.spawn)")
        note = (
            f"Runs on a TPU VM with torch_xla (PJRT runtime): `{distributed.launch}`; xmp.spawn starts one process"
            f" per TPU device, and the script checks that they are {distributed.devices}."
        )
    else:
        choices = (*header.choices, "SingleDeviceXLAStrategy (one device)")
        note = f"Runs on a TPU VM with torch_xla (PJRT runtime): `{distributed.launch}`; one process, one device."
    note += " It has been run against recording stand-ins of torch_xla only, not on real TPUs."
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def horovod_header(header: Header, distributed: Distributed) -> Header:
    """The header of a Horovod script: the horovodrun command that launches it."""
    choices = (*header.choices, f"strategy=horovod over {distributed.devices} processes (Lightning 1.9.5)")
    note = (
        f"Launched by horovodrun, one process per device: on this host `{distributed.launch}`; on several hosts"
        f" `{distributed.launch_nodes}` (Lightning 1.9.5 scales the learning rates by the number of processes, as"
        " this script does). Run without horovodrun, the script says so and exits with status 2."
    )
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def strategy_args(strategy: Any) -> tuple[str, dict[str, Any]]:
    """The `strategy` flag's value as (name, DDPStrategy's init_args): ddp_find_unused_parameters_true is "ddp"
    with find_unused_parameters, a DDPStrategy entry is "ddp" with its init_args."""
    if isinstance(strategy, dict):  # {class_path: DDPStrategy, init_args: {...}}
        return "ddp", dict(strategy["init_args"])
    if strategy == "ddp_find_unused_parameters_true":
        return "ddp", {"find_unused_parameters": True}
    if strategy == "ddp_find_unused_parameters_false":
        return "ddp", {}
    return strategy, {}


def distributed_header(header: Header, distributed: Distributed) -> Header:
    """The header of a DDP script: the choices it was made for, and the torchrun commands that launch it."""
    choices = (*header.choices, f"strategy=ddp over {distributed.num_nodes} x {distributed.devices} processes")
    note = f"Launched by torchrun, one process per device, {distributed.world_size} in all (devices x num_nodes)"
    if distributed.num_nodes == 1:
        note += f": on one node `{distributed.launch}`"
    if distributed.world_size > 1:
        note += (
            f"; on several nodes, `{distributed.launch_nodes}` on each (any --nnodes x --nproc_per_node that makes"
            f" {distributed.world_size}), with NODE_RANK 0 on the node at NODE0_ADDRESS, 1, 2, ... on the others"
        )
    note += ". Run without torchrun, the script says so and exits with status 2."
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def resolve_header(
    spec: Spec,
    optimizers: Optimizers,
    script_name: str,
    device: Device,
    precision: Precision,
    bounds: Bounds,
    optimization: Optimization,
    validation: Validation,
) -> Header:
    choices = [f"accelerator={device.name}", f"precision={precision.name}"]
    choices.append(
        f"max_epochs={bounds.max_epochs}" + (f", max_steps={bounds.max_steps}" if bounds.max_steps != -1 else "")
    )
    if optimization.schedule is not None:
        choices.append(f"accumulate_grad_batches={dict(optimization.schedule)}")
    elif optimization.accumulates:
        choices.append(f"accumulate_grad_batches={optimization.accumulate}")
    if optimization.clip:
        choices.append(f"gradient_clip_val={optimization.clip_val} ({spec.trainer.gradient_clip_algorithm})")
    choices.append("validation" if validation.enabled else "no validation")
    notes = []
    if optimizers.general:
        notes.append(
            f"General where the source does not say: {optimizers.general_reason}, so this script unpacks any of the"
            " forms Lightning accepts and checks at run time what it gets."
        )
    return Header(
        version=__version__,
        spec_name=spec.path.name,
        spec_sha256=spec.sha256,
        script_name=script_name,
        model_module=spec.model.module,
        model_package=spec.model.module.split(".")[0],
        choices=tuple(choices),
        launch=f"python {script_name}",
        notes=tuple(notes),
        templates_sha256=templates_sha256(),
    )


def resolve_constants(
    build: Build,
    state: State,
    bounds: Bounds,
    validation: Validation,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
) -> Constants:
    # the SLURM checkpoints, or a default checkpoint directory outside a logger's (DDP has no SLURM code)
    in_root = checkpointing.requeues or (checkpointing.default_dir and not checkpointing.versioned)
    root_dir = (checkpointing.saves and in_root) or any(logger.in_root_dir for logger in logging.loggers)
    root_dir = root_dir or checkpointing.default_dir_in_run  # an MLflow or W&B run's: under save_dir, else the root
    root_dir = root_dir or (profiling.writes_files and profiling.directory == "root")
    root_dir = root_dir or state.has("default_root_dir")
    root_dir = root_dir or (state.has("log_dir") and state.log_dir == "root")  # trainer.log_dir without a logger
    return Constants(
        seed=build.seed is not None,
        max_epochs=bounds.loop_until in ("epochs", "epochs_and_steps") or state.has("max_epochs"),
        max_steps=bounds.step_limit or state.has("max_steps"),
        num_sanity_val_steps=validation.sanity and not validation.sanity_all,
        root_dir=root_dir,
        default_root_dir=checkpointing.default_root_dir if root_dir else None,
    )


def resolve_command_line(spec: Spec, build: Build, bounds: Bounds, checkpointing: Checkpointing) -> CommandLine:
    bounded = not spec.trainer.fast_dev_run  # fast_dev_run decides both limits (Lightning)
    return CommandLine(
        ckpt_path=checkpointing.resumes,
        weights_only=checkpointing.resumes,
        max_epochs=bounded and bounds.loop_until in ("epochs", "epochs_and_steps"),
        max_steps=bounded and bounds.step_limit,
        seed=build.seeds,
        seed_at_run_time=build.seed_at_run_time,
    )


def resolve_imports(
    build: Build,
    state: State,
    data: Data,
    bounds: Bounds,
    validation: Validation,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    metrics: Metrics,
    checkpointing: Checkpointing,
    logging: Logging,
    summary: Summary,
    profiling: Profiling,
    progress: Progress,
) -> Imports:
    saves = checkpointing.saves
    profiles = profiling.enabled
    return Imports(
        math=state.estimates or profiling.kind == "simple",
        cprofile=profiling.kind == "advanced",
        io=profiling.kind == "advanced",
        pickle=checkpointing.resumes,
        pstats=profiling.kind == "advanced",
        csv="csv" in logging.kinds,
        enum=logging.writes_yaml,
        json=logging.hparams and "wandb" in logging.kinds,
        os=build.deterministic
        or state.has("default_root_dir")
        or state.has("log_dir")
        or checkpointing.resumes
        or logging.enabled
        or profiles
        or progress.kind == "tqdm",
        random=build.seeds or validation.sanity or saves,
        sys=build.seeds or validation.sanity or saves or progress.own or progress.kind == "tqdm",
        warnings=optimizers.general_schedulers
        or optimizers.lenient_plateau
        or bounds.holds_stop
        or checkpointing.resumes
        or bool(checkpointing.stopping.get("lenient"))
        or logging.warns
        or (logging.lr_monitor is not None and logging.lr_monitor.momentum)
        or (summary.enabled and summary.unsupported_precision is not None)
        or profiling.kind == "pytorch"
        or (progress.version and progress.metrics),
        argparse=checkpointing.resumes or logging.flattens,
        copy=checkpointing.saves,
        glob=checkpointing.searches_versions,
        re=bool(checkpointing.checkpoints)
        or checkpointing.resumes
        or logging.writes_yaml
        or "mlflow" in logging.kinds
        or profiling.dump_stats,
        signal=checkpointing.stops_on_signals,
        subprocess=checkpointing.requeues,
        shutil=progress.own,
        time=checkpointing.time_triggered or "mlflow" in logging.kinds or profiling.kind == "simple" or progress.own,
        timedelta=checkpointing.time_triggered or progress.kind == "rich",
        sequence=optimization.tbptt and not optimization.tbptt_split_hook,
        contextmanager=precision.casts or profiles,
        dataclass=metrics.collect
        or bool(checkpointing.checkpoints)
        or bool(checkpointing.stopping.get("lenient"))
        or logging.enabled
        or state.has("lr_scheduler_configs"),
        field=bool(checkpointing.checkpoints),
        simple_namespace=state.exists,
        accumulate=optimization.frequencies is not None,
        samplers=data.sequential,
        apex=precision.apex,
        mutable_mapping=logging.flattens,
        dataclass_functions=logging.flattens,
        tensorboard="tensorboard" in logging.kinds,
        hparams_summaries=logging.hp_metric,
        mlflow="mlflow" in logging.kinds,
        mlflow_params="mlflow" in logging.kinds and logging.hparams,
        wandb="wandb" in logging.kinds,
        tqdm=progress.kind == "tqdm",
        rich=progress.kind == "rich",
    )


# ---------------------------------------------------------------------------
# helpers of the resolve_* functions


def _flag_problem(spec: Spec, flag: str, message: str) -> Problem:
    return Problem(f"trainer.{flag}", message, spec.line(f"trainer.{flag}"))


def _construct(ref: ClassRef) -> Construct:
    """The class to build with its arguments; objects among them (ObjectSpecs) as Constructs, their
    dict_kwargs after their init_args, as jsonargparse passes them."""
    args = {name: _argument(value) for name, value in ref.init_args.items()}
    if isinstance(ref, ObjectSpec):
        args.update(ref.dict_kwargs)
    return Construct(ref.module, ref.name, args)


def _argument(value: Any) -> Any:
    if isinstance(value, ObjectSpec):
        return _construct(value)
    if isinstance(value, list):
        return [_argument(item) for item in value]
    if isinstance(value, dict):
        return {key: _argument(item) for key, item in value.items()}
    return value


def _constructs_in(value: Any) -> list[Construct]:
    """Every Construct in an argument value, at any depth."""
    if isinstance(value, Construct):
        return [value, *(c for item in value.args.values() for c in _constructs_in(item))]
    if isinstance(value, (list, tuple)):
        return [c for item in value for c in _constructs_in(item)]
    if isinstance(value, Mapping):
        return [c for item in value.values() for c in _constructs_in(item)]
    return []


def _check_unique_names(refs: list[ClassRef]) -> None:
    seen: dict[str, str] = {}
    for ref in refs:
        other = seen.setdefault(ref.name, ref.class_path)
        if other != ref.class_path:
            message = refusal(
                f"two different classes named {ref.name} ({other}, {ref.class_path})",
                "the script imports each class under its own name, and these two would collide",
                "rename one of them, or import it under another name in a module of your own and name that",
            )
            raise LoopgenError(Problem("", message))


def _limits(spec: Spec) -> tuple[int | float, int | float]:
    """limit_train_batches / limit_val_batches after overfit_batches and fast_dev_run (which set both)."""
    t = spec.trainer
    limit_train, limit_val = t.limit_train_batches, t.limit_val_batches
    if t.overfit_batches:
        limit_train = limit_val = t.overfit_batches
    if t.fast_dev_run:
        limit_train = limit_val = t.fast_dev_run
    return limit_train, limit_val


def _limits_batches(limit: float) -> bool:
    """An epoch uses fewer batches than the loader has (an int 1 is one batch; the float 1.0 all of them)."""
    return not (isinstance(limit, float) and limit == 1.0)


def _takes_two(params: tuple[str, ...]) -> bool:
    return len([p for p in params if not p.startswith("*")]) >= 2 or "*args" in params


def _reads_trainer(facts: ClassFacts, *names: str) -> bool:
    return facts.trainer_reads is None or bool(facts.trainer_reads & set(names))


def _follows_1_9_5(spec: Spec, model: ClassFacts) -> bool:
    """The spec uses something only Lightning 1.9.5 has: where 1.9.5 and 2.x differ, the script follows 1.9.5."""
    return bool(_only_1_9_5(spec, model))


def _only_1_9_5(spec: Spec, model: ClassFacts) -> tuple[str, ...]:
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


def _only_epoch_end(hooks: Hooks) -> bool:
    return not hooks.callbacks_with("on_train_batch_end") and not hooks.model_has("on_train_batch_end")


def _returns(facts: OptimizersFacts) -> str:
    count = len(facts.optimizers)
    return f"configure_optimizers returns {count} optimizer{'s' if count != 1 else ''}"


def _returns_schedulers(spec: Spec, model: ClassFacts) -> bool:
    """configure_optimizers returns LR schedulers: `loop.lr_schedulers`, else read from its source."""
    if spec.loop.lr_schedulers is not None:
        return spec.loop.lr_schedulers
    return model.mentions_scheduler


def _spec_scheduler(ref: ClassRef, problems: list[Problem]) -> Scheduler:
    """The spec's lr_scheduler, as LightningCLI configures it: every epoch; ReduceLROnPlateau reads `monitor`."""
    args = dict(ref.init_args)
    plateau = ref.name == "ReduceLROnPlateau"
    monitor = args.pop("monitor", None) if plateau else None
    if plateau and monitor is None:
        problems.append(
            Problem("lr_scheduler.init_args.monitor", "ReduceLROnPlateau needs a `monitor` metric", ref.line)
        )
    return Scheduler(
        var="scheduler",
        cls=Construct(ref.module, ref.name, args),
        in_dict=False,
        interval="epoch",
        frequency=1,
        every_time=True,
        plateau=plateau,
        monitor=monitor,
        strict=True,
        optimizer_idx=0,
    )


def _source_scheduler(
    facts: SchedulerFacts,
    index: int,
    total: int,
    optimizers: OptimizersFacts,
    count: int,
    problems: list[Problem],
    line: int | None,
) -> Scheduler | None:
    """A scheduler configure_optimizers builds, with Lightning's defaults for what its dict leaves out."""
    config = dict(facts.config or {})
    where = "model.class_path"
    optimizer_idx = facts.optimizer if facts.optimizer is not None else (0 if count == 1 else None)
    if optimizer_idx is None:
        return None
    interval = config.get("interval", "epoch")
    if interval not in ("step", "epoch"):
        problems.append(Problem(where, f'lr_scheduler "interval" must be "step" or "epoch", not {interval!r}', line))
    frequency = config.get("frequency", 1)
    if not isinstance(frequency, int) or isinstance(frequency, bool) or frequency < 1:
        problems.append(Problem(where, f'lr_scheduler "frequency" must be a positive integer, not {frequency!r}', line))
        frequency = 1
    plateau = config.get("reduce_on_plateau", facts.cls == "ReduceLROnPlateau")
    monitor = config.get("monitor") if facts.config is not None else optimizers.monitor
    if plateau and monitor is None:
        message = "configure_optimizers returns a ReduceLROnPlateau scheduler without a `monitor` metric"
        problems.append(Problem(where, message, line))
    return Scheduler(
        var="scheduler" if total == 1 else f"scheduler_{index}",
        cls=None,
        in_dict=facts.config is not None,
        interval=interval,
        frequency=frequency,
        every_time=frequency == 1,
        plateau=bool(plateau),
        monitor=monitor if plateau else None,
        strict=bool(config.get("strict", True)),
        optimizer_idx=optimizer_idx,
        name=facts.name,
    )


def _frequencies(
    spec: Spec, model: ClassFacts, optimizers: Optimizers, problems: list[Problem]
) -> tuple[int, ...] | None:
    """The optimizer frequencies (1.9.5): from configure_optimizers' source, or declared in `loop:`."""
    declared = spec.loop.optimizer_frequencies
    read = model.optimizers.frequencies if model.optimizers is not None and spec.optimizer is None else None
    if (declared or read) and not optimizers.several:
        problems.append(
            Problem("loop.optimizer_frequencies", f"{spec.model.name}.training_step has no `optimizer_idx` parameter")
        )
        return None
    if declared and read is not None and tuple(declared) != read:
        message = f"{list(declared)}, but configure_optimizers returns the frequencies {list(read)}"
        problems.append(Problem("loop.optimizer_frequencies", message))
    if declared and not optimizers.general and read is None:
        problems.append(
            Problem("loop.optimizer_frequencies", 'configure_optimizers returns no frequencies (no "frequency" keys)')
        )
    frequencies = read if read is not None else declared
    return tuple(frequencies) if frequencies else None


# ---------------------------------------------------------------------------
# objects as init args (nested class_path entries)

# Script variables an object argument's variable must not take (it gets a number instead).
_SCRIPT_NAMES_RE = r"\b[A-Za-z_][A-Za-z0-9_]*\b"


def with_objects(
    build: Build,
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    objects: Mapping[str, ClassFacts | None],
) -> Build:
    """`build` with the object arguments of the model, the data and the user's callbacks taken out into `objects`,
    built before their owner in LightningCLI's order, and their classes imported.

    jsonargparse instantiates a class's object arguments before the class, in the order of the parameters of its
    `__init__` (each one's own arguments first, to any depth), and a list's items in order. The script builds each
    argument that holds an object (an object, or a list / mapping of them) as a variable `<owner>_<argument>`
    before the owner, in that order: the owner's `__init__` parameters as its source gives them, the spec's order
    for arguments it does not name (`**kwargs`). Deeper objects are written inline, which Python evaluates
    argument by argument: their arguments are written in the order of their class's `__init__` parameters when
    its source is in the project (`objects`), else in the spec's order.
    """
    refs = spec.trainer.callbacks
    facts_by_var: dict[str, ClassFacts | None] = {"model": model, "data": data}
    for i, facts in enumerate(callbacks):  # the user's callbacks' variables, as resolve_hooks names them
        facts_by_var[f"callback_{i}" if len(refs) > 1 else "callback"] = facts
    owners = [("model", build.model), ("data", build.data)] + [(cb.var, cb.construct) for cb in build.callbacks]
    if not any(_constructs_in(list(c.args.values())) for _, c in owners if c is not None):
        return build
    taken = _script_names()
    built_by_owner: dict[str, tuple[Built, ...]] = {}
    replaced: dict[str, Construct] = {}
    for var, construct in owners:
        if construct is None:
            continue
        facts = facts_by_var.get(var)
        params = facts.methods.get("__init__", ()) if facts is not None else ()
        order = [name for name in params if name in construct.args]
        order += [name for name in construct.args if name not in order]
        built = []
        args = dict(construct.args)
        for name in order:
            if not _constructs_in(args[name]):
                continue
            target = f"{var}_{name}"
            while target in taken:
                target += "_"
            taken.add(target)
            built.append(Built(target, _in_init_order(args[name], objects)))
            args[name] = Name(target)
        if built:
            built_by_owner[var] = tuple(built)
            replaced[var] = replace(construct, args=args)
    nested = [c for var, _ in owners for b in built_by_owner.get(var, ()) for c in _constructs_in(b.value)]
    by_module = {i.module: list(i.names) for i in build.imports}
    for c in nested:
        if c.from_torch or not c.module:
            continue
        if c.cls not in by_module.setdefault(c.module, []):
            by_module[c.module].append(c.cls)
    nested_refs = [ClassRef(f"{c.module}.{c.cls}") for c in nested if c.module]
    _check_unique_names(
        [spec.model] + ([spec.data] if spec.data else []) + [r for r, f in zip(refs, callbacks) if f] + nested_refs
    )
    return replace(
        build,
        model=replaced.get("model", build.model),
        data=replaced.get("data", build.data),
        callbacks=tuple(
            replace(cb, construct=replaced[cb.var]) if cb.var in replaced else cb for cb in build.callbacks
        ),
        imports=tuple(Import(module, tuple(sorted(names))) for module, names in sorted(by_module.items())),
        objects=built_by_owner,
    )


def _in_init_order(value: Any, objects: Mapping[str, ClassFacts | None]) -> Any:
    """An argument value with the arguments of each object in it in the order of its class's `__init__`
    parameters (where `objects` has its facts): the order Python evaluates them in, and jsonargparse builds them."""
    if isinstance(value, Construct):
        facts = objects.get(f"{value.module}.{value.cls}")
        params = facts.methods.get("__init__", ()) if facts is not None else ()
        order = [name for name in params if name in value.args] + [n for n in value.args if n not in params]
        return replace(value, args={name: _in_init_order(value.args[name], objects) for name in order})
    if isinstance(value, list):
        return [_in_init_order(item, objects) for item in value]
    if isinstance(value, dict):
        return {key: _in_init_order(item, objects) for key, item in value.items()}
    return value


def _script_names() -> set[str]:
    """Every identifier the templates write: names an object argument's variable must not shadow."""
    import re

    from loopgen.render import template_dir

    return {
        word
        for path in sorted(template_dir().rglob("*.j2"))
        for word in re.findall(_SCRIPT_NAMES_RE, path.read_text(encoding="utf-8"))
    }


# ---------------------------------------------------------------------------
# torchmetrics


def with_torchmetrics(
    metrics: Metrics, spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], problems: list[Problem]
) -> Metrics:
    """torchmetrics `Metric` objects (and MetricCollections) passed to self.log / self.log_dict, as Lightning 2.x's
    result collection treats them: on_step values are the metric's forward value (`_forward_cache`), on_epoch
    values its `compute()` at the epoch's end, and the metric is `reset()` where Lightning resets its results (after
    the training epoch's loggers, at validation's end). Lightning resets them whether or not anything reads the
    logged values, and a module may read the metric's state itself: so the collector is kept whenever the module
    logs and its source imports torchmetrics (or an object argument is one of torchmetrics' classes)."""
    given = any(
        c.module.split(".")[0] == "torchmetrics"
        for ref in (spec.model, spec.data, *spec.trainer.callbacks)
        if ref is not None
        for value in ref.init_args.values()
        for c in _constructs_in(_argument(value))
    )
    uses = metrics.model_logs and (
        given or model.imports_torchmetrics or any(facts.imports_torchmetrics for facts in callbacks)
    )
    if not uses:
        return metrics
    if spec.ckpt_path is not None:
        problems.append(
            Problem(
                "ckpt_path",
                refusal(
                    "resuming a run whose module logs torchmetrics objects",
                    "Lightning restores the metrics' states from the checkpoint's loops, and the script does not",
                    "train from the start",
                ),
                spec.line("ckpt_path"),
            )
        )
    return replace(metrics, collect=True, discards=False, torchmetrics=True)


# ---------------------------------------------------------------------------
# loaders without a length


def with_unsized_loaders(
    data_plan: Data, spec: Spec, model: ClassFacts, data: ClassFacts | None, problems: list[Problem]
) -> Data:
    """Loaders without `__len__` (an IterableDataset, streaming data), when the model's or data class's source uses
    IterableDataset: the script asks each loader for its length when it loads it and follows Lightning's rules
    for the loaders that have none (num_training_batches infinite, an epoch that ends when the iterator does,
    val_check_interval an int or 1.0, the fetcher reading one batch ahead to know the last one). What such a
    script does not serve yet is refused here."""
    for facts, ref in ((data, spec.data), (model, spec.model)):
        if facts is None or ref is None or not facts.mentions_iterable_dataset:
            continue
        t = spec.trainer
        given = {"ckpt_path": spec.ckpt_path is not None}
        given["overfit_batches"] = bool(t.overfit_batches)
        given["reload_dataloaders_every_n_epochs"] = t.reload_dataloaders_every_n_epochs > 0
        given["profiler"] = t.profiler is not None
        for flag in (flag for flag, on in given.items() if on):
            message = refusal(
                f"{ref.class_path}'s source uses IterableDataset: {flag} with a loader that may have no length",
                f"the script's {flag} code is written for loaders with a length",
                f"give the dataset a length (a map-style Dataset with __len__), or remove {flag}",
            )
            problems.append(
                Problem(flag, message, spec.line(flag)) if flag == "ckpt_path" else _flag_problem(spec, flag, message)
            )
        interval = t.val_check_interval
        fraction = isinstance(interval, float) and interval != 1.0 and not t.fast_dev_run and t.limit_train_batches != 0
        return replace(data_plan, unsized=True, checks_fraction=fraction)
    return data_plan
