"""self.log: what is logged, reduced and published, torchmetrics objects."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.common import METRIC_ATTRIBUTES, flag_problem, follows_1_9_5, reads_trainer
from loopgen.plan.data import Data
from loopgen.plan.distributed import Distributed
from loopgen.plan.evaluation import Evaluation
from loopgen.plan.hooks import Hooks
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import argument_value, constructs_in
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.progress import Progress
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Metrics:
    """The collector behind self.log, present only when something reads what is logged."""

    collect: bool
    syncs: bool  # self.log(..., sync_dist=True) reduces across the processes
    model_logs: bool  # the model (or a callback through pl_module) calls self.log / self.log_dict
    discards: bool  # ... but nothing reads the values: log is a no-op
    log_dicts: bool  # the seed's {"log": ..., "progress_bar": ...} returns are logged
    epoch_end_returns: bool  # with log_dicts: training_epoch_end's return is logged
    # Lightning 1.9.5, at an epoch's first batch: a hook that logs after another hook logged starts its values
    # over; with several optimizers and gradient norms, training_step's values of optimizer 0 are dropped
    first_batch_resets: bool
    # torchmetrics Metric objects may be logged (the module's source imports torchmetrics): computed at epoch end
    # and reset where Lightning resets them (see logs_torchmetrics)
    torchmetrics: bool
    # the prog_bar=True values are kept: the progress bar shows them, or trainer.progress_bar_metrics is read
    progress_bar: bool
    # publish() returns the values for the loggers, or for validate and test to return
    returns_logged: bool = False
    # validate or test runs: several loaders key their values apart (name/dataloader_idx_N)
    dataloaders: bool = False
    tests: bool = False  # the test run logs: its phases' on_step / on_epoch defaults
    predicts: bool = False  # the predict run refuses self.log, as Lightning does
    # the user's on_train_epoch_end / on_validation_epoch_end hooks may log: the epoch's values are published again
    # after them (as well as before, for the hooks to read)
    publishes_after_train_epoch_end: bool = False
    publishes_after_val_epoch_end: bool = False
    # only a ReduceLROnPlateau would read the values, and configure_optimizers' return is known when the script
    # runs: log becomes the no-op once it is known that none came back
    for_plateau_only: bool = False
    # Lightning 1.9.5: trainer.callback_metrics / logged_metrics / progress_bar_metrics, brought up to date when
    # read (MetricLog.read), hold an epoch's step values from its start (its start hooks included) until its end
    epoch_start_steps: bool = False

    @property
    def ignores(self) -> bool:
        """log may be the no-op (ignore_logged): always, or once configure_optimizers returned no plateau."""
        return self.discards or self.for_plateau_only


def resolve_metrics(
    spec: Spec,
    model: ClassFacts,
    callbacks: tuple[ClassFacts, ...],
    hooks: Hooks,
    optimizers: Optimizers,
    optimization: Optimization,
    checkpointing: Checkpointing,
    logging: Logging,
    progress: Progress,
    distributed: Distributed,
    evaluation: Evaluation,
    data: Data,
    problems: list[Problem],
) -> Metrics:
    """self.log needs a collector only when something reads what is logged (a plateau scheduler, EarlyStopping,
    a ModelCheckpoint ranking or naming files by a metric, the model or a callback through
    trainer.callback_metrics / logged_metrics, the progress bar showing prog_bar values); the gradient norms of
    track_grad_norm and the seed's dict returns are logged values too."""
    readers = any(reads_trainer(facts, *METRIC_ATTRIBUTES) for facts in (model, *callbacks))
    model_logs = model.uses_log or any(facts.module_reads & {"log", "log_dict"} for facts in callbacks)
    torchmetrics = model_logs and logs_torchmetrics(spec, model, callbacks, problems)
    read_otherwise = (
        readers
        or optimization.track_grad_norm is not None
        or checkpointing.reads_metrics
        or logging.values
        or progress.metrics
        or (model_logs and evaluation.returns_metrics)  # validate and test return (and print) what is logged
        or torchmetrics
    )
    collect = read_otherwise or optimizers.plateau
    if spec.trainer.barebones and follows_1_9_5(spec, model):
        message = refusal("barebones in a spec that follows Lightning 1.9.5", "Lightning 1.9.5 has no barebones mode",
                          "follow Lightning 2.x")  # fmt: skip
        problems.append(flag_problem(spec, "barebones", message))
    elif spec.trainer.barebones and model_logs and (checkpointing.reads_metrics or optimizers.plateau
                                                    or evaluation.returns_metrics):  # fmt: skip
        message = refusal(
            "barebones with a monitor, a plateau scheduler or validate's or test's results",
            "in barebones mode Lightning's self.log warns and records nothing, so they find no value",
            "leave barebones false",
        )
        problems.append(flag_problem(spec, "barebones", message))
    log_dicts = collect and model.returns_log_dicts
    # the prog_bar=True values are kept where the bar shows them or trainer.progress_bar_metrics is read
    bar_read = any(reads_trainer(facts, "progress_bar_metrics") for facts in (model, *callbacks))
    return Metrics(
        collect=collect,
        # self.log(sync_dist=True) reduces across the processes: not under Horovod (Lightning 1.9.5's reduces only
        # under torch.distributed), nor on one XLA device (SingleDeviceXLAStrategy's reduce is the value itself)
        syncs=distributed.enabled
        and collect
        and not distributed.horovod
        and not (distributed.xla and distributed.devices == 1),
        torchmetrics=torchmetrics,
        progress_bar=progress.metrics or (collect and bar_read),
        model_logs=model_logs,
        # (barebones: self.log records nothing, and the metric dicts a reader reads stay empty)
        discards=model_logs and (not collect or spec.trainer.barebones),
        # (the seed's dict returns are logged by the script itself, whatever self.log is)
        for_plateau_only=model_logs
        and not read_otherwise
        and not log_dicts
        and optimizers.general_schedulers
        and optimizers.plateau,
        log_dicts=log_dicts,
        epoch_end_returns=log_dicts and optimization.epoch_outputs and not optimization.nested_outputs,
        first_batch_resets=collect
        and (model_logs or log_dicts)
        and optimization.loops_optimizers
        and optimization.grad_norm_first_only,
        publishes_after_train_epoch_end=collect and hooks.user_code("on_train_epoch_end"),
        publishes_after_val_epoch_end=collect and hooks.user_code("on_validation_epoch_end"),
        returns_logged=collect and (logging.values or evaluation.returns_metrics),
        dataloaders=collect and (evaluation.returns_metrics or data.several_val),
        tests=collect and evaluation.has("test"),
        predicts=collect and evaluation.has("predict"),
        epoch_start_steps=collect and follows_1_9_5(spec, model),
    )


def logs_torchmetrics(
    spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], problems: list[Problem]
) -> bool:
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
        for c in constructs_in(argument_value(value))
    )
    uses = given or model.imports_torchmetrics or any(facts.imports_torchmetrics for facts in callbacks)
    if not uses:
        return False
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
    return True
