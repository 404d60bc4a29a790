"""ModelCheckpoint, EarlyStopping, resuming, signals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopgen.errors import Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.common import NUMBERED_LOGGERS, early_stopping_on_epoch_end, flag_problem
from loopgen.plan.distributed import engine_kind
from loopgen.plan.hooks import UserCode
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import Callback, Construct, callback_defaults, is_lightning, numbered_name
from loopgen.plan.optimization import Optimization
from loopgen.plan.validation import Validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import ClassRef, Spec


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
    stops_on_signals: bool  # SIGTERM / SIGINT write a resumable checkpoint before the script exits
    requeues: bool  # under SLURM, SIGUSR1 saves an hpc checkpoint and requeues the job

    def early_stopping_checks_at(self, hook: str) -> bool:
        """Some EarlyStopping checks its metric at `hook` (on_train_epoch_end or on_validation_end)."""
        return any(hook in callback.hooks for callback in self.early_stopping)


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
    user: UserCode,
    validation: Validation,
    optimization: Optimization,
    bounds: Bounds,
    logging: Logging,
    problems: list[Problem],
) -> Checkpointing:
    """ModelCheckpoint (the default one when the spec has none and checkpointing is on), EarlyStopping, and
    what a checkpoint must hold to resume this script's loop exactly."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if is_lightning(ref, "ModelCheckpoint")]
    if not t.enable_checkpointing and given:
        message = "is false, but the callbacks have a ModelCheckpoint (Lightning refuses this too)"
        problems.append(flag_problem(spec, "enable_checkpointing", message))
    saves = bool(t.enable_checkpointing) and not t.fast_dev_run  # fast_dev_run saves nothing (Lightning)
    if saves and not given:
        given = [ClassRef("pytorch_lightning.callbacks.ModelCheckpoint", callback_defaults("ModelCheckpoint"))]
    checkpoints = tuple(
        _model_checkpoint(ref, numbered_name("model_checkpoint", i, len(given)), spec, validation, problems)
        for i, ref in enumerate(given if saves else [])
    )
    stoppers = [ref for ref in t.callbacks if is_lightning(ref, "EarlyStopping")]
    early_stopping = tuple(
        _early_stopping(ref, numbered_name("early_stopping", i, len(stoppers)), spec, validation, problems)
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
            ("log_step", logging.counts_steps),
        )
        if used
    ]
    user = [cb for cb in user.callbacks if cb.kind == "user"]
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
        # torchrun signals every process when one fails: no checkpoint is written on a signal under an engine
        stops_on_signals=saves and engine_kind(spec) is None,
        requeues=saves and engine_kind(spec) is None,
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


def _early_stopping(ref: ClassRef, var: str, spec: Spec, validation: Validation, problems: list[Problem]) -> Callback:
    args = dict(ref.init_args)
    if args["monitor"] is None:
        problems.append(Problem("trainer.callbacks (EarlyStopping)", "EarlyStopping needs `monitor`", ref.line))
    args.pop("check_on_train_epoch_end")
    on_epoch_end = early_stopping_on_epoch_end(ref, spec)
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
