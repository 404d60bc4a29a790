"""ModelCheckpoint, EarlyStopping, resuming, signals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.common import (
    NUMBERED_LOGGERS,
    early_stopping_default_on_epoch_end,
    early_stopping_on_epoch_end,
    flag_problem,
)
from loopgen.plan.distributed import engine_kind
from loopgen.plan.hooks import UserCode
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import Callback, Construct, callback_defaults, is_lightning, numbered_name
from loopgen.plan.optimization import Optimization
from loopgen.plan.swa import Swa
from loopgen.plan.timer import Timer
from loopgen.plan.validation import Validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, Spec
from loopgen.spec.plugins import cluster_environment


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
    # a user's ModelCheckpoint subclass (one at most), on the script's ModelCheckpointBase (templates/subclassed.j2)
    subclassed: tuple[Callback, ...]
    on_exception: tuple[Callback, ...]  # the OnExceptionCheckpoint callbacks
    checkpoint_order: tuple[Callback, ...]  # ... and both, as Lightning orders them (last, in the spec's order)
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
    # a file holds the module's weights as they were when ModelCheckpoint decided it, as Lightning's does: hooks
    # that run before the file is written (the module's on_train_batch_end, on_validation_end, ...) change them
    weights_at_decision: bool
    # a file decided inside an accumulation window is written there, as Lightning's, with the gradients the
    # window summed so far (the run resumes from it exactly); several processes' gradients differ, so a file
    # one of them writes there resumes without them, as Lightning's does
    window_grads: bool
    monitors: bool  # some ModelCheckpoint ranks by a metric
    unmonitored: bool  # some ModelCheckpoint keeps the newest
    verbose: bool  # some ModelCheckpoint says what it saves
    stopping: Mapping[str, bool]  # EarlyStopping's features in use (thresholds, divergence, check_finite, ...)
    step_triggered: bool  # ... saves every n steps or after a time interval
    time_triggered: bool
    defers: bool  # ... waits for the validation after an epoch's last batch to rank by a fresh metric
    saves_last: bool
    links: bool  # save_last="link"
    # some ModelCheckpoint saves when fit raises (save_on_exception=True): in its own name and "last", files the
    # script does not resume from
    saves_on_exception: bool
    reads_metrics: bool  # file names or rankings read the logged metrics
    searches_versions: bool  # `--ckpt-path last` looks into every version_N/checkpoints of the first logger
    stops_on_signals: bool  # SIGTERM / SIGINT write a resumable checkpoint before the script exits
    requeues: bool  # under SLURM, SIGUSR1 saves an hpc checkpoint and requeues the job
    # Lightning's AsyncCheckpointIO plugin: each file written by a background thread, from a copy of its tensors
    writes_async: bool
    # the script's ModelCheckpoint class, made for these instances: the arguments they all give the same value
    # are the class's (its code specialised to them), the others are fields each instance passes
    shared: Mapping[str, Any]
    varying: tuple[str, ...]
    acts_after_validation: bool  # some ModelCheckpoint acts at on_validation_end
    keeps_all: bool  # some ModelCheckpoint has save_top_k=-1
    keeps_none: bool  # some ModelCheckpoint has save_top_k=0
    top_k_attribute: bool  # ... and they share save_top_k: the class's code tests it
    # ... and its EarlyStopping class, the same way
    stopping_shared: Mapping[str, Any]
    stopping_varying: tuple[str, ...]
    stopping_state_key: str | None  # Lightning's key of the one EarlyStopping's state (None: each makes its own)
    stopping_min_delta: float | None  # the shared min_delta, signed for the comparison as Lightning signs it
    # for the user's EarlyStopping subclasses (their base, templates/subclassed.j2, decides at run time): where one
    # given check_on_train_epoch_end=None checks (EarlyStopping.setup's rule), and fast_dev_run, where none checks
    stopping_on_epoch_end: bool = False
    stopping_off: bool = False
    stopping_subclassed: bool = False  # the spec has such a subclass
    # what a ModelCheckpoint subclass's base reads of the trainer's flags (Lightning's trainer has them whether or
    # not the run validates): check_val_every_n_epoch, and whether val_check_interval is the epoch (1.0)
    check_val_every_n_epoch: int | None = 1
    validates_at_epoch_end: bool = True
    # under manual optimization Lightning 2.6.6's ModelCheckpoint.on_train_batch_end has rules of its own: every
    # n steps only (no time interval), its skips before the metric's, no waiting for a fresher metric (some
    # ModelCheckpoint saves every n steps)
    manual_steps: bool = False

    @property
    def directories(self) -> tuple[Callback, ...]:
        """The checkpoint callbacks whose `dirpath` the script reads (`--ckpt-path last`, a signal's file, the
        report): the script's ModelCheckpoint objects, or the user's subclass, whose directory its setup decides."""
        return self.checkpoints + self.subclassed

    @property
    def writes_at_decision(self) -> bool:
        """A file a ModelCheckpoint subclass decides is on disk at once, as Lightning's (the subclass's code may
        read, copy or link it after the save), then completed with where the run resumes from it where the whole
        run can be saved."""
        return bool(self.subclassed)

    @property
    def finds_last_files(self) -> bool:
        """`--ckpt-path last` also takes files found otherwise than by name in the directories: an
        OnExceptionCheckpoint's, and those a ModelCheckpoint subclass's _find_last_checkpoints finds."""
        return bool(self.on_exception or self.subclassed)

    @property
    def epoch_saves_top_k_only(self) -> bool:
        """At an epoch's end they save the top k checkpoints, every epoch, and no last one."""
        return self.shared.get("every_n_epochs") == 1 and not self.saves_last

    @property
    def writes_on_exception(self) -> bool:
        """A file is written when fit raises (an OnExceptionCheckpoint, or a ModelCheckpoint's save_on_exception):
        the script's checkpoint() is at hand from training's start."""
        return bool(self.on_exception) or self.saves_on_exception

    @property
    def states_now(self) -> bool:
        """CheckpointFiles has now(): the states for a file, with the weights where a file holds them as decided,
        for an OnExceptionCheckpoint's file and each decided one."""
        return bool(self.on_exception) or self.weights_at_decision

    @property
    def never_versions(self) -> bool:
        """No ModelCheckpoint adds -v1, -v2, ... to a name that is taken (enable_version_counter=False)."""
        return self.shared.get("enable_version_counter") is False

    @property
    def stopping_checks_at_epoch_end_only(self) -> bool:
        """Every EarlyStopping checks at the training epoch's end: its check is that hook."""
        return bool(self.early_stopping) and all(cb.hooks == {"on_train_epoch_end"} for cb in self.early_stopping)

    @property
    def stopping_ignores_missing(self) -> bool:
        """Every EarlyStopping has strict=False and verbose=False: a missing metric goes unreported."""
        return self.stopping_shared.get("strict") is False and self.stopping_shared.get("verbose") is False

    @property
    def stopping_signs(self) -> bool:
        """The EarlyStopping instances sign their own min_delta or make their own state key (__post_init__)."""
        return self.stopping_min_delta is None or self.stopping_state_key is None

    def early_stopping_checks_at(self, hook: str) -> bool:
        """Some EarlyStopping checks its metric at `hook` (on_train_epoch_end or on_validation_end)."""
        return any(hook in callback.hooks for callback in self.early_stopping)


LIGHTNING_VERSION = "2.6.6"  # the Lightning 2.x release the scripts' behaviour and checkpoint format follow


CHECKPOINT_ARGS = (  # the arguments of the script's ModelCheckpoint
    "filename", "monitor", "mode", "save_top_k", "save_last", "save_weights_only", "every_n_epochs",
    "every_n_train_steps", "train_time_interval", "save_on_train_epoch_end", "auto_insert_metric_name",
    "enable_version_counter", "verbose", "save_on_exception",
)  # fmt: skip


STOPPING_ARGS = (  # the arguments of the script's EarlyStopping
    "monitor", "min_delta", "patience", "verbose", "mode", "strict", "check_finite", "stopping_threshold",
    "divergence_threshold",
)  # fmt: skip


def resolve_checkpointing(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    user: UserCode,
    validation: Validation,
    optimization: Optimization,
    bounds: Bounds,
    logging: Logging,
    timer: Timer | None,
    swa: Swa | None,
    problems: list[Problem],
) -> Checkpointing:
    """ModelCheckpoint (the default one when the spec has none and checkpointing is on), EarlyStopping, and
    what a checkpoint must hold to resume this script's loop exactly."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if is_lightning(ref, "ModelCheckpoint")]
    on_exception_refs = [ref for ref in t.callbacks if is_lightning(ref, "OnExceptionCheckpoint")]
    subclassed = tuple(cb for cb in user.callbacks if cb.checkpointer)  # the user's ModelCheckpoint subclasses
    if not t.enable_checkpointing and (given or on_exception_refs or subclassed):
        message = "is false, but the callbacks have a ModelCheckpoint (Lightning refuses this too)"
        problems.append(flag_problem(spec, "enable_checkpointing", message))
    _check_subclassed(spec, subclassed, given, on_exception_refs, problems)
    saves = bool(t.enable_checkpointing) and not t.fast_dev_run  # fast_dev_run saves nothing (Lightning)
    # Lightning adds its default ModelCheckpoint when no callback is a Checkpoint (OnExceptionCheckpoint is one)
    if saves and not given and not on_exception_refs and not subclassed:
        given = [ClassRef("pytorch_lightning.callbacks.ModelCheckpoint", callback_defaults("ModelCheckpoint"))]
    on_exception = _on_exception_checkpoints(spec, on_exception_refs, problems)
    given = given if saves else []
    # each instance's arguments (all of them, defaults included), then the class made for them, then the instances
    checkpoint_args = [_checkpoint_args(ref, spec, validation, problems) for ref in given]
    stoppers = [ref for ref in t.callbacks if is_lightning(ref, "EarlyStopping")]
    stoppers = stoppers if not t.fast_dev_run else []  # fast_dev_run never stops early (Lightning)
    stopping_args = [_stopping_args(ref, problems) for ref in stoppers]
    _check_unique_state_keys("ModelCheckpoint", given, checkpoint_args, problems)
    _check_unique_state_keys("EarlyStopping", stoppers, stopping_args, problems)
    stopping_hooks = [_stopping_hooks(ref, spec, validation) for ref in stoppers]
    # without checkpoints, one that never checks (no validation to follow) does nothing at all
    kept = [i for i, hooks_of in enumerate(stopping_hooks) if saves or hooks_of]

    def every(key: str) -> list[Any]:
        return [args[key] for args in checkpoint_args]

    shared = _shared_args(checkpoint_args)
    varying = tuple(key for key in CHECKPOINT_ARGS if key not in shared)
    stopping_shared = _shared_args([stopping_args[i] for i in kept])
    if "mode" not in stopping_shared or "min_delta" not in stopping_shared:  # each signs its own min_delta
        stopping_shared = {k: v for k, v in stopping_shared.items() if k not in ("mode", "min_delta")}
    stopping_varying = tuple(key for key in STOPPING_ARGS if key not in stopping_shared)
    step_triggered = any(n > 0 for n in every("every_n_train_steps"))
    time_triggered = any(interval is not None for interval in every("train_time_interval"))
    # a ModelCheckpoint may save in a batch: every n steps, or after a time interval (never under manual
    # optimization, whose rules in Lightning 2.6.6 count steps only)
    batch_saves = step_triggered or (time_triggered and not model.manual_optimization)
    saves_last = any(every("save_last"))
    if step_triggered and model.manual_optimization and "saved_models" in model.attributes_read:
        message = refusal(
            f"ModelCheckpoint(every_n_train_steps) with {spec.model.class_path}, which keeps `self.saved_models`",
            "under manual optimization Lightning's ModelCheckpoint saves the weights it finds there (in"
            " `self.layer`) instead of the module's",
            "name the attribute otherwise, or save by epoch",
        )
        problems.append(Problem("trainer.callbacks (ModelCheckpoint)", message, given[0].line))
    saves_on_exception = any(every("save_on_exception"))
    monitors = any(m is not None for m in every("monitor"))
    # after a validation it notes that one ran (which a missing metric's error needs), or saves there
    acts_after_validation = validation.enabled and (monitors or not all(every("save_on_train_epoch_end")))
    hooks_of_checkpoints = {"setup", "on_train_epoch_end"}
    for hook, used in (
        ("on_validation_end", validation.enabled),
        ("on_train_end", saves_last),
        ("on_train_start", time_triggered),
        ("on_train_batch_end", batch_saves),
        ("on_exception", saves_on_exception),
    ):
        if used:
            hooks_of_checkpoints.add(hook)
    # each instance passes the arguments in which the instances differ (the class holds the others)
    checkpoints = tuple(
        Callback(
            construct=Construct("", "ModelCheckpoint", _passing(args, varying)),
            var=numbered_name("model_checkpoint", i, len(given)),
            hooks=frozenset(hooks_of_checkpoints),
            kind="checkpoint",
            monitoring=True,
            dirpath=ref.init_args["dirpath"],
        )
        for i, (ref, args) in enumerate(zip(given, checkpoint_args))
    )
    early_stopping = tuple(
        Callback(
            construct=Construct("", "EarlyStopping", _passing(stopping_args[i], stopping_varying)),
            var=numbered_name("early_stopping", i, len(stoppers)),
            hooks=stopping_hooks[i],
            kind="early_stopping",
            monitoring=True,
        )
        for i in kept
    )
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
    mid_batch = batch_saves  # a file decided in a batch or after a validation is written
    after_validation = validation.enabled and not all(every("save_on_train_epoch_end"))  # at its end
    # a subclass decides at run time: any hook may follow its decision
    weights_at_decision = saves and (bool(subclassed) or _may_change_weights(user, mid_batch, after_validation))
    user = [cb for cb in user.callbacks if cb.kind == "user"]
    # with a logger, the default directory is the first logger's: save_dir/name/version/checkpoints, where the
    # version is version_N (CSV, TensorBoard) or the id of the run (MLflow, W&B)
    versioned = t.logger is not False and not t.fast_dev_run
    first = None if t.logger is True or not versioned else t.logger[0]
    numbered = versioned and (first is None or (first.name in NUMBERED_LOGGERS and first.init_args["version"] is None))
    in_run = first is not None and first.name not in NUMBERED_LOGGERS
    placeholders = any(_placeholders(f) - {"epoch", "step"} for f in every("filename"))
    # torchrun signals every process when one fails: no checkpoint is written on a signal under an engine
    on_signals = saves and engine_kind(spec) is None and bool(checkpoints or subclassed)
    writes_async = any(plugin["class_path"] == "AsyncCheckpointIO" for plugin in t.plugins or ())
    if writes_async and engine_kind(spec) is not None:
        message = refusal(
            f"AsyncCheckpointIO with {engine_kind(spec)}",
            "the script writes its checkpoints in a background thread on one device only",
            "leave AsyncCheckpointIO out (the files are the same), or train on one device",
        )
        problems.append(flag_problem(spec, "plugins", message))
    return Checkpointing(
        saves=saves,
        resumes=resumes,
        weights_only=spec.weights_only is not False,
        resumes_validation=resumes and validation.enabled,
        checkpoints=checkpoints,
        on_exception=on_exception,
        # Lightning calls its Checkpoint callbacks last, in the spec's order
        checkpoint_order=tuple(_in_spec_order(spec, checkpoints, on_exception, subclassed)),
        subclassed=subclassed if saves else (),
        early_stopping=early_stopping,
        default_dir=any(cb.dirpath is None for cb in checkpoints),
        versioned=versioned,
        default_dir_in_run=in_run and any(cb.dirpath is None for cb in checkpoints),
        default_dir_at_build=not in_run and any(cb.dirpath is None for cb in checkpoints),
        default_root_dir=t.default_root_dir,
        default_ckpt_path=spec.ckpt_path,
        lightning_version=LIGHTNING_VERSION,
        stateful_callbacks=(
            *early_stopping,
            *checkpoints,
            *(cb for cb in user if "state_dict" in cb.hooks),
            *([timer.callback] if timer is not None else []),
            *([swa.callback] if swa is not None else []),
        ),
        save_hook_callbacks=tuple(cb for cb in user if "on_save_checkpoint" in cb.hooks),
        load_hook_callbacks=tuple(cb for cb in user if "on_load_checkpoint" in cb.hooks),
        hyperparameters=model.is_lightning_module and model.saves_hyperparameters,
        data_hyperparameters=data is not None and data.saves_hyperparameters,
        resume_variables=tuple(resume_variables),
        weights_at_decision=weights_at_decision,
        window_grads=saves and optimization.accumulates and engine_kind(spec) in (None, "dp"),
        monitors=monitors,
        unmonitored=any(m is None for m in every("monitor")),
        verbose=any(every("verbose")),
        stopping={
            feature: any(predicate(stopping_args[i]) for i in kept)
            for feature, predicate in (
                ("thresholds", lambda a: a["stopping_threshold"] is not None),
                ("divergence", lambda a: a["divergence_threshold"] is not None),
                ("check_finite", lambda a: a["check_finite"]),
                ("lenient", lambda a: not a["strict"]),
                ("verbose", lambda a: a["verbose"]),
            )
        },
        step_triggered=batch_saves,
        time_triggered=time_triggered,
        defers=monitors and step_triggered and validation.enabled and not all(every("save_on_train_epoch_end")),
        saves_last=saves_last,
        # (a subclass's arguments are known when it runs: it may link, and save when fit raises)
        links="link" in every("save_last") or (saves and bool(subclassed)),
        saves_on_exception=saves_on_exception or (saves and bool(subclassed)),
        reads_metrics=monitors or placeholders or bool(early_stopping),
        searches_versions=saves and numbered and any(cb.dirpath is None for cb in checkpoints),
        stops_on_signals=on_signals,
        requeues=on_signals and requeues_on_slurm(spec),
        writes_async=saves and writes_async,
        shared=shared,
        varying=varying,
        acts_after_validation=acts_after_validation,
        keeps_all=-1 in every("save_top_k"),
        keeps_none=0 in every("save_top_k"),
        top_k_attribute="save_top_k" in shared and bool({-1, 0} & set(every("save_top_k"))),
        stopping_shared=stopping_shared,
        stopping_varying=stopping_varying,
        stopping_state_key=_stopping_state_key(stopping_shared) if len(early_stopping) == 1 else None,
        stopping_min_delta=_signed_min_delta(stopping_shared),
        stopping_on_epoch_end=early_stopping_default_on_epoch_end(spec),
        stopping_off=bool(t.fast_dev_run),
        stopping_subclassed=any(cb.stopping for cb in user),
        manual_steps=bool(model.manual_optimization) and step_triggered,
        check_val_every_n_epoch=t.check_val_every_n_epoch,
        validates_at_epoch_end=t.val_check_interval == 1.0,
    )


def _on_exception_checkpoints(spec: Spec, refs: list[ClassRef], problems: list[Problem]) -> tuple[Callback, ...]:
    """Lightning's OnExceptionCheckpoint: the run as it stood when fit raised, written to dirpath/filename.ckpt
    (a file the script does not resume from); removed when a fit ends without an error."""
    for ref in refs:
        where = f"trainer.callbacks ({ref.name})"
        cases = (
            (
                ref.init_args["dirpath"] is None,
                "without dirpath",
                "Lightning requires it (an error can come before any directory is decided)",
                "give dirpath",
            ),
            (
                engine_kind(spec) is not None,
                f"with the {engine_kind(spec)} engine",
                "an error in one process would leave the others waiting for it to save",
                "run on one device, or keep ModelCheckpoint(save_last=true) and resume from last.ckpt",
            ),
            (
                bool(spec.trainer.fast_dev_run),
                "with fast_dev_run",
                "the script writes no checkpoint under fast_dev_run",
                "leave fast_dev_run off",
            ),
        )
        for refused, what, why, instead in cases:
            if refused:
                problems.append(Problem(where, refusal(f"{ref.class_path} {what}", why, instead), ref.line))
    return tuple(
        Callback(
            construct=Construct("", "OnExceptionCheckpoint", dict(ref.init_args)),
            var=numbered_name("on_exception_checkpoint", i, len(refs)),
            hooks=frozenset({"on_exception", "teardown"}),
            kind="on_exception_checkpoint",
        )
        for i, ref in enumerate(refs)
    )


def _in_spec_order(
    spec: Spec, checkpoints: tuple[Callback, ...], on_exception: tuple[Callback, ...], subclassed: tuple[Callback, ...]
) -> list[Callback]:
    """The Checkpoint callbacks in the spec's order (the default ModelCheckpoint, when there is one, alone), a
    user's ModelCheckpoint subclass among them; a spec's entry the script does not build (fast_dev_run's
    ModelCheckpoint saves nothing) has none."""
    remaining = {"ModelCheckpoint": iter(checkpoints), "OnExceptionCheckpoint": iter(on_exception)}
    by_path = {cb.construct.cls: cb for cb in subclassed}
    ordered = [
        next(remaining[name], None) if name else by_path[ref.name]
        for ref in spec.trainer.callbacks
        for name in ("ModelCheckpoint", "OnExceptionCheckpoint", "")
        if (is_lightning(ref, name) if name else ref.name in by_path and not is_lightning(ref, "ModelCheckpoint"))
    ]
    return [cb for cb in ordered if cb is not None] + list(remaining["ModelCheckpoint"])


def _check_subclassed(
    spec: Spec,
    subclassed: tuple[Callback, ...],
    given: list[ClassRef],
    on_exception: list[ClassRef],
    problems: list[Problem],
) -> None:
    """What the script cannot serve of a user's ModelCheckpoint subclass (it runs on the script's
    ModelCheckpointBase, templates/subclassed.j2, writing through the script's checkpoint files)."""
    if not subclassed:
        return
    name = subclassed[0].construct.cls
    ref = next(ref for ref in spec.trainer.callbacks if ref.name == name and not is_lightning(ref, "ModelCheckpoint"))
    where, first = f"trainer.callbacks ({name})", ref.class_path
    loggers = spec.trainer.logger
    first_logger = loggers[0].name if isinstance(loggers, (list, tuple)) and loggers else None
    others = [ref.class_path for ref in (*given, *on_exception)] + [cb.construct.cls for cb in subclassed[1:]]
    cases = (
        (
            bool(others),
            f"a ModelCheckpoint subclass ({first}) beside another checkpoint callback ({', '.join(others)})",
            (
                "the script serves a subclass as the run's one checkpoint callback: the files it decides, the directory"
                " `--ckpt-path last` looks into and the one a signal's checkpoint goes to are its"
            ),
            "keep the subclass alone, and give what the others do to it",
        ),
        (
            engine_kind(spec) is not None,
            f"a ModelCheckpoint subclass ({first}) with the {engine_kind(spec)} engine",
            (
                "its base writes on one process: Lightning's broadcast of its directory and the processes' shared"
                " decisions of what to keep are not served across processes"
            ),
            "run on one device, or use ModelCheckpoint itself",
        ),
        (
            bool(first_logger) and first_logger not in NUMBERED_LOGGERS and ref.init_args.get("dirpath") is None,
            f"a ModelCheckpoint subclass ({first}) without dirpath, with {first_logger} the first logger",
            (
                f"its directory would be the run's ({first_logger}'s experiment and run ids), which the script's"
                f" {first_logger} does not give a ModelCheckpoint's setup"
            ),
            "give the entry a dirpath, or put a CSVLogger or TensorBoardLogger first",
        ),
        (
            ref.init_args.get("train_time_interval") is not None,
            f"{first}(train_time_interval=...) given in the spec",
            (
                "the entry's value would reach the class as written (a string or a mapping), where LightningCLI makes"
                " a datetime.timedelta of it"
            ),
            "set it in your subclass's __init__, as a timedelta",
        ),
        (
            bool(spec.trainer.fast_dev_run),
            f"a ModelCheckpoint subclass ({first}) with fast_dev_run",
            "the script writes no checkpoint under fast_dev_run",
            "leave fast_dev_run off",
        ),
    )
    for refused, what, why, instead in cases:
        if refused:
            problems.append(Problem(where, refusal(what, why, instead), ref.line))


def _may_change_weights(user: UserCode, mid_batch: bool, after_validation: bool) -> bool:
    """Whether the module or a callback has a hook that runs after a ModelCheckpoint decided a file and before
    the script writes it, at the batch's or the epoch's end: after its on_train_batch_end (`mid_batch`), the
    module's on_train_batch_end (an EMA's update), the validation that may follow, the epoch's end; after its
    on_validation_end (`after_validation`), the module's (EMA weights swapped back) and the epoch's end."""
    later = {"on_train_epoch_end", "on_validation_model_train"}
    if after_validation:
        later.add("on_validation_end")
    if mid_batch:
        later |= {f"on_validation_{hook}" for hook in ("start", "epoch_start", "batch_start", "batch_end")}
        later |= {"on_validation_epoch_end", "on_validation_end", "on_validation_model_eval"}
    callbacks = set().union(*(cb.hooks for cb in user.callbacks if cb.kind not in ("checkpoint", "early_stopping")))
    return bool(later & user.model) or bool(later & callbacks) or (mid_batch and "on_train_batch_end" in user.model)


def _checkpoint_args(ref: ClassRef, spec: Spec, validation: Validation, problems: list[Problem]) -> dict[str, Any]:
    """A ModelCheckpoint's arguments, by Lightning's ModelCheckpoint.__init__ rules: its triggers resolved, and
    where it saves (_should_save_on_train_epoch_end, decided here from the flags)."""
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
    if args["save_on_exception"] and engine_kind(spec) is not None:
        message = refusal(
            f"save_on_exception=true with the {engine_kind(spec)} engine",
            "an error in one process would leave the others waiting for it to save",
            "run on one device, or leave it false and resume from the last checkpoint saved",
        )
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
    return {key: resolved[key] for key in CHECKPOINT_ARGS}


# what Lightning's state_key of each stateful callback is made of (Callback._generate_state_key)
STATE_KEY_ARGS = {
    "ModelCheckpoint": ("monitor", "mode", "every_n_train_steps", "every_n_epochs", "train_time_interval"),
    "EarlyStopping": ("monitor", "mode"),
}


def _check_unique_state_keys(
    name: str, refs: list[ClassRef], args: list[dict[str, Any]], problems: list[Problem]
) -> None:
    """Two callbacks of one kind with the same state key: Lightning's Trainer refuses them before it trains
    (`_validate_callbacks_list`), with this message."""
    seen: set[tuple[str, ...]] = set()
    for ref, arguments in zip(refs, args):
        key = tuple(repr(arguments[arg]) for arg in STATE_KEY_ARGS[name])
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


def _stopping_args(ref: ClassRef, problems: list[Problem]) -> dict[str, Any]:
    """An EarlyStopping's arguments."""
    if ref.init_args["monitor"] is None:
        problems.append(Problem("trainer.callbacks (EarlyStopping)", "EarlyStopping needs `monitor`", ref.line))
    return {key: ref.init_args[key] for key in STOPPING_ARGS}


def _stopping_hooks(ref: ClassRef, spec: Spec, validation: Validation) -> frozenset[str]:
    """The one hook where an EarlyStopping checks: without validation and not at the epoch's end, Lightning's
    never checks."""
    if early_stopping_on_epoch_end(ref, spec):
        return frozenset({"on_train_epoch_end"})
    return frozenset({"on_validation_end"} if validation.enabled else ())


def _shared_args(args: list[dict[str, Any]]) -> dict[str, Any]:
    """The arguments every one of these callbacks gives the same value (none when there is no callback)."""
    if not args:
        return {}
    return {key: value for key, value in args[0].items() if all(repr(a[key]) == repr(value) for a in args)}


def _passing(args: dict[str, Any], varying: tuple[str, ...]) -> dict[str, Any]:
    """What an instance passes to the script's class: the arguments in which the instances differ."""
    return {key: args[key] for key in varying}


def _stopping_state_key(args: Mapping[str, Any]) -> str:
    """Lightning's Callback._generate_state_key of an EarlyStopping: its class's name and the arguments that tell
    instances apart."""
    return f"EarlyStopping{ {key: args[key] for key in STATE_KEY_ARGS['EarlyStopping']}!r}"


def _signed_min_delta(shared: Mapping[str, Any]) -> float | None:
    """EarlyStopping's min_delta as Lightning's comparison uses it: negated in mode "min"."""
    if "min_delta" not in shared or "mode" not in shared:
        return None
    return shared["min_delta"] if shared["mode"] == "max" else -shared["min_delta"]


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


def requeues_on_slurm(spec: Spec) -> bool:
    """Whether SIGUSR1 saves and requeues under SLURM: Lightning's signal connector does so where the cluster
    environment is SLURM's with auto_requeue (detected, when no plugin names another)."""
    environment = cluster_environment(spec.trainer.plugins)
    if environment is None:
        return True
    return environment["class_path"] == "SLURMEnvironment" and environment["init_args"].get("auto_requeue", True)
